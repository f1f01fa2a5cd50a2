"""Reducing a failing generated graph to the fewest nodes that fail the same way.

A failure's *signature* is its verdict, its symptom (a node failing its own error model in the
instrumented run, or the as-run leaves outside their bound) and the op blamed (the failing
node's). The reducer deletes nodes greedily, one at a time, keeping each deletion after which
the graph still fails with the same signature. A deleted node's outputs that a kept node takes
become graph inputs fed with the values the backend gave them in the instrumented run of the
graph before that deletion (as XLA's hlo_bisect replaces instructions by constants from a
reference run); deleting the nodes after a value trims the outputs. For a node failure it tries
the blamed node alone first. The reduced graph is then run again ``confirmations`` times to
check that it fails with the same signature each time (a deterministic failure).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from conform.harness.run.fuzz import graph_record, run_graph


def signature(record: dict) -> tuple:
    """What two failures must share to be the same: verdict, symptom and the op blamed (the
    kind of error message for an error)."""
    if record["verdict"] in ("error", "crash", "timeout", "unsupported"):
        return record["verdict"], record["message"].split(":")[1][:40] if ":" in record["message"] else ""
    return record["verdict"], record.get("symptom"), record.get("blamed")


def subgraph(graph, keep, recorded: dict):
    """``graph`` with only the nodes numbered in ``keep``; a value a kept node takes that no
    kept node gives becomes a graph input holding ``recorded[name]`` (or its own value)."""
    nodes = [n for k, n in enumerate(graph.nodes) if k in keep]
    cases = [c for k, c in enumerate(graph.cases) if k in keep]
    given = {name for node in nodes for name in node.outputs}
    inputs = {}
    for node in nodes:
        for name in node.inputs:
            if name not in given and name not in inputs:
                inputs[name] = recorded.get(name, graph.inputs.get(name, graph.values[name]))
    values = {**graph.values, **inputs}
    return dataclasses.replace(graph, inputs=inputs, nodes=nodes, cases=cases, values=values)


def _attempt(graph, worker, seed: int, backend: str):
    """Run ``graph``: its record and every value the instrumented run gave (by name)."""
    kind, replies = run_graph(graph, worker)
    record = graph_record(graph, 0, seed, kind, replies, backend)
    recorded = {}
    if kind == "ok" and len(replies) > 1 and replies[1][0] == "ok":
        every = [name for node in graph.nodes for name in node.outputs]
        recorded = dict(zip(every, map(np.asarray, replies[1][1])))
    return record, recorded


def reduce_graph(graph, worker, *, seed: int, backend: str = "onnxruntime",
                 confirmations: int = 2) -> tuple:
    """``(reduced graph, its record, deterministic)``: the smallest graph found that fails as
    ``graph`` does (``graph`` itself, with its record, if it does not fail)."""
    record, recorded = _attempt(graph, worker, seed, backend)
    wanted = signature(record)
    if record["verdict"] == "pass" or not recorded and record["verdict"] == "fail":
        return graph, record, False
    best, best_record = graph, record
    blamed = _blamed_node(record)
    if blamed is not None:
        alone = subgraph(graph, {blamed}, recorded)
        again, _ = _attempt(alone, worker, seed, backend)
        if signature(again) == wanted:
            best, best_record = alone, again
    k = 0
    while k < len(best.nodes) and len(best.nodes) > 1:
        current, current_values = _attempt(best, worker, seed, backend)
        smaller = subgraph(best, set(range(len(best.nodes))) - {k}, current_values)
        again, _ = _attempt(smaller, worker, seed, backend) if smaller.leaves else ({}, {})
        if again and signature(again) == wanted:
            best, best_record = smaller, again
        else:
            k += 1
    repeated = [signature(_attempt(best, worker, seed, backend)[0]) for _ in range(confirmations)]
    return best, best_record, all(s == wanted for s in repeated)


def _blamed_node(record: dict) -> int | None:
    """The number of the node a node failure blames."""
    return record.get("blamed_node") if record.get("symptom") == "node" else None
