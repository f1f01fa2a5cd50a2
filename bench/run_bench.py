"""The conform benchmark: whole-command rates per built-in backend, cold and warm.

    python bench/run_bench.py [--backends onnxruntime,jax,numpy,nnef] [--max-examples 300]
                              [--ops GLOB,..] [--out FILE]

``--ops`` limits the runs to some ops: to compare two commits on the cases both draw alike (run
this script with each commit's Python: it calls ``conform`` through ``sys.executable``).

For each backend it runs ``conform run`` twice with one fresh cache directory: *cold* (empty corpus
and compilation caches) and *warm* (caches filled by the cold run), and reports verified cases per
second (wall time, start-up included), where the time goes, peak memory of the whole process tree,
and the backend's compilations or sessions. Start-up alone is measured with a one-case run.

Where the time goes: generation (corpus), the backend calls (summed over workers), and within
them what the backend's :class:`~conform.harness.backends.base.RuntimeClock` saw: conform's
model building, the runtime's compile (sessions, executables), load (executables read from the
runtime's own cache) and execute; then the workers'
judging (the oracle's answers are kept with the cases: comparing), tallying and encoding of
records, and writing results.jsonl. The harness overhead ratio is ``1 - runtime seconds per worker / wall``, where
the runtime seconds are compile + load + execute: everything else, conform's own work inside a backend
call included, is harness time. A backend without a clock can only be measured by its whole
calls (``overhead_counts`` says which was used). ``ratio_with_no_per_case_work`` is the ratio
the warm run would score if its only cost per case were reading the corpus: a warm one-case
run's wall time (``warm_startup_seconds``) plus the corpus reading plus the runtime's seconds
per worker.
Every command runs under :mod:`stages` (this folder), which attributes each second of its wall
time to a named stage (start-up, corpus read, generation's draw, fill and oracle, model build,
session/compile, execute, judge, manifest, encode, write, IPC, reports, ...; the workers' stages
shared out over the parent's waits for them): ``stages`` in each run's figures, ``us_per_case``
the same per case, and ``unattributed_share`` what no stage covers (it should stay under 0.1).
The figures are written as JSON (default ``bench/results/<date>.json``) so runs can be compared.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import kernels  # noqa: E402  (bench/kernels.py)
from stages import attribute, cpu_seconds  # noqa: E402  (bench/stages.py)

# Runs ``conform`` in a child and prints the CPU seconds of its process tree (user + system)
# and its peak RSS (max over the process tree) in KiB. It is the tree's subreaper (Linux): the
# processes the command leaves behind when it exits (the fork server workers start from, and
# so the workers it reaped) come to it, and are counted once they end (within 30 s).
_MEASURE = """
import ctypes, os, resource, subprocess, sys, time
try:
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
except (OSError, AttributeError):
    pass
code = subprocess.run(sys.argv[1:]).returncode
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        if os.waitpid(-1, os.WNOHANG) == (0, 0):
            time.sleep(0.01)
    except ChildProcessError:
        break
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(usage.ru_utime + usage.ru_stime, file=sys.stderr)
print(usage.ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


STAGES = Path(__file__).with_name("stages.py")


def _conform(args: list[str], cache: Path, python: str | None = None) -> tuple[float, int, dict]:
    """Wall seconds, peak KiB and the stages (:func:`stages.attribute`; their CPU seconds,
    :func:`stages.cpu_seconds`, as the ``cpu`` attribute) of one ``conform`` command run with
    cache directory ``cache`` (by ``python``, default this one)."""
    with tempfile.TemporaryDirectory(prefix="conform-stages-") as folder:
        launched = time.time()
        env = {**os.environ, "CONFORM_CACHE_DIR": str(cache), "CONFORM_STAGES_DIR": folder,
               "CONFORM_STAGES_T0": repr(launched)}
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", _MEASURE, python or sys.executable,
                               str(STAGES), *args], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode not in (0, 1):
            raise SystemExit(f"conform {' '.join(args)} failed:\n{proc.stderr}")
        stages = Stages(attribute(folder, wall, launched, _workers_of(args)))
        stages.cpu = cpu_seconds(folder)
        stages.kernels = kernels.summed(folder)   # the jax backend's, per cell
        *_, tree_cpu, peak = proc.stderr.strip().splitlines()
        stages.tree_cpu = float(tree_cpu)   # CPU seconds of the whole process tree
    return wall, int(peak), stages


class Stages(dict):
    """Wall seconds by stage, with their CPU seconds by stage as ``cpu`` and the CPU seconds
    of the command's whole process tree as ``tree_cpu``."""

    cpu: dict
    tree_cpu: float
    kernels: dict


