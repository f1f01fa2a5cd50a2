"""``conform sweep``: every input of a bit range of unary element-wise ops, in content-keyed
chunks, merged into an accuracy map per op x dtype x backend.

The chunks (:class:`~conform.harness.run.sweep_chunk.ChunkTask`) run on an executor (the local
slot pool, :mod:`conform.harness.run.sweep_executors`, or Ray,
:mod:`conform.harness.run.sweep_ray`). Each finished chunk's summary is appended to
``chunks.jsonl`` in the output folder as soon as it arrives (one line, flushed and synced): a
killed sweep, run again with the same options and folder, runs only the chunks whose key is
not there yet, and a chunk found twice (a line written before a kill, then again) counts once,
because the merge reads the summaries by key. ``summary.json`` and ``report.html`` hold the
accuracy map (:func:`~conform.harness.run.sweep_merge.accuracy_entry` per op x dtype).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from conform.generators import EXHAUSTIVE_BITS
from conform.harness.run.isolation import PoolSettings
from conform.harness.run.sweep_chunk import ChunkTask
from conform.harness.run.sweep_merge import accuracy_entry, merged

MANIFEST = "chunks.jsonl"
#: Inputs per chunk by default: 2**22 float32 patterns (as ``conform run --exhaustive``), or a
#: whole 16-bit type.
DEFAULT_CHUNK = {"float16": 1 << 16, "bfloat16": 1 << 16, "float32": 1 << 22}


class SweepError(Exception):
    """A sweep that cannot run as asked (nothing selected, a range outside a dtype)."""


@dataclass(frozen=True)
class SweepConfig:
    """What ``conform sweep`` runs: ``ops`` (globs) x ``dtypes`` on ``backend``, the bit
    patterns ``first`` to ``stop`` (None: all of each dtype's) in chunks of ``chunk`` inputs
    (None: :data:`DEFAULT_CHUNK`), on ``executor`` (``local`` with ``workers`` slots, or
    ``ray`` at ``address``), into ``out``."""

    backend: str
    ops: tuple
    dtypes: tuple = ("float32",)
    first: int | None = None
    stop: int | None = None
    chunk: int | None = None
    executor: str = "local"
    address: str | None = None
    workers: int = 2
    timeout: float = 300.0
    subnormals: str | None = None
    spec_dir: str | None = None
    out: Path = Path("conform-out/sweep")


def sweep_pairs(specs: dict, config: SweepConfig) -> list:
    """The (spec, dtype) pairs a sweep covers: unary element-wise ops with a float result under
    the float dtypes a sweep can enumerate (:func:`expressed` keeps those the backend's format expresses)."""
    from conform.harness.run.runner import select

    pairs = [(spec, dtype) for spec, dtype in select(specs, list(config.ops), list(config.dtypes))
             if spec.elementwise and len(spec.inputs) == 1 and dtype in EXHAUSTIVE_BITS
             and spec.output_dtype != "bool"]   # (a predicate's map would say nothing of ULPs)
    if not pairs:
        raise SweepError(f"--ops {','.join(config.ops)} --dtypes {','.join(config.dtypes)} selects "
                         f"no unary element-wise op under {', '.join(EXHAUSTIVE_BITS)}")
    for _, dtype in pairs:
        chunk_ranges(config, dtype)   # (a range outside a dtype fails before anything starts)
    return pairs


def expressed(pairs: list, config: SweepConfig, info: dict) -> list:
    """The ``pairs`` whose op the backend's model format expresses (``info``: what its workers
    said of it, the spec binding it consumes among it); a :class:`SweepError` if none."""
    from conform.harness.run.runner import SelectionError, by_format

    try:
        return by_format(pairs, config.backend, binding=info.get("binding"))
    except SelectionError as exc:
        raise SweepError(str(exc)) from None


def chunk_ranges(config: SweepConfig, dtype: str) -> list:
    """``(first, stop)`` of each chunk of ``dtype``'s range under ``config``.

    >>> chunk_ranges(SweepConfig("numpy", ("tanh",), first=0, stop=10, chunk=4), "float32")
    [(0, 4), (4, 8), (8, 10)]
    """
    size = 1 << EXHAUSTIVE_BITS[dtype]
    first = 0 if config.first is None else config.first
    stop = size if config.stop is None else config.stop
    if not 0 <= first < stop <= size:
        raise SweepError(f"--range {first:#x}:{stop:#x} is outside {dtype}'s bit patterns "
                         f"0x0:{size:#x}")
    step = config.chunk or DEFAULT_CHUNK[dtype]
    return [(lo, min(lo + step, stop)) for lo in range(first, stop, step)]


def read_manifest(out: Path) -> dict:
    """The chunk summaries in ``out``'s manifest by key (a torn last line is left out)."""
    found: dict = {}
    path = Path(out) / MANIFEST
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        try:
            summary = json.loads(line)
        except ValueError:
            continue
        found[summary["key"]] = summary
    return found


def make_executor(config: SweepConfig, settings: PoolSettings):
    """The executor ``config`` names."""
    if config.executor == "ray":
        from conform.harness.run.sweep_ray import RayExecutor

        return RayExecutor(config.backend, settings, address=config.address, slots=config.workers)
    from conform.harness.run.sweep_executors import LocalExecutor

    return LocalExecutor(config.backend, settings, slots=config.workers)


def run_sweep(config: SweepConfig, specs: dict, *, on_done=None) -> dict:
    """Run the sweep ``config`` describes (the chunks its manifest lacks), write summary.json
    and report.html into ``config.out``, and return the summary. ``on_done(summary, done,
    planned)`` is called after each chunk is recorded."""
    import conform

    pairs = sweep_pairs(specs, config)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    done = read_manifest(out)
    settings = PoolSettings(workers=1, timeout=config.timeout, spec_dir=config.spec_dir,
                            subnormals=config.subnormals)
    start = time.perf_counter()
    with make_executor(config, settings) as executor:
        info = executor.info
        pairs = expressed(pairs, config, info)
        policy = config.subnormals or info.get("subnormals") or "ieee"
        plan = {(spec.op, dtype): [ChunkTask(spec.op, dtype, config.backend, info.get("version", "unknown"),
                                             lo, hi, conform.__version__, policy)
                                   for lo, hi in chunk_ranges(config, dtype)]
                for spec, dtype in pairs}
        todo = [task for tasks in plan.values() for task in tasks if task.key not in done]
        planned = sum(map(len, plan.values()))
        with open(out / MANIFEST, "a") as manifest:
            for summary in executor.map(todo):
                manifest.write(json.dumps(summary) + "\n")
                manifest.flush()
                os.fsync(manifest.fileno())
                done[summary["key"]] = summary
                if on_done is not None:
                    on_done(summary, len(done), planned)
    wall = time.perf_counter() - start
    return write_sweep_reports(out, config, info, plan, done, wall)


def write_sweep_reports(out: Path, config: SweepConfig, info: dict, plan: dict, done: dict,
                        wall: float) -> dict:
    """Write summary.json and report.html (with the accuracy map) from the chunks ``done``."""
    import conform
    from conform.reports import write_reports

    entries = []
    for (op, dtype), tasks in plan.items():
        summaries = [done[task.key] for task in tasks if task.key in done]
        seconds = sum(sum(s.get("seconds", {}).values()) for s in summaries)
        entries.append(accuracy_entry(merged(summaries), op=op, dtype=dtype, backend=config.backend,
                                      backend_version=info.get("version", "unknown"),
                                      first=tasks[0].first, stop=tasks[-1].stop,
                                      chunk_seconds=seconds))
    meta = {"backend": config.backend, "backend_name": info.get("name") or config.backend,
            "backend_version": info.get("version", "unknown"), "device": info.get("device", "cpu"),
            "model_format": info.get("model_format"), "subnormals_declared": info.get("subnormals"),
            "subnormals_applied": config.subnormals or info.get("subnormals") or "ieee",
            "seed": None, "max_examples": None, "complete": all(e["inputs"] + sum(
                lost["stop"] - lost["first"] for lost in e["lost"]) == e["range"][1] - e["range"][0]
                for e in entries), "selected_ops": sorted({op for op, _ in plan}),
            "wall_seconds": round(wall, 3), "sweep": {"executor": config.executor,
                                                      "workers": config.workers,
                                                      "chunk": config.chunk},
            "accuracy_map": entries}
    return write_reports(out, meta, conform.__version__, records=[])


__all__ = ["DEFAULT_CHUNK", "MANIFEST", "SweepConfig", "SweepError", "chunk_ranges",
           "expressed", "make_executor", "read_manifest", "run_sweep", "sweep_pairs", "write_sweep_reports"]
