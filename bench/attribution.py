"""The arithmetic of bench/stages.py: the wall time of one ``conform`` command attributed to the
stages its processes timed, from the figures they wrote (``<pid>.json`` in a folder)."""
from __future__ import annotations

import json
import os


def _read(folder) -> list[dict]:
    figures = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                figures.append(json.load(f))
    return figures


def _shared(seconds: float, processes: list[dict], slots: int, skip=(),
            prefix: bool = False) -> tuple[dict, float]:
    """``seconds`` of the parent's waiting shared out among the stages of ``processes`` (which
    ran on up to ``slots`` at once) by their seconds (each named ``role: stage`` if ``prefix``);
    and the part of ``seconds`` their stages do not cover (unattributed)."""
    totals: dict = {}
    for figures in processes:
        for stage, spent in figures["spent"].items():
            if stage not in skip or figures.get("replacement"):
                name = f"{figures['role']}: {stage}" if prefix else stage
                totals[name] = totals.get(name, 0.0) + spent
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
    figures in ``folder``: the parent's own stages, its waits for workers (and for the judge
    processes of a long run, one per worker) and for drawing processes shared out among theirs
    (``worker: ...``, ``judge: ...``, ``drawing: ...``), ``exit`` (from the parent's last
    figures to the end of the process) and ``unattributed``."""
    found = _read(folder)
    parent = next((f for f in found if f["role"] == "parent"), None)
    if parent is None:
        raise ValueError(f"no figures of the parent in {folder} (the command failed to start?); "
                         f"roles: {sorted({f['role'] for f in found})}")
    spent = dict(parent["spent"])
    stages = {"exit": max(0.0, launched + wall - parent["at"])}
    unattributed = spent.pop("run (parent, unattributed)", 0.0)
    running = sorted((f for f in found if f["role"] == "worker"), key=lambda f: f["born"])
    for k, figures in enumerate(running):
        figures["replacement"] = k >= workers   # a first worker's start: the parent's wait
    judges = [f for f in found if f["role"] == "judge"]
    for wait, roles, slots in (("waiting for workers", ("worker", "judge"),
                                workers + (workers if judges else 0)),
                               ("generation (drawing processes)", ("drawing",), workers)):
        processes = [f for f in found if f["role"] in roles]
        shared, left = _shared(spent.pop(wait, 0.0), processes, slots, skip=("worker start",),
                               prefix=len(roles) > 1)
        stages.update({(stage if len(roles) > 1 else f"{roles[0]}: {stage}"): seconds
                       for stage, seconds in shared.items()})
        unattributed += left
    stages.update(spent)
    stages["unattributed"] = unattributed + max(0.0, wall - sum(stages.values()) - unattributed)
    return dict(sorted(stages.items(), key=lambda item: -item[1]))
