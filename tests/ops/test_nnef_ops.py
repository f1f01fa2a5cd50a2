"""Tests of the oracles of the ops NNEF defines beside XLA and ONNX: asinh, acosh, atanh, log2,
reciprocal, square, copy (unary_math.py); relu, softplus, elu, leaky_relu (activation.py);
reduce_min, reduce_mean (reduction.py); tile, squeeze, unsqueeze (movement.py); and the regions
nan_operand and mean_accumulation_overflow.

Expected values are worked by hand from the texts: the NNEF 1.0 fragment definitions shipped with
the ``nnef`` package (e.g. softplus(x) = log(exp(x) + 1.0), elu = select(x < 0.0, alpha *
(exp(x) - 1.0), x), log2(x) = log(x) / log(2.0), mean_reduce = sum_reduce(normalize = true)), the
ONNX operator schemas (onnx.defs.get_schema), and C99 Annex F.9 for the special values of the
inverse hyperbolic functions. Accuracy is checked against mpmath at 256 bits.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.ops import definitions
from conform.oracles import accumulation_length, evaluate
from conform.op_registry import regions
from conform.ops.regions import RegionContext
from test_elementwise import ulp_error

try:
    import mpmath
except ImportError:
    mpmath = None
needs_mpmath = pytest.mark.skipif(mpmath is None, reason="mpmath is not installed")

INF, NAN = math.inf, math.nan
TINY = 5e-324
LN2 = 0.6931471805599453


def run(name, *inputs, **attrs):
    (out,) = evaluate(name, [np.asarray(x) for x in inputs], attrs)
    return out


def same(actual, expected) -> bool:
    """Equal as IEEE values element by element, NaN == NaN, zeros with the expected sign."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.shape != expected.shape:
        return False
    both_nan = np.isnan(actual) & np.isnan(expected)
    equal = (actual == expected) & (np.signbit(actual) == np.signbit(expected))
    return bool(np.all(both_nan | equal))


def test_modules():
    for op in ("asinh", "acosh", "atanh", "log2", "reciprocal", "square", "copy"):
        assert definitions()[op].module == "conform.ops.unary_math", op
    for op in ("relu", "softplus", "elu", "leaky_relu"):
        assert definitions()[op].module == "conform.ops.activation", op


# --- special values ------------------------------------------------------------------------------

SPECIAL = [
    # C99 F.9.2.1-3: acosh(1) = +0, acosh(x < 1) NaN, acosh(+inf) = +inf; asinh odd, asinh(±inf)
    # = ±inf; atanh odd, atanh(±1) = ±inf, atanh(|x| > 1) NaN.
    ("acosh", [1.0, 0.5, -1.0, INF, -INF, NAN], [0.0, NAN, NAN, INF, NAN, NAN]),
    ("asinh", [0.0, -0.0, INF, -INF, NAN, TINY], [0.0, -0.0, INF, -INF, NAN, TINY]),
    ("atanh", [0.0, -0.0, 1.0, -1.0, 2.0, -INF, NAN], [0.0, -0.0, INF, -INF, NAN, NAN, NAN]),
    # NNEF log2(x) = log(x) / log(2.0): exact at powers of two, log(±0) = -inf, log(x < 0) NaN.
    ("log2", [1.0, 2.0, 1024.0, 0.5, TINY, 0.0, -0.0, -1.0, INF, NAN],
     [0.0, 1.0, 10.0, -1.0, -1074.0, -INF, -INF, NAN, INF, NAN]),
    # y = 1 / x: IEEE division.
    ("reciprocal", [2.0, -4.0, 0.0, -0.0, INF, -INF, NAN, 3.0],
     [0.5, -0.25, INF, -INF, 0.0, -0.0, NAN, 1 / 3]),
    # sqr(x) = x ^ 2.0.
    ("square", [3.0, -3.0, -0.0, INF, -INF, NAN, 1e200, TINY],
     [9.0, 9.0, 0.0, INF, INF, NAN, INF, 0.0]),
    # copy / Identity: the value itself.
    ("copy", [-0.0, NAN, INF, TINY, 1.5], [-0.0, NAN, INF, TINY, 1.5]),
    # relu = max(x, 0.0) = select(x > 0.0, x, 0.0); NaN stays NaN here (the region nan_operand).
    ("relu", [2.5, -2.5, 0.0, -0.0, INF, -INF, TINY, -TINY, NAN],
     [2.5, 0.0, 0.0, 0.0, INF, 0.0, TINY, 0.0, NAN]),
    # softplus(x) = log(exp(x) + 1.0): ln 2 at 0, 0 at -inf, inf at inf, ~x for large x,
    # ~e**x for very negative x.
    ("softplus", [0.0, -0.0, -INF, INF, NAN, 1000.0, -1000.0],
     [LN2, LN2, 0.0, INF, NAN, 1000.0, 0.0]),
    # elu (alpha = 1) = select(x < 0.0, exp(x) - 1.0, x): -1 at -inf, -0 stays -0 (not < 0).
    ("elu", [2.5, 0.0, -0.0, -INF, INF, NAN, -TINY], [2.5, 0.0, -0.0, -1.0, INF, NAN, -TINY]),
]