def _workers_of(args: list[str]) -> int:
    return int(args[args.index("--workers") + 1]) if "--workers" in args else 1


def _with_stages(figures: dict, stages: dict) -> dict:
    """``figures`` with the run's stages: seconds, microseconds per case, unattributed share."""
    cases = max(figures["cases"], 1)
    figures["stages"] = {stage: round(seconds, 3) for stage, seconds in stages.items()}
    figures["us_per_case"] = {stage: round(seconds / cases * 1e6, 1)
                              for stage, seconds in stages.items()}
    figures["us_per_case_total"] = round(figures["wall_seconds"] / cases * 1e6, 1)
    figures["unattributed_share"] = round(stages.get("unattributed", 0.0) / figures["wall_seconds"], 3)
    figures["tree_cpu_us_per_case"] = round(getattr(stages, "tree_cpu", 0.0) / cases * 1e6, 1)
    figures["cpu_us_per_case"] = {stage: round(seconds / cases * 1e6, 1)
                                  for stage, seconds in getattr(stages, "cpu", {}).items()}
    return figures


def stages_line(figures: dict, top: int = 12) -> str:
    """The run's biggest stages, in microseconds per case."""
    shown = list(figures["us_per_case"].items())[:top]
    return (f"{figures['us_per_case_total']:.0f} us/case: "
            + ", ".join(f"{stage} {us:.0f}" for stage, us in shown)
            + f"; unattributed {figures['unattributed_share']:.1%}")


def _breakdown(out: Path, wall: float, workers: int) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    backend = judge = 0.0
    with (out / "results.jsonl").open() as f:
        for line in f:
            record = json.loads(line)
            backend += record.get("seconds", 0.0)
            judge += record.get("judge_seconds", 0.0)
    stats = summary.get("backend_stats", {})
    clocked = "execute_seconds" in stats
    runtime = sum(stats.get(f"{phase}_seconds", 0.0) for phase in ("compile", "load", "execute")) \
        if clocked else backend
    return {
        "cases": summary["cases"], "pass_rate": summary["pass_rate"],
        "cases_per_second": round(summary["cases"] / wall, 1), "wall_seconds": round(wall, 2),
        "generation_seconds": summary.get("generation_seconds"),
        "backend_seconds_total": round(backend, 2),   # whole backend calls
        "model_build_seconds_total": stats.get("model_build_seconds"),
        "compile_seconds_total": stats.get("compile_seconds"),
        "load_seconds_total": stats.get("load_seconds"),
        "execute_seconds_total": stats.get("execute_seconds"),
        "judge_seconds_total": round(judge, 2),
        "worker_seconds": summary.get("worker_seconds"),   # judging, tallying, encoding records
        "write_seconds": summary.get("write_seconds"),     # writing results.jsonl
        "run_seconds_in_conform": summary.get("wall_seconds"),
        # workers run in parallel: the runtime's seconds per worker against the wall time
        "harness_overhead_ratio": round(1 - runtime / workers / wall, 3),
        "overhead_counts": "runtime compile+execute" if clocked else "whole backend calls",
        "backend_stats": stats,
        "worker_restarts": summary.get("worker_restarts"),
    }


def _breakdown_line(figures: dict, workers: int) -> str:
    """Where a run's wall time went: the backend's compile, load and execute seconds and the
    workers' judging (each summed over the workers, then divided by their number: wall seconds
    on parallel workers), generation and the parent's writing of results."""
    def per_worker(total):
        return f"{(total or 0.0) / workers:.1f}"

    return (f"compile {per_worker(figures['compile_seconds_total'])} s, "
            f"load {per_worker(figures['load_seconds_total'])} s, "
            f"execute {per_worker(figures['execute_seconds_total'])} s, "
            f"judge {per_worker(figures['judge_seconds_total'])} s (per worker); "
            f"generate {figures['generation_seconds'] or 0.0:.1f} s, "
            f"write {figures['write_seconds'] or 0.0:.1f} s, of {figures['wall_seconds']:.1f} s wall")


def _ratio_without_per_case_work(warm: dict, warm_startup: float, workers: int) -> float | None:
    """The overhead ratio a warm run would score if conform spent nothing per case but reading
    its corpus: the wall time is then a one-case run's (interpreter, imports, workers starting,
    reports, exit), the corpus reading and the runtime's own seconds per worker alone."""
    stats = warm["backend_stats"]
    if "execute_seconds" not in stats:
        return None
    runtime = sum(stats.get(f"{phase}_seconds", 0.0) for phase in ("compile", "load", "execute")) / workers
    return round(1 - runtime / (warm_startup + warm["generation_seconds"] + runtime), 3)


