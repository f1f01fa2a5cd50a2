"""Generated graphs (conform.generators.graphs) as ONNX models (harness/backends/onnx_graphs)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from conform.generators import kit
from conform.generators.graphs import draw_graph, graphs
from conform.harness.backends.onnx_graphs import (build_graph_model, onnx_accepts, onnx_allowed,
                                                  valid)


@pytest.fixture(scope="module")
def onnx_graphs(specs):
    bound = {op: spec for op, spec in specs.items() if "onnx" in spec.bindings}
    return graphs(bound, allowed=onnx_allowed, accept=onnx_accepts)


@functools.cache
def _drawn(strategy, seed):
    return draw_graph(strategy, seed=seed)


def test_every_sampled_graph_is_a_valid_onnx_model(onnx_graphs):
    """Both models of each graph (leaves as outputs; every value an output) pass the checker's
    full check and strict shape inference, and the shapes ONNX infers are the graph's. Over the
    whole catalog few drawn inputs can take an earlier node's output (its dtype and shape must
    fit: string, integer, sequence and optional ops abound), so reuse is counted over 24 graphs
    (16 reused inputs at the time of writing; 2 in the first 12 graphs)."""
    nodes = reused = 0
    for seed in range(24):
        graph = _drawn(onnx_graphs, seed)
        assert 1 <= len(graph.nodes) <= 10 and graph.leaves
        nodes += len(graph.nodes)
        reused += sum(name.startswith("v") for node in graph.nodes for name in node.inputs)
        valid(build_graph_model(graph, graph.leaves))
        every = [name for node in graph.nodes for name in node.outputs]
        inferred = valid(build_graph_model(graph, every)).graph.output
        assert [[d.dim_value for d in out.type.tensor_type.shape.dim] for out in inferred] \
            == [list(np.shape(graph.values[name])) for name in every]
    assert nodes > 48 and reused > 7, (nodes, reused)   # graphs, not single ops


def test_the_same_seed_draws_the_same_graph(onnx_graphs):
    first, again = _drawn(onnx_graphs, 3), draw_graph(onnx_graphs, seed=3)
    assert first.describe() == again.describe()
    assert all(np.array_equal(first.inputs[name], again.inputs[name], equal_nan=True)
               for name in first.inputs)
    assert first.describe() != _drawn(onnx_graphs, 4).describe()


def test_preferring_biases_shapes_only_inside_it():
    import random

    from conform.generators._drawing import _draw, _without_local_constants

    plain = kit.shape(min_rank=1, max_rank=2)
    assert plain is kit.shape(min_rank=1, max_rank=2)   # a suite's draws are unchanged
    rng = random.Random(0)
    with kit.preferring([(3, 5), (2, 2, 2)]), _without_local_constants():
        drawn = [_draw(kit.shape(min_rank=1, max_rank=2), rng) for _ in range(40)]
    assert drawn.count((3, 5)) >= 10 and (2, 2, 2) not in drawn
    assert kit.shape(min_rank=1, max_rank=2) is plain


def test_shapes_draw_what_the_filtered_and_one_of_strategies_drew():
    """kit.shape's strategies, made once (no filtered strategy; inside ``preferring`` one
    strategy reading the preferred set when drawn), draw the shapes Hypothesis's own
    ``lists(...).map(tuple).filter(...)`` and ``one_of(sampled_from(fits), ...)`` drew from the
    same seeds: the suites' corpora and the graphs a seed draws are unchanged."""
    import math
    import random

    from hypothesis import strategies as st

    from conform.generators._drawing import _draw, _without_local_constants

    def draws(strategy, seed):
        with _without_local_constants():
            return [_draw(strategy, random.Random(seed + k)) for k in range(30)]

    old = st.lists(st.integers(0, 6), min_size=0, max_size=4).map(tuple).filter(
        lambda s: math.prod(s) <= kit.MAX_ARRAY_SIZE)
    new = kit.shape(min_rank=0, max_rank=4, min_side=0, max_side=6)
    assert draws(new, 1) == draws(old, 1)
    fits = ((2, 2, 2), (3, 5))   # preferring's order: sorted
    with kit.preferring(fits):
        new = kit.shape(min_rank=0, max_rank=4, min_side=0, max_side=6)
        assert draws(new, 2) == draws(st.one_of(st.sampled_from(fits), old), 2)


