"""Kernels the jax backend compiles, per (op, dtype) cell: what a cold jax run pays for.

A *kernel* is one distinct computation of a compiled program: a case's op with its attributes at
its input dtypes and shapes (:func:`signature`). XLA:CPU compiles equal computations of one program
once (40 float32 tanh of one shape in one jitted program compile in ~0.3 s, of 40 shapes in ~4 s),
so a program costs about one kernel per distinct signature it holds, and a case whose signature
another case of its pack already has adds nothing.

Installed in each worker by bench/stages.py (:func:`install`): it wraps the jax backend's two ways
of compiling (a pack of cases, :func:`~conform.harness.backends.jax_packing._compute_together`,
and a case alone, :meth:`JaxBackend.run`) and listens to jax's own compile events
(``/jax/core/compile/backend_compile_duration``; a persistent-cache hit,
``/jax/compilation_cache/cache_hits``, makes the executable a load, not a compilation). Each
compilation's kernels are counted to their cells and its seconds shared out over its cells by
their kernels. The figures go into the worker's ``<pid>.json`` (:func:`figures`); :func:`summed`
adds up a folder's.
"""
from __future__ import annotations

import json
import os

import numpy as np

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
HIT_EVENT = "/jax/compilation_cache/cache_hits"

_state = {"kernels": {}, "seconds": {}, "cases": {}, "compilations": 0, "loads": 0,
          "current": None, "hit": False, "listening": False}


def signature(slot_or_case) -> tuple:
    """A case's computation as XLA sees it: op, lax calls with their attributes, input dtypes
    and shapes (what :mod:`jax_packing` says XLA compiles once per program)."""
    from conform.harness.backends.jax_backend import frozen, lax_calls

    program = getattr(slot_or_case, "program", slot_or_case)
    spec, case = program.spec, program.case
    try:
        calls = frozen(lax_calls(spec, case))
    except Exception:   # a lowering that cannot say: the case stands alone
        calls = case.id
    return (spec.op, calls, tuple(case.input_dtypes),
            tuple(np.shape(x) for x in slot_or_case.inputs))


def _cell(slot) -> str:
    case = slot.program.case
    return f"{slot.program.spec.op}.{case.dtype}"


def _kernels_of(slots) -> dict:
    """Cell -> (distinct signatures, cases) among ``slots``."""
    seen: dict = {}
    for slot in slots:
        seen.setdefault(_cell(slot), [set(), 0])
        seen[_cell(slot)][0].add(signature(slot))
        seen[_cell(slot)][1] += 1
    return {cell: (len(sigs), cases) for cell, (sigs, cases) in seen.items()}


def _listen() -> None:
    if _state["listening"]:
        return
    import jax

    jax.monitoring.register_event_listener(_heard)
    jax.monitoring.register_event_duration_secs_listener(_timed)
    _state["listening"] = True


def _heard(event: str, **_) -> None:
    if event == HIT_EVENT:
        _state["hit"] = True


def _timed(event: str, seconds: float, **_) -> None:
    """One compilation (or load) ended: its kernels and seconds to the cells being compiled."""
    if event != COMPILE_EVENT or _state["current"] is None:
        return
    if _state["hit"]:
        _state["loads"] += 1
        _state["hit"] = False
        return
    current = _state["current"]
    _state["compilations"] += 1
    total = sum(kernels for kernels, _ in current.values()) or 1
    for cell, (kernels, cases) in current.items():
        _state["kernels"][cell] = _state["kernels"].get(cell, 0) + kernels
        _state["cases"][cell] = _state["cases"].get(cell, 0) + cases
        _state["seconds"][cell] = _state["seconds"].get(cell, 0.0) + seconds * kernels / total


def _compiling(function, slots_of):
    """``function``, the kernels of the slots ``slots_of(args, kwargs)`` current while it runs."""
    def wrapper(*args, **kwargs):
        _listen()
        outer = _state["current"]
        try:
            _state["current"], _state["hit"] = _kernels_of(slots_of(args, kwargs)), False
        except Exception:
            _state["current"] = None
        try:
            return function(*args, **kwargs)
        finally:
            _state["current"] = outer
    wrapper.__wrapped__ = function
    return wrapper


class _Alone:
    """A case run alone, seen as a slot."""

    def __init__(self, program, inputs):
        self.program, self.inputs = program, inputs


def install() -> None:
    """Wrap the jax backend's compiling calls (in a worker, before the backend computes)."""
    from conform.harness.backends import jax_backend, jax_packing

    jax_packing._compute_together = _compiling(
        jax_packing._compute_together, lambda args, kwargs: [slot for slot, _ in args[1]])
    jax_backend.JaxBackend.run = _compiling(
        jax_backend.JaxBackend.run,
        lambda args, kwargs: [_Alone(kwargs["program"], kwargs["inputs"])])


def figures() -> dict:
    """This process's figures (empty where it compiled nothing)."""
    if not (_state["compilations"] or _state["loads"]):
        return {}
    return {key: _state[key] for key in ("kernels", "seconds", "cases", "compilations", "loads")}


def summed(folder) -> dict:
    """The kernel figures of every process's ``<pid>.json`` in ``folder``, added up: per cell
    ``kernels``, compile ``seconds`` and ``cases`` compiled; ``compilations`` and ``loads``."""
    total: dict = {"kernels": {}, "seconds": {}, "cases": {}, "compilations": 0, "loads": 0}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name)) as f:
            kernels = json.load(f).get("kernels") or {}
        for key in ("kernels", "seconds", "cases"):
            for cell, value in kernels.get(key, {}).items():
                total[key][cell] = total[key].get(cell, 0) + value
        for key in ("compilations", "loads"):
            total[key] += kernels.get(key, 0)
    return total


def report(total: dict, cases: int, top: int = 15) -> dict:
    """The run's kernel figures: totals, cases per kernel, the top cells by kernels and by
    compile seconds."""
    kernels, seconds = total["kernels"], total["seconds"]
    count = sum(kernels.values())

    def ranked(table, digits):
        return [[cell, round(value, digits), kernels.get(cell, 0), total["cases"].get(cell, 0)]
                for cell, value in sorted(table.items(), key=lambda kv: -kv[1])[:top]]

    return {"kernels": count, "compile_seconds": round(sum(seconds.values()), 2),
            "compilations": total["compilations"], "loads": total["loads"],
            "cells": len(kernels), "cases_per_kernel": round(cases / max(count, 1), 2),
            "top_by_kernels": ranked(kernels, 0), "top_by_seconds": ranked(seconds, 2),
            "per_cell": {cell: [kernels[cell], round(seconds.get(cell, 0.0), 3),
                                total["cases"].get(cell, 0)] for cell in sorted(kernels)}}


def report_lines(figures: dict, top: int = 10) -> str:
    """:func:`report`'s figures as a few lines."""
    lines = [f"{figures['kernels']} kernels in {figures['compilations']} compilations "
             f"({figures['loads']} loads), {figures['compile_seconds']:.1f} compile s, "
             f"{figures['cases_per_kernel']:.2f} cases/kernel, {figures['cells']} cells"]
    for title, key, unit in (("by kernels", "top_by_kernels", ""), ("by compile s",
                                                                   "top_by_seconds", " s")):
        lines.append(f"  top cells {title}: " + ", ".join(
            f"{cell} {value}{unit} ({kernels}k/{cases}c)"
            for cell, value, kernels, cases in figures[key][:top]))
    return "\n".join(lines)
