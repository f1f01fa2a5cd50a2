"""One generated graph run and judged: the pieces of ``conform fuzz``
(:mod:`conform.harness.run.fuzz`) that the reducer (:mod:`conform.harness.run.reduce`) re-runs.
See :mod:`conform.harness.run.fuzz` for the verdicts a graph's result line holds.
"""
from __future__ import annotations

import zlib
from typing import NamedTuple

import numpy as np

from conform.dtypes import np_dtype
from conform.generators.graphs import MAX_NODES, draw_graph
from conform.harness.backends.ort_refusals import refused
from conform.harness.judge.graphs import judge_leaves, judge_nodes, reference
from conform.harness.judge.judging import failure_message
from conform.harness.run.graph_formats import graph_format
from conform.harness.run.graph_worker import GraphWorker, WorkerDied
from conform.records import SCHEMA_VERSION


#: What the nnef executor says when it has no kernel for a node, and what an adapter's refusal
#: (conform's ``Unsupported``: a dtype or op it does not claim) reads as (the backend's
#: ``unsupported``); onnxruntime's refusals: :func:`~conform.harness.backends.ort_refusals.refused`
_NO_KERNEL = ("operation not implemented", "Unsupported: ")


def graph_seed(seed: int, number: int) -> int:
    """The seed graph number ``number`` of a run with ``seed`` is drawn from."""
    return zlib.crc32(f"graph:{seed}:{number}".encode())


class FuzzGraphs(NamedTuple):
    """The strategies of one campaign's graphs: ``strict`` keeps a node its format accepts
    (its one-node model checked); ``quick``, for a format that checks a whole graph at once
    (``valid_graph``), keeps a node its lowering can express. Both draw the same graph wherever
    strict rejects no node that quick keeps."""

    quick: object
    strict: object
    valid_graph: object = None


def fuzz_strategies(specs: dict, max_nodes: int = MAX_NODES, ops=None,
                    backend: str = "onnxruntime", chain: float = 0.0) -> FuzzGraphs:
    """The graphs ``conform fuzz`` draws for ``backend`` over the ops of ``specs`` bound to its
    format (of ``ops`` only, if given), quick and strict, each node the newest one's consumer
    with chance ``chain``."""
    form = graph_format(backend)
    strict = form.strategy(specs, max_nodes, ops, chain=chain)
    if form.valid_graph is None:
        return FuzzGraphs(strict, strict)
    return FuzzGraphs(form.strategy(specs, max_nodes, ops, accept=form.lowers, chain=chain),
                      strict, form.valid_graph)


def draw_fuzz_graph(strategies: FuzzGraphs, *, seed: int):
    """The graph ``conform fuzz`` runs for ``seed``. For a format that checks a whole graph,
    it is drawn quickly (no node's model checked), then its whole instrumented model checked
    once (for ONNX: ``onnx.checker`` full check and strict shape inference, as
    :func:`~conform.harness.backends.onnx_graphs.onnx_accepts` checks a node); where that fails,
    drawn again checking each node. Every graph returned is valid; checking once per graph
    instead of per node saves most of the checker's time."""
    if strategies.valid_graph is None:
        return draw_graph(strategies.strict, seed=seed)
    graph = draw_graph(strategies.quick, seed=seed)
    return graph if strategies.valid_graph(graph) else draw_graph(strategies.strict, seed=seed)


def onnx_strategy(specs: dict, max_nodes: int = MAX_NODES):
    """The graphs ``conform fuzz`` draws for an ONNX backend: over every op of ``specs`` bound
    to ONNX at the run's opset, each node's model checked."""
    return graph_format("onnxruntime").strategy(specs, max_nodes)


def run_graph(graph, worker: GraphWorker) -> tuple[str, list]:
    """Run ``graph`` as generated and instrumented: ``(kind, replies)``, kind ``ok`` or the
    worker's death (``crash``, ``timeout``, with the message as the only reply)."""
    every = [name for node in graph.nodes for name in node.outputs]
    try:
        models = [worker.build(graph, outputs) for outputs in (graph.leaves, every)]
    except Exception as exc:   # a graph the format cannot express: its error, not the run's
        failed = ("error", f"building its model: {type(exc).__name__}: {str(exc)[:2000]}", "")
        return "ok", [failed, failed]
    fed = [name for name in graph.inputs if name not in graph.constants]
    dtypes = [graph.dtypes[name] for name in (*fed, *every)]
    feeds = {name: np.asarray(graph.inputs[name], dtype=np_dtype(graph.dtypes[name]))
             for name in fed}
    try:
        return "ok", worker.run(models, feeds, dtypes)
    except WorkerDied as died:
        return died.kind, [str(died)]


