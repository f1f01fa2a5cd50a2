"""How many generated graphs ``conform fuzz`` draws, runs twice and judges per second per core.

    python bench/fuzz_rate.py [--graphs 200] [--max-nodes 10] [--seed 0] [--out FILE]

Runs :func:`conform.harness.run.fuzz.fuzz` on onnxruntime in this process (the worker that runs
the models is one more process; the judging, drawing and the worker take turns, so the campaign
uses about one core), after a warm-up of 10 graphs (imports, the worker's start, the op modules'
first calls), and times each stage over the measured graphs: drawing (Hypothesis and the node
oracles), building and running both models, judging both runs. Prints graphs per second and the
share of each stage, and the share of ONNX-bound ops the graphs reached; the figures go to
``bench/results/fuzz-rate-<date>.json``. The target (issue 33) is 50 graphs/s per core.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _timed(module, name: str, clock: dict):
    """Wrap ``module.name`` so that its time adds to ``clock[name]``."""
    original = getattr(module, name)

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            clock[name] = clock.get(name, 0.0) + time.perf_counter() - start
    setattr(module, name, timed)


def main(argv=None) -> int:
    """Measure and print the rate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=200)
    parser.add_argument("--max-nodes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    from conform.harness.run import fuzz as campaign
    from conform.spec import load_specs

    specs = load_specs()
    campaign.fuzz(specs, budget=10, max_nodes=args.max_nodes, seed=args.seed + 1)   # warm-up
    clock: dict = {}
    for name in ("draw_graph", "run_graph", "graph_record"):
        _timed(campaign, name, clock)
    figures = campaign.fuzz(specs, budget=args.graphs, max_nodes=args.max_nodes, seed=args.seed)
    bound = sorted(op for op, spec in specs.items() if "onnx" in spec.bindings)
    rate = figures["graphs"] / figures["seconds"]
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "graphs": figures["graphs"], "max_nodes": args.max_nodes,
              "seconds": figures["seconds"], "graphs_per_second": round(rate, 2),
              "stage_seconds": {k: round(v, 3) for k, v in clock.items()},
              "counts": figures["counts"], "ops_bound": len(bound),
              "ops_reached": len(set(figures["ops_reached"]) & set(bound)),
              "backend_version": figures["backend_version"]}
    print(f"{figures['graphs']} graphs in {figures['seconds']:.1f} s: {rate:.2f} graphs/s "
          f"(target 50); per graph: " + ", ".join(
              f"{k} {1000 * v / figures['graphs']:.1f} ms" for k, v in clock.items())
          + f"; {result['ops_reached']} of {len(bound)} ONNX-bound ops reached")
    print(f"wrote {_saved(result, args.out)}")
    return 0


def _saved(result: dict, out: Path | None) -> Path:
    """Write ``result`` to ``out`` (default bench/results/fuzz-rate-<date>.json)."""
    path = out or ROOT / "bench" / "results" / f"fuzz-rate-{result['date'][:10]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


if __name__ == "__main__":
    sys.exit(main())
