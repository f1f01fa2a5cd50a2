"""Backends run in worker processes; a crash or hang costs one case, never the run.

The parent keeps up to two batches of cases in flight to each worker (the next one waits while
the worker runs the last). The worker replies with lists of outcomes (every ``REPLY_BATCH`` cases,
or sooner once ``REPLY_INTERVAL`` seconds have passed since its last reply; a judging worker sends
their result lines and tally instead, see :class:`Judged`) and counts the cases it has finished
in a shared counter. If a worker dies (segfault, SIGFPE, abort, OOM kill), the counter
says which case it was running: that case gets a ``crash`` outcome; if a case runs past the
timeout the worker is killed and the case gets ``timeout``. Either way the worker is replaced and
the cases it still owed, including those it had finished but not yet reported, are sent again.

Workers are forked where that is safe (the parent runs no other threads and has loaded no backend
runtime, see :func:`start_method`): they inherit the specs and the run's cases, so a batch is a list
of indices and a worker starts without importing conform again. Elsewhere they are spawned and the
cases travel pickled. A replacement worker starts in the background while the others go on.
"""
from __future__ import annotations

import collections
import gc
import multiprocessing as mp
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Iterable, Iterator

import orjson

from conform.harness.backends.base import Unsupported
from conform.harness.backends.models import prepare_case, takes_model


@dataclass
class Outcome:
    """What a backend did with one case."""

    kind: str                      # ok | unsupported | error | crash | timeout
    outputs: list | None = None
    message: str = ""
    traceback: str = ""
    seconds: float = 0.0
    record: dict | None = None     # the judged result record, when the worker judges (see WorkerPool)
    line: bytes | None = None      # ``record`` as its results.jsonl line (UTF-8, no newline)
    raised: BaseException | None = field(default=None, repr=False, compare=False)  # in the worker


#: A worker replies after this many cases, or after REPLY_INTERVAL seconds, whichever comes first.
#: Batches (sent) and replies of 256 cases rather than 64: the worker judges bigger groups at
#: once and both sides make a quarter of the round trips (a warm 116k-case onnxruntime run:
#: 10.7 -> 9.6 s, parent and worker CPU both lower).
REPLY_BATCH = 256
REPLY_INTERVAL = 0.05


class BackendLoadError(Exception):
    """The backend could not be imported or instantiated in a worker."""


# Modules whose threads or device state must not be copied into a forked child.
_FORK_UNSAFE_MODULES = ("jax", "jaxlib", "onnxruntime", "openvino", "iree", "tensorflow", "torch")

# What a forked worker inherits from the parent: the specs, the run's cases (a batch names them by
# index) and the parent's ends of every worker pipe (which the child closes, so that a worker
# sees the parent go away even while its siblings live).
_INHERITED: dict = {"specs": None, "cases": (), "parent_ends": []}


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


