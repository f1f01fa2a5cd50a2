"""QuickData (conform.generators._quick_data) draws what Hypothesis's own ConjectureData draws
from the same seed: generated graphs, and the primitive draws they are made of (filters, lists,
floats with NaN, weighted integers), up to the buffer's overrun."""
from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.errors import StopTest
from hypothesis.internal.conjecture.data import ConjectureData

from conform.dtypes import content_bytes
from conform.generators._drawing import _draw, _without_local_constants
from conform.generators._quick_data import QuickData
from conform.generators.graphs import draw_graph, graphs


@pytest.fixture(scope="module")
def onnx_quick(specs):
    from conform.harness.run.fuzz import fuzz_strategies

    return fuzz_strategies(specs).quick   # every ONNX-bound op, each node's lowering checked


def _digest(graph) -> str:
    """A graph's nodes, dtypes and input values, hashed (a string input by its elements: an
    object array's raw bytes are pointers, new at each draw)."""
    text = repr((graph.describe(), sorted(graph.dtypes.items()), sorted(graph.constants)))
    digest = hashlib.sha256(text.encode())
    for name in sorted(graph.inputs):
        digest.update(name.encode() + content_bytes(np.asarray(graph.inputs[name])))
    return digest.hexdigest()


def test_graphs_drawn_quickly_are_the_graphs_hypothesis_draws(onnx_quick):
    """Over the whole catalog, each seed draws the same graph (nodes, attributes, input values)
    with QuickData as with ConjectureData."""
    for seed in range(6):
        with _without_local_constants():
            theirs = _draw(onnx_quick, random.Random(seed))
        ours = draw_graph(onnx_quick, seed=seed)
        assert len(ours.nodes) == len(theirs.nodes) >= 1
        assert _digest(ours) == _digest(theirs), seed


_PRIMITIVES = st.tuples(
    st.integers(0, 2**40).filter(lambda n: n % 3 != 0),
    st.lists(st.booleans() | st.floats(), min_size=1, max_size=12),
    st.sampled_from("abcdefgh").filter(lambda c: c != "b"),
    st.integers(-10, 10), st.floats(allow_nan=True), st.text(max_size=4),
    st.lists(st.integers(0, 3), unique=True))


def test_primitive_draws_are_the_same_and_overrun_at_the_same_choice():
    """Filtered, alternative, collection and float draws give the same values (NaN as NaN), and
    a draw past Hypothesis's buffer stops at the same length."""
    for seed in range(12):
        with _without_local_constants():
            ours = _draw(_PRIMITIVES, random.Random(seed), data_type=QuickData)
            theirs = _draw(_PRIMITIVES, random.Random(seed))
        assert repr(ours) == repr(theirs), seed
    lengths = []
    for data_type in (QuickData, ConjectureData):
        data = data_type(random=random.Random(7))
        with pytest.raises(StopTest):
            data.draw(st.lists(st.integers(-2**70, 2**70), min_size=5000))
        lengths.append(data.length)
    assert lengths[0] == lengths[1] > 8000


def test_a_small_catalogs_graphs_are_pinned(specs):
    """Eight graphs over a few ops, pinned: a change to how graphs are drawn (the choices, or
    what a choice means) changes them, and old seeds (the ledger's) would no longer draw their
    graphs. (A change to one of these ops' drawers or oracles changes them too: re-pin after
    checking that the ledger's replays, tests/harness/test_found_bugs.py, still pass.)"""
    ops = ("add", "multiply", "tanh", "onnx_matmul", "onnx_concat", "onnx_reduce_sum", "relu")
    strategy = graphs({op: specs[op] for op in ops}, max_nodes=5)
    digest = hashlib.sha256()
    for seed in range(8):
        digest.update(_digest(draw_graph(strategy, seed=seed)).encode())
    assert digest.hexdigest()[:16] == PINNED


PINNED = "10d54e677b64d6e1"   # as drawn by ConjectureData at a1b8520 (main, before QuickData)