@pytest.mark.parametrize("op, x, expected", SPECIAL, ids=[s[0] for s in SPECIAL])
def test_special_values(op, x, expected):
    assert same(run(op, np.array(x)), expected), (op, run(op, np.array(x)))


def test_copy_keeps_nan_payloads_and_integers():
    pattern = np.array([0x7FF8000000000123], np.uint64).view(np.float64)
    assert run("copy", pattern).view(np.uint64)[0] == 0x7FF8000000000123
    assert run("copy", np.array([-7, 2**40], np.int64)).tolist() == [-7, 2**40]


def test_leaky_relu_hand_worked():
    # alpha * x for x < 0, else x (ONNX LeakyRelu; NNEF prelu with a scalar alpha)
    x = np.array([-4.0, -0.0, 0.0, 3.0, -INF, INF, NAN, -TINY])
    out = run("leaky_relu", x, alpha=0.3125)
    assert same(out, [-1.25, -0.0, 0.0, 3.0, -INF, INF, NAN, -0.0])   # 0.3125 * 2**-1074 -> -0
    assert same(run("leaky_relu", np.array([-3.0]), alpha=0.3125), [-0.9375])


def test_elu_and_softplus_are_accurate_where_the_formulas_cancel_or_overflow():
    # exp(x) - 1 near 0 cancels; the value is expm1(x) ~ x - x**2/2
    assert run("elu", np.array([-1e-20]))[()] == -1e-20
    assert abs(run("elu", np.array([-1e-3]))[()] - (-0.0009995001666250084)) < 1e-19
    # log(exp(x) + 1) overflows at x = 710 and underflows to 0 for x < -37; the value does not
    assert run("softplus", np.array([710.0]))[()] == 710.0
    assert run("softplus", np.array([-40.0]))[()] == pytest.approx(math.exp(-40.0), rel=1e-15)


def test_an_onnx_elu_node_with_alpha_a_power_of_two_is_a_case():
    """ONNX Elu's alpha: 'f(x) = alpha * (exp(x) - 1.) for x < 0'; the spec draws 1, and the
    example mapping takes a power of two (an exact scaling: the spec's bound holds)."""
    from conform.ops.activation import from_onnx_elu

    x = np.array([-1.0, 0.0, 2.0])
    assert from_onnx_elu([x], {"alpha": 1.0}, 22)[1] == {}
    inputs, attrs = from_onnx_elu([x], {"alpha": 2.0}, 22)
    assert attrs == {"alpha": 2.0}
    assert same(run("elu", x, **attrs), [2 * math.expm1(-1.0), 0.0, 2.0])
    with pytest.raises(ValueError, match="power of two"):
        from_onnx_elu([x], {"alpha": 0.3}, 22)
    with pytest.raises(ValueError, match="-inf"):
        from_onnx_elu([np.array([-INF])], {"alpha": 2.0}, 22)


MPMATH_POINTS = {
    "asinh": [TINY, 1e-300, 1e-10, 0.1, 0.5, 1.0, 2.0, 10.0, 1e10, 1e300, -0.7, -3.0],
    "acosh": [1.0, 1 + 2.0 ** -52, 1.0001, 1.5, 2.0, 10.0, 1e10, 1e300, 3.7],
    "atanh": [TINY, 1e-300, 1e-10, 0.1, 0.4137296606373988, 0.5, 0.9, 0.999999, 1 - 2.0 ** -53,
              -0.75, -0.4134211067197444],
    "log2": [TINY, 1e-300, 0.1, 0.5, 0.9999999, 1.0000001, 3.0, 10.0, 1e300],
    "softplus": [-745.0, -100.0, -20.0, -1.0, -1e-10, TINY, 0.5, 1.0, 20.0, 36.0, 100.0],
    "elu": [-745.0, -40.0, -1.0, -0.5, -1e-3, -1e-10, -TINY, 0.5, 3.0],
}


def _exact(op, x):
    x = mpmath.mpf(float(x))
    if op == "log2":
        return mpmath.log(x, 2)
    if op == "softplus":
        return mpmath.log1p(mpmath.exp(x))    # log(1 + tiny) would round 1 + tiny at 256 bits
    if op == "elu":
        return mpmath.expm1(x) if x < 0 else x
    return getattr(mpmath, op)(x)


@needs_mpmath
@pytest.mark.parametrize("op", sorted(MPMATH_POINTS))
def test_within_half_an_ulp_of_mpmath(op):
    # every one of these is evaluated in long double and rounded once to float64
    points = np.array(MPMATH_POINTS[op], dtype=np.float64)
    out = run(op, points)
    with mpmath.workprec(256):
        errors = [ulp_error(float(y), _exact(op, x)) for x, y in zip(points, out)]
    worst = int(np.argmax(errors))
    assert errors[worst] <= 0.5 + 2.0 ** -10, f"{op}({points[worst]!r}) is {errors[worst]:.4f} ULP off"