def reuse_freed_memory() -> None:
    """Have glibc keep large freed blocks for reuse instead of unmapping them. Judging a chunk of
    a float32 sweep allocates and frees some thirty 32 MB arrays (and the parent builds and
    pickles 32 MB batches); mapped afresh each time, their pages faulted in again and cost a
    third of a chunk's time. Without glibc nothing changes."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 256 << 20)   # M_MMAP_THRESHOLD: blocks below this come from the heap
        libc.mallopt(-1, 512 << 20)   # M_TRIM_THRESHOLD: keep up to this much free heap
    except (OSError, AttributeError):
        pass


def _worker_main(conn, backend_name: str, options: dict, finished) -> None:
    """Load the backend, then run batches of cases; ``finished`` counts the cases done (while
    one is being run: those before it).
    A batch holds cases, or indices into the inherited cases of a forked worker."""
    from numpy import asarray

    from conform.harness.judge import raising_allowed, result_records
    from conform.harness.registry import load_backend_class
    from conform.reports import Tally, encode
    from conform.spec import load_specs

    reuse_freed_memory()
    # What a forked worker inherits (the corpus: a million small objects) is never garbage:
    # keep the cyclic collector off it, so that it neither walks those objects nor writes to
    # their pages (which would copy them).
    gc.freeze()
    gc.enable()
    inherited = _INHERITED if options.get("inherited") else {"specs": None, "cases": ()}
    for end in inherited.get("parent_ends", ()):
        end.close()
    shared = inherited["cases"]
    if options.get("memory_limit_mb"):
        import resource

        cap = options["memory_limit_mb"] << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
    try:
        specs = inherited["specs"] or load_specs(options.get("spec_dir"))
        backend = load_backend_class(backend_name)()
        policy = options.get("subnormals") or backend.subnormals
        manifest = options.get("manifest")
        conn.send(("hello", {"name": backend.name or backend_name, "version": backend.version(),
                             "device": backend.device(), "subnormals": backend.subnormals,
                             "model_format": backend.model_format}))
        with_model = takes_model(backend)
    except BaseException:  # report every failure to load, including SystemExit from imports
        conn.send(("fatal", traceback.format_exc()))
        return

    spent = {"judge": 0.0, "tally": 0.0, "encode": 0.0}   # seconds, reported with every reply

    def settle(done: list):
        """The outcomes of ``done`` (case, outcome) pairs; when the pool judges, they are judged
        here together (in parallel across workers, and no arrays travel back) and go back as
        one :func:`_pack_judged` message."""
        for case, outcome in done:
            if outcome.raised is not None:
                if not options.get("judge") or not raising_allowed(specs[case.op], case):
                    outcome.traceback = "".join(traceback.format_exception(outcome.raised))
                outcome.raised = None
        if not options.get("judge"):
            return [outcome for _, outcome in done]
        start = time.perf_counter()
        records = result_records([(specs[case.op], case, outcome) for case, outcome in done],
                                 backend_name, policy)
        judged = time.perf_counter()
        share = round((judged - start) / len(done), 6)   # each case's part
        tally = Tally()
        for i, record in enumerate(records):
            record["judge_seconds"] = share
            if manifest is not None:
                records[i] = record = manifest.apply(record)
            tally.add(record, ref=i)
        tallied = time.perf_counter()
        lines = [encode(record) for record in records]
        spent["judge"] += judged - start
        spent["tally"] += tallied - judged
        spent["encode"] += time.perf_counter() - tallied
        return _pack_judged([outcome.kind for _, outcome in done], lines, tally.cells,
                            backend.stats(), spent)

    inbox = _inbox(conn)
    started = 0   # cases taken from batches so far
    while True:
        batch = inbox.get()
        if batch is None:  # shutdown: report the backend's counters (compilations, sessions)
            conn.send(("stats", backend.stats()))
            return
        done, last_reply = [], time.perf_counter()
        cases = [shared[item] if isinstance(item, int) else item for item in batch]
        # The batch's cases are prepared, then computed: the runtime's calls follow each other
        # (Backend.prepare). ``finished`` says which case is being prepared or computed.
        steps = []   # per case: the function computing it (or its outcome) and the seconds so far
        for offset, case in enumerate(cases):
            finished.value = started + offset
            start = time.perf_counter()   # the backend's time: preparing and computing alone
            try:
                step = prepare_case(backend, specs[case.op], case, with_model=with_model)
            except Exception as exc:
                step = _failed(exc)
            steps.append((step, time.perf_counter() - start))
        for offset, (case, (step, seconds)) in enumerate(zip(cases, steps)):
            if type(step) is Outcome:
                outcome = step
            else:
                finished.value = started + offset
                start = time.perf_counter()
                try:
                    outputs = step()
                except Exception as exc:
                    seconds += time.perf_counter() - start
                    outcome = _failed(exc)
                else:
                    seconds += time.perf_counter() - start
                    outcome = Outcome("ok", [*map(asarray, outputs)])
            outcome.seconds = seconds
            done.append((case, outcome))
            if len(done) >= REPLY_BATCH or time.perf_counter() - last_reply >= REPLY_INTERVAL:
                conn.send(settle(done))
                done, last_reply = [], time.perf_counter()
        started += len(cases)
        finished.value = started
        if done:
            conn.send(settle(done))


def _failed(exc: Exception) -> Outcome:
    """The outcome of a case whose preparing or computing raised ``exc``."""
    if isinstance(exc, Unsupported):
        return Outcome("unsupported", message=str(exc))
    outcome = Outcome("error", message=f"{type(exc).__name__}: {exc}")
    outcome.raised = exc   # its traceback is formatted if its record keeps it
    return outcome


def _pack_judged(kinds: list, lines: list, cells: dict, stats: dict, spent: dict) -> tuple:
    """Judged outcomes as one message: their kinds, their results.jsonl lines, the cells of
    their :class:`~conform.reports.Tally` (which name records by their index in ``lines``), the
    backend's counters and the seconds the worker spent judging, tallying and encoding, so far
    (a worker that crashes later has reported them)."""
    return ("judged", kinds, lines, cells, stats, spent)


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


def _inbox(conn) -> "queue.Queue":
    """Batches as they arrive, read by a thread: the parent sends the next batch while this
    worker still runs the last, and neither side can block the other with a full pipe."""
    import queue
    import threading

    inbox: queue.Queue = queue.Queue()

    def read() -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                message = None
            inbox.put(message)
            if message is None:
                return

    threading.Thread(target=read, daemon=True).start()
    return inbox


def _death_message(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"worker killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"worker killed by signal {-exitcode}"
    return f"worker exited with status {exitcode}"


#: A batch stops growing once its inputs reach this size (e.g. two chunks of a float32 sweep).
BATCH_BYTES = 32 << 20


class _LazyQueue:
    """Cases still to send: those handed back by a replaced worker first, then the source,
    which is read only as far as needed (a float32 sweep never sits in memory whole)."""

    def __init__(self, source: Iterable):
        self._returned: collections.deque = collections.deque()
        self._source = iter(source)
        self._next = next(self._source, _END)

    def __bool__(self) -> bool:
        return bool(self._returned) or self._next is not _END

    def take(self, count: int, max_bytes: int = BATCH_BYTES) -> list:
        """Up to ``count`` cases, stopping early once the inputs of those that will travel
        pickled reach ``max_bytes`` (an int is the index of an inherited case)."""
        batch, size = [], 0
        while len(batch) < count and size < max_bytes and (self._returned or self._next is not _END):
            if self._returned:
                case = self._returned.popleft()
            else:
                case, self._next = self._next, next(self._source, _END)
            batch.append(case)
            if type(case) is not int:
                size += sum(getattr(x, "nbytes", 0) for x in getattr(case, "inputs", ()))
        return batch

    def extendleft(self, cases) -> None:
        self._returned.extendleft(cases)


_END = object()


@dataclass
class _Worker:
    process: mp.Process
    conn: object
    finished: object                 # shared counter: cases the worker has finished
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


class WorkerPool:
    """A pool of isolated backend workers.

    >>> with WorkerPool("numpy", workers=1) as pool:   # doctest: +SKIP
    ...     for case, outcome in pool.run(cases): ...
    """

    def __init__(self, backend: str, *, workers: int = 1, timeout: float = 60.0,
                 batch_size: int = 256, spec_dir: str | None = None,
                 memory_limit_mb: int | None = None, judge: bool = False,
                 subnormals: str | None = None, recycle_after: int | None = None,
                 manifest=None, specs: dict | None = None, cases=None,
                 method: str | None = None):
        """``judge=True`` makes workers judge each case themselves (under ``subnormals``, or the
        backend's declared policy, then re-judged under ``manifest`` if given) and tally the
        records of each reply: :meth:`run_batches` yields those replies as :class:`Judged`,
        :meth:`run` gives each record in ``Outcome.record`` and its results.jsonl line in
        ``Outcome.line``.
        ``memory_limit_mb`` caps each worker's address space; ``recycle_after`` replaces a worker
        after that many cases (between batches). ``specs`` (the loaded ``spec_dir``) and
        ``cases`` (the sequence later given to :meth:`run`) are inherited by forked workers
        instead of being loaded or sent again. ``method`` forces ``fork`` or ``spawn``
        (default: :func:`start_method`)."""
        self.backend, self.workers, self.timeout = backend, max(1, workers), timeout
        self.batch_size, self.recycle_after, self.recycled = batch_size, recycle_after, 0
        self.method = method or start_method()
        forked = self.method == "fork"
        self.options = {"spec_dir": spec_dir, "memory_limit_mb": memory_limit_mb, "judge": judge,
                        "subnormals": subnormals, "manifest": manifest, "inherited": forked}
        self._inherit = {"specs": specs, "cases": cases if forked and cases is not None else ()}
        self._ctx = mp.get_context(self.method)
        self._pool: list[_Worker] = []
        self.info: dict = {}
        self.restarts = 0
        self.stats: dict = {}   # backend counters summed over workers (a killed one: as last reported)
        self.spent: dict = {}   # the workers' seconds judging, tallying, encoding (summed the same)

    def __enter__(self):
        reuse_freed_memory()
        self._pool = [self._start() for _ in range(self.workers)]   # they load in parallel
        try:
            for worker in self._pool:
                self._greet(worker, _first_message(worker))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for worker in self._pool:   # all are asked first, so that they shut down in parallel
            if worker.ready:
                self._ask_to_stop(worker)
        for worker in self._pool:
            self._stop(worker, kill=not worker.ready, asked=True)

    def _start(self) -> _Worker:
        """Start a worker; it says hello (or why it could not load) once its backend is loaded."""
        parent, child = self._ctx.Pipe()
        finished = self._ctx.Value("q", 0, lock=False)   # only the worker writes it
        if self.method == "fork":
            _INHERITED.update(self._inherit)
            _INHERITED["parent_ends"] = [end for end in _INHERITED["parent_ends"] if not end.closed]
            _INHERITED["parent_ends"].append(parent)
        process = self._ctx.Process(target=_worker_main,
                                    args=(child, self.backend, self.options, finished), daemon=True)
        process.start()
        child.close()
        return _Worker(process, parent, finished)

    def _greet(self, worker: _Worker, message) -> None:
        """Take a starting worker's first message: its hello, or the reason it failed to load."""
        if message is None:
            worker.process.join(5)
            raise BackendLoadError(f"backend {self.backend!r}: "
                                   f"{_death_message(worker.process.exitcode)} while loading")
        kind, payload = message
        if kind == "fatal":
            worker.process.join(5)
            raise BackendLoadError(f"backend {self.backend!r} failed to load:\n{payload}")
        self.info, worker.ready = payload, True

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

    def _replace(self, index: int, kill: bool, recycle: bool = False, culprit: int = 0) -> list:
        """Replace worker ``index`` (the new one starts in the background); returns the cases
        the old one still owed but for ``pending[culprit]``. A ``recycle`` (a planned
        replacement) is counted apart from restarts after failures."""
        worker = self._pool[index]
        leftover = [c for i, c in enumerate(worker.pending) if i != culprit]
        self._stop(worker, kill=kill)
        if recycle:
            self.recycled += 1
        else:
            self.restarts += 1
        self._pool[index] = self._start()
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
        one crashed or timed-out case) or, when the workers judge, a :class:`Judged` reply."""
        inherited = self._inherit["cases"]
        # the cases workers inherited travel, and wait in queues, as their indices
        queue = _LazyQueue(range(len(inherited)) if inherited and cases is inherited else cases)
        while queue or any(w.pending for w in self._pool):
            for index, worker in enumerate(list(self._pool)):
                if not worker.ready:
                    continue
                if self.recycle_after and worker.completed >= self.recycle_after \
                        and not worker.pending and queue:
                    self._replace(index, kill=False, recycle=True)  # jax never frees executables
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

    def _collect(self, queue: "_LazyQueue"):
        busy = [w for w in self._pool if w.pending]
        starting = [w for w in self._pool if not w.ready]
        now = time.monotonic()
        deadline = min((w.last_reply + self.timeout for w in busy), default=now + self.timeout)
        ready = wait([w.conn for w in busy + starting] + [w.process.sentinel for w in busy + starting],
                     timeout=max(0.0, deadline - now))
        for worker in starting:
            if worker.conn in ready or worker.process.sentinel in ready:
                self._greet(worker, _first_message(worker))
        for index, worker in enumerate(list(self._pool)):
            if not worker.pending:
                continue
            if worker.conn in ready or worker.process.sentinel in ready:
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
                    if worker.pending and not worker.process.is_alive():
                        raise EOFError
                except (EOFError, ConnectionResetError, OSError):
                    worker.process.join(5)
                    culprit = worker.running()
                    case = self._case(worker.pending[culprit])
                    message = _death_message(worker.process.exitcode)
                    queue.extendleft(reversed(self._replace(index, kill=True, culprit=culprit)))
                    yield [(case, Outcome("crash", message=message))]
            elif time.monotonic() - worker.last_reply >= self.timeout:
                culprit = worker.running()
                case = self._case(worker.pending[culprit])
                queue.extendleft(reversed(self._replace(index, kill=True, culprit=culprit)))
                yield [(case, Outcome("timeout", message=f"no result within {self.timeout:g} s"))]


def _first_message(worker: _Worker):
    """A starting worker's first message, or None if it died before sending one."""
    try:
        return worker.conn.recv()
    except (EOFError, OSError):
        return None
