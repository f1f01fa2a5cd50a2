"""The worker process: load the backend, then prepare, compute, judge and report batches of cases.

This is the side of :mod:`conform.harness.run.isolation` that runs in the child. What it tells the
parent is made safe first (:mod:`conform.harness.run.boundary`), so that no message or return value of
the backend can cost another case. The worker ignores SIGINT (a Ctrl-C reaches the whole process
group; the parent decides what it means) and dies with its parent: on Linux through
``PR_SET_PDEATHSIG``, elsewhere when its pipe to the parent closes.
"""
from __future__ import annotations

import gc
import os
import signal
import sys
import time
from dataclasses import dataclass, field

from conform.harness.backends.base import Unsupported
from conform.harness.backends.models import legacy, prepare_case, takes_model
from conform.harness.judge.outcome import Outcome
from conform.harness.run.boundary import (WrongReturn, checked_outputs, described, exception_message,
                                      exception_traceback, output_count, safe_text)


#: A worker replies after this many cases, or after REPLY_INTERVAL seconds, whichever comes first.
#: Batches (sent) and replies of 256 cases rather than 64: the worker judges bigger groups at
#: once and both sides make a quarter of the round trips (a warm 116k-case onnxruntime run:
#: 10.7 -> 9.6 s, parent and worker CPU both lower).
REPLY_BATCH = 256
REPLY_INTERVAL = 0.05

# What a forked worker inherits from the parent: the specs, the run's cases (a batch names them by
# index) and the parent's ends of every worker pipe (which the child closes, so that a worker
# sees the parent go away even while its siblings live).
INHERITED: dict = {"specs": None, "cases": (), "parent_ends": []}

_PR_SET_PDEATHSIG = 1


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


def _die_with_parent(parent_pid: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux), whatever it is doing:
    a worker busy in a hung backend call never reads its pipe. (The kernel means the thread that
    started the worker: pools are run from the thread that made them.)"""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:   # the parent died before the request took effect
        os._exit(0)


def worker_main(conn, backend_name: str, options: dict, finished, since, together) -> None:
    """Load the backend, then run batches of cases. ``finished`` counts the cases done (while
    one is being run: those before it); ``since`` is when (``time.monotonic()``) the case being
    run began to be prepared or computed, less the seconds it spent being prepared, so that the
    parent times each case on its own; ``together`` is 1 while the backend computes a case that
    may compute others of its batch with it (a backend that ``packs``): a crash or hang then
    says nothing of which case caused it.
    A batch holds cases, or indices into the inherited cases of a forked worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})   # blocked while we started
    _die_with_parent(options["parent_pid"])
    reuse_freed_memory()
    # What a forked worker inherits (the corpus: a million small objects) is never garbage:
    # keep the cyclic collector off it, so that it neither walks those objects nor writes to
    # their pages (which would copy them).
    gc.freeze()
    gc.enable()
    inherited = INHERITED if options.get("inherited") else {"specs": None, "cases": ()}
    for end in inherited.get("parent_ends", ()):
        end.close()
    if options.get("memory_limit_mb"):
        import resource

        cap = options["memory_limit_mb"] << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
    loaded = _load(conn, backend_name, options, inherited)
    if loaded is not None:
        _serve(conn, backend_name, options, finished, since, together, inherited["cases"], *loaded)


def _load(conn, backend_name: str, options: dict, inherited: dict):
    """``(specs, backend, with_model, old)`` once the backend is loaded and has said hello; None (and a ``fatal``
    message with the traceback) if it could not load."""
    from conform.harness.backends.registry import load_backend_class
    from conform.spec import load_specs

    try:
        specs = inherited["specs"] or load_specs(options.get("spec_dir"))
        backend = load_backend_class(backend_name)()
        with_model = takes_model(backend)
        conn.send(("hello", {"name": safe_text(backend.name or backend_name),
                             "version": safe_text(backend.version()),
                             "device": safe_text(backend.device()),
                             "subnormals": backend.subnormals,
                             "model_format": backend.model_format}))
        return specs, backend, with_model, legacy(backend)
    except BaseException as exc:  # report every failure to load, including SystemExit from imports
        conn.send(("fatal", exception_traceback(exc)))
        return None


