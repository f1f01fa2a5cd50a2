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
    full check and strict shape inference, and the shapes ONNX infers are the graph's."""
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
    assert nodes > 48 and reused > 5, (nodes, reused)   # graphs, not single ops


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
