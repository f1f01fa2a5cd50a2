"""NNEF's l1_normalization, l2_normalization and moments (ops/nnef_axis_normalization.py): values
worked by hand from the fragments' bodies (the ``nnef`` package's stdlib_source.h), the derived
bounds (the fragment in float32 passes; a float16 accumulation, the unbiased variance, a
missing square root and a regrouped bias fail), and the real backends (numpy, nnef)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.generators import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from tests.ops.test_nnef_ops import same

NAN = math.nan


def run(op, x, **attrs):
    return evaluate(op, [np.asarray(x, np.float64)], attrs)


def test_l1_normalization_hand_worked():
    x = np.array([[1.0, -3.0], [0.0, 0.0], [2.0, NAN]])
    (y,) = run("nnef_l1_normalization", x, axes=[1], bias=0.0, epsilon=0.0)
    assert same(y, [[0.25, -0.75], [NAN, NAN], [NAN, NAN]])     # 0 / max(0, 0) = NaN
    (y,) = run("nnef_l1_normalization", x[:2], axes=[1], bias=1.0, epsilon=0.0)
    assert same(y, [[0.2, -0.6], [0.0, 0.0]])
    (y,) = run("nnef_l1_normalization", x[:2], axes=[0, 1], bias=0.0, epsilon=8.0)
    assert same(y, [[0.125, -0.375], [0.0, 0.0]])              # max(4, 8) = 8


def test_l2_normalization_hand_worked_and_without_overflow():
    (y,) = run("nnef_l2_normalization", [[3.0, -4.0], [0.0, 5.0]], axes=[1], bias=0.0, epsilon=0.0)
    assert same(y, [[0.6, -0.8], [0.0, 1.0]])
    (y,) = run("nnef_l2_normalization", [3.0, 4.0], axes=[0], bias=5.0, epsilon=0.0)
    assert same(y, [0.3, 0.4])
    (y,) = run("nnef_l2_normalization", [3e200, -4e200], axes=[0], bias=0.0, epsilon=0.0)
    assert y.tolist() == pytest.approx([0.6, -0.8], rel=2e-16)   # squares overflow float64


def test_moments_hand_worked():
    x = np.array([[1.0, 2.0, 3.0, 6.0], [-1.0, -1.0, -1.0, -1.0]])
    mean, variance = run("nnef_moments", x, axes=[1])
    assert mean.tolist() == [[3.0], [-1.0]] and variance.tolist() == [[3.5], [0.0]]
    mean, variance = run("nnef_moments", x, axes=[0, 1])
    assert mean.tolist() == [[1.0]] and variance.tolist() == [[5.75]]   # (4 * 3.5 + 32 ...) / 8
    mean, variance = run("nnef_moments", np.array([1e16, 1.0, -1e16, 3.0]), axes=[0])
    assert mean.tolist() == [1.0]                                # summed beyond float64


def _case(op, x, **attrs):
    x = np.asarray(x, np.float32)
    return Case(id=f"{op}.float32.hand", op=op, dtype="float32", input_dtypes=("float32",),
                out_dtype="float32", inputs=[x], attrs=attrs, plan="hand", seed=0)


X = np.random.default_rng(4).uniform(-10, 10, (3, 64)).astype(np.float32)


def _l_norm32(x, order, bias, wide=np.float32):
    terms = np.abs(x) if order == 1 else np.square(x)
    sigma = np.sum(terms.astype(wide), axis=1, keepdims=True).astype(np.float32)
    sigma = sigma if order == 1 else np.sqrt(sigma)
    return x / np.maximum(sigma + np.float32(bias), np.float32(0))


@pytest.mark.parametrize("order", [1, 2])
def test_l_norm_bound_admits_float32_and_not_a_float16_accumulation(specs, order):
    op = f"nnef_l{order}_normalization"
    case = _case(op, X, axes=[1], bias=1.0, epsilon=0.0)
    assert judge_outputs(specs[op], case, [_l_norm32(X, order, 1.0)]).verdict == "pass"
    sequential = X.copy()   # a float16 running sum
    total = np.zeros((3, 1), np.float16)
    for k in range(X.shape[1]):
        term = np.abs(X[:, k:k + 1]) if order == 1 else np.square(X[:, k:k + 1])
        total = (total + term.astype(np.float16)).astype(np.float16)
    sigma = total.astype(np.float32) if order == 1 else np.sqrt(total.astype(np.float32))
    sequential = X / (sigma + np.float32(1))
    assert judge_outputs(specs[op], case, [sequential]).verdict == "fail"


def test_l2_norm_without_the_square_root_fails(specs):
    case = _case("nnef_l2_normalization", X, axes=[1], bias=0.0, epsilon=0.0)
    wrong = X / np.sum(np.square(X), axis=1, keepdims=True)
    assert judge_outputs(specs["nnef_l2_normalization"], case, [wrong]).verdict == "fail"


def test_moments_bound_admits_float32_and_not_the_unbiased_variance(specs):
    case = _case("nnef_moments", X, axes=[1])
    mean = np.mean(X, axis=1, keepdims=True, dtype=np.float32)
    variance = np.mean(np.square(X - mean), axis=1, keepdims=True, dtype=np.float32)
    assert judge_outputs(specs["nnef_moments"], case, [mean, variance]).verdict == "pass"
    unbiased = variance * np.float32(64 / 63)
    assert judge_outputs(specs["nnef_moments"], case, [mean, unbiased]).verdict == "fail"
    # a variance about a mean far off (here the mean of float16 inputs) fails too
    off = np.mean(X.astype(np.float16), axis=1, keepdims=True).astype(np.float32) + np.float32(0.01)
    assert judge_outputs(specs["nnef_moments"], case, [off, variance]).verdict == "fail"


@pytest.mark.parametrize("op", ["nnef_l1_normalization", "nnef_l2_normalization", "nnef_moments"])
def test_the_nnef_executor_runs_the_lowered_fragments(specs, op):
    from conform.harness.backends.models import run_case
    from conform.harness.backends.nnef_backend import NnefBackend

    attrs = {"axes": [1]} if op == "nnef_moments" else {"axes": [1], "bias": 1.0, "epsilon": 0.001}
    case = _case(op, X, **attrs)
    outputs = run_case(NnefBackend(), specs[op], case)
    assert judge_outputs(specs[op], case, outputs).verdict == "pass"
