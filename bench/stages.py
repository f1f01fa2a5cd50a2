"""Where every second of one ``conform`` command goes: a driver that runs the command with timers
on the stages of its pipeline, in every process it starts, and the arithmetic that attributes the
command's wall time to those stages.

    CONFORM_STAGES_DIR=DIR python bench/stages.py run --backend onnxruntime ...

runs ``conform run ...`` in this process, as the ``conform`` command does, after wrapping the
functions each stage is made of (:data:`PARENT_STAGES`, :data:`WORKER_STAGES`,
:data:`GENERATION_STAGES`). Each process keeps the seconds of each stage *exclusively* (a
stage's time excludes the stages it calls: building a model inside preparing a case counts as
building only) and writes them to ``DIR/<pid>.json`` (workers and judge processes every
:data:`DUMP_INTERVAL` seconds, so one that crashes loses little): the parent (it judges, applies
the manifest and encodes a short run's replies), the judge processes a long run forks from it and
the children that draw part of a cold corpus (forked: they inherit the wrappers), and the workers.
Workers start from a multiprocessing fork server, not from the parent: this module adds itself to
the fork server's preload, and, imported there, wraps the workers' functions, which every worker
forked from it inherits (on an older commit workers are forked from the parent).
:func:`attribute` (bench/attribution.py) then reads them back: the parent's stages are the command's timeline; the
time the parent spends waiting for its workers (and judge processes) is shared out among their
stages in proportion to their seconds. What no stage covers is ``unattributed``.

Each wrapped call costs ~1 us; a case passes through four or five of them.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import json
import os
import sys
import threading
import time

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:   # (loaded by its path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attribution import attribute, cpu_seconds  # noqa: E402,F401  (bench/attribution.py)

#: Seconds between two writes of a worker's figures.
DUMP_INTERVAL = 0.25

clock, cpu_clock = time.perf_counter, time.thread_time
_MAIN = threading.main_thread().ident
_state = {"spent": {}, "cpu": {}, "stack": [], "role": "parent", "born": time.time(),
          "dumped": 0.0, "pid": os.getpid()}


def _add(stage: str, wall: float, cpu: float) -> None:
    _state["spent"][stage] = _state["spent"].get(stage, 0.0) + wall
    _state["cpu"][stage] = _state["cpu"].get(stage, 0.0) + cpu


def _enter(stage: str) -> None:
    now, used, stack = clock(), cpu_clock(), _state["stack"]
    if stack:
        top = stack[-1]
        _add(top[0], now - top[1], used - top[2])
    stack.append([stage, now, used])


def _leave() -> None:
    now, used, stack = clock(), cpu_clock(), _state["stack"]
    stage, began, began_cpu = stack.pop()
    _add(stage, now - began, used - began_cpu)
    if stack:
        stack[-1][1], stack[-1][2] = now, used


def _timed(function, stage: str):
    """``function``, its calls from the main thread counted as ``stage``."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if threading.get_ident() != _MAIN:
            return function(*args, **kwargs)
        _enter(stage)
        try:
            return function(*args, **kwargs)
        finally:
            _leave()
    return wrapper


def _patch(target: str, stage: str) -> None:
    """Wrap ``module:attribute`` (or ``module:Class.method``) as ``stage``."""
    module_name, name = target.split(":")
    *path, last = name.split(".")
    try:   # an older commit (the regression guard runs this on one) may lack a target
        owner = importlib.import_module(module_name)
        for part in path:
            owner = getattr(owner, part)
        original = getattr(owner, last)
    except (ImportError, AttributeError):
        MISSING.append(target)
        return
    static = inspect.getattr_static(owner, last) if path else None
    if isinstance(static, (staticmethod, classmethod)):   # a method of a class, kept as it was
        wrapped = type(static)(_timed(static.__func__, stage))
    else:
        wrapped = _timed(original, stage)
    setattr(owner, last, wrapped)
    if not path:   # a function other modules imported by name: theirs too
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("conform.") \
                    and getattr(module, last, None) is original:
                setattr(module, last, wrapped)


#: The targets this process could not find (their time counts in the stage calling them).
MISSING: list = []


