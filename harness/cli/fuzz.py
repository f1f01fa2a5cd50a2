"""``conform fuzz``: generated graphs run on a backend as users run them
(:mod:`conform.harness.run.fuzz`), wired in by :mod:`conform.harness.cli.main`.

Writes results.jsonl (one line per graph, with its ``nodes``), summary.json and report.html.
Exit status: 0 = no graph failed; 1 = some graph failed, errored or crashed; 2 = usage error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conform.harness.cli.values import (at_least_one, fraction, names, seconds, seed,
                                        writable_directory)

EXIT_OK, EXIT_FOUND = 0, 1
#: The backends ``conform fuzz`` runs graphs on by name (harness/run/graph_formats.py:
#: GRAPH_BACKENDS); an adapter ``module.path:ClassName`` whose model format is ONNX runs them
#: through the adapter API.
FUZZ_BACKENDS = ("onnxruntime", "jax", "nnef")
MAX_NODES_LIMIT = 50


def fuzz_backend(text: str) -> str:
    """One of :data:`FUZZ_BACKENDS`, or ``module.path:ClassName`` (an adapter whose model
    format is ONNX: checked when its worker starts)."""
    if text in FUZZ_BACKENDS or ":" in text:
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r}: fuzz runs on {', '.join(FUZZ_BACKENDS)} or an ONNX adapter module.path:Class")


def max_nodes(text: str) -> int:
    """A graph's largest number of nodes: 1 to MAX_NODES_LIMIT."""
    value = at_least_one(text)
    if value > MAX_NODES_LIMIT:
        raise argparse.ArgumentTypeError(f"{text} is above {MAX_NODES_LIMIT}")
    return value


def add_commands(sub) -> None:
    """The ``fuzz`` sub-command."""
    fuzz = sub.add_parser("fuzz", help="run generated multi-op graphs on a backend, as generated "
                                       "and instrumented, and judge both")
    fuzz.add_argument("--backend", required=True, type=fuzz_backend,
                      help="the backend to run graphs on: onnxruntime (ORT_ENABLE_ALL), jax, nnef, or "
                           "an ONNX adapter module.path:ClassName (through the adapter API)")
    fuzz.add_argument("--ops", type=names, default=None,
                      help="draw graphs over these ops only (comma-separated; default: every "
                           "op bound to the backend's format)")
    fuzz.add_argument("--no-reduce", action="store_true",
                      help="do not reduce and deduplicate failing graphs")
    limit = fuzz.add_mutually_exclusive_group()
    limit.add_argument("--budget", type=at_least_one, default=None,
                       help="graphs to run (default 100, unless --time)")
    limit.add_argument("--time", type=seconds, default=None,
                       help="seconds to run graphs for")
    fuzz.add_argument("--max-nodes", type=max_nodes, default=10,
                      help=f"nodes of a graph at most (1 to {MAX_NODES_LIMIT}; default 10)")
    fuzz.add_argument("--chain", type=fraction, default=0.0,
                      help="the chance (0 to 1) that a node is drawn as a consumer of the "
                           "newest node's outputs, making the producer-consumer pairs "
                           "optimisers rewrite (default 0: each node's inputs drawn "
                           "uniformly among the values that fit)")
    fuzz.add_argument("--seed", type=seed, default=0, help="the graphs' seed (default 0)")
    fuzz.add_argument("--out", type=Path, default=None,
                      help="output directory (default conform-out/<backend>-fuzz)")
    fuzz.add_argument("--force", action="store_true",
                      help="write into an --out folder that holds files conform did not write")


def cmd_fuzz(args, specs: dict) -> int:
    """Run the campaign, write results.jsonl and the reports, print a summary line."""
    import conform
    from conform.harness.backends.base import onnx_opset
    from conform.harness.run.fuzz import fuzz
    from conform.harness.run.graph_formats import graph_format
    from conform.reports import ResultWriter, Tally, write_reports

    label = args.backend.replace(":", "-")
    out = writable_directory(args.out or Path("conform-out") / f"{label}-fuzz", "--out",
                             args.force)
    unknown = sorted(set(args.ops or ()) - set(specs))
    if unknown:
        print(f"conform fuzz: error: unknown ops: {', '.join(unknown)}", file=sys.stderr)
        return 2
    budget = args.budget if args.budget or args.time else 100
    tally = Tally()
    records: list = []

    def write(record: dict) -> None:
        writer.write(record)
        tally.add(record)
        records.append(record)

    with ResultWriter(out / "results.jsonl") as writer:
        figures = fuzz(specs, budget=budget, seconds=args.time, max_nodes=args.max_nodes,
                       seed=args.seed, write=write, progress=_progress, backend=args.backend,
                       ops=args.ops, reduce=not args.no_reduce, chain=args.chain)
    print(file=sys.stderr)
    form = graph_format(args.backend)
    bound = sorted(form.bound(specs, args.ops))
    reached = [op for op in figures["ops_reached"] if op in bound]
    meta = {"backend": args.backend, "backend_name": args.backend,
            "backend_version": figures["backend_version"], "device": "cpu",
            "model_format": form.model_format, "optimization": form.optimization,
            "subnormals_declared": form.subnormals, "subnormals_applied": form.subnormals,
            "seed": args.seed,
            "max_examples": figures["graphs"], "complete": True, "cases_planned": figures["graphs"],
            "selected_ops": reached, "wall_seconds": figures["seconds"],
            "worker_restarts": figures["worker_restarts"], "workers_recycled": 0,
            "fuzz": {"graphs": figures["graphs"], "max_nodes": args.max_nodes, "ops": args.ops,
                     "chain": args.chain,
                     "graphs_per_second": figures["graphs_per_second"],
                     "ops_bound": len(bound), "ops_reached": len(reached),
                     "distinct_failures": figures["failures"]}}
    if form.binding == "onnx":
        meta["onnx_opset"] = onnx_opset()
    write_reports(out, meta, conform.__version__, records=records, tally=tally)
    counts = figures["counts"]
    print(f"{figures['graphs']} graphs in {figures['seconds']:.1f} s "
          f"({figures['graphs_per_second']} graphs/s): "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + f"; {len(reached)} of {len(bound)} {form.model_format}-bound ops reached; "
            f"{len(figures['failures'])} distinct reduced failures\nwrote {out}/"
            "{results.jsonl,summary.json,report.html}")
    found = any(counts.get(v) for v in ("fail", "error", "crash", "timeout"))
    return EXIT_FOUND if found else EXIT_OK


def _progress(done: int, counts: dict, elapsed: float) -> None:
    if sys.stderr.isatty() or done % 50 == 0:
        problems = sum(counts.get(v, 0) for v in ("fail", "error", "crash", "timeout"))
        print(f"\r{done} graphs, {done / max(elapsed, 1e-9):.1f}/s, {problems} failing",
              end="", file=sys.stderr, flush=True)


__all__ = ["add_commands", "cmd_fuzz", "max_nodes"]