def graph_record(graph, number: int, seed: int, kind: str, replies: list, backend: str) -> dict:
    """The result line of graph ``number`` (drawn from ``seed``) given the worker's
    ``replies`` (see :func:`run_graph`)."""
    record = {"schema_version": SCHEMA_VERSION, "id": f"graph.{number}", "op": "graph",
              "dtype": graph.dtype, "input_dtypes": [graph.dtypes[n] for n in graph.inputs],
              "out_dtype": graph.dtype, "shapes": [list(np.shape(x)) for x in graph.inputs.values()],
              "attrs": {}, "plan": "normal", "seed": seed, "nodes": graph.describe(),
              "leaves": list(graph.leaves)}
    if kind != "ok":
        return {**record, "verdict": kind, "message": f"graph {number}: {replies[0]}"}
    failed = [(which, reply) for which, reply in zip(("as run", "instrumented"), replies)
              if reply[0] != "ok"]
    if failed:
        which, reply = failed[0]
        verdict = "unsupported" if any(mark in reply[1] for mark in _NO_KERNEL) \
            or refused(reply[1]) else "error"
        return {**record, "verdict": verdict, "message": f"graph {number} ({which}): {reply[1]}",
                "traceback": reply[2]}
    every = [name for node in graph.nodes for name in node.outputs]
    as_run = dict(zip(graph.leaves, replies[0][1]))
    instrumented = dict(zip(every, replies[1][1]))
    try:
        _judge(record, graph, number, as_run, instrumented, backend)
    except Exception as exc:   # an output the judge cannot read must not stop the campaign
        record.update(verdict="error", message=f"graph {number}: could not judge its outputs: "
                                               f"{type(exc).__name__}: {exc}")
    return record


def _judge(record: dict, graph, number: int, as_run: dict, instrumented: dict,
           backend: str) -> None:
    """Add the verdicts of both runs to ``record``."""
    nodes = judge_nodes(graph, instrumented, graph_format(backend).subnormals)
    for described, judged in zip(record["nodes"], nodes):
        described["verdict"] = judged.verdict
    leaves = judge_leaves(graph, reference(graph, seed=record["seed"]), as_run,
                          {name: instrumented[name] for name in graph.leaves})
    record.update(model="graph(first-order bound)", unit="abs", checked=leaves.checked,
                  mismatched=leaves.mismatched, impl_defined_elements=0,
                  ill_conditioned_elements=leaves.ill_conditioned,
                  max_error=leaves.max_error, bound=leaves.bound, worst=leaves.worst,
                  histogram=leaves.histogram,
                  as_run=leaves.verdict)
    blamed = next((k for k, judged in enumerate(nodes) if judged.verdict == "fail"), None)
    if blamed is not None:
        node, case = graph.nodes[blamed], graph.cases[blamed]
        record.update(verdict="fail", blamed=node.spec.op, blamed_node=blamed, symptom="node",
                      message=f"graph {number} (instrumented), node {blamed} "
                              + failure_message(case, nodes[blamed], backend))
    elif leaves.reason:
        record.update(verdict="fail", symptom="as_run",
                      message=f"graph {number} (as run) {graph.ops}: {leaves.reason}")
    elif leaves.verdict == "fail":
        w = leaves.worst
        record.update(verdict="fail", symptom="as_run", message=(
            f"graph {number} (as run) {graph.ops}: Mismatched elements: {leaves.mismatched} / "
            f"{leaves.checked}; worst {w['output']}{w['index']}: actual={w['actual']!r}, "
            f"expected={w['expected']!r} (float64 composition), instrumented={w['plain']!r}: "
            f"error {w['error']:.4g} > bound {w['bound']:.4g} and > the instrumented run's "
            f"{w['plain_error']:.4g}"))
    else:
        record["verdict"] = leaves.verdict