#: The parent's stages (its timeline): module:function -> stage. Its judge, manifest and encode
#: stages (judging is in the parent since the workers only compute) are also those of the judge
#: processes a long run forks from it.
PARENT_STAGES = {
    "conform.harness.run.runner:_generate": "generation",
    "conform.harness.run.processes:backend_binding": "binding (fork server start)",
    "conform.generators._suite:fill_corpus": "generation (drawing processes)",
    "conform.generators._corpus_format:read": "corpus read",
    "conform.generators._corpus:prune_corpus": "corpus prune",
    "conform.harness.run.isolation:WorkerPool.__enter__": "worker start",
    "conform.harness.run.isolation:WorkerPool.__exit__": "worker stop",
    "conform.harness.run.isolation:WorkerPool._send": "IPC send",
    "conform.harness.run.wire:read_reply": "IPC receive",
    "conform.harness.run.stages:JudgeProcesses.__init__": "judge start",
    "conform.harness.run.stages:JudgeProcesses.submit": "IPC send",
    "conform.harness.run.stages:JudgeProcesses.collect": "IPC receive",
    "conform.harness.run.stages:JudgeProcesses.close": "judge stop",
    "conform.harness.run.stages:judge_stage": "judge",
    "conform.harness.run.stages:manifest_stage": "manifest",
    "conform.harness.run.stages:encode_stage": "encode",
    "conform.harness.judge.judging:result_records": "judge",
    "conform.harness.assurance.manifests:Manifest.apply": "manifest",
    "conform.harness.run.runner:result_record": "judge",
    "conform.reports:Tally.add": "tally",
    "conform.reports:ResultWriter.write_lines": "write",
    "conform.reports:ResultWriter.write": "write",
    "conform.reports:Tally.merge": "tally",
    "conform.harness.run.runner:write_summary": "summary",
    "conform.reports:write_reports": "reports",
    "conform.harness.run.runner:run_key": "run key",
}
#: The stages of a process that draws cases (the parent, or a child of ``fill_corpus``).
GENERATION_STAGES = {
    "conform.generators._drawing:draw_plans": "draw",
    "conform.generators._suite:materialize": "fill",
    "conform.generators._suite:edge_sweep_case": "fill",
    "conform.generators._suite:broadcast_case": "fill",
    "conform.generators._suite:edge_case_cases": "fill",
    "conform.generators._suite:critical_cases": "fill",
    "conform.generators._suite:midpoint_case": "fill",
    "conform.generators._suite:_answered": "oracle",
    "conform.generators._corpus_format:write": "corpus write",
}
#: A worker's stages (its own loop, ``worker loop``, holds what no other stage does). A worker
#: only computes; its reply is encoded by ``computed_frame``.
WORKER_STAGES = {
    "conform.harness.run.worker:_load": "worker start",
    "conform.harness.run.worker:prepare_case": "prepare",
    "conform.harness.backends.models:Model.build": "model build",
    "conform.harness.run.wire:computed_frame": "encode",
    "conform.harness.run.worker:exception_traceback": "traceback",
}
#: Targets of older commits (the guard runs this file on them), gone here.
FORMER_STAGES = {
    "conform.generators._suite:expect": "oracle",
    "conform.harness.run.isolation:_unpack": "IPC receive",
    "conform.harness.run.worker:_encoded": "encode",
}


def _runtime_phases() -> None:
    """A backend's :class:`RuntimeClock` phases (compile, load, execute, model_build) as stages."""
    from conform.harness.backends import base

    original = base.RuntimeClock.timing
    names = {"model_build": "model build", "compile": "session/compile", "load": "load",
             "execute": "execute"}

    @contextlib.contextmanager
    def timing(self, phase):
        main = threading.get_ident() == _MAIN
        if main:
            _enter(names.get(phase, phase))
        try:
            with original(self, phase):
                yield
        finally:
            if main:
                _leave()

    base.RuntimeClock.timing = timing


def _child_hooks(role: str) -> None:
    """In a worker or a judge process: time waiting for work (``wait for a batch (IPC)``) and
    sending replies (``IPC send``), and write the figures as they grow; in a worker, time the
    computing step prepare returns (``execute``)."""
    from multiprocessing import connection

    from conform.harness.run import worker

    if role == "worker":
        try:   # the jax backend's kernels per cell (bench/kernels.py)
            import kernels

            kernels.install()
        except (ImportError, AttributeError) as exc:
            MISSING.append(f"kernels: {exc}")
        prepare = worker.prepare_case

        def prepare_case(*args, **kwargs):
            step = prepare(*args, **kwargs)
            return _timed(step, "execute") if callable(step) else step

        worker.prepare_case = prepare_case
    for name in ("send", "send_bytes"):   # replies: pickled (older commits), or wire frames
        setattr(connection.Connection, name, _sending(getattr(connection.Connection, name)))
    for name in ("recv", "recv_bytes"):   # (the parent's timers, inherited by a forked child)
        method = getattr(connection.Connection, name)
        setattr(connection.Connection, name, getattr(method, "__wrapped__", method))
    inbox = worker._inbox
    waiting = "wait for a batch (IPC)" if role == "worker" else "wait for a reply (IPC)"

    def timed_inbox(conn, *rest):
        queue = inbox(conn, *rest)
        queue.get = _timed(queue.get, waiting)
        return queue

    worker._inbox = timed_inbox


