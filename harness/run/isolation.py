"""Backends run in worker processes; a crash or hang costs one case, never the run.

The parent keeps up to two batches of cases in flight to each worker (the next one waits while
the worker runs the last). The worker replies with lists of outcomes (every ``REPLY_BATCH`` cases,
or sooner once ``REPLY_INTERVAL`` seconds have passed since its last reply; a judging worker sends
their result lines and tally instead, see :class:`Judged`) and counts the cases it has finished
in a shared counter, and stamps when it began the case it is on. If a worker dies (segfault,
SIGFPE, abort, OOM kill), the counter says which case it was running: that case gets a ``crash``
outcome; if a case runs past the timeout (its own preparing and computing, see the stamp) the
worker is killed and the case gets ``timeout``. Either way the worker is replaced and the cases
it still owed, including those it had finished but not yet reported, are sent again. Loading the
backend has a time limit of its own, at the start and in a replacement: a worker that misses it
is given up, and a pool left with none answers every case left with an ``error`` saying why.
The worker's side is :mod:`conform.harness.run.worker`.

Workers are forked where that is safe (the parent runs no other threads and has loaded no backend
runtime, see :func:`start_method`): they inherit the specs and the run's cases, so a batch is a list
of indices and a worker starts without importing conform again. Elsewhere they are spawned and the
cases travel pickled. A replacement worker starts in the background while the others go on.
"""
from __future__ import annotations

import collections
import dataclasses
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Iterable, Iterator

import orjson

from conform.harness.run.case_queue import BATCH_BYTES, LazyQueue  # noqa: F401
from conform.harness.run.worker import (INHERITED, REPLY_BATCH, REPLY_INTERVAL, CaseByCase,  # noqa: F401
                                    Outcome, reuse_freed_memory, worker_main)

#: Seconds a worker may take to load its backend (import it, make the adapter, say hello), when
#: the pool is not told: loading a runtime is not running a case, and jax or OpenVINO take
#: seconds to import on a busy machine.
LOAD_TIMEOUT = 120.0


class BackendLoadError(Exception):
    """The backend could not be imported or instantiated in a worker."""


# Modules whose threads or device state must not be copied into a forked child.
_FORK_UNSAFE_MODULES = ("jax", "jaxlib", "onnxruntime", "openvino", "iree", "tensorflow", "torch")


def start_method() -> str:
    """``fork`` if this process can be forked safely, else ``spawn``."""
    if "fork" not in mp.get_all_start_methods() or threading.active_count() > 1:
        return "spawn"
    if any(name in sys.modules for name in _FORK_UNSAFE_MODULES):
        return "spawn"
    return "fork"


def forking_context():
    """A multiprocessing context that forks, if this process can be forked safely; else None."""
    return mp.get_context("fork") if start_method() == "fork" else None


class Judged:
    """A worker's judged reply: the cases (in order), their outcomes' kinds, their results.jsonl
    lines, the reply's tally cells and the worker's counters so far (the backend's, and its own
    seconds). A run writes the lines and merges the tally as they are, without reading each
    record back: only those the tally keeps are decoded."""

    def __init__(self, kinds: list, lines: list, cells: dict, stats: dict, spent: dict):
        self.kinds, self.lines, self.cells, self.cases = kinds, lines, cells, []
        self.stats, self.spent = stats, spent
        self._read: dict = {}

    def __len__(self) -> int:
        return len(self.kinds)

    def record(self, index: int) -> dict:
        """The record on line ``index``, read back from it (so that it is exactly the one on disk)."""
        found = self._read.get(index)
        if found is None:
            found = self._read[index] = orjson.loads(self.lines[index])
        return found

    def pairs(self) -> list:
        """``(case, outcome)`` per case, each outcome with its record and line."""
        return [(case, Outcome(kind, None, "", "", 0.0, self.record(i), line))
                for i, (case, kind, line) in enumerate(zip(self.cases, self.kinds, self.lines))]


def _unpack(message):
    """A worker's reply: a list of outcomes, or a :class:`Judged` reply."""
    if isinstance(message, tuple) and message[0] == "judged":
        return Judged(*message[1:])
    return message


