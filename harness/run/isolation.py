"""Backends run in worker processes; a crash or hang costs one case, never the run.

The parent keeps up to two batches of cases in flight to each worker (the next one waits while
the worker runs the last). A case travels without its oracle answer
(:meth:`~conform.generators.Case.for_backend`). The worker replies with the outcomes' outputs
(every ``REPLY_BATCH`` cases, or sooner once ``REPLY_INTERVAL`` seconds have passed since its last
reply) as frames the parent decodes without unpickling (:mod:`conform.harness.run.wire`); a
judging pool judges them here, in the parent (:mod:`conform.harness.run.stages`), so that the
adapter's code never runs where the judging does. The worker counts the cases it has finished
in a shared counter, and stamps when it began the case it is on. If a worker dies (segfault,
SIGFPE, abort, OOM kill), the counter says which case it was running: that case gets a ``crash``
outcome; if a case runs past the timeout (its own preparing and computing, see the stamp) the
worker is killed and the case gets ``timeout``. Either way the worker is replaced and the cases
it still owed, including those it had finished but not yet reported, are sent again. Loading the
backend has a time limit of its own, at the start and in a replacement: a worker that misses it
is given up, and a pool left with none answers every case left with an ``error`` saying why.
The worker's side is :mod:`conform.harness.run.worker`.

Workers are forked from a fork server (:data:`WORKER_METHOD`): a fresh process that has loaded
conform and the built-in specs but never held a case, an oracle answer or the adapter, so a
worker starts without importing conform again and inherits nothing of the run. Where there is
no fork server they are spawned. A replacement worker starts in the background while the others
go on.
"""
from __future__ import annotations

import collections
import dataclasses
import multiprocessing as mp
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Iterable, Iterator

from conform.harness.run.case_queue import LazyQueue
from conform.harness.run.processes import (LOAD_TIMEOUT, WORKER_METHOD, start_method,
                                           started_without_main, worker_context)
from conform.harness.run.stages import JUDGE_PROCESSES_FROM, Judged, Judging, JudgeProcesses
from conform.harness.run.wire import WireError, read_reply, unpack
from conform.harness.run.crash_confirm import CrashConfirmation
from conform.harness.run.worker import (REPLY_BATCH, CaseByCase, ComputeSettings, Outcome,
                                    kill_group, reuse_freed_memory, worker_main)
from conform.harness.run.worker_io import StderrLog, death_message, first_message

class BackendLoadError(Exception):
    """The backend could not be imported or instantiated in a worker."""



@dataclass
class _Worker:
    process: mp.Process
    conn: object
    finished: object                 # shared counter: cases the worker has finished
    since: object                    # shared: when the case being run began (see worker_main)
    together: object                 # shared: its time limits while it runs a case packed (same)
    stderr: StderrLog                # where its standard error goes
    started: float = 0.0             # when the worker was started (it loads within load_timeout)
    pending: collections.deque = field(default_factory=collections.deque)
    last_reply: float = 0.0          # when the worker last replied (or was sent work)
    completed: int = 0               # cases whose outcome the parent has received
    ready: bool = False              # the worker has loaded its backend and said hello
    batches: collections.deque = field(default_factory=collections.deque)  # cases left per batch sent
    stats: dict = field(default_factory=dict)   # the backend's counters, as last reported

    def running(self) -> int:
        """The index in ``pending`` of the case the worker is running now: finished cases whose
        outcomes have not arrived come first."""
        return min(max(self.finished.value - self.completed, 0), len(self.pending) - 1)

    def deadline(self, timeout: float) -> float:
        """When the case being run times out: ``timeout`` seconds after it began to be prepared
        (its computing resumes the clock where preparing left it), or after work was sent; a
        case packed with others has ``together`` times that (see worker.PACK_TIME_LIMITS)."""
        return max(self.since.value, self.last_reply) + timeout * max(1, self.together.value)


class _LoadFailed(Exception):
    """A worker that could not load its backend; the message says why, in one line."""