def _serve(conn, backend_name: str, options: dict, finished, since, together, shared, specs, backend,
           with_model: bool, old: bool) -> None:
    """Run the batches that arrive until the parent asks to stop (sends None); ``with_model``:
    whether the backend is handed each case's model; ``old``: whether it implements contract 1
    or 2 (:func:`~conform.harness.backends.models.legacy`)."""
    from conform.harness.judge.judging import raising_allowed, result_records
    from conform.reports import Tally

    policy = options.get("subnormals") or backend.subnormals
    shown = backend.name or backend_name   # what messages call the backend
    manifest = options.get("manifest")
    spent = {"judge": 0.0, "tally": 0.0, "encode": 0.0}   # seconds, reported with every reply
    counts = {op: output_count(spec) for op, spec in specs.items()}   # outputs per op (programs
    # are not among the keys: see outputs_of)

    def outputs_of(op: str) -> int:
        found = counts.get(op)
        if found is None:
            found = counts[op] = output_count(specs[op])
        return found


    def settle(done: list):
        """The outcomes of ``done`` (case, outcome) pairs; when the pool judges, they are judged
        here together (in parallel across workers, and no arrays travel back) and go back as
        one :func:`pack_judged` message."""
        for case, outcome in done:
            if outcome.raised is not None:
                if not (options.get("judge") and outcome.on_input
                        and raising_allowed(specs[case.op], case)):
                    outcome.traceback = exception_traceback(outcome.raised)
                outcome.raised = None
        if not options.get("judge"):
            return [outcome for _, outcome in done]
        start = time.perf_counter()
        records = result_records([(specs[case.op], case, outcome) for case, outcome in done],
                                 shown, policy)
        judged = time.perf_counter()
        share = round((judged - start) / len(done), 6)   # each case's part
        tally = Tally()
        for i, record in enumerate(records):
            record["judge_seconds"] = share
            if manifest is not None:
                records[i] = record = manifest.apply(record)
            tally.add(record, ref=i)
        tallied = time.perf_counter()
        lines = _encoded(records)
        spent["judge"] += judged - start
        spent["tally"] += tallied - judged
        spent["encode"] += time.perf_counter() - tallied
        return pack_judged([outcome.kind for _, outcome in done], lines, tally.cells,
                           _counters(backend), spent)

    inbox = _inbox(conn)
    monotonic = time.monotonic
    started = 0   # cases taken from batches so far
    while True:
        batch = inbox.get()
        if batch is None:  # shutdown: report the backend's counters (compilations, sessions)
            conn.send(("stats", _counters(backend)))
            return
        done, last_reply = [], monotonic()
        cases = [shared[item] if isinstance(item, int) else item for item in batch]

        def prepared(offset: int, case) -> tuple:
            """The function computing ``case`` (or its outcome) and the seconds so far."""
            finished.value = started + offset
            since.value = start = monotonic()   # the backend's time: preparing and computing alone
            try:
                step = prepare_case(backend, specs[case.op], case, with_model=with_model, old=old)
            except Exception as exc:
                step = failed(exc)
            return step, monotonic() - start

        # The batch's cases are prepared, then computed: the runtime's calls follow each other
        # (Backend.prepare). ``finished`` says which case is being prepared or computed.
        alone = isinstance(batch, CaseByCase)
        packs = not alone and bool(getattr(backend, "packs", False))
        steps = None if alone else [prepared(offset, case) for offset, case in enumerate(cases)]
        for offset, case in enumerate(cases):
            step, seconds = prepared(offset, case) if alone else steps[offset]
            if type(step) is Outcome:
                outcome = step
            else:
                finished.value = started + offset
                start = monotonic()
                since.value = start - seconds   # the case's time limit covers its preparing
                if packs:   # (written only then: this loop is the run's hot path)
                    together.value = 1
                try:
                    returned = step()
                except Exception as exc:
                    seconds += monotonic() - start
                    if callable(step):
                        outcome = failed(exc)
                    else:   # prepare() returned no function: the adapter's fault
                        outcome = failed(WrongReturn(f"prepare() returned {described(step)}; "
                                                     "expected a function computing the outputs"))
                        outcome.on_input = False
                else:
                    seconds += monotonic() - start
                    try:
                        outcome = Outcome("ok", checked_outputs(returned, outputs_of(case.op)))
                    except Exception as exc:   # not arrays: the backend's fault, whatever the input
                        outcome = failed(exc)
                        outcome.on_input = False
            if packs:
                together.value = 0
            outcome.seconds = seconds
            done.append((case, outcome))
            if len(done) >= REPLY_BATCH or monotonic() - last_reply >= REPLY_INTERVAL:
                conn.send(settle(done))
                done, last_reply = [], monotonic()
        started += len(cases)
        finished.value = started
        if done:
            conn.send(settle(done))


class CaseByCase(list):
    """A batch to run one case at a time (prepare it, compute it, then the next): the cases a
    worker owed when it crashed or hung. A backend that works on a whole prepared batch at once
    (the jax backend packs it into one program) then computes each alone, so the next crash or
    timeout is blamed on the case that caused it, not on the first case of its pack."""


def _counters(backend) -> dict:
    """``backend.stats()``, its numbers only (they are summed over workers); nothing if it
    raises or returns no dict."""
    try:
        stats = backend.stats()
        return {safe_text(key): value for key, value in stats.items()
                if isinstance(value, (int, float))}
    except Exception:
        return {}


def _encoded(records: list) -> list:
    """The records' results.jsonl lines; a record whose strings no encoder takes (whatever let
    them through) is made safe first, string by string."""
    from conform.reports import encode

    lines = []
    for record in records:
        try:
            lines.append(encode(record))
        except (TypeError, ValueError):   # UnicodeEncodeError is a ValueError
            lines.append(encode(_with_safe_strings(record)))
    return lines


def _with_safe_strings(value):
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_text(k): _with_safe_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_with_safe_strings(v) for v in value]
    return value


def failed(exc: Exception) -> Outcome:
    """The outcome of a case whose preparing or computing raised ``exc``."""
    if isinstance(exc, Unsupported):
        return Outcome("unsupported", message=safe_text(exc))
    outcome = Outcome("error", message=exception_message(exc))
    outcome.raised = exc   # its traceback is formatted if its record keeps it
    return outcome


def pack_judged(kinds: list, lines: list, cells: dict, stats: dict, spent: dict) -> tuple:
    """Judged outcomes as one message: their kinds, their results.jsonl lines, the cells of
    their :class:`~conform.reports.Tally` (which name records by their index in ``lines``), the
    backend's counters and the seconds the worker spent judging, tallying and encoding, so far
    (a worker that crashes later has reported them)."""
    return ("judged", kinds, lines, cells, stats, spent)


def _inbox(conn) -> "queue.Queue":
    """Batches as they arrive, read by a thread: the parent sends the next batch while this
    worker still runs the last, and neither side can block the other with a full pipe. The
    parent closes its end only after this worker has stopped: if the pipe closes first, the
    parent is gone, and so is the reason to go on (even in the middle of a case)."""
    import queue
    import threading

    inbox: queue.Queue = queue.Queue()

    def read() -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                os._exit(0)
            inbox.put(message)
            if message is None:
                return

    threading.Thread(target=read, daemon=True).start()
    return inbox