def _sending(send):
    """``Connection.send`` (or ``send_bytes``) timed as ``IPC send``, writing the figures after
    it every :data:`DUMP_INTERVAL` seconds."""
    @functools.wraps(send)
    def sent(self, *args, **kwargs):
        _enter("IPC send")
        try:
            return send(self, *args, **kwargs)
        finally:
            _leave()
            _dump_when_due()
    return sent


def _dump_when_due() -> None:
    """Write this process's figures if :data:`DUMP_INTERVAL` seconds have passed since the last."""
    if time.time() - _state["dumped"] >= DUMP_INTERVAL:
        dump()


def _parent_hooks() -> None:
    """In the parent: its waits for the workers and judge processes (``waiting for workers``,
    unless they are still loading: ``worker start``) and its reading of their replies
    (``IPC receive``)."""
    from multiprocessing import connection

    from conform.harness.run import isolation

    def waiting(wait):
        @functools.wraps(wait)
        def waited(*args, **kwargs):
            stack = _state["stack"]
            if not stack or stack[-1][0] in ("worker start", "waiting for workers") \
                    or threading.get_ident() != _MAIN:
                return wait(*args, **kwargs)
            _enter("waiting for workers")
            try:
                return wait(*args, **kwargs)
            finally:
                _leave()
        return waited

    isolation.WorkerPool._wait = waiting(isolation.WorkerPool._wait)
    if getattr(isolation, "wait", None) is connection.wait:   # also waiting for judge processes
        isolation.wait = waiting(connection.wait)
    for name in ("recv", "recv_bytes"):
        setattr(connection.Connection, name,
                _timed(getattr(connection.Connection, name), "IPC receive"))


def _forked(role: str, function):
    """``function`` as the entry of a forked process of ``role``: fresh figures, written at the
    end (and, for workers and judges, as they grow)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if _state["pid"] != os.getpid():   # the first call in this process
            _state.update(spent={}, cpu={}, stack=[], role=role, born=time.time(),
                          pid=os.getpid(), dumped=0.0)
            if role in ("worker", "judge"):
                _child_hooks(role)
            from multiprocessing import util

            util.Finalize(None, dump, exitpriority=0)   # at the process's normal end
        _enter(f"{role} loop")
        try:
            return function(*args, **kwargs)
        finally:
            _leave()
            _dump_when_due()
    return wrapper


def dump() -> None:
    """Write this process's figures to ``$CONFORM_STAGES_DIR/<pid>.json`` (nothing in a process
    that only inherited another's figures: a child forked without an entry of ours)."""
    folder = os.environ.get("CONFORM_STAGES_DIR")
    if not folder or _state["pid"] != os.getpid():
        return
    now, used = clock(), cpu_clock()
    spent, cpu = dict(_state["spent"]), dict(_state["cpu"])
    for stage, began, began_cpu in _state["stack"]:   # what the open stages have spent so far
        spent[stage] = spent.get(stage, 0.0) + now - began
        cpu[stage] = cpu.get(stage, 0.0) + used - began_cpu
    _state["dumped"] = time.time()
    if _state["role"] == "drawing":   # between slices: the process pool's queues
        spent["slices queue (IPC)"] = max(0.0, _state["dumped"] - _state["born"]
                                          - sum(spent.values()))
    figures = {"role": _state["role"], "born": _state["born"], "at": _state["dumped"],
               "spent": spent, "cpu": cpu, "missing": MISSING}
    if "kernels" in sys.modules:
        figures["kernels"] = sys.modules["kernels"].figures()
    path = os.path.join(folder, f"{os.getpid()}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(figures, f)
    os.replace(path + ".tmp", path)


def _patch_tables() -> None:
    for table in (PARENT_STAGES, GENERATION_STAGES, WORKER_STAGES):
        for target, stage in table.items():
            _patch(target, stage)
    for target, stage in FORMER_STAGES.items():   # older commits' (missing here: not reported)
        missing = len(MISSING)
        _patch(target, stage)
        del MISSING[missing:]


def _entries() -> None:
    """The entries of the processes conform starts, as ours (:func:`_forked`)."""
    from conform.harness.run import worker

    worker.worker_main = _forked("worker", worker.worker_main)
    for name in ("isolation", "processes"):   # whichever imported it by name
        module = sys.modules.get(f"conform.harness.run.{name}")
        if module is not None and hasattr(module, "worker_main"):
            module.worker_main = worker.worker_main
    try:   # judge processes (forked from the parent), where the commit has them
        from conform.harness.run import stages
    except ImportError:
        return
    if hasattr(stages, "_judge_main"):
        stages._judge_main = _forked("judge", stages._judge_main)


def _preload_ourselves() -> None:
    """Have the fork server that workers start from import this module too (after conform's own
    preload), so that each worker forked from it runs with the timers: see :func:`_in_fork_server`.
    (The fork server does not take this process's import path: it finds this module through
    ``PYTHONPATH``, set while it starts.)"""
    from multiprocessing import forkserver

    folder, name = os.path.split(os.path.abspath(__file__))
    name = os.path.splitext(name)[0]
    preload, server = forkserver.set_forkserver_preload, forkserver._forkserver
    start = server.ensure_running

    def set_forkserver_preload(module_names):
        preload([*module_names, *([name] if name not in module_names else [])])

    def ensure_running():
        before = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (folder, before)))
        try:
            return start()
        finally:
            if before is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = before

    forkserver.set_forkserver_preload = set_forkserver_preload
    # (conform starts the server early through the module's own ensure_running, an alias of the
    # server's method taken when multiprocessing was imported: both are wrapped)
    server.ensure_running = forkserver.ensure_running = ensure_running
    set_forkserver_preload(list(getattr(server, "_preload_modules", None) or []))