@dataclass(frozen=True)
class PoolSettings:
    """How a :class:`WorkerPool` runs its workers.

    * ``workers``: how many; ``batch_size``: the cases sent to a worker at once.
    * ``timeout`` bounds each case: its preparing and computing together. ``load_timeout``
      (default :data:`LOAD_TIMEOUT`, or ``timeout`` if longer) bounds each worker's loading of
      the backend, at the start and when a worker is replaced: a worker that cannot load in
      time is given up (its slot stays empty), and once none is left every remaining case is
      an ``error`` saying so.
    * ``judge=True`` has the pool judge each case as its outputs arrive, in this process (under
      ``subnormals``, or the backend's declared policy, then re-judged under ``manifest`` if
      given) and tally the records of each reply: :meth:`WorkerPool.run_batches` yields those replies as
      :class:`Judged`, :meth:`WorkerPool.run` gives each record in ``Outcome.record`` and its
      results.jsonl line in ``Outcome.line``.
    * ``memory_limit_mb`` caps each worker's address space; ``recycle_after`` replaces a worker
      after that many cases (between batches).
    * ``spec_dir``: the user's spec folder (workers load it); ``method`` forces ``fork``,
      ``forkserver`` or ``spawn`` (default: :data:`WORKER_METHOD`; a forked worker holds
      whatever this process holds, oracle answers included).
    """

    workers: int = 1
    timeout: float = 60.0
    load_timeout: float | None = None
    batch_size: int = 256
    judge: bool = False
    subnormals: str | None = None
    manifest: object = None
    memory_limit_mb: int | None = None
    recycle_after: int | None = None
    spec_dir: str | None = None
    method: str | None = None


