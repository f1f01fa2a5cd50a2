"""``conform repro graph.N --from DIR``: a failing generated graph of a ``conform fuzz`` run,
re-drawn, reduced and written as a standalone model.

The graph is re-drawn from its seed (the record's ``seed``) over the campaign's ops and largest
size (summary.json's ``fuzz`` block), checked against the recorded nodes, and reduced on the
run's backend (:func:`conform.harness.run.reduce.reduce_graph`). The reduced graph is written
in its run's model format (the one format it can be written in: its ops are that format's) by
that format's writer (:data:`~conform.harness.assurance.graph_writers.GRAPH_WRITERS`): the
model with the leaves as outputs and the instrumented one with every value an output
(``model.onnx``, ``model.mlir`` or ``model.nnef/``, and ``model-instrumented.*``), beside
``inputs.npz`` (its graph inputs), ``reference.npz`` (the float64 composition of each value,
outside any backend), ``graph.json`` (its nodes, the failure's signature and message, and per
model file the inputs it takes and the outputs it gives) and ``repro.py``, which runs both
models as the run's backend does and prints each value beside its reference.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from conform.harness.assurance.graph_writers import GRAPH_WRITERS
from conform.harness.judge.graphs import reference
from conform.harness.run.fuzz import draw_fuzz_graph, fuzz_strategies
from conform.harness.run.graph_formats import graph_format
from conform.harness.run.reduce import reduce_graph, signature
from conform.reports import atomic_path, write_atomically


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
    """Re-draw, reduce and write the failing graph of ``record`` (see the module's text) in its
    run's format; ``formats`` (``--format``) may name that format only."""
    backend = run.summary["backend"]
    form = graph_format(backend)
    others = sorted(set(formats) - {form.model_format})
    if others:
        raise error(f"{record['id']} of a {backend} run is written as {form.model_format} only "
                    f"(the format its ops were drawn in), not as {', '.join(others)}")
    graph = redrawn(specs, run.summary, record, error)
    worker = form.worker()
    try:
        small, again, deterministic = reduce_graph(graph, worker, seed=record["seed"],
                                                   backend=backend)
    finally:
        worker.close()
    return write_graph_files(small, out, form.model_format, record["seed"], {
        "graph": record["id"], "seed": record["seed"], "backend": backend,
        "backend_version": run.summary.get("backend_version"),
        "signature": [str(part) for part in signature(again)],
        "recorded_signature": [str(part) for part in signature(record)],
        "deterministic": deterministic, "message": again.get("message", again["verdict"])})


def write_graph_files(graph, out: Path, model_format: str, seed: int, facts: dict) -> Path:
    """Write ``graph`` into ``out`` as ``conform repro`` does (see the module's text): its two
    models in ``model_format``, inputs.npz, reference.npz (the float64 composition:
    :func:`~conform.harness.judge.graphs.reference` with the graph's ``seed``), graph.json
    (``facts``, its nodes and its models' inputs and outputs) and repro.py."""
    out.mkdir(parents=True, exist_ok=True)
    writer = GRAPH_WRITERS[model_format]
    models = writer.write(graph, out)
    fed = {name: _loadable(x) for name, x in graph.inputs.items() if name not in graph.constants}
    ref = reference(graph, seed=seed)
    every = [name for node in graph.nodes for name in node.outputs]
    for name, arrays in (("inputs.npz", fed), ("reference.npz",
                                               {n: _loadable(ref.values[n]) for n in every})):
        with atomic_path(out / name) as temporary, open(temporary, "wb") as stream:
            np.savez(stream, **arrays)
    data = {**facts, "nodes": graph.describe(), "models": models}
    write_atomically(out / "graph.json", json.dumps(data, indent=1, default=str))
    write_atomically(out / "repro.py", writer.script)
    (out / "repro.py").chmod(0o755)
    return out


def _loadable(value) -> np.ndarray:
    """``value`` as ``np.load`` reads it back without pickles: strings (an object array) as
    fixed-width unicode (the script makes them objects again), which drops trailing NULs:
    conform's strings hold none (:data:`conform.dtypes.STRING_ALPHABET`), a string with one is
    refused; ml_dtypes' types are saved as their bytes (``np.savez`` does that itself)."""
    array = np.asarray(value)
    if array.dtype == object:
        if not all(isinstance(x, str) and not x.endswith("\0") for x in array.flat):
            raise TypeError("an object array of other than strings without a trailing NUL has "
                            "no form np.load reads back without pickles")
        return array.astype(np.str_)
    return array
