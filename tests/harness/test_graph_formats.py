"""Generated graphs as StableHLO modules (jax) and NNEF documents (harness/run/graph_formats).

Each test draws a few graphs (bench/graph_validity.py checks 1,000 per format and reports the
ops reached); the validity checks are the bench's own.
"""
from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from conform.generators.graphs import draw_graph
from conform.harness.run.fuzz import graph_seed
from conform.harness.run.graph_formats import GRAPH_BACKENDS, graph_format

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "graph_validity.py"
_spec = importlib.util.spec_from_file_location("graph_validity", _BENCH)
graph_validity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(graph_validity)


_STRATEGIES: dict = {}
_DRAWN: dict = {}


def _graphs(backend: str, specs, count: int) -> list:
    """The first ``count`` graphs of a campaign with seed 0 (drawn once per test session)."""
    if backend not in _STRATEGIES:
        _STRATEGIES[backend] = graph_format(backend).strategy(specs)
    for n in range(count):
        if (backend, n) not in _DRAWN:
            _DRAWN[backend, n] = draw_graph(_STRATEGIES[backend], seed=graph_seed(0, n))
    return [_DRAWN[backend, n] for n in range(count)]


def test_every_format_fuzz_runs_on_has_a_graph_format():
    from conform.harness.cli.fuzz import FUZZ_BACKENDS

    assert FUZZ_BACKENDS == GRAPH_BACKENDS
    assert [graph_format(b).binding for b in GRAPH_BACKENDS] == ["onnx", "xla", "nnef"]
    with pytest.raises(ValueError, match="backend='numpy' runs no generated graphs"):
        graph_format("numpy")


@pytest.mark.parametrize("backend, count", [("nnef", 15), ("jax", 2)])
def test_every_sampled_graph_is_a_valid_model(specs, backend, count):
    """Both models of each graph (leaves as outputs; every value an output) are valid in the
    format (a verified StableHLO module; an NNEF document that parses, with the graph's shapes
    inferred); the graphs reuse values, and their nodes are the format's bound ops."""
    bound = graph_format(backend).bound(specs)
    nodes = reused = 0
    for graph in _graphs(backend, specs, count):
        assert 1 <= len(graph.nodes) <= 10 and graph.leaves and set(graph.ops) <= set(bound)
        nodes += len(graph.nodes)
        reused += sum(name.startswith("v") for node in graph.nodes for name in node.inputs)
        every = [name for node in graph.nodes for name in node.outputs]
        for outputs in (graph.leaves, every):
            graph_validity.CHECKS[backend](graph, outputs)
    assert nodes > 2 * count and reused >= count // 5, (nodes, reused)


def test_a_node_jax_refuses_before_tracing_is_not_kept_in_a_stablehlo_graph(specs):
    """jax's CPU Cholesky has float32 and float64 kernels only: the op's lax_refuses hook makes
    the jax backend report a float16 case unsupported, and a graph must not hold it (its export
    fails: an invalid model), while a float32 case is kept."""
    from conform.generators import generate_cases
    from conform.harness.backends.stablehlo_graphs import xla_accepts
    from conform.oracles.expectations import expect

    spec = specs["cholesky"]
    kept = {dtype: xla_accepts(spec, generate_cases(spec, dtype, count=1, seed=0, answer=expect)[0])
            for dtype in ("float16", "float32")}
    assert kept == {"float16": False, "float32": True}


def test_the_checks_refuse_an_invalid_model(specs):
    """The validity checks can fail: an NNEF value whose shape is not the graph's, a StableHLO
    module whose types do not match."""
    from conform.harness.backends.stablehlo_graphs import export_graph, valid_stablehlo

    drawn = _graphs("nnef", specs, 1)[0]
    graph = dataclasses.replace(drawn, values=dict(drawn.values))
    name = graph.leaves[0]
    graph.values[name] = np.zeros(np.shape(graph.values[name]) + (7,))
    with pytest.raises(AssertionError):
        graph_validity.check_nnef(graph, [name])
    graph = _graphs("jax", specs, 1)[0]
    text = export_graph(graph, graph.leaves).mlir_module()
    valid_stablehlo(text)
    # a result type that is not what the op gives
    op = next(line for line in text.splitlines() if "= stablehlo." in line and "-> tensor<" in line)
    wrong = op[:op.rindex("-> tensor<")] + "-> tensor<1x2x3x4x5xi1>" + op[op.rindex(">") + 1:]
    with pytest.raises(Exception):
        valid_stablehlo(text.replace(op, wrong, 1))