def test_a_campaign_runs_graphs_twice_and_judges_them(specs):
    """Graphs run on onnxruntime (as generated and instrumented): each result line holds its
    nodes and a verdict, and the instrumented run judged each node."""
    from conform.harness.run.fuzz import fuzz

    lines = []
    figures = fuzz(specs, budget=4, max_nodes=3, seed=5, write=lines.append)
    assert figures["graphs"] == 4 and sum(figures["counts"].values()) == 4
    assert figures["backend_version"] and all(1 <= len(r["nodes"]) <= 3 for r in lines)
    judged = [r for r in lines if r["verdict"] in ("pass", "fail", "ill_conditioned")]
    assert judged and all("verdict" in n for r in judged for n in r["nodes"])
    # ill_conditioned only where elements were excused and none judged; a pass may judge none
    # only where its leaves are empty (seed 5's graph.3: NonMaxSuppression of no boxes, a copy
    # of a [2, 0, 4] input, an empty slice)
    assert any(r["checked"] for r in judged)
    assert all(r["checked"] == 0 < r["ill_conditioned_elements"]
               for r in judged if r["verdict"] == "ill_conditioned")
    assert all(r["worst"] is None for r in judged
               if r["checked"] + r["ill_conditioned_elements"] == 0)


def test_the_propagated_bound_judges_a_wrong_leaf_and_excuses_an_ill_conditioned_one():
    """A leaf far outside its bound fails only where it is also farther from the reference than
    the instrumented run; an element whose bound exceeds 1% of its reference is not judged."""
    from types import SimpleNamespace

    from conform.harness.judge.graphs import Reference, judge_leaves

    graph = SimpleNamespace(leaves=("v0",))
    e = np.array([1.0, 2.0, 1e-9])
    ref = Reference({"v0": e}, {"v0": np.array([1e-6, 1e-6, 1e-6])})
    good = np.float32(e)
    assert judge_leaves(graph, ref, {"v0": good}, {"v0": good}).verdict == "pass"
    wrong = np.float32([1.0, 2.001, 5.0])
    judged = judge_leaves(graph, ref, {"v0": wrong}, {"v0": good})
    assert (judged.verdict, judged.mismatched, judged.ill_conditioned) == ("fail", 1, 1)
    assert judged.worst["index"] == [1] and judged.worst["plain"] == 2.0
    # the instrumented run is as far off: not a graph-level failure
    assert judge_leaves(graph, ref, {"v0": wrong}, {"v0": wrong}).verdict == "pass"
    ill = Reference({"v0": e[2:]}, {"v0": np.array([1e-6])})
    assert judge_leaves(graph, ill, {"v0": wrong[2:]}, {"v0": good[2:]}).verdict \
        == "ill_conditioned"
    # leaves without elements: nothing judged, nothing excused, a pass (as an empty output is)
    empty = Reference({"v0": e[:0]}, {"v0": np.array([])})
    nothing = judge_leaves(graph, empty, {"v0": good[:0]}, {"v0": good[:0]})
    assert (nothing.verdict, nothing.checked, nothing.ill_conditioned) == ("pass", 0, 0)


def test_the_reference_propagates_bounds_through_sensitive_nodes(onnx_graphs):
    """Every value's bound is finite and non-negative where its reference is finite and no
    integer or boolean output flipped; a graph input's is zero."""
    from conform.harness.judge.graphs import reference

    for seed in range(6):
        graph = _drawn(onnx_graphs, seed)
        ref = reference(graph, seed=seed)
        assert all(not ref.bounds[name].any() for name in graph.inputs)
        for node in graph.nodes:
            for name in node.outputs:
                bound = np.asarray(ref.bounds[name])
                assert bound.shape == np.shape(ref.values[name])
                assert (np.nan_to_num(bound, posinf=1.0) >= 0).all()


def test_the_reducer_keeps_the_failure_and_confirms_it(specs):
    """A graph of 10 nodes over a fixed set of ops (so that a grown catalog draws the same one)
    whose float16 Mul is off on onnxruntime (the intermediate before it is kept in float32)
    reduces to the Mul and its producer, with the same signature on every re-run."""
    from conform.harness.run.fuzz import onnx_strategy
    from conform.harness.run.graph_worker import GraphWorker
    from conform.harness.run.reduce import reduce_graph, signature

    ops = ("onnx_reduce_sum_square", "onnx_div", "onnx_add", "onnx_mul", "onnx_reduce_mean",
           "onnx_sub")
    graph = draw_graph(onnx_strategy({op: specs[op] for op in ops}), seed=6)
    assert len(graph.nodes) == 10 and graph.dtype == "float16"
    worker = GraphWorker()
    try:
        small, record, deterministic = reduce_graph(graph, worker, seed=6)
    finally:
        worker.close()
    assert signature(record) == ("fail", "node", "onnx_mul") and deterministic
    assert small.ops == ["onnx_reduce_sum_square", "onnx_mul"]


