"""How many generated graphs ``conform fuzz`` draws, runs twice and judges per second per core.

    python bench/fuzz_rate.py [--graphs 200] [--max-nodes 10] [--seed 0] [--out FILE]

Runs :func:`conform.harness.run.fuzz.fuzz` on onnxruntime in this process (the worker that runs
the models is one more process; the judging, drawing and the worker take turns, so the campaign
uses about one core), after a warm-up of 10 graphs (imports, the worker's start, the op modules'
first calls), and times each stage over the measured graphs: drawing (Hypothesis and the node
oracles), building and running both models, judging both runs. Prints graphs per second (of
wall time, and of CPU time: this process's and the worker's, which is steady on a loaded
machine; *steady state* leaves out the campaign's set-up and the worker's start) and the CPU
time of each stage, and the share of ONNX-bound ops the graphs reached; the
figures go to ``bench/results/fuzz-rate-<date>.json``. Failing graphs are not reduced (the rate
is of graphs drawn, run twice and judged). The target (issue 33) is 50 graphs/s per core.
"""
from __future__ import annotations

import argparse
import inspect
import json
import resource
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _timed(module, name: str, clock: dict, cpu: dict):
    """Wrap ``module.name`` so that its wall time adds to ``clock[name]``, its CPU time (this
    process's) to ``cpu[name]``."""
    original = getattr(module, name)

    def timed(*args, **kwargs):
        start, used = time.perf_counter(), time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            clock[name] = clock.get(name, 0.0) + time.perf_counter() - start
            cpu[name] = cpu.get(name, 0.0) + time.process_time() - used
    setattr(module, name, timed)


def main(argv=None) -> int:
    """Measure and print the rate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=200)
    parser.add_argument("--max-nodes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = measure(args.graphs, args.max_nodes, args.seed)
    steady = result.get("graphs_per_cpu_second_steady")
    print(f"{result['graphs']} graphs in {result['seconds']:.1f} s: "
          f"{result['graphs_per_second']} graphs/s, {result['graphs_per_cpu_second']} per CPU "
          f"second{f', {steady} in steady state' if steady else ''} (target 50); per graph, "
          "CPU: " + ", ".join(f"{k} {1000 * v / result['graphs']:.1f} ms"
                              for k, v in result["stage_cpu_seconds"].items())
          + (f", the worker {1000 * result['worker_cpu_seconds'] / result['graphs']:.1f} ms"
             if result["worker_cpu_seconds"] is not None else "")
          + f"; {result['ops_reached']} of {result['ops_bound']} ONNX-bound ops reached")
    print(f"wrote {_saved(result, args.out)}")
    return 0


def measure(graphs: int, max_nodes: int, seed: int) -> dict:
    """Run the campaign (after a warm-up) and return its figures."""
    from conform.harness.run import fuzz as campaign
    from conform.spec import load_specs

    specs = load_specs()
    plain = {"reduce": False} if "reduce" in inspect.signature(campaign.fuzz).parameters else {}
    campaign.fuzz(specs, budget=10, max_nodes=max_nodes, seed=seed + 1, **plain)   # warm-up
    clock: dict = {}
    stage_cpu: dict = {}
    drawer = "draw_fuzz_graph" if hasattr(campaign, "draw_fuzz_graph") else "draw_graph"
    for name in (drawer, "run_graph", "graph_record"):
        _timed(campaign, name, clock, stage_cpu)
    cpu = _cpu()
    figures = campaign.fuzz(specs, budget=graphs, max_nodes=max_nodes, seed=seed, **plain)
    cpu = _cpu() - cpu   # the worker is reaped when fuzz returns: its time is counted
    bound = sorted(op for op, spec in specs.items() if "onnx" in spec.bindings)
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "graphs": figures["graphs"], "max_nodes": max_nodes,
              "seconds": figures["seconds"],
              "graphs_per_second": round(figures["graphs"] / figures["seconds"], 2),
              "cpu_seconds": round(cpu, 3),
              "graphs_per_cpu_second": round(figures["graphs"] / cpu, 2),
              "stage_seconds": {k: round(v, 3) for k, v in clock.items()},
              "stage_cpu_seconds": {k: round(v, 3) for k, v in stage_cpu.items()},
              "worker_cpu_seconds": figures.get("worker_cpu_seconds"),
              "counts": figures["counts"], "ops_bound": len(bound),
              "ops_reached": len(set(figures["ops_reached"]) & set(bound)),
              "backend_version": figures["backend_version"]}
    if result["worker_cpu_seconds"] is not None:   # steady state: no set-up, no worker start
        steady = sum(stage_cpu.values()) + result["worker_cpu_seconds"]
        result["graphs_per_cpu_second_steady"] = round(figures["graphs"] / steady, 2)
    return result


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (the worker, once closed)."""
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                         resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _saved(result: dict, out: Path | None) -> Path:
    """Write ``result`` to ``out`` (default bench/results/fuzz-rate-<date>.json)."""
    path = out or ROOT / "bench" / "results" / f"fuzz-rate-{result['date'][:10]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


if __name__ == "__main__":
    sys.exit(main())
