"""``conform repro graph.N --from DIR``: a failing generated graph of a ``conform fuzz`` run,
re-drawn, reduced and written as a standalone model.

The graph is re-drawn from its seed (the record's ``seed``) over the campaign's ops and largest
size (summary.json's ``fuzz`` block), checked against the recorded nodes, and reduced on the
run's backend (:func:`conform.harness.run.reduce.reduce_graph`). The reduced graph is written
in each model
format of :data:`GRAPH_WRITERS` asked for (ONNX by default: ``model.onnx``, the leaves as outputs,
and ``model-instrumented.onnx``, every value an output), beside
``inputs.npz`` (its graph inputs), ``reference.npz`` (the float64 composition of each value,
outside any backend), ``graph.json`` (its nodes, the failure's signature and message) and
``repro.py``, which runs the ONNX model on onnxruntime and prints each value beside its
reference.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from conform.harness.backends.onnx_graphs import build_graph_model
from conform.harness.judge.graphs import reference
from conform.harness.run.fuzz import draw_fuzz_graph, fuzz_strategies
from conform.harness.run.graph_formats import graph_format
from conform.harness.run.reduce import reduce_graph, signature
from conform.reports import atomic_path, write_atomically

SCRIPT = '''#!/usr/bin/env python3
"""A reduced generated graph written by conform repro: runs model.onnx (as a user runs it)
and model-instrumented.onnx (every value an output) on onnxruntime (ORT_ENABLE_ALL, one
thread) and prints each value beside its float64 reference."""
import json, pathlib
import numpy as np, onnxruntime as ort

here = pathlib.Path(__file__).parent
options = ort.SessionOptions()
options.intra_op_num_threads = options.inter_op_num_threads = 1
feeds = dict(np.load(here / "inputs.npz"))
expected = dict(np.load(here / "reference.npz"))
print(json.loads((here / "graph.json").read_text())["message"])
for model in ("model.onnx", "model-instrumented.onnx"):
    print(model)
    session = ort.InferenceSession(str(here / model), options, providers=["CPUExecutionProvider"])
    for out, value in zip(session.get_outputs(), session.run(None, feeds)):
        print(f"  {out.name}: onnxruntime {np.ravel(value)[:8]}")
        print(f"  {' ' * len(out.name)}  float64     {np.ravel(expected[out.name])[:8]}")
'''


def _write_onnx(graph, out: Path) -> list[str]:
    """model.onnx (the leaves as outputs: as a user runs it) and model-instrumented.onnx
    (every value an output)."""
    every = [name for node in graph.nodes for name in node.outputs]
    for name, outputs in (("model.onnx", graph.leaves), ("model-instrumented.onnx", every)):
        with atomic_path(out / name) as temporary:
            Path(temporary).write_bytes(build_graph_model(graph, outputs).SerializeToString())
    return ["model.onnx", "model-instrumented.onnx"]


#: How a reduced graph is written per model format (another format's writer joins here)
GRAPH_WRITERS = {"onnx": _write_onnx}


def redrawn(specs: dict, summary: dict, record: dict, error):
    """The graph behind ``record`` of a fuzz run, re-drawn from its seed and checked against
    the recorded nodes; raises ``error`` (an exception class) if it is not that graph."""
    fuzz = summary.get("fuzz") or {}
    strategies = fuzz_strategies(specs, fuzz.get("max_nodes", 10), fuzz.get("ops"),
                                 summary["backend"], fuzz.get("chain", 0.0))
    graph = draw_fuzz_graph(strategies, seed=record["seed"])
    drawn = json.loads(json.dumps(graph.describe()))
    recorded = [{k: v for k, v in node.items() if k != "verdict"} for node in record["nodes"]]
    if drawn != recorded:
        raise error(f"graph {record['id']} re-draws as {[n['op'] for n in drawn]}, but the run "
                    f"recorded {[n['op'] for n in recorded]}: another conform version or specs?")
    return graph


def write_graph_repro(run, record: dict, specs: dict, out: Path, formats, error) -> Path:
    """Re-draw, reduce and write the failing graph of ``record`` (see the module's text)."""
    unknown = sorted(set(formats) - set(GRAPH_WRITERS))
    if unknown:
        raise error(f"a graph is written as {', '.join(GRAPH_WRITERS)}; not yet as "
                    f"{', '.join(unknown)}")
    form = graph_format(run.summary["backend"])
    if form.model_format not in GRAPH_WRITERS:
        raise error(f"a graph is written as {', '.join(GRAPH_WRITERS)}; a {form.model_format} "
                    f"graph not yet")
    graph = redrawn(specs, run.summary, record, error)
    worker = form.worker()
    try:
        small, again, deterministic = reduce_graph(graph, worker, seed=record["seed"],
                                                   backend=run.summary["backend"])
    finally:
        worker.close()
    out.mkdir(parents=True, exist_ok=True)
    for fmt in dict.fromkeys(["onnx", *formats]):
        GRAPH_WRITERS[fmt](small, out)
    fed = {name: np.asarray(x) for name, x in small.inputs.items() if name not in small.constants}
    ref = reference(small, seed=record["seed"])
    every = [name for node in small.nodes for name in node.outputs]
    for name, arrays in (("inputs.npz", fed), ("reference.npz",
                                               {n: np.asarray(ref.values[n]) for n in every})):
        with atomic_path(out / name) as temporary, open(temporary, "wb") as stream:
            np.savez(stream, **arrays)
    data = {"graph": record["id"], "seed": record["seed"], "backend": run.summary["backend"],
            "backend_version": run.summary.get("backend_version"), "nodes": small.describe(),
            "signature": [str(part) for part in signature(again)],
            "recorded_signature": [str(part) for part in signature(record)],
            "deterministic": deterministic, "message": again.get("message", again["verdict"])}
    write_atomically(out / "graph.json", json.dumps(data, indent=1, default=str))
    write_atomically(out / "repro.py", SCRIPT)
    (out / "repro.py").chmod(0o755)
    return out
