"""The worker process: load the backend, then prepare and compute batches of cases (the compute stage).

This is the side of :mod:`conform.harness.run.isolation` that runs in the child. What it tells the
parent is made safe first (:mod:`conform.harness.run.boundary`), so that no message or return value of
the backend can cost another case. The worker ignores SIGINT (a Ctrl-C reaches the whole process
group; the parent decides what it means) and dies with its parent: on Linux through
``PR_SET_PDEATHSIG``, elsewhere when its pipe to the parent closes.
"""
from __future__ import annotations

import functools
import gc
import os
import signal
import sys
import time
from dataclasses import dataclass

from conform.harness.backends.base import Refused, Unsupported
from conform.harness.backends.models import legacy, prepare_case, takes_model
from conform.harness.judge.outcome import Outcome
from conform.harness.run.boundary import (WrongReturn, checked_outputs, described, exception_message,
                                      exception_traceback, output_count, safe_text)
from conform.harness.run.wire import computed_frame, pack, wire_array
from conform.harness.run.worker_io import NoStderrLog, PipeGuard, StderrLog


#: A worker replies after this many cases, or after REPLY_INTERVAL seconds, whichever comes first.
#: Batches (sent) and replies of 256 cases rather than 64: the worker judges bigger groups at
#: once and both sides make a quarter of the round trips (a warm 116k-case onnxruntime run:
#: 10.7 -> 9.6 s, parent and worker CPU both lower).
REPLY_BATCH = 256
REPLY_INTERVAL = 0.05
#: A case that a backend computes packed with the rest of its batch (``packs``: jax compiles a
#: batch as one program) has the time limits of the batch's cases from it to the end, up to this
#: many: a pack whose compilation alone passes one case's limit (XLA:CPU spends 1-7 s on each
#: igamma kernel, a batch holds dozens) is not killed and sent again case by case, and a hang
#: in a pack is still found (then each of its cases runs alone, under its own limit).
PACK_TIME_LIMITS = 8

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


def _die_with_parent(parent_pid: int | None) -> None:
    """Have the kernel kill this process when its parent dies (Linux), whatever it is doing:
    a worker busy in a hung backend call never reads its pipe. (The kernel means the thread that
    started the worker: pools are run from the thread that made them.)"""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if parent_pid is not None and os.getppid() != parent_pid:   # it died before the request took effect
        os._exit(0)


def _own_process_group() -> None:
    """Lead a process group of its own, first thing: every process the backend starts joins it,
    and the parent, stopping this worker, kills the group (:func:`kill_group`), so that none
    outlives the run (holding its output pipe open). Signals sent to conform's group (a
    terminal's Ctrl-C) no longer reach the worker: the parent decides what they mean."""
    try:
        os.setpgid(0, 0)
    except (OSError, AttributeError):   # not a POSIX system: the worker stays in conform's group
        pass


def kill_group(pid: int | None) -> None:
    """Kill what is left of the process group the worker ``pid`` led (the processes its
    backend started), once the worker itself is gone or being killed."""
    if pid is None or not hasattr(os, "killpg") or pid == os.getpgrp():
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):   # nothing left of it, or never formed
        pass


@dataclass(frozen=True)
class ComputeSettings:
    """What a worker needs besides its backend: the user's spec folder (None: the built-in
    suite), the cap on its address space, the pid of the parent to die with (None when the
    worker's parent is a fork server, see :mod:`conform.harness.run.isolation`), and the
    parent's context (:meth:`of_parent`)."""

    spec_dir: str | None = None
    memory_limit_mb: int | None = None
    parent_pid: int | None = None
    environment: dict | None = None   # the parent's environment, folder and import path, as
    folder: str | None = None         # they are when the pool starts (a fork server has them
    import_path: tuple = ()           # as they were when it started)

    @classmethod
    def of_parent(cls, **fields) -> "ComputeSettings":
        """Settings holding this process's environment, working folder and import path."""
        return cls(environment=dict(os.environ), folder=os.getcwd(), import_path=tuple(sys.path),
                   **fields)