def test_an_nnef_campaign_runs_graphs_twice_and_judges_them(specs):
    """Graphs run on the nnef executor (as generated and instrumented): each result line holds
    its nodes and a verdict, and the instrumented run judged each node."""
    from conform.harness.run.fuzz import fuzz

    lines = []
    figures = fuzz(specs, budget=3, max_nodes=3, seed=3, write=lines.append, backend="nnef")
    assert figures["graphs"] == 3 and figures["backend_version"].startswith("nnef ")
    judged = [r for r in lines if r["verdict"] in ("pass", "fail", "ill_conditioned")]
    assert judged and all("verdict" in n for r in judged for n in r["nodes"])
    assert all(r["checked"] + r["ill_conditioned_elements"] > 0 for r in judged)


def test_jax_runs_an_exported_graph_as_its_function_computes_it(specs):
    """The worker's runner (deserialized export, XLA's default pipeline) gives every value of
    a graph in its shape and dtype, and the values the graph's jitted function gives."""
    import jax

    from conform.dtypes import np_dtype
    from conform.harness.backends.stablehlo_graphs import (exported_module, graph_function,
                                                           jax_runner)

    graph = _graphs("jax", specs, 2)[1]
    every = [name for node in graph.nodes for name in node.outputs]
    _, run = jax_runner()
    got = run(exported_module(graph, every), dict(graph.inputs), None)
    direct = jax.jit(graph_function(graph, every))(*graph.inputs.values())
    for name, value, again in zip(every, got, direct):
        assert value.shape == np.shape(graph.values[name])
        assert value.dtype == np_dtype(graph.dtypes[name])
        np.testing.assert_array_equal(value, np.asarray(again))


def test_a_module_is_checked_in_generic_form():
    """StableHLO v1.17 prints a dynamic_slice of a 0-d operand in a pretty form its parser
    refuses (``%arg0, , sizes = []``); the module object, printed generically, verifies. (When
    the printer is fixed, the first check fails: the generic detour can go.)"""
    import jax

    from conform.harness.backends.stablehlo_graphs import _exporter, valid_stablehlo

    _exporter()
    lowered = jax.jit(lambda x: jax.lax.dynamic_slice(x, (), ())).lower(np.float32(1.0))
    with pytest.raises(Exception, match="expected 'sizes'"):
        valid_stablehlo(lowered.as_text())
    assert valid_stablehlo(lowered.compiler_ir("stablehlo"))


def test_an_adapter_of_contract_1_runs_graphs_with_unshaped_models(specs):
    """An ONNX adapter whose contract (api_version 1) hands it models whose inputs and outputs
    carry no shape (the OpenVINO example) is given the graph's model so: it runs the graph and
    gives the leaves' shapes (it used to be given a shaped model it refused, and then a
    one-op model of the graph it could not build)."""
    pytest.importorskip("conform_openvino")
    from conform.harness.backends.graph_program import GraphModel
    from conform.harness.run.fuzz import fuzz

    unshaped = GraphModel(graph_format("onnxruntime").worker().build(
        draw_graph(_graph_strategy(specs), seed=1), ("v0",)), ["x0_0"], shaped=False).build()
    assert not any(v.type.tensor_type.HasField("shape")
                   for v in (*unshaped.graph.input, *unshaped.graph.output))
    lines = []
    fuzz(specs, budget=2, max_nodes=2, seed=3, backend="conform_openvino:OpenVinoBackend",
         ops=["onnx_add", "tanh"], write=lines.append, reduce=False)
    assert [r["verdict"] for r in lines] == ["pass", "pass"], [r.get("message") for r in lines]


def _graph_strategy(specs):
    from conform.harness.run.fuzz import onnx_strategy

    return onnx_strategy({op: specs[op] for op in ("onnx_add", "tanh")}, max_nodes=2)
