"""``conform fuzz``: generated graphs run as users run them, judged, recorded.

Each graph (:mod:`conform.generators.graphs`, drawn from the run's seed and its number) runs
twice on the backend (onnxruntime, jax, nnef or an ONNX adapter: :mod:`.graph_formats`), in an isolated worker
(:mod:`.graph_worker`): as generated (its leaves are the model's outputs) and instrumented
(every node's outputs are). Its result line holds its
``nodes`` (op, dtype, inputs, outputs, attributes and the instrumented verdict of each), the
as-run judgement of its leaves (:mod:`conform.harness.judge.graphs`) and one verdict:

* ``error``, ``crash``, ``timeout``: a run raised, or the worker died or hung;
* ``fail``: a node failed its own error model in the instrumented run (it names the node), or a
  leaf of the as-run model lies outside its propagated bound and farther from the float64
  composition than the instrumented run's value;
* ``ill_conditioned``: the propagated bound judges no element of the leaves (it excuses some);
* ``pass`` otherwise (leaves without elements included).
"""
from __future__ import annotations

import time

from conform.generators.graphs import MAX_NODES
from conform.harness.run.graph_formats import graph_format
from conform.harness.run.graph_runs import (draw_fuzz_graph, fuzz_strategies, graph_record,
                                            graph_seed, onnx_strategy, run_graph)
from conform.harness.run.reduce import Failures

__all__ = ["draw_fuzz_graph", "fuzz", "fuzz_strategies", "graph_record", "graph_seed",
           "onnx_strategy", "run_graph"]


#: Failing graphs reduced per signature (verdict, symptom, op blamed) in a campaign: a
#: signature's further failures are counted under it without a reduction of their own.
REDUCE_PER_SIGNATURE = 2
#: The verdicts a campaign reduces (a crash or timeout restarts the worker on every attempt).
REDUCED = ("fail", "error")


def fuzz(specs: dict, *, budget: int | None = None, seconds: float | None = None,
         max_nodes: int = MAX_NODES, seed: int = 0, write=None, progress=None,
         backend: str = "onnxruntime", ops=None, reduce: bool = True,
         chain: float = 0.0) -> dict:
    """Draw, run and judge graphs until ``budget`` graphs or ``seconds`` have passed (at least
    one of them is given), on ``backend`` (one of
    :data:`~conform.harness.run.graph_formats.GRAPH_BACKENDS`, or an ONNX adapter
    ``module:Class``), over ``ops`` (default: every op bound to its format), each node drawn
    as the newest one's consumer with chance ``chain``; ``write(record)`` takes each result line,
    ``progress(done, counts, elapsed)`` is told after each graph. With ``reduce``, failing
    graphs are reduced (:func:`~conform.harness.run.reduce.reduce_graph`) and deduplicated
    (:class:`~conform.harness.run.reduce.Failures`). Returns the run's figures (graphs, counts,
    rate, ops reached, backend version, distinct failures)."""
    strategies = fuzz_strategies(specs, max_nodes, ops, backend, chain)
    worker = graph_format(backend).worker()
    counts: dict = {}
    reached: set = set()
    failures = Failures(backend, REDUCE_PER_SIGNATURE)
    start = time.perf_counter()
    number = 0
    try:
        while (budget is None or number < budget) \
                and (seconds is None or time.perf_counter() - start < seconds):
            drawn_from = graph_seed(seed, number)
            graph = draw_fuzz_graph(strategies, seed=drawn_from)
            kind, replies = run_graph(graph, worker)
            record = graph_record(graph, number, drawn_from, kind, replies, backend)
            if reduce and record["verdict"] in REDUCED:
                failures.add(record, graph, worker)
            record["seconds"] = round(time.perf_counter() - start, 3)
            reached.update(graph.ops)
            counts[record["verdict"]] = counts.get(record["verdict"], 0) + 1
            if write is not None:
                write(record)
            number += 1
            if progress is not None:
                progress(number, counts, time.perf_counter() - start)
    finally:
        worker.close()
    elapsed = time.perf_counter() - start
    return {"graphs": number, "counts": counts, "seconds": round(elapsed, 3),
            "graphs_per_second": round(number / elapsed, 3) if elapsed else None,
            "ops_reached": sorted(reached), "backend_version": worker.version,
            "worker_restarts": max(worker.starts - 1, 0), "failures": failures.distinct(),
            "worker_cpu_seconds": round(worker.cpu_seconds, 3)}