def worker_main(conn, backend_name: str, settings: ComputeSettings, finished, since, together,
                parent_ends=(), stderr_log: StderrLog | None = None) -> None:
    """Load the backend, then compute batches of cases. ``finished`` counts the cases done (while
    one is being run: those before it); ``since`` is when (``time.monotonic()``) the case being
    run began to be prepared or computed, less the seconds it spent being prepared, so that the
    parent times each case on its own; ``together`` is not 0 while the backend computes a case
    that may compute others of its batch with it (a backend that ``packs``): a crash or hang then
    says nothing of which case caused it, and the case has ``together`` time limits
    (:data:`PACK_TIME_LIMITS`). ``parent_ends``: the parent's ends of the pipes a
    forked worker inherited (closed here, so that it sees the parent go away); ``stderr_log``:
    where its standard error goes (:mod:`~conform.harness.run.worker_io`; None: where the
    parent's goes).

    This is the compute stage, and all of the run that lives in the adapter's process: cases
    arrive without their oracle answers (:meth:`~conform.generators.Case.for_backend`), and
    what goes back is outputs, messages and the backend's counters, as :mod:`~conform.harness.run.wire`
    frames: judging, manifests and tallies happen in the parent (:mod:`conform.harness.run.stages`)."""
    _own_process_group()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})   # blocked while we started
    _die_with_parent(settings.parent_pid)
    reuse_freed_memory()
    gc.freeze()   # what the worker was started with is never garbage: the collector skips it
    gc.enable()
    for end in parent_ends:
        end.close()
    _take_the_parents_context(settings)
    if settings.memory_limit_mb:
        import resource

        cap = settings.memory_limit_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
    if stderr_log is not None:
        stderr_log.capture()
    loaded = _load(conn, backend_name, settings)
    if loaded is not None:
        _serve(conn, finished, since, together, *loaded, stderr_log or NoStderrLog())


def _take_the_parents_context(settings: ComputeSettings) -> None:
    """Take the parent's environment, working folder and import path, as ``settings`` says."""
    if settings.environment is not None:
        os.environ.clear()
        os.environ.update(settings.environment)
    if settings.folder is not None:
        try:
            os.chdir(settings.folder)
        except OSError:
            pass
    if settings.import_path:
        sys.path[:] = list(settings.import_path)


def _load(conn, backend_name: str, settings: ComputeSettings):
    """``(specs, backend, with_model, old)`` once the backend is loaded and has said hello; None (and a ``fatal``
    message with the traceback) if it could not load."""
    from conform.harness.run.claims import Claims
    from conform.harness.backends.registry import load_backend_class
    from conform.spec import load_specs

    try:
        specs = load_specs(settings.spec_dir)
        backend_class = load_backend_class(backend_name)
        backend = backend_class()
        with_model = takes_model(backend)
        conn.send_bytes(pack("hello", {
            "name": safe_text(backend.name or backend_name),
            "version": safe_text(backend.version()), "device": safe_text(backend.device()),
            "subnormals": safe_text(backend.subnormals),
            "model_format": None if backend.model_format is None else safe_text(backend.model_format),
            "binding": _binding(Claims, backend_class, backend_name)}))
        return specs, backend, with_model, legacy(backend)
    except BaseException as exc:  # report every failure to load, including SystemExit from imports
        conn.send_bytes(pack("fatal", exception_traceback(exc)))
        return None


def binding_main(conn, backend_name: str, settings: ComputeSettings) -> None:
    """Send the spec binding backend ``backend_name`` consumes (a ``binding`` frame), from its
    class alone: what :func:`~conform.harness.run.isolation.backend_binding` asks a process of
    its own, so that the asker never imports the adapter."""
    from conform.harness.run.claims import Claims
    from conform.harness.backends.registry import load_backend_class

    _take_the_parents_context(settings)
    try:
        found = _binding(Claims, load_backend_class(backend_name), backend_name)
    except BaseException:   # the workers will say why it does not load
        found = None
    conn.send_bytes(pack("binding", found))


def _binding(claims, backend_class, backend_name: str) -> str | None:
    """The spec binding the backend's model format consumes (None: every op, or unknown)."""
    try:
        binding = claims.of(backend_class, backend_name).binding
        return None if binding is None else safe_text(binding)
    except Exception:
        return None