# 20,000 calls of a one-node onnxruntime model (float32 Add of 8 elements), in one process:
# prints the microseconds per call (the per-call floor a warm run's per-case cost is set against).
_FLOOR = """
import time, numpy as np, onnxruntime as ort
from onnx import TensorProto, helper
info = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [8])
graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "floor",
                          [info("a"), info("b")], [info("c")])
model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)])
options = ort.SessionOptions()
options.intra_op_num_threads = options.inter_op_num_threads = 1
session = ort.InferenceSession(model.SerializeToString(), options,
                               providers=["CPUExecutionProvider"])
feed = {"a": np.ones(8, np.float32), "b": np.ones(8, np.float32)}
session.run(None, feed)
start = time.perf_counter()
for _ in range(20000):
    session.run(None, feed)
print((time.perf_counter() - start) / 20000 * 1e6)
"""


def call_floor_us(python: str | None = None) -> float:
    """onnxruntime's per-call floor in microseconds: 20,000 calls of a one-node model."""
    out = subprocess.run([python or sys.executable, "-c", _FLOOR], check=True,
                         capture_output=True, text=True).stdout
    return round(float(out.strip().splitlines()[-1]), 2)


def bench_backend(backend: str, max_examples: int, workers: int, ops: str | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="conform-bench-") as tmp:
        cache, result = Path(tmp) / "cache", {"backend": backend, "max_examples": max_examples}
        one_case = ["run", "--backend", backend, "--ops", "exp", "--dtypes", "float32",
                    "--max-examples", "1", "--out", f"{tmp}/startup", "--quiet", "--workers", str(workers)]
        startup, _, _ = _conform(one_case, Path(tmp) / "startup-cache")
        warm_startup, _, _ = _conform(one_case, Path(tmp) / "startup-cache")
        result["startup_seconds"] = round(startup, 2)
        result["warm_startup_seconds"] = round(warm_startup, 2)
        for phase in ("cold", "warm"):
            out = Path(tmp) / phase
            selection = ["--ops", ops] if ops else []
            wall, peak, stages = _conform(["run", "--backend", backend, "--max-examples",
                                           str(max_examples), *selection, "--out", str(out),
                                           "--quiet", "--workers", str(workers)], cache)
            result[phase] = _with_stages({**_breakdown(out, wall, workers),
                                          "peak_rss_mb": round(peak / 1024, 1)}, stages)
            if stages.kernels["compilations"] or stages.kernels["loads"]:
                result[phase]["kernels"] = kernels.report(stages.kernels, result[phase]["cases"])
                print(f"{'':12} {phase} kernels: {kernels.report_lines(result[phase]['kernels'])}",
                      flush=True)
            print(f"{backend:12} {phase}: {result[phase]['cases']} cases in {wall:.1f} s = "
                  f"{result[phase]['cases_per_second']:.0f} cases/s, peak {peak / 1024:.0f} MB, "
                  f"harness overhead {result[phase]['harness_overhead_ratio']:.2f}", flush=True)
            print(f"{'':12} {phase} breakdown: {_breakdown_line(result[phase], workers)}", flush=True)
            print(f"{'':12} {phase} stages: {stages_line(result[phase])}", flush=True)
        if backend == "onnxruntime":
            per_call = result["warm"]["call_floor_us"] = call_floor_us()
            print(f"{'':12} warm: {result['warm']['us_per_case_total']:.0f} us/case = "
                  f"{result['warm']['us_per_case_total'] / per_call:.1f}x the per-call floor "
                  f"({per_call:.1f} us: 20,000 calls of a one-node model)", flush=True)
        floor = result["warm"]["ratio_with_no_per_case_work"] = _ratio_without_per_case_work(
            result["warm"], warm_startup, workers)
        print(f"{backend:12} start-up {startup:.2f} s cold, {warm_startup:.2f} s warm; "
              f"warm overhead with no per-case work but reading the corpus: {floor}", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="onnxruntime,jax,numpy,nnef")
    parser.add_argument("--max-examples", type=int, default=300)
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--ops", default=None, help="only these ops (globs, comma-separated)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    report = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "cpus": os.cpu_count(), "workers": args.workers, "ops": args.ops,
              "results": [bench_backend(b, args.max_examples, args.workers, args.ops)
                          for b in args.backends.split(",")]}
    out = args.out or Path(__file__).parent / "results" / f"{report['date'][:10]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
