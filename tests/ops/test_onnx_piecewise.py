"""ONNX HardSigmoid, HardSwish, Softsign, ThresholdedRelu, PRelu and Shrink
(ops/onnx_piecewise.py): the operator texts' rules (comparisons, NaN, zeros, integers), PRelu's
unidirectional broadcasting, the correctly rounded float64 results, the onnx package's node
cases judged under the specs at their own opsets, the types each schema allows, the derived
bounds, and wrong attributes injected into onnxruntime's models caught by the judge."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.generators._suite import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from tests.ops.onnx_schema_checks import case_of, verdict
from tests.ops.ort_graphs import run_mutated


def one(op, inputs, **attrs):
    (out,) = evaluate(op, [np.asarray(x) for x in inputs], attrs)
    return out


def same(actual, expected) -> bool:
    """Equal element by element as IEEE values, NaN == NaN, zeros by sign."""
    a, e = np.asarray(actual, np.float64).ravel(), np.asarray(expected, np.float64).ravel()
    return all((math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))
               for x, y in zip(a, e))


# -- the operator texts -----------------------------------------------------------------------

def test_thresholded_relu_keeps_x_above_alpha_only_and_nan_gives_zero():
    """'y = x for x > alpha, y = 0 otherwise': x == alpha and NaN are 'otherwise'."""
    x = np.array([2.0, 1.0, 0.5, -3.0, np.nan, np.inf])
    assert same(one("onnx_thresholded_relu", [x], alpha=1.0), [2.0, 0, 0, 0, 0, np.inf])
    assert same(one("onnx_thresholded_relu", [np.array([-1.0, -0.0])], alpha=-1.5), [-1.0, -0.0])


def test_shrink_follows_the_text_at_its_boundaries():
    x = np.array([-2.0, -1.5, -1.0, 0.0, 1.5, 1.5000001, 3.0, np.nan, -np.inf])
    y = one("onnx_shrink", [x], lambd=1.5, bias=1.0)
    assert same(y, [-1.0, 0, 0, 0, 0, 1.5000001 - 1.0, 2.0, 0, -np.inf])


def test_shrink_on_integers_is_exact_beyond_two_to_the_53():
    x = np.array([2**60 + 1, -(2**60) - 1, 1, -1, 0], np.int64)
    y = one("onnx_shrink", [x], lambd=0.5, bias=1.0)
    assert y.tolist() == [2**60, -(2**60), 0, 0, 0]


def test_shrink_with_a_fractional_bias_is_open_on_integers_only():
    x = np.array([-3, 0, 3], np.int32)
    (mask,) = evaluate("onnx_shrink", [x], {"lambd": 0.5, "bias": 1.5, "open_elements": True})
    assert mask.tolist() == [True, False, True]
    (mask,) = evaluate("onnx_shrink", [x.astype(np.float32)],
                       {"lambd": 0.5, "bias": 1.5, "open_elements": True})
    assert not mask.any()


def test_shrink_and_prelu_float64_results_are_correctly_rounded():
    """x - 1 at x = 2**53 + 2 is the midpoint 2**53 + 1: ties to even gives 2**53; 3 * -(2**52
    + 1) = -(3 * 2**52 + 3) rounds (to even) to -(3 * 2**52 + 4)."""
    (y,) = evaluate("onnx_shrink", [np.array([2.0**53 + 2])], {"lambd": 0.5, "bias": 1.0},
                    rounded64=True)
    assert y.tolist() == [2.0**53]
    (y,) = evaluate("onnx_prelu", [np.array([-(2.0**52 + 1)]), np.array([3.0])], {},
                    rounded64=True)
    assert y.tolist() == [-(3 * 2.0**52 + 4)]


def test_shrinks_midpoint_case_refuses_ties_rounded_away_from_zero(specs):
    from conform.generators._edges import midpoint_case

    case = midpoint_case(specs["onnx_shrink"], "float32", seed=1)
    x = case.inputs[0].astype(np.float64)
    exact = np.where(x < -0.5, x + 1.5, x - 1.5)
    even = exact.astype(np.float32)
    away = np.where(np.abs(x) >= 2.0**23, np.sign(exact) * np.floor(np.abs(exact) + 0.5), exact)
    assert (away.astype(np.float32) != even).sum() >= 8
    attrs = case.attrs
    assert verdict(specs["onnx_shrink"], [case.inputs[0]], attrs, [even]) == "pass"
    assert verdict(specs["onnx_shrink"], [case.inputs[0]], attrs, [away.astype(np.float32)]) == "fail"


def test_prelu_broadcasts_slope_and_passes_minus_zero_and_nan():
    x = np.array([[-2.0, -0.0, 3.0], [np.nan, -1.0, 0.0]])
    slope = np.array([0.5, 2.0, -1.0])
    assert same(one("onnx_prelu", [x, slope]), [[-1.0, -0.0, 3.0], [np.nan, -2.0, 0.0]])


def test_prelu_slopes_are_drawn_unidirectionally_broadcastable(specs):
    broadcast = 0
    for case in generate_cases(specs["onnx_prelu"], "float32", count=60, seed=5):
        x, slope = case.inputs
        assert np.broadcast_shapes(x.shape, slope.shape) == x.shape, case.id
        broadcast += slope.shape != x.shape
    assert broadcast >= 10


def test_hard_sigmoid_hard_swish_and_softsign_at_worked_points():
    assert one("onnx_hard_sigmoid", [[-3.0, 0.0, 3.0]], alpha=0.2, beta=0.5).tolist() == \
        pytest.approx([0.0, 0.5, 1.0])
    assert one("onnx_hard_swish", [[-4.0, -3.0, 0.0, 1.5, 3.0, 7.0]]).tolist() == \
        [-0.0, -0.0, 0.0, 1.5 * 0.75, 3.0, 7.0]
    assert one("onnx_softsign", [[-3.0, -0.0, 1.0]]).tolist() == [-0.75, -0.0, 0.5]


def test_softsign_and_hard_swish_mark_their_infinite_inputs_open():
    x = np.array([-np.inf, 2.0, np.inf])
    (mask,) = evaluate("onnx_softsign", [x], {"open_elements": True})
    assert mask.tolist() == [True, False, True]
    assert one("onnx_softsign", [x]).tolist() == [-1.0, 2 / 3, 1.0]
    (mask,) = evaluate("onnx_hard_swish", [x], {"open_elements": True})
    assert mask.tolist() == [True, False, False]



# -- the derived bounds -----------------------------------------------------------------------

def test_hard_sigmoid_admits_alpha_rounded_into_float16_and_refuses_another_alpha(specs):
    x = np.linspace(-2.4, 2.4, 25).astype(np.float16)
    attrs = {"alpha": 0.2, "beta": 0.5}
    body = np.clip(x * np.float16(0.2) + np.float16(0.5), np.float16(0), np.float16(1))
    assert verdict(specs["onnx_hard_sigmoid"], [x], attrs, [body]) == "pass"
    other = np.clip(x * np.float16(0.25) + np.float16(0.5), np.float16(0), np.float16(1))
    assert verdict(specs["onnx_hard_sigmoid"], [x], attrs, [other]) == "fail"


def test_hard_swish_float64_admits_the_function_bodys_float32_alpha(specs):
    x = np.linspace(-2.9, 2.9, 30)
    body = x * np.clip(x * float(np.float32(1 / 6)) + 0.5, 0.0, 1.0)
    assert verdict(specs["onnx_hard_swish"], [x], {}, [body]) == "pass"
    assert verdict(specs["onnx_hard_swish"], [x], {}, [body * (1 + 2.0**-20)]) == "fail"


def test_softsign_admits_a_reciprocal_subnormal_near_the_largest_float32(specs):
    x = np.array([3.4028233e38, 3.0], np.float32)
    by_reciprocal = x * (np.float32(1) / (np.float32(1) + np.abs(x)))
    assert by_reciprocal[0] < 1
    assert verdict(specs["onnx_softsign"], [x], {}, [by_reciprocal]) == "pass"
    off = np.array([1.0, 0.75 + 3 * 2.0**-24], np.float32)   # 3 ULP above softsign(3)
    assert verdict(specs["onnx_softsign"], [x], {}, [off]) == "fail"


# -- onnxruntime ------------------------------------------------------------------------------

@pytest.mark.parametrize("op, x, attrs, bug", [
    ("onnx_thresholded_relu", [-1.0, 0.5, 1.0, 1.0009765625, 2.0], {"alpha": 1.0},
     {"alpha": 0.75}),
    ("onnx_shrink", [-2.0, -1.5, -1.0, 0.0, 1.5, 2.5], {"lambd": 1.5, "bias": 1.0},
     {"lambd": 1.0}),
    ("onnx_hard_sigmoid", [-3.0, -1.0, 0.0, 0.5, 2.0], {"alpha": 0.2, "beta": 0.5},
     {"beta": 0.25}),
])
def test_a_wrong_attribute_in_onnxruntimes_model_fails(specs, op, x, attrs, bug):
    case = case_of(op, [np.array(x, np.float32)], attrs)
    assert judge_outputs(specs[op], case, run_mutated(specs[op], case)).verdict == "pass"
    assert judge_outputs(specs[op], case, run_mutated(specs[op], case, **bug)).verdict == "fail"
