"""Where every second of one ``conform`` command goes: a driver that runs the command with timers
on the stages of its pipeline, in every process it forks, and the arithmetic that attributes the
command's wall time to those stages.

    CONFORM_STAGES_DIR=DIR python bench/stages.py run --backend onnxruntime ...

runs ``conform run ...`` in this process, as the ``conform`` command does, after wrapping the
functions each stage is made of (:data:`PARENT_STAGES`, :data:`WORKER_STAGES`,
:data:`GENERATION_STAGES`). Each process (the parent, every worker, every child that draws part
of a cold corpus; workers and children are forked, so they inherit the wrappers) keeps the
seconds of each stage *exclusively* (a stage's time excludes the stages it calls: building a
model inside preparing a case counts as building only) and writes them to ``DIR/<pid>.json``
(workers every :data:`DUMP_INTERVAL` seconds, so a worker that crashes loses little).
:func:`attribute` then reads them back: the parent's stages are the command's timeline; the
time the parent spends waiting for its workers is shared out among the workers' stages in
proportion to their seconds. What no stage covers is ``unattributed``.

Each wrapped call costs ~1 us; a case passes through four or five of them.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import sys
import threading
import time

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
    wrapped = _timed(original, stage)
    setattr(owner, last, wrapped)
    if not path:   # a function other modules imported by name: theirs too
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("conform.") \
                    and getattr(module, last, None) is original:
                setattr(module, last, wrapped)


#: The targets this process could not find (their time counts in the stage calling them).
MISSING: list = []


#: The parent's stages (its timeline): module:function -> stage.
PARENT_STAGES = {
    "conform.harness.run.runner:_generate": "generation",
    "conform.generators._suite:fill_corpus": "generation (drawing processes)",
    "conform.generators._corpus_format:read": "corpus read",
    "conform.generators._corpus:prune_corpus": "corpus prune",
    "conform.harness.run.isolation:WorkerPool.__enter__": "worker start",
    "conform.harness.run.isolation:WorkerPool.__exit__": "worker stop",
    "conform.harness.run.isolation:WorkerPool._send": "IPC send",
    "conform.harness.run.isolation:_unpack": "IPC receive",
    "conform.harness.run.runner:result_record": "judge",
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
    "conform.generators._suite:expect": "oracle",
    "conform.generators._corpus_format:write": "corpus write",
}
#: A worker's stages (its own loop, ``worker loop``, holds what no other stage does).
WORKER_STAGES = {
    "conform.harness.run.worker:_load": "worker start",
    "conform.harness.run.worker:prepare_case": "prepare",
    "conform.harness.backends.models:Model.build": "model build",
    "conform.harness.judge.judging:result_records": "judge",
    "conform.harness.assurance.manifests:Manifest.apply": "manifest",
    "conform.reports:Tally.add": "tally",
    "conform.harness.run.worker:_encoded": "encode",
    "conform.harness.run.worker:exception_traceback": "traceback",
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


def _worker_hooks() -> None:
    """In a forked worker: time the computing step prepare returns (``execute``), waiting for
    a batch and sending replies (``IPC``), and write the figures as they grow."""
    from multiprocessing import connection

    from conform.harness.run import worker

    prepare = worker.prepare_case

    def prepare_case(*args, **kwargs):
        step = prepare(*args, **kwargs)
        return _timed(step, "execute") if callable(step) else step

    worker.prepare_case = prepare_case
    send = connection.Connection.send

    def sent(self, obj):
        _enter("IPC send")
        try:
            return send(self, obj)
        finally:
            _leave()
            if time.time() - _state["dumped"] >= DUMP_INTERVAL:
                dump()

    connection.Connection.send = sent
    connection.Connection.recv = getattr(connection.Connection.recv, "__wrapped__",
                                         connection.Connection.recv)
    inbox = worker._inbox

    def timed_inbox(conn):
        queue = inbox(conn)
        queue.get = _timed(queue.get, "wait for a batch (IPC)")
        return queue

    worker._inbox = timed_inbox


def _parent_hooks() -> None:
    """In the parent: its waits for the workers (``waiting for workers``, unless they are still
    loading: ``worker start``) and its reading of their replies (``IPC receive``)."""
    from multiprocessing import connection

    from conform.harness.run import isolation

    wait = isolation.WorkerPool._wait

    def waited(self):
        stack = _state["stack"]
        if not stack or stack[-1][0] == "worker start" or threading.get_ident() != _MAIN:
            return wait(self)
        _enter("waiting for workers")
        try:
            return wait(self)
        finally:
            _leave()

    isolation.WorkerPool._wait = waited
    connection.Connection.recv = _timed(connection.Connection.recv, "IPC receive")


def _forked(role: str, function):
    """``function`` as the entry of a forked process of ``role``: fresh figures, written at the
    end (and, for workers, as they grow)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if _state["pid"] != os.getpid():   # the first call in this process
            _state.update(spent={}, cpu={}, stack=[], role=role, born=time.time(),
                          pid=os.getpid(), dumped=0.0)
            if role == "worker":
                _worker_hooks()
            from multiprocessing import util

            util.Finalize(None, dump, exitpriority=0)   # at the process's normal end
        _enter(f"{role} loop")
        try:
            return function(*args, **kwargs)
        finally:
            _leave()
            if time.time() - _state["dumped"] >= DUMP_INTERVAL:
                dump()
    return wrapper