def test_a_campaign_checks_each_graph_once_and_draws_what_node_checks_draw(specs, onnx_graphs):
    """conform fuzz draws with the quick node check (the lowering only) and checks each whole
    model once: the graphs are valid, and the same as drawn checking every node's model."""
    from conform.harness.run.fuzz import draw_fuzz_graph, fuzz_strategies

    quick = fuzz_strategies(specs)
    for seed in range(6):
        graph = draw_fuzz_graph(quick, seed=seed)
        assert graph.describe() == _drawn(onnx_graphs, seed).describe()
        valid(build_graph_model(graph, [n for node in graph.nodes for n in node.outputs]))


def test_the_judges_reuse_of_drawn_answers_judges_as_recomputing_them(specs):
    """The instrumented judge and the float64 composition reuse the answer drawn with a node
    only where it holds (the same inputs, bit for bit): judging the backend's outputs (the
    oracle's values, or a ULP off where a later node takes them) with the drawn answers, with
    none (each asked of the oracle again) and with stale ones (each the answer for inputs a
    ULP below) gives the same judgements, reference values and bounds. Element-wise ops and
    reductions, whose graphs connect often."""
    import dataclasses

    from conform.harness.judge import graphs as judged
    from conform.harness.run.fuzz import onnx_strategy

    def moved(x, to=np.inf):
        x = np.asarray(x)
        return np.nextafter(x, to).astype(x.dtype) if x.dtype.kind == "f" else x

    ops = ("onnx_reduce_sum_square", "onnx_div", "onnx_add", "onnx_mul", "onnx_sub", "tanh")
    strategy = onnx_strategy({op: specs[op] for op in ops}, max_nodes=5)
    reused = 0
    for seed in (0, 4, 6, 9):
        graph = draw_graph(strategy, seed=seed)
        bare = dataclasses.replace(graph, cases=[dataclasses.replace(c, expectation=None)
                                                 for c in graph.cases])
        stale = dataclasses.replace(graph, cases=[_drawn_for(node.spec, dataclasses.replace(
            c, inputs=[moved(x, -np.inf) for x in c.inputs], expectation=None))
            for node, c in zip(graph.nodes, graph.cases)])
        outputs = {n: graph.values[n] for node in graph.nodes for n in node.outputs}
        taken = {n for node in graph.nodes for n in node.inputs}
        off = {n: moved(x) if n in taken else x for n, x in outputs.items()}
        for given in (outputs, off):
            again = repr(judged.judge_nodes(bare, given))
            assert repr(judged.judge_nodes(graph, given)) == again
            assert repr(judged.judge_nodes(stale, given)) == again
        again = judged.reference(bare, seed=seed)
        for ref in (judged.reference(graph, seed=seed), judged.reference(stale, seed=seed)):
            for name in ref.values:
                assert np.array_equal(ref.values[name], again.values[name], equal_nan=True)
                assert np.array_equal(ref.bounds[name], again.bounds[name], equal_nan=True)
        reused += sum(judged._drawn_holds(node.spec, case, judged._fed(
            node.spec, case, [graph.inputs[n] for n in node.inputs]))
            for node, case in zip(graph.nodes, graph.cases)
            if all(n in graph.inputs for n in node.inputs))
    assert reused >= 3, reused


def _drawn_for(spec, case):
    """``case`` with its oracle's answer attached, as a graph's node is drawn."""
    from conform.oracles.expectations import expect

    case.expectation = expect(spec, case)
    return case


def test_an_adapters_refusal_is_unsupported_and_a_runtime_error_an_error(specs):
    """A model an adapter refuses (conform's Unsupported: a dtype it does not claim) makes the
    graph ``unsupported``, as a runtime's missing kernel does; another exception an ``error``."""
    from conform.harness.run.fuzz import graph_record, onnx_strategy

    graph = draw_graph(onnx_strategy({"tanh": specs["tanh"]}, max_nodes=1), seed=0)
    refused = ("error", "Unsupported: openvino does not claim dtype int64", "")
    failed = ("error", "RuntimeError: Exception from src/inference", "")
    assert graph_record(graph, 0, 0, "ok", [refused, refused], "x")["verdict"] == "unsupported"
    assert graph_record(graph, 0, 0, "ok", [failed, failed], "x")["verdict"] == "error"