# --- reductions ----------------------------------------------------------------------------------

def test_reduce_min_hand_worked():
    x = np.array([[3.0, -1.0, 2.0], [-0.0, 5.0, NAN], [INF, INF, INF]])
    assert same(run("reduce_min", x, dimensions=[1]), [-1.0, NAN, INF])
    assert same(run("reduce_min", x[:2, :2], dimensions=[0]), [-0.0, -1.0])
    assert same(run("reduce_min", x, dimensions=[0, 1]), NAN)
    ints = np.array([[7, -3], [2**62, -(2**63)]], np.int64)
    assert run("reduce_min", ints, dimensions=[1]).tolist() == [-3, -(2**63)]


def test_reduce_min_init_is_the_largest_value():
    assert run("reduce_min", np.full((2, 3), INF), dimensions=[1]).tolist() == [INF, INF]
    big = np.full((1, 2), 2**63 - 1, np.int64)
    assert run("reduce_min", big, dimensions=[1]).tolist() == [2**63 - 1]


def test_reduce_mean_hand_worked():
    x = np.array([[1.0, 2.0, 4.0], [-1.5, 0.5, 4.0]])
    assert same(run("reduce_mean", x, dimensions=[1]), [7 / 3, 1.0])
    assert same(run("reduce_mean", x, dimensions=[0]), [-0.25, 1.25, 4.0])
    assert same(run("reduce_mean", x, dimensions=[0, 1]), 10 / 6)
    assert same(run("reduce_mean", np.array([[INF, -INF], [NAN, 1.0]]), dimensions=[1]), [NAN, NAN])
    # the sum does not overflow in the oracle: max_finite twice averages to max_finite
    top = np.finfo(np.float64).max
    assert run("reduce_mean", np.array([top, top]), dimensions=[0])[()] == top


def test_reduce_mean_accumulation_length_is_the_reduced_count():
    assert accumulation_length("reduce_mean", [(2, 3, 4)], {"dimensions": [0, 2]}) == 8


def _context(op, x, out_dtype, attrs):
    x = np.asarray(x)
    (expected,) = evaluate(op, [x], attrs)
    length = accumulation_length(op, [x.shape], attrs) if op == "reduce_mean" else None
    return RegionContext(inputs=[x], expected=expected, out_dtype=out_dtype,
                         float_oracle=lambda xs: evaluate(op, xs, attrs)[0],
                         accumulation_length=length)


def test_mean_accumulation_overflow_region():
    big = np.array([[60000.0, 60000.0], [1.0, 2.0]], np.float16)
    mask = regions()["mean_accumulation_overflow"](_context("reduce_mean", big, "float16",
                                                          {"dimensions": [1]}))
    assert mask.tolist() == [True, False]     # 120000 > 65504 in float16, the mean is not
    same32 = regions()["mean_accumulation_overflow"](_context(
        "reduce_mean", big.astype(np.float32), "float32", {"dimensions": [1]}))
    assert same32.tolist() == [False, False]


def test_nan_operand_region():
    x = np.array([1.0, NAN, -NAN, -0.0], np.float32)
    assert regions()["nan_operand"](_context("relu", x, "float32", {})).tolist() == \
        [False, True, True, False]


# --- movement ------------------------------------------------------------------------------------

def test_tile_hand_worked():
    x = np.array([[1, 2], [3, 4]])
    assert run("tile", x, repeats=[2, 1]).tolist() == [[1, 2], [3, 4], [1, 2], [3, 4]]
    assert run("tile", x, repeats=[1, 3]).tolist() == [[1, 2, 1, 2, 1, 2], [3, 4, 3, 4, 3, 4]]
    assert run("tile", np.array([-0.0, NAN]), repeats=[2]).tolist()[2:3] == [-0.0]


def test_squeeze_and_unsqueeze_hand_worked():
    x = np.arange(6).reshape(1, 2, 1, 3)
    assert run("squeeze", x, axes=[0, 2]).shape == (2, 3)
    assert run("squeeze", x, axes=[2]).shape == (1, 2, 3)
    assert run("squeeze", x, axes=[0, 2]).tolist() == [[0, 1, 2], [3, 4, 5]]
    y = np.arange(6).reshape(2, 3)
    # axes index the result: [0, 3] on a (2, 3) operand gives (1, 2, 3, 1)
    assert run("unsqueeze", y, axes=[0, 3]).shape == (1, 2, 3, 1)
    assert run("unsqueeze", y, axes=[1]).shape == (2, 1, 3)
    assert run("unsqueeze", np.asarray(5.0), axes=[0, 1]).shape == (1, 1)
    assert run("unsqueeze", y, axes=[0, 3]).ravel().tolist() == list(range(6))