def death_message(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"worker killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"worker killed by signal {-exitcode}"
    return f"worker exited with status {exitcode}"




@dataclass
class _Worker:
    process: mp.Process
    conn: object
    finished: object                 # shared counter: cases the worker has finished
    since: object                    # shared: when the case being run began (see worker_main)
    together: object                 # shared: 1 while it runs a case packed with others (same)
    started: float = 0.0             # when the worker was started (it loads within load_timeout)
    pending: collections.deque = field(default_factory=collections.deque)
    last_reply: float = 0.0          # when the worker last replied (or was sent work)
    completed: int = 0               # cases whose outcome the parent has received
    ready: bool = False              # the worker has loaded its backend and said hello
    batches: collections.deque = field(default_factory=collections.deque)  # cases left per batch sent
    stats: dict = field(default_factory=dict)   # the backend's counters, as last reported
    spent: dict = field(default_factory=dict)   # its seconds judging, tallying, encoding (same)

    def running(self) -> int:
        """The index in ``pending`` of the case the worker is running now: finished cases whose
        outcomes have not arrived come first."""
        return min(max(self.finished.value - self.completed, 0), len(self.pending) - 1)

    def deadline(self, timeout: float) -> float:
        """When the case being run times out: ``timeout`` seconds after it began to be prepared
        (its computing resumes the clock where preparing left it), or after work was sent."""
        return max(self.since.value, self.last_reply) + timeout


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
    * ``judge=True`` makes workers judge each case themselves (under ``subnormals``, or the
      backend's declared policy, then re-judged under ``manifest`` if given) and tally the
      records of each reply: :meth:`WorkerPool.run_batches` yields those replies as
      :class:`Judged`, :meth:`WorkerPool.run` gives each record in ``Outcome.record`` and its
      results.jsonl line in ``Outcome.line``.
    * ``memory_limit_mb`` caps each worker's address space; ``recycle_after`` replaces a worker
      after that many cases (between batches).
    * ``spec_dir``: the user's spec folder (a spawned worker loads it); ``method`` forces
      ``fork`` or ``spawn`` (default: :func:`start_method`).
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
        and ``cases`` (the sequence later given to :meth:`run`) are inherited by forked workers
        instead of being loaded or sent again."""
        settings = dataclasses.replace(settings or PoolSettings(), **changes)
        self.settings = settings
        self.backend, self.workers, self.timeout = backend, max(1, settings.workers), settings.timeout
        self.load_timeout = max(LOAD_TIMEOUT, settings.timeout) if settings.load_timeout is None \
            else settings.load_timeout
        self.batch_size, self.recycle_after, self.recycled = (settings.batch_size,
                                                              settings.recycle_after, 0)
        self.method = settings.method or start_method()
        forked = self.method == "fork"
        self.options = {"spec_dir": settings.spec_dir, "memory_limit_mb": settings.memory_limit_mb,
                        "judge": settings.judge, "subnormals": settings.subnormals,
                        "manifest": settings.manifest, "inherited": forked,
                        "parent_pid": os.getpid()}
        self._inherit = {"specs": specs, "cases": cases if forked and cases is not None else ()}
        self._ctx = mp.get_context(self.method)
        self._pool: list[_Worker] = []
        self.info: dict = {}
        self.restarts = 0
        self.load_failures: list[str] = []   # why each worker given up could not load
        self._running = False   # past the start: a worker that fails to load is given up
        self.stats: dict = {}   # backend counters summed over workers (a killed one: as last reported)
        self.spent: dict = {}   # the workers' seconds judging, tallying, encoding (summed the same)

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
        return self

    def __exit__(self, *exc):
        if exc and exc[0] is not None:   # interrupted (Ctrl-C) or failed: no time for stats
            for worker in self._pool:
                self._stop(worker, kill=True)
            return
        for worker in self._pool:   # all are asked first, so that they shut down in parallel
            if worker.ready:
                self._ask_to_stop(worker)
        for worker in self._pool:
            self._stop(worker, kill=not worker.ready, asked=True)

    def _start(self) -> _Worker:
        """Start a worker; it says hello (or why it could not load) once its backend is loaded.
        It starts with SIGINT blocked (the worker ignores it once it runs; a spawned one would
        otherwise print a KeyboardInterrupt traceback from its imports)."""
        parent, child = self._ctx.Pipe()
        finished = self._ctx.Value("q", 0, lock=False)   # only the worker writes these two
        since = self._ctx.Value("d", 0.0, lock=False)
        together = self._ctx.Value("b", 0, lock=False)
        if self.method == "fork":
            INHERITED.update(self._inherit)
            INHERITED["parent_ends"] = [end for end in INHERITED["parent_ends"] if not end.closed]
            INHERITED["parent_ends"].append(parent)
        process = self._ctx.Process(target=worker_main, daemon=True,
                                    args=(child, self.backend, self.options, finished, since,
                                          together))
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        child.close()
        return _Worker(process, parent, finished, since, together, started=time.monotonic())

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
        ready = set(wait([w.conn for w in watched] + [w.process.sentinel for w in watched],
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
            message = _first_message(worker)
        elif not worker.process.is_alive():
            message = None
        elif time.monotonic() >= worker.started + self.load_timeout:
            raise _LoadFailed(f"backend {self.backend!r} failed to load in {self.load_timeout:g} s")
        else:
            return
        if message is None:
            worker.process.join(5)
            if fatal_raises:
                raise BackendLoadError(f"backend {self.backend!r}: "
                                       f"{death_message(worker.process.exitcode)} while loading")
            raise _LoadFailed(f"backend {self.backend!r} failed to load: "
                              f"{death_message(worker.process.exitcode)} while loading")
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
                    message = worker.conn.recv()
                    if isinstance(message, tuple) and message[0] == "stats":
                        worker.stats = message[1]
                        break
            except (BrokenPipeError, OSError, EOFError):
                pass
        for total, counts in ((self.stats, worker.stats), (self.spent, worker.spent)):
            for key, value in counts.items():   # a killed worker's as of its last reply
                total[key] = total.get(key, 0) + value
        worker.process.join(5)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(5)
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

    def _send(self, worker: _Worker, batch: list) -> None:
        """Send ``batch`` (inherited cases go as their index). A worker that has just died
        cannot take it: the batch stays pending, and :meth:`_collect` finds the death (the
        case it was running crashed) and sends the rest again."""
        try:
            worker.conn.send(batch)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _case(self, item):
        """The case ``item`` stands for in a batch (an int: the index of an inherited case)."""
        return self._inherit["cases"][item] if type(item) is int else item

    def run(self, cases: Iterable) -> Iterator[tuple[object, Outcome]]:
        """Yield ``(case, outcome)`` for every case, in completion order."""
        for done in self.run_batches(cases):
            yield from done.pairs() if isinstance(done, Judged) else done

    def run_batches(self, cases: Iterable) -> Iterator["list[tuple[object, Outcome]] | Judged"]:
        """:meth:`run`, a reply at a time: a list of ``(case, outcome)`` pairs (unjudged, or
        one crashed or timed-out case) or, when the workers judge, a :class:`Judged` reply.
        If no worker is left that could load the backend, the cases not run yet come as
        ``error`` pairs naming why."""
        inherited = self._inherit["cases"]
        # the cases workers inherited travel, and wait in queues, as their indices
        queue = LazyQueue(range(len(inherited)) if inherited and cases is inherited else cases)
        while queue or any(w.pending for w in self._pool):
            if not self._pool:
                yield from self._unloaded(queue)
                return
            for worker in list(self._pool):
                if not worker.ready:
                    continue
                if self.recycle_after and worker.completed >= self.recycle_after \
                        and not worker.pending and queue:
                    self._replace(worker, kill=False, recycle=True)  # jax never frees executables
                    continue
                # two batches in flight: the next is there when the worker finishes the last
                due = self.recycle_after and worker.completed + len(worker.pending) >= self.recycle_after
                if queue and not due and len(worker.batches) < 2:
                    batch = queue.take(self.batch_size)
                    if not worker.pending:   # else the clock runs for the case being computed
                        worker.last_reply = time.monotonic()
                    worker.pending.extend(batch)
                    worker.batches.append(len(batch))
                    self._send(worker, batch)
            yield from self._collect(queue)

    def _unloaded(self, queue: "LazyQueue"):
        """Every case left in ``queue`` as an ``error``: no worker could load the backend."""
        reason = self.load_failures[-1] if self.load_failures else "no worker"
        while queue:
            yield [(self._case(item), Outcome("error", message=reason, on_input=False))
                   for item in queue.take(REPLY_BATCH)]

    def _collect(self, queue: "LazyQueue"):
        busy = [w for w in self._pool if w.pending]
        ready = self._wait()
        for worker in busy:
            if worker.conn in ready or worker.process.sentinel in ready:
                yield from self._replies(worker, queue)
            elif time.monotonic() >= worker.deadline(self.timeout):
                culprit = self._culprit(worker)
                case = None if culprit is None else self._case(worker.pending[culprit])
                queue.extendleft(reversed(self._replace(worker, kill=True, culprit=culprit)))
                if case is not None:
                    yield [(case, Outcome("timeout", message=f"no result within {self.timeout:g} s"))]

    @staticmethod
    def _culprit(worker: _Worker) -> int | None:
        """The index in ``pending`` of the case that crashed or hung ``worker``; None if it
        was computing cases packed together (any of them may be the cause: they all run
        again, one at a time, see :class:`CaseByCase`)."""
        return None if worker.together.value else worker.running()

    def _replies(self, worker: _Worker, queue: "LazyQueue"):
        """The replies ``worker`` has sent; if it died, the case it was running as a ``crash``,
        and the rest it owed back into ``queue`` (for a new worker, started here)."""
        died = False
        try:
            while worker.pending and worker.conn.poll():
                replies = _unpack(worker.conn.recv())
                worker.last_reply = time.monotonic()
                worker.completed += len(replies)
                left = len(replies)
                while left:
                    taken = min(left, worker.batches[0])
                    worker.batches[0] -= taken
                    left -= taken
                    if not worker.batches[0]:
                        worker.batches.popleft()
                pending, case = worker.pending, self._case
                cases = [case(pending.popleft()) for _ in range(len(replies))]
                if isinstance(replies, Judged):
                    replies.cases, worker.stats, worker.spent = cases, replies.stats, replies.spent
                    yield replies
                else:
                    yield list(zip(cases, replies))
            died = bool(worker.pending) and not worker.process.is_alive()
        except (EOFError, ConnectionResetError, OSError):
            died = True
        if died:   # replaced outside the except clause: a forked worker would inherit its context
            worker.process.join(5)
            culprit = self._culprit(worker)
            case = None if culprit is None else self._case(worker.pending[culprit])
            message = death_message(worker.process.exitcode)
            queue.extendleft(reversed(self._replace(worker, kill=True, culprit=culprit)))
            if case is not None:
                yield [(case, Outcome("crash", message=message))]


def _first_message(worker: _Worker):
    """A starting worker's first message, or None if it died before sending one."""
    try:
        return worker.conn.recv()
    except (EOFError, OSError):
        return None