def dump() -> None:
    """Write this process's figures to ``$CONFORM_STAGES_DIR/<pid>.json``."""
    folder = os.environ.get("CONFORM_STAGES_DIR")
    if not folder:
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
    path = os.path.join(folder, f"{os.getpid()}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(figures, f)
    os.replace(path + ".tmp", path)


def install() -> None:
    """Wrap every stage's functions (before any worker or drawing process is forked)."""
    for table in (PARENT_STAGES, GENERATION_STAGES, WORKER_STAGES):
        for target, stage in table.items():
            _patch(target, stage)
    try:   # an older commit lays its modules out otherwise: its stages are then coarser
        _runtime_phases()
        _parent_hooks()
        from conform.generators import _suite
        from conform.harness.run import isolation, worker

        _suite._fill_one = _forked("drawing", _suite._fill_one)
        worker.worker_main = isolation.worker_main = _forked("worker", worker.worker_main)
    except (ImportError, AttributeError) as exc:
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
    status = cli.main()
    _leave()
    dump()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _read(folder) -> list[dict]:
    figures = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                figures.append(json.load(f))
    return figures


def _shared(seconds: float, processes: list[dict], slots: int, skip=()) -> tuple[dict, float]:
    """``seconds`` of the parent's waiting shared out among the stages of ``processes`` (which
    ran on up to ``slots`` at once) by their seconds; and the part of ``seconds`` their stages
    do not cover (unattributed)."""
    totals: dict = {}
    for figures in processes:
        for stage, spent in figures["spent"].items():
            if stage not in skip or figures.get("replacement"):
                totals[stage] = totals.get(stage, 0.0) + spent
    busy = sum(totals.values())
    if not busy:
        return {}, seconds
    covered = min(seconds, busy / slots)
    return {stage: covered * spent / busy for stage, spent in totals.items()}, seconds - covered


def cpu_seconds(folder) -> dict:
    """The CPU seconds (of the timing thread of each process) of each stage, summed over the
    processes (``worker: ...``, ``drawing: ...`` for theirs): what a stage costs whatever else
    loads the machine (its wall time is stretched by that load; its CPU time much less)."""
    totals: dict = {}
    for figures in _read(folder):
        prefix = "" if figures["role"] == "parent" else f"{figures['role']}: "
        for stage, seconds in figures.get("cpu", {}).items():
            totals[prefix + stage] = totals.get(prefix + stage, 0.0) + seconds
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def attribute(folder, wall: float, launched: float, workers: int) -> dict:
    """The command's ``wall`` seconds (launched at epoch ``launched``) by stage, from the
    figures in ``folder``: the parent's own stages, its waits for workers and for drawing
    processes shared out among theirs (``worker: ...``, ``drawing: ...``), ``exit`` (from
    the parent's last figures to the end of the process) and ``unattributed``."""
    found = _read(folder)
    parent = next(f for f in found if f["role"] == "parent")
    spent = dict(parent["spent"])
    stages = {"exit": max(0.0, launched + wall - parent["at"])}
    unattributed = spent.pop("run (parent, unattributed)", 0.0)
    running = sorted((f for f in found if f["role"] == "worker"), key=lambda f: f["born"])
    for k, figures in enumerate(running):
        figures["replacement"] = k >= workers   # a first worker's start: the parent's wait
    for wait, role, slots in (("waiting for workers", "worker", workers),
                              ("generation (drawing processes)", "drawing", workers)):
        shared, left = _shared(spent.pop(wait, 0.0), [f for f in found if f["role"] == role],
                               slots, skip=("worker start",))
        stages.update({f"{role}: {stage}": seconds for stage, seconds in shared.items()})
        unattributed += left
    stages.update(spent)
    stages["unattributed"] = unattributed + max(0.0, wall - sum(stages.values()) - unattributed)
    return dict(sorted(stages.items(), key=lambda item: -item[1]))


if __name__ == "__main__":
    main()
