"""ONNX RotaryEmbedding-23 (ops/onnx_rotary.py): the text's algorithm on hand-worked pairs,
the onnx package's node test cases, the bound, runs on onnxruntime (opset 23) and numpy, and
the judge catching a rotation in the wrong direction."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.ops import definition
from conform.oracles import evaluate

sys.path.insert(0, str(Path(__file__).parent))
from backend_runs import judged, numpy_backend, onnxruntime  # noqa: E402,F401 - a fixture
from onnx_node_cases import node_cases  # noqa: E402

OP = "onnx_rotary_embedding"


def test_a_pair_is_rotated_by_its_positions_angle_halves_or_interleaved():
    """Head size 4: halves pair (0, 2) and (1, 3); interleaved pairs (0, 1) and (2, 3)."""
    x = np.array([1.0, 2.0, 3.0, 4.0]).reshape(1, 1, 1, 4)
    cos, sin = np.array([[0.5, 0.25]]), np.array([[0.75, -1.0]])
    ids = np.zeros((1, 1), np.int64)
    (halves,) = evaluate(OP, [x, cos, sin, ids], {})
    (pairs,) = evaluate(OP, [x, cos, sin, ids], {"interleaved": 1})
    assert halves.ravel().tolist() == [0.5 * 1 - 0.75 * 3, 0.25 * 2 + 1.0 * 4,
                                       0.75 * 1 + 0.5 * 3, -1.0 * 2 + 0.25 * 4]
    assert pairs.ravel().tolist() == [0.5 * 1 - 0.75 * 2, 0.75 * 1 + 0.5 * 2,
                                      0.25 * 3 + 1.0 * 4, -1.0 * 3 + 0.25 * 4]


def test_partial_rotation_copies_the_features_beyond_rotary_embedding_dim():
    x = np.arange(1.0, 9.0).reshape(1, 1, 8)   # 3-D, 2 heads of 4
    cos = np.full((1, 1, 1), 0.5)
    sin = np.full((1, 1, 1), 0.25)
    (y,) = evaluate(OP, [x, cos, sin], {"num_heads": 2, "rotary_embedding_dim": 2,
                                        "absent_inputs": ["position_ids"]})
    assert y.ravel().tolist() == [0.5 - 0.5, 0.25 + 1.0, 3, 4, 2.5 - 1.5, 1.25 + 3.0, 7, 8]


def test_oracle_reproduces_the_node_tests():
    cases = node_cases("rotaryembedding")
    assert len(cases) == 8
    for name, node, inputs, (want,) in cases:
        attrs = {a.name: a.i for a in node.attribute}
        if len(inputs) == 3:
            attrs["absent_inputs"] = ["position_ids"]
        (got,) = evaluate(OP, inputs, attrs)
        assert np.allclose(got, want, rtol=1e-6, atol=1e-6), name


def test_the_bound_is_gamma_2_of_the_products_magnitudes():
    x = np.array([1.0, 3.0]).reshape(1, 1, 1, 2)
    cos, sin, ids = np.array([[0.5]]), np.array([[-0.25]]), np.zeros((1, 1), np.int64)
    (bound,) = definition(OP).error_bound([x, cos, sin, ids], {}, (None,), out_dtype="float32",
                                          u=2.0 ** -24, constants={}, dtypes=())
    gamma2 = 2 * 2.0 ** -24 / (1 - 2 * 2.0 ** -24)
    assert np.allclose(bound.ravel(), [gamma2 * (0.5 + 0.75), gamma2 * (0.25 + 1.5)],
                       rtol=1e-6, atol=1e-44)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_onnxruntime_passes_at_opset_23(specs, onnxruntime, monkeypatch, dtype):
    monkeypatch.setenv("CONFORM_ONNX_OPSET", "23")
    count = 0
    for case, judgement in judged(specs, onnxruntime, OP, dtype, count=12):
        assert judgement.verdict in ("pass", "impl_defined"), (case.id, judgement.reason)
        count += 1
    assert count == 12


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_numpy_passes(specs, dtype):
    for case, judgement in judged(specs, numpy_backend(), OP, dtype, count=12):
        assert judgement.verdict in ("pass", "impl_defined"), (case.id, judgement.reason)


def test_judge_catches_a_rotation_the_wrong_way(specs):
    """sin negated (x1 cos + x2 sin, -x1 sin + x2 cos) fails wherever a sine is not 0."""
    spec, caught = specs[OP], 0
    for case in generate_cases(spec, "float32", count=20, seed=3):
        if case.plan != "normal":
            continue
        inputs = list(case.inputs)
        inputs[2] = -inputs[2]
        (wrong,) = evaluate(OP, inputs, case.attrs)
        assert judge_outputs(spec, case, [wrong.astype(np.float32)]).verdict == "fail", case.id
        caught += 1
    assert caught