def install() -> None:
    """Wrap every stage's functions (before any worker or drawing process is forked, and before
    the fork server workers start from is started)."""
    _patch_tables()
    try:   # an older commit lays its modules out otherwise: its stages are then coarser
        _runtime_phases()
        _parent_hooks()
        from conform.generators import _suite

        _suite._fill_one = _forked("drawing", _suite._fill_one)
        _entries()
    except (ImportError, AttributeError) as exc:
        MISSING.append(f"hooks: {exc}")
    if os.environ.get("CONFORM_STAGES_DIR"):
        _preload_ourselves()


def _in_fork_server() -> bool:
    """Whether this module is being imported by a multiprocessing fork server's preload."""
    try:
        from multiprocessing import forkserver
    except ImportError:
        return False
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code is forkserver.main.__code__:
            return True
        frame = frame.f_back
    return False


def _install_in_fork_server() -> None:
    """In the fork server (its preload imported conform first): the workers' timers and entry,
    inherited by every worker forked from it."""
    _state["role"] = "fork server"
    try:
        _patch_tables()
        _runtime_phases()
        _entries()
    except Exception as exc:   # the fork server must start whatever happens here
        MISSING.append(f"hooks: {exc}")


def _first_module(*names: str):
    """The first of the modules ``names`` that imports (the regression guard runs this file
    on older commits, whose modules were laid out otherwise)."""
    for name in names[:-1]:
        try:
            return importlib.import_module(name)
        except ImportError:
            pass
    return importlib.import_module(names[-1])


def main() -> None:
    """Run ``conform`` with argv[1:] under the timers; the parent's start-up is counted from
    ``$CONFORM_STAGES_T0`` (the epoch seconds its launcher started it at)."""
    launched = float(os.environ.get("CONFORM_STAGES_T0") or _state["born"])
    _state["spent"]["start-up"] = time.time() - launched   # the interpreter, before this line
    _state["cpu"]["start-up"] = time.process_time()
    _enter("start-up")   # imports and argument checks, until the first stage of the run
    cli = _first_module("conform.harness.cli.main", "conform.harness.cli")   # older commits:
    install()                                                               # the latter
    runner = _first_module("conform.harness.run.runner", "conform.harness.runner")
    original = runner.run_suite

    def run_suite(*args, **kwargs):
        _leave()
        _enter("run (parent, unattributed)")
        try:
            return original(*args, **kwargs)
        finally:
            _leave()
            _enter("after the run")

    runner.run_suite = run_suite
    sys.argv = ["conform", *sys.argv[1:]]
    try:
        status = cli.main()
    finally:   # the parent's figures are written whatever happens
        _leave()
        dump()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    main()
elif os.environ.get("CONFORM_STAGES_DIR") and _in_fork_server():
    _install_in_fork_server()