class WorkerPool:
    """A pool of isolated backend workers.

    >>> with WorkerPool("numpy", workers=1) as pool:   # doctest: +SKIP
    ...     for case, outcome in pool.run(cases): ...
    """

    def __init__(self, backend: str, settings: "PoolSettings | None" = None, *,
                 specs: dict | None = None, cases=None, **changes):
        """A pool running ``backend`` as ``settings`` say (:class:`PoolSettings`; keywords
        given as ``changes`` replace its fields). ``specs`` (the loaded ``settings.spec_dir``)
        judge the cases (loaded here when not given); ``cases`` is accepted and ignored (workers
        once inherited them)."""
        settings = dataclasses.replace(settings or PoolSettings(), **changes)
        self.settings = settings
        self.backend, self.workers, self.timeout = backend, max(1, settings.workers), settings.timeout
        self.load_timeout = max(LOAD_TIMEOUT, settings.timeout) if settings.load_timeout is None \
            else settings.load_timeout
        self.batch_size, self.recycle_after, self.recycled = (settings.batch_size,
                                                              settings.recycle_after, 0)
        self.method = settings.method or WORKER_METHOD
        self.compute = ComputeSettings.of_parent(
            spec_dir=settings.spec_dir, memory_limit_mb=settings.memory_limit_mb,
            parent_pid=os.getpid() if self.method != "forkserver" else None)
        self._specs = specs
        self.judging: Judging | None = None   # once the backend has said hello, if judge
        self._judges: JudgeProcesses | None = None   # while run_batches runs a long list
        self._ctx = worker_context(self.method)
        self._forked_ends: list = []   # the parent's pipe ends a forked worker inherits
        self._pool: list[_Worker] = []
        self._started = 0   # workers started so far (each has its own standard error file)
        self._stderr_dir: str | None = None
        self.info: dict = {}
        self.restarts = 0
        self._confirm = CrashConfirmation()   # crashes a fresh worker must confirm
        self.load_failures: list[str] = []   # why each worker given up could not load
        self._running = False   # past the start: a worker that fails to load is given up
        self.stats: dict = {}   # backend counters summed over workers (a killed one: as last reported)
        self.spent: dict = {}   # the seconds spent judging, tallying, encoding (in this process)

    def __enter__(self):
        reuse_freed_memory()
        self._pool = [self._start() for _ in range(self.workers)]   # they load in parallel
        try:
            while any(not w.ready for w in self._pool):
                self._wait()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        self._running = True
        if self.settings.judge:
            self.judging = self._judging()
        return self

    def _judging(self) -> Judging:
        """The judge, manifest and encode stages for this pool's backend, as it said hello."""
        specs = self._specs
        if specs is None:
            from conform.spec import load_specs

            specs = load_specs(self.settings.spec_dir)
        return Judging(specs, self.info.get("name") or self.backend,
                       self.settings.subnormals or self.info.get("subnormals") or "ieee",
                       self.settings.manifest)

    def __exit__(self, *exc):
        try:
            if exc and exc[0] is not None:   # interrupted (Ctrl-C) or failed: no time for stats
                for worker in self._pool:
                    self._stop(worker, kill=True)
                return
            for worker in self._pool:   # all are asked first, so that they shut down in parallel
                if worker.ready:
                    self._ask_to_stop(worker)
            for worker in self._pool:
                self._stop(worker, kill=not worker.ready, asked=True)
        finally:
            if self._stderr_dir is not None:
                shutil.rmtree(self._stderr_dir, ignore_errors=True)

    def _start(self) -> _Worker:
        """Start a worker; it says hello (or why it could not load) once its backend is loaded.
        It starts with SIGINT blocked (the worker ignores it once it runs; a spawned one would
        otherwise print a KeyboardInterrupt traceback from its imports)."""
        parent, child = self._ctx.Pipe()
        finished = self._ctx.Value("q", 0, lock=False)   # only the worker writes these two
        since = self._ctx.Value("d", 0.0, lock=False)
        together = self._ctx.Value("b", 0, lock=False)
        self._started += 1
        stderr = StderrLog(os.path.join(self._stderr_folder(), f"worker-{self._started}.txt"),
                           self._ctx.Value("q", 0, lock=False))
        ends = ()
        if self.method == "fork":
            self._forked_ends = ends = [end for end in self._forked_ends if not end.closed] + [parent]
        process = self._ctx.Process(target=worker_main, daemon=True,
                                    args=(child, self.backend, self.compute, finished, since,
                                          together, ends, stderr))
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with started_without_main():
                process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        child.close()
        return _Worker(process, parent, finished, since, together, stderr, started=time.monotonic())

    def _stderr_folder(self) -> str:
        """The folder of the workers' standard error files (made on first use, removed with
        the pool)."""
        if self._stderr_dir is None:
            self._stderr_dir = tempfile.mkdtemp(prefix="conform-workers-")
        return self._stderr_dir

    def _wait(self) -> set:
        """Wait for a message or a death from a busy or loading worker, or until the first time
        limit (a case's, or a load's) passes; what is ready. Loading workers are then checked:
        see :meth:`_check_loading`."""
        busy = [w for w in self._pool if w.pending]
        loading = [w for w in self._pool if not w.ready]
        now = time.monotonic()
        until = min([w.deadline(self.timeout) for w in busy]
                    + [w.started + self.load_timeout for w in loading], default=now + self.timeout)
        watched = busy + loading
        judges = self._judges.waiting() if self._judges is not None else []
        ready = set(wait([w.conn for w in watched] + [w.process.sentinel for w in watched] + judges,
                         timeout=max(0.0, until - now)))
        for worker in loading:
            try:
                self._check_loading(worker, fatal_raises=not self._running)
            except _LoadFailed as exc:
                self._give_up(worker, str(exc))
        return ready

    def _check_loading(self, worker: _Worker, fatal_raises: bool) -> None:
        """Take a loading worker's hello if it came. If it failed to load, raise
        :class:`BackendLoadError` when ``fatal_raises`` (at the start: the adapter is broken)
        and it raised or died; else :class:`_LoadFailed` (the worker is given up)."""
        if worker.conn.poll():
            message = first_message(worker.conn)
        elif not worker.process.is_alive():
            message = None
        elif time.monotonic() >= worker.started + self.load_timeout:
            raise _LoadFailed(f"backend {self.backend!r} failed to load in {self.load_timeout:g} s")
        else:
            return
        if message is None:
            worker.process.join(5)
            died = f"{death_message(worker.process.exitcode)} while loading"
            written = worker.stderr.since_mark()   # a crash in an import says why here
            if fatal_raises:
                raise BackendLoadError(f"backend {self.backend!r}: {died}"
                                       + (f"; its standard error:\n{written}" if written else ""))
            last = f" ({written.splitlines()[-1]})" if written.strip() else ""
            raise _LoadFailed(f"backend {self.backend!r} failed to load: {died}{last}")
        kind, payload = message
        if kind == "fatal":
            worker.process.join(5)
            if fatal_raises:
                raise BackendLoadError(f"backend {self.backend!r} failed to load:\n{payload}")
            last = payload.strip().splitlines()[-1] if payload.strip() else "no traceback"
            raise _LoadFailed(f"backend {self.backend!r} failed to load: {last}")
        self.info, worker.ready = payload, True

    def _give_up(self, worker: _Worker, reason: str) -> None:
        """Stop ``worker``, which could not load, and leave its slot empty."""
        self._stop(worker, kill=True)
        self._pool.remove(worker)
        self.load_failures.append(reason)

    @staticmethod
    def _ask_to_stop(worker: _Worker) -> None:
        try:
            worker.conn.send(None)
        except (BrokenPipeError, OSError):
            pass

    def _stop(self, worker: _Worker, kill: bool = False, asked: bool = False) -> None:
        if kill:
            worker.process.kill()
        else:
            if not asked:
                self._ask_to_stop(worker)
            try:
                while worker.conn.poll(10):   # replies still owed (a run cut short), then stats
                    kind, body, _ = unpack(worker.conn.recv_bytes())
                    if kind == "stats" and type(body) is dict \
                            and all(type(v) in (int, float) for v in body.values()):
                        worker.stats = body
                        break
            except (BrokenPipeError, OSError, EOFError, WireError):
                pass
        for key, value in worker.stats.items():   # a killed worker's as of its last reply
            self.stats[key] = self.stats.get(key, 0) + value
        worker.process.join(5)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(5)
        kill_group(worker.process.pid)   # what the backend started dies with its worker
        worker.conn.close()

    def _replace(self, worker: _Worker, kill: bool, recycle: bool = False,
                 culprit: int | None = None) -> list:
        """Replace ``worker`` (the new one starts in the background); returns the cases the
        old one still owed but for ``pending[culprit]``. A ``recycle`` (a planned
        replacement) is counted apart from restarts after failures."""
        leftover = [c for i, c in enumerate(worker.pending) if i != culprit]
        self._stop(worker, kill=kill)
        if recycle:
            self.recycled += 1
        else:
            self.restarts += 1
        self._pool[self._pool.index(worker)] = self._start()
        return leftover

    @staticmethod
    def _send(worker: _Worker, batch: list) -> None:
        """Send ``batch``, each case without its oracle answer, its cases now pending there
        (the clock starts if the worker was idle; else it runs for the case being computed).
        A worker that has just died cannot take it: the batch stays pending, and
        :meth:`_collect` finds the death (the case it was running crashed) and sends the rest
        again."""
        if not worker.pending:
            worker.last_reply = time.monotonic()
        worker.pending.extend(batch)
        worker.batches.append(len(batch))
        try:
            worker.conn.send(type(batch)(case.for_backend() for case in batch))
        except (BrokenPipeError, ConnectionResetError):
            pass

    def run(self, cases: Iterable) -> Iterator[tuple[object, Outcome]]:
        """Yield ``(case, outcome)`` for every case, in completion order."""
        for done in self.run_batches(cases):
            yield from done.pairs() if isinstance(done, Judged) else done

    def run_batches(self, cases: Iterable) -> Iterator["list[tuple[object, Outcome]] | Judged"]:
        """:meth:`run`, a reply at a time: a list of ``(case, outcome)`` pairs (unjudged, or
        one crashed or timed-out case) or, when the workers judge, a :class:`Judged` reply.
        If no worker is left that could load the backend, the cases not run yet come as
        ``error`` pairs naming why."""
        queue = LazyQueue(cases)
        self._judges = self._judge_processes(cases)
        try:
            yield from self._batches(queue)
        finally:
            if self._judges is not None:
                self._judges.close()
                self._judges = None

    def _judge_processes(self, cases) -> "JudgeProcesses | None":
        """Judge processes for a run of ``cases`` (a list of at least
        :data:`~conform.harness.run.stages.JUDGE_PROCESSES_FROM`), one per worker, where this
        process can fork; None: judged here."""
        if self.judging is None or not isinstance(cases, list) or len(cases) < JUDGE_PROCESSES_FROM \
                or start_method() != "fork":
            return None
        return JudgeProcesses(self.judging, cases, self.workers)

    def _batches(self, queue: "LazyQueue"):
        """:meth:`run_batches` of the cases in ``queue``."""
        while queue or self._confirm or any(w.pending for w in self._pool) or self._owed():
            if self._confirm and all(w.ready and (w.pending or w.finished.value)
                                     for w in self._pool):
                yield from ([pair] for pair in self._confirm.give_up())   # no fresh worker left
            if not self._pool:
                yield from self._unloaded(queue)
                yield from self._judged_rest()
                return
            for worker in list(self._pool):
                if not worker.ready:
                    continue
                if self._confirm and not worker.pending and not worker.finished.value:
                    self._send(worker, CaseByCase([self._confirm.take()]))   # alone, fresh
                    continue
                if self.recycle_after and worker.completed >= self.recycle_after \
                        and not worker.pending and queue:
                    self._replace(worker, kill=False, recycle=True)  # jax never frees executables
                    continue
                # two batches in flight: the next is there when the worker finishes the last
                due = self.recycle_after and worker.completed + len(worker.pending) >= self.recycle_after
                if queue and not due and len(worker.batches) < 2:
                    self._send(worker, queue.take(self.batch_size))
            yield from self._collect(queue)

    def _unloaded(self, queue: "LazyQueue"):
        """Every case left in ``queue`` as an ``error``: no worker could load the backend."""
        reason = self.load_failures[-1] if self.load_failures else "no worker"
        while queue:
            yield [(case, Outcome("error", message=reason, on_input=False))
                   for case in queue.take(REPLY_BATCH)]

    def _owed(self) -> bool:
        """Whether judge processes owe replies."""
        return self._judges is not None and bool(self._judges.waiting())

    def _judged_rest(self):
        """The replies the judge processes still owe."""
        while self._owed():
            ready = set(wait(self._judges.waiting()))
            yield from self._judges.collect(ready)

    def _collect(self, queue: "LazyQueue"):
        busy = [w for w in self._pool if w.pending]
        ready = self._wait()
        if self._judges is not None:
            yield from self._judges.collect(ready)
            self.spent = {key: self.judging.spent.get(key, 0.0) + value
                          for key, value in self._judges.spent().items()} or self.spent
        for worker in busy:
            if worker.conn in ready or worker.process.sentinel in ready:
                yield from self._replies(worker, queue)
            elif time.monotonic() >= worker.deadline(self.timeout):
                culprit = self._culprit(worker)
                case = None if culprit is None else worker.pending[culprit]
                queue.extendleft(reversed(self._replace(worker, kill=True, culprit=culprit)))
                if case is not None:
                    yield [(case, Outcome("timeout", message=f"no result within {self.timeout:g} s",
                                          stderr=worker.stderr.since_mark()))]

    @staticmethod
    def _culprit(worker: _Worker) -> int | None:
        """The index in ``pending`` of the case that crashed or hung ``worker``; None if it
        was computing cases packed together (any of them may be the cause: they all run
        again, one at a time, see :class:`CaseByCase`)."""
        return None if worker.together.value else worker.running()

    def _replies(self, worker: _Worker, queue: "LazyQueue"):
        """The replies ``worker`` has sent (judged here if the pool judges); if it died, or
        sent what does not parse, the case it was running as a ``crash``, and the rest it owed
        back into ``queue`` (for a new worker, started here)."""
        died, message = False, None
        try:
            while worker.pending and worker.conn.poll():
                frame = worker.conn.recv_bytes()
                outcomes, worker.stats = read_reply(frame, len(worker.pending))
                worker.last_reply = time.monotonic()
                worker.completed += len(outcomes)
                left = len(outcomes)
                while left:
                    taken = min(left, worker.batches[0])
                    worker.batches[0] -= taken
                    left -= taken
                    if not worker.batches[0]:
                        worker.batches.popleft()
                pending = worker.pending
                cases = [pending.popleft() for _ in range(len(outcomes))]
                if self._judges is not None and self._judges.submit(cases, frame, worker.stats):
                    pass   # judged in a judge process: its reply comes in _collect
                elif self.judging is not None:
                    yield self.judging(cases, outcomes, worker.stats)
                    self.spent = dict(self.judging.spent)
                else:
                    yield list(zip(cases, outcomes))
            died = bool(worker.pending) and not worker.process.is_alive()
        except (EOFError, ConnectionResetError, OSError):
            died = True
        except WireError as exc:
            died, message = True, f"the worker sent what conform cannot read ({exc}); killed"
        if died:   # replaced outside the except clause: a forked worker would inherit its context
            if message is None:
                worker.process.join(5)
                message = death_message(worker.process.exitcode)
            culprit = self._culprit(worker)
            case = None if culprit is None else worker.pending[culprit]
            ran_others = worker.finished.value > 0   # (read before the worker is replaced)
            queue.extendleft(reversed(self._replace(worker, kill=True, culprit=culprit)))
            if case is not None:
                crash = Outcome("crash", message=message, stderr=worker.stderr.since_mark())
                if not self._confirm.defer(case, crash, ran_others):
                    yield [(case, crash)]