def _serve(conn, finished, since, together, specs, backend, with_model: bool, old: bool,
           log: "StderrLog | NoStderrLog") -> None:
    """Compute the batches that arrive until the parent sends None; ``with_model``: whether the
    backend gets each case's model; ``old``: whether it implements contract 1 or 2 (``legacy``);
    ``log``: the worker's standard error (what a case writes there joins its outcome)."""
    outputs_of = functools.lru_cache(maxsize=None)(lambda op: output_count(specs[op]))
    guard = PipeGuard(conn)   # checked after each step the adapter takes, before the next
    inbox = _inbox(conn, guard)
    monotonic = time.monotonic
    started = 0   # cases taken from batches so far
    while True:
        batch = inbox.get()
        if batch is None:  # shutdown: report the backend's counters (compilations, sessions)
            conn.send_bytes(pack("stats", _counters(backend)))
            return
        done, last_reply, cases = [], monotonic(), list(batch)

        def prepared(offset: int, case) -> tuple:
            """The function computing ``case`` (or its outcome), the seconds so far, and what
            preparing it wrote to standard error."""
            finished.value = started + offset
            log.begin()
            since.value = start = monotonic()   # the backend's time: preparing and computing alone
            try:
                step = prepare_case(backend, specs[case.op], case, with_model=with_model, old=old)
            except Exception as exc:
                step = failed(exc)
            seconds = monotonic() - start
            guard.hold()
            return step, seconds, log.taken()

        # The batch's cases are prepared, then computed: the runtime's calls follow each other
        # (Backend.prepare). ``finished`` says which case is being prepared or computed.
        alone = isinstance(batch, CaseByCase)
        packs = not alone and bool(getattr(backend, "packs", False))
        steps = None if alone else [prepared(offset, case) for offset, case in enumerate(cases)]
        for offset, case in enumerate(cases):
            step, seconds, written = prepared(offset, case) if alone else steps[offset]
            if type(step) is Outcome:
                outcome = step
            else:
                finished.value = started + offset
                log.begin()
                start = monotonic()
                since.value = start - seconds   # the case's time limit covers its preparing
                if packs:   # (written only then: this loop is the run's hot path)
                    together.value = min(len(cases) - offset, PACK_TIME_LIMITS)
                outcome, spent = _computed(step, outputs_of(case.op))
                seconds += spent
                guard.hold()
                written += log.taken()
            if packs:
                together.value = 0
            outcome.seconds, outcome.stderr = seconds, written
            done.append(outcome)
            if _reply_due(done, last_reply, cases[offset + 1:offset + 2]):
                conn.send_bytes(computed_frame(done, _counters(backend)))
                done, last_reply = [], monotonic()
        started += len(cases)
        finished.value = started
        if done:
            conn.send_bytes(computed_frame(done, _counters(backend)))


def _computed(step, outputs: int) -> tuple:
    """``(outcome, seconds)`` of calling ``step`` (what ``prepare`` returned) for a case with
    ``outputs`` outputs."""
    start = time.monotonic()
    try:
        returned = step()
    except Exception as exc:
        seconds = time.monotonic() - start
        if callable(step):
            return failed(exc), seconds
        outcome = failed(WrongReturn(f"prepare() returned {described(step)}; "   # the adapter's fault
                                     "expected a function computing the outputs"))
        outcome.on_input = False
        return outcome, seconds
    seconds = time.monotonic() - start
    try:
        arrays = [wire_array(array) for array in checked_outputs(returned, outputs)]
    except Exception as exc:   # not arrays: the backend's fault, whatever the input
        outcome = failed(exc)
        outcome.on_input = False
        return outcome, seconds
    return Outcome("ok", arrays), seconds


class CaseByCase(list):
    """A batch to run one case at a time (prepare it, compute it, then the next): the cases a
    worker owed when it crashed or hung. A backend that works on a whole prepared batch at once
    (the jax backend packs it into one program) then computes each alone, so the next crash or
    timeout is blamed on the case that caused it, not on the first case of its pack."""


def _reply_due(done: list, last_reply: float, following) -> bool:
    """Whether the outcomes ``done`` go back now: enough of them, or enough time since the last
    reply, unless the next case (``following``, a slice) must be judged with the last one."""
    return (len(done) >= REPLY_BATCH or time.monotonic() - last_reply >= REPLY_INTERVAL) \
        and not joins_previous(following)


def joins_previous(following) -> bool:
    """Whether the first case of ``following`` (a slice: empty at a batch's end) is judged with
    the case before it (a length case with its partner: generators/_length.py), so that no
    batch or reply ends between the two."""
    extra = getattr(following[0], "extra", None) if len(following) else None
    return bool(extra) and "length_of" in extra


def _counters(backend) -> dict:
    """``backend.stats()``, its numbers only (they are summed over workers); nothing if it
    raises or returns no dict."""
    try:
        stats = backend.stats()
        return {safe_text(key): int(value) if isinstance(value, int) else float(value)
                for key, value in stats.items() if isinstance(value, (int, float))}
    except Exception:
        return {}


def failed(exc: Exception) -> Outcome:
    """The outcome of a case whose preparing or computing raised ``exc`` (an error on the
    case's input values unless the backend :class:`Refused` the model whatever they are)."""
    if isinstance(exc, Unsupported):
        return Outcome("unsupported", message=safe_text(exc))
    return Outcome("error", message=exception_message(exc), traceback=exception_traceback(exc),
                   on_input=not isinstance(exc, Refused))


def _inbox(conn, guard: PipeGuard | None = None):
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
            except (EOFError, OSError):   # the parent is gone, or the backend took the pipe
                if guard is not None:
                    guard.hold()
                os._exit(0)
            inbox.put(message)
            if message is None:
                return

    threading.Thread(target=read, daemon=True).start()
    return inbox