def test_chain_draws_each_node_as_a_consumer_of_the_one_before(specs):
    """With ``chain=1`` every node after the first takes the newest node's output where its
    first data input can (a unary element-wise op always can): over unary ops the graph is
    one chain. Without it, inputs are drawn among the values that fit or new ones, so fewer
    nodes read their predecessor's output."""
    unary = {op: specs[op] for op in ("tanh", "abs", "exp")}
    chained = graphs(unary, max_nodes=5, allowed=onnx_allowed, chain=1.0)
    plain = graphs(unary, max_nodes=5, allowed=onnx_allowed)
    follow = {0.0: 0, 1.0: 0}
    for seed in range(8):
        for chain, strategy in ((1.0, chained), (0.0, plain)):
            graph = draw_graph(strategy, seed=seed)
            follow[chain] += sum(node.inputs[0] in before.outputs
                                 for before, node in zip(graph.nodes, graph.nodes[1:]))
            if chain:
                assert all(node.inputs[0] in before.outputs
                           for before, node in zip(graph.nodes, graph.nodes[1:]))
    assert follow[1.0] > follow[0.0] + 4, follow


def _drawn_node(specs, op, label):
    """The first case ``op`` draws under ``label`` (its answer attached), as a graph."""
    from conform.generators import generate_cases
    from conform.generators.graphs import one_node
    from conform.oracles.expectations import expect

    return one_node(specs[op], generate_cases(specs[op], label, count=1, seed=0,
                                              answer=expect)[0])


def _onnxruntime_record(graph) -> dict:
    """``graph`` run on onnxruntime by a graph worker and judged: its result line."""
    from conform.harness.run.fuzz import graph_record, run_graph
    from conform.harness.run.graph_formats import graph_format

    worker = graph_format("onnxruntime").worker()
    try:
        return graph_record(graph, 0, 0, *run_graph(graph, worker), "onnxruntime")
    finally:
        worker.close()


@pytest.mark.parametrize("op, label, verdict", [
    ("onnx_string_concat", "string", "pass"),   # its leaves judged as strings
    ("onnx_dequantize_linear", "float6_e3m2fn->float32", "unsupported"),   # no such type
])
def test_a_graph_is_classed_as_its_one_op_case_is(op, label, verdict, specs):
    """A string leaf's worst element is recorded as its text (the judge once took it for a
    number: ``error``), and a type onnxruntime has not registered makes the graph
    ``unsupported``, as the onnxruntime backend classes the one-op case."""
    record = _onnxruntime_record(_drawn_node(specs, op, label))
    assert record["verdict"] == verdict, record.get("message")
    if verdict == "pass":
        assert isinstance(record["worst"]["expected"], str), record["worst"]


def _side_by_side(first, second):
    """Two one-node graphs as one: ``second``'s values renamed ``b_<name>``."""
    from conform.generators.graphs import Graph
    from conform.spec.program_nodes import ProgramNode

    def renamed(mapping):
        return {f"b_{name}": value for name, value in mapping.items()}

    (node,) = second.nodes
    moved = ProgramNode(node.spec, tuple(f"b_{n}" for n in node.inputs),
                        tuple(f"b_{n}" for n in node.outputs), node.attrs)
    return Graph({**first.inputs, **renamed(second.inputs)}, [*first.nodes, moved],
                 [*first.cases, *second.cases], {**first.dtypes, **renamed(second.dtypes)},
                 {**first.values, **renamed(second.values)})


@pytest.mark.parametrize("cast, verdict", [("float8_e4m3fn->float32", "pass"),
                                           ("float32->float8_e5m2", "unsupported")])
def test_a_string_input_beside_float8_values(cast, verdict, specs, tmp_path):
    """onnxruntime makes no OrtValue of a string array: a graph feeding strings beside a float8
    input runs through session.run, the float8 input an OrtValue, and passes (it was an error:
    every input was made an OrtValue); beside a float8 result, which session.run cannot give,
    it is unsupported. Its repro.py runs it the same way."""
    import json
    import subprocess
    import sys

    from conform.harness.assurance.graph_repro import write_graph_files

    graph = _side_by_side(_drawn_node(specs, "onnx_concat", "string"),
                          _drawn_node(specs, "onnx_cast", cast))
    record = _onnxruntime_record(graph)
    assert record["verdict"] == verdict, record.get("message")
    written = write_graph_files(graph, tmp_path, "onnx", 0, {"message": cast})
    proc = subprocess.run([sys.executable, str(written / "repro.py")], capture_output=True,
                          text=True, timeout=300)
    if verdict == "pass":
        assert proc.returncode == 0, proc.stderr
        models = json.loads((written / "graph.json").read_text())["models"]
        assert proc.stdout.count("farthest at ") + proc.stdout.count(" elements differ") == \
            sum(len(model_io["outputs"]) for model_io in models.values())
    else:
        assert "NoStringOrtValue: onnxruntime makes no OrtValue of a string array" in proc.stderr
