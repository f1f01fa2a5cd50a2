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

from conform.harness.run.graph_runs import graph_record, run_graph


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


def failure_key(backend: str, version, ops, wanted: tuple) -> str:
    """What deduplicates failures: the backend and its version, the reduced graph's op
    multiset (sorted) and the symptom (the signature).

    >>> failure_key("onnxruntime", "1.32.0", ["onnx_mul", "exp"], ("fail", "node", "onnx_mul"))
    'onnxruntime 1.32.0 | exp+onnx_mul | fail/node/onnx_mul'
    >>> failure_key("jax", "jax 0.10.2", ["sinh"], ("fail", "node", "sinh"))
    'jax 0.10.2 | sinh | fail/node/sinh'
    """
    named = str(version) if str(version).split(" ")[0] == backend else f"{backend} {version}"
    return f"{named} | {'+'.join(sorted(ops))} | " + "/".join(str(part) for part in wanted)


class Failures:
    """A campaign's failing graphs, reduced and deduplicated (:func:`failure_key`). A failing
    graph is reduced while its signature has been reduced fewer than ``per_signature`` times;
    :meth:`add` writes into its record a ``failure`` block: the key, the reduced graph's nodes,
    whether the failure re-ran the same, and ``duplicate_of`` (the first graph with that key),
    or for a graph not reduced, only its signature."""

    def __init__(self, backend: str, per_signature: int = 2):
        self.backend, self.per_signature = backend, per_signature
        self._tries: dict = {}
        self._seen: dict = {}   # key -> the entry of distinct()

    def add(self, record: dict, graph, worker) -> None:
        """Reduce ``graph`` (whose result line is ``record``) if its signature is new enough."""
        wanted = signature(record)
        tries = self._tries[wanted] = self._tries.get(wanted, 0) + 1
        if tries > self.per_signature:
            record["failure"] = {"reduced": False, "signature": list(map(str, wanted))}
            return
        small, _, deterministic = reduce_graph(graph, worker, seed=record["seed"],
                                               backend=self.backend, confirmations=1)
        key = failure_key(self.backend, worker.version, small.ops, wanted)
        entry = self._seen.setdefault(key, {"key": key, "first": record["id"], "graphs": 0,
                                            "ops": sorted(small.ops), "nodes": small.describe(),
                                            "deterministic": deterministic})
        entry["graphs"] += 1
        record["failure"] = {"reduced": True, "key": key, "nodes": small.describe(),
                             "deterministic": deterministic,
                             "duplicate_of": None if entry["first"] == record["id"]
                             else entry["first"]}

    def distinct(self) -> list:
        """The distinct reduced failures: key, first graph, graphs reduced to it, ops, nodes."""
        return list(self._seen.values())
