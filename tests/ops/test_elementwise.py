"""Tests of the element-wise oracles (conform/ops/elementwise.py).

Spec references are to the XLA operation semantics text, ../shared/seeds/004_c11ff90b720ca9d5.txt
(Chinese translation); section names are given as they appear there.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.ops import definitions
from conform.oracles import UnknownOracle, evaluate, widen

try:
    import mpmath
except ImportError:          # not a declared dependency of conform; only the 1-ULP checks need it
    mpmath = None
needs_mpmath = pytest.mark.skipif(mpmath is None, reason="mpmath is not installed")

I64_MIN = int(np.iinfo(np.int64).min)
I64_MAX = int(np.iinfo(np.int64).max)
INF, NAN = math.inf, math.nan


def run(name, *inputs, **attrs):
    """The single output of oracle ``name`` on ``inputs`` (Python scalars become 0-d arrays)."""
    (out,) = evaluate(name, [np.asarray(x) for x in inputs], attrs)
    return out


def assert_same_float(actual, expected):
    """Equal as IEEE values, NaN == NaN, and zeros must carry the same sign (NaN's sign is free)."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    np.testing.assert_array_equal(actual, expected)
    zero = expected == 0
    np.testing.assert_array_equal(np.signbit(actual[zero]), np.signbit(expected[zero]))


# --- the evaluate() contract ---------------------------------------------------------------------

def test_evaluate_widens_float32_and_returns_tuple():
    # Docstring example of conform.oracles.evaluate.
    out = evaluate("add", [np.float32([1.5]), np.float32([2.25])], {})
    assert isinstance(out, tuple) and len(out) == 1
    assert out[0].dtype == np.float64
    np.testing.assert_array_equal(out[0], [3.75])


@pytest.mark.parametrize("dtype, widened", [
    (np.float16, np.float64), (np.float32, np.float64), (np.int8, np.int64),
    (np.int32, np.int64), (np.uint16, np.int64), (np.uint64, np.uint64), (np.bool_, np.bool_),
])
def test_widen(dtype, widened):
    assert widen(np.zeros(3, dtype)).dtype == widened


def test_int32_inputs_are_computed_in_int64():
    # 2**31 - 1 + 1 does not wrap: the oracle reports the exact value (the region decides).
    out = run("add", np.int32(2**31 - 1), np.int32(1))
    assert out.dtype == np.int64 and int(out) == 2**31


def test_unknown_oracle():
    with pytest.raises(UnknownOracle):
        evaluate("no_such_op", [np.zeros(1)], {})
    assert issubclass(UnknownOracle, KeyError)
    assert "remainder" in definitions() and "round" in definitions()


# --- arithmetic with signed zeros and specials ---------------------------------------------------

@pytest.mark.parametrize("op, lhs, rhs, expected", [
    ("add", -0.0, -0.0, -0.0),
    ("add", -0.0, 0.0, 0.0),           # round-to-nearest: x + (-x) is +0
    ("add", INF, -INF, NAN),
    ("subtract", 0.0, 0.0, 0.0),
    ("subtract", -0.0, 0.0, -0.0),
    ("subtract", 1.0, 3.0, -2.0),
    ("multiply", -0.0, 5.0, -0.0),
    ("multiply", -2.0, 0.0, -0.0),
    ("multiply", 0.0, INF, NAN),
    ("divide", 1.0, -0.0, -INF),
    ("divide", -1.0, 0.0, -INF),
    ("divide", 0.0, 0.0, NAN),
    ("divide", INF, INF, NAN),
    ("divide", -0.0, 5.0, -0.0),
    ("divide", 1.0, 3.0, 1.0 / 3.0),
])
def test_float_arithmetic(op, lhs, rhs, expected):
    assert_same_float(run(op, lhs, rhs), expected)


# --- Div / Rem on integers: C semantics (truncation) ---------------------------------------------

@pytest.mark.parametrize("lhs, rhs, quotient", [
    (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (7, 2, 3), (-1, 2, 0), (1, -2, 0),
    (1320, I64_MIN, 0), (I64_MIN, I64_MIN, 1), (I64_MIN, 2, -(2**62)),
    (I64_MIN, 3, -3074457345618258602),          # 2**63 / 3 = 3074457345618258602.67, truncated
    (I64_MAX, -1, -I64_MAX), (I64_MAX, I64_MIN, 0),
])
def test_int_divide_truncates(lhs, rhs, quotient):
    out = run("divide", np.int64(lhs), np.int64(rhs))
    assert out.dtype == np.int64
    assert int(out) == quotient


@pytest.mark.parametrize("lhs, rhs, rem", [
    (-7, 2, -1), (7, -2, 1), (-7, -2, -1), (7, 2, 1), (6, -3, 0),
    (1320, I64_MIN, 1320),            # |1320| < |INT64_MIN|: the dividend itself
    (-1320, I64_MIN, -1320),
    (I64_MAX, I64_MIN, I64_MAX),
    (I64_MIN, I64_MIN, 0),
    (I64_MIN, 3, -2),                 # 2**63 = 3 * 3074457345618258602 + 2; sign of the dividend
    (I64_MIN, I64_MAX, -1),
])
def test_int_remainder(lhs, rhs, rem):
    # Element-wise binary arithmetic (Rem): the sign comes from the dividend, |result| < |divisor|.
    out = run("remainder", np.int64(lhs), np.int64(rhs))
    assert out.dtype == np.int64
    assert int(out) == rem


def test_int32_divide_and_remainder():
    lhs = np.int32([-7, 7, -7, 100, -2**31])
    rhs = np.int32([2, -2, -2, 7, 2])
    np.testing.assert_array_equal(run("divide", lhs, rhs), [-3, -3, 3, 14, -2**30])
    np.testing.assert_array_equal(run("remainder", lhs, rhs), [-1, 1, -1, 2, 0])


def test_int_div_rem_identity_on_a_grid():
    # The standard's Rem is lhs - rhs * trunc(lhs / rhs): check q * rhs + r == lhs, the sign and
    # magnitude rules of the Rem sentence, and q against an exact Python computation.
    values = np.array([-13, -7, -6, -2, -1, 1, 2, 3, 6, 7, 13, I64_MIN + 1, I64_MAX], np.int64)
    lhs, rhs = np.meshgrid(values, values[np.abs(values) < 100], indexing="ij")
    q = run("divide", lhs, rhs)
    r = run("remainder", lhs, rhs)
    for a, b, qq, rr in zip(lhs.ravel(), rhs.ravel(), q.ravel(), r.ravel()):
        a, b, qq, rr = int(a), int(b), int(qq), int(rr)
        assert qq == (abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1)
        assert qq * b + rr == a
        assert abs(rr) < abs(b)
        assert rr == 0 or (rr < 0) == (a < 0)


@pytest.mark.parametrize("lhs, rhs, expected", [
    (-0.0, 3.0, -0.0),       # sign from the dividend, even for a zero result
    (-6.0, 3.0, -0.0),
    (6.0, -3.0, 0.0),
    (-7.5, 2.0, -1.5),
    (7.5, -2.0, 1.5),
    (5.5, INF, 5.5),
    (-5.5, -INF, -5.5),
    (INF, 2.0, NAN),
    (1.0, 0.0, NAN),
    (NAN, 1.0, NAN),
    (1e300, 3.0, math.fmod(1e300, 3.0)),   # exact: no large-magnitude rounding
    (0.1, 0.03, math.fmod(0.1, 0.03)),
])
def test_float_remainder(lhs, rhs, expected):
    out = run("remainder", lhs, rhs)
    assert_same_float(out, expected)
    if math.isfinite(lhs) and math.isfinite(rhs) and rhs != 0:
        assert abs(float(out)) < abs(rhs)


# --- Pow: C99 / IEEE 754 special cases -----------------------------------------------------------

@pytest.mark.parametrize("x, y, expected", [
    (NAN, 0.0, 1.0), (NAN, -0.0, 1.0), (1.0, NAN, 1.0), (1.0, INF, 1.0),
    (-1.0, INF, 1.0), (-1.0, -INF, 1.0),
    (-0.0, -3.0, -INF), (0.0, -3.0, INF), (-0.0, -2.0, INF), (-0.0, -0.5, INF),
    (-0.0, 3.0, -0.0), (-0.0, 2.0, 0.0), (0.0, 3.0, 0.0),
    (-8.0, 0.5, NAN), (-2.0, 3.0, -8.0), (-2.0, -2.0, 0.25),
    (0.0, -INF, INF), (0.5, -INF, INF), (0.5, INF, 0.0), (2.0, -INF, 0.0), (2.0, INF, INF),
    (-INF, -3.0, -0.0), (-INF, -2.0, 0.0), (-INF, 3.0, -INF), (-INF, 2.0, INF),
    (INF, -1.0, 0.0), (INF, 0.5, INF), (NAN, 1.0, NAN), (2.0, NAN, NAN), (2.0, 10.0, 1024.0),
])
def test_power_special_cases(x, y, expected):
    assert_same_float(run("power", x, y), expected)


# --- Max / Min: NaN propagates --------------------------------------------------------------------

@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_max_min_propagate_nan(op):
    lhs = np.float64([NAN, 1.0, NAN, -INF, INF])
    rhs = np.float64([1.0, NAN, NAN, NAN, NAN])
    out = run(op, lhs, rhs)
    assert np.isnan(out).all()


@pytest.mark.parametrize("op, expected", [
    ("maximum", [2.0, -1.0, INF, 3.0]), ("minimum", [1.0, -5.0, -7.0, -INF]),
])
def test_max_min_values(op, expected):
    out = run(op, np.float64([1.0, -1.0, INF, -INF]), np.float64([2.0, -5.0, -7.0, 3.0]))
    np.testing.assert_array_equal(out, expected)


def test_max_min_int64_extremes():
    lhs, rhs = np.int64([I64_MIN, I64_MAX]), np.int64([I64_MAX, -1])
    np.testing.assert_array_equal(run("maximum", lhs, rhs), [I64_MAX, I64_MAX])
    np.testing.assert_array_equal(run("minimum", lhs, rhs), [I64_MIN, -1])


@pytest.mark.parametrize("op, expected", [
    ("maximum", [2**64 - 1, 2**63]), ("minimum", [0, 5]), ("lt", [False, False]),
    ("ge", [True, True]), ("subtract", [2**64 - 1, 2**63 - 5]),
])
def test_uint64_operands_keep_their_full_range(op, expected):
    """The full uint64 range: 2**64 - 1 and 2**63 widen to int64 as -1 and -2**63 (issue 36),
    and the XLA binary oracles read them back as uint64 (evaluate passes the dtypes)."""
    out = run(op, np.uint64([2**64 - 1, 2**63]), np.uint64([0, 5]))
    assert [int(x) for x in out] == [int(x) for x in expected]


def test_unsigned_negate_wraps_as_stablehlo_defines():
    """StableHLO negate on unsigned integers: 2**N - x modulo 2**N."""
    assert run("negate", np.uint8([0, 1, 255])).tolist() == [0, 255, 1]
    assert run("negate", np.uint64([1, 2**64 - 1])).tolist() == [2**64 - 1, 1]


# --- Element-wise comparison: IEEE 754 comparison semantics -----------------------------------------

@pytest.mark.parametrize("op, lhs, rhs, expected", [
    ("eq", -0.0, 0.0, True), ("eq", NAN, NAN, False), ("eq", NAN, INF, False),
    ("eq", INF, INF, True), ("eq", 1.0, 1.0 + 2**-52, False),
    ("lt", NAN, 1.0, False), ("lt", 1.0, NAN, False), ("lt", NAN, NAN, False),
    ("lt", -0.0, 0.0, False), ("lt", 0.0, -0.0, False), ("lt", -INF, INF, True),
    ("lt", -1.0, -0.0, True), ("lt", 5e-324, 0.0, False), ("lt", 0.0, 5e-324, True),
])
def test_float_comparisons(op, lhs, rhs, expected):
    out = run(op, lhs, rhs)
    assert out.dtype == np.bool_
    assert bool(out) is expected


def test_int_comparisons():
    lhs, rhs = np.int32([-3, 4, 2**31 - 1]), np.int32([-3, -4, -2**31])
    np.testing.assert_array_equal(run("eq", lhs, rhs), [True, False, False])
    np.testing.assert_array_equal(run("lt", lhs, rhs), [False, False, False])
    np.testing.assert_array_equal(run("lt", rhs, lhs), [False, True, True])


# --- Clamp ---------------------------------------------------------------------------------------

def test_clamp_uint64_above_2_63():
    """uint64 reaches the oracle as uint64 (issue 36): as int64, 2**64 - 1 would read -1 and
    clamp below 2**63."""
    out = run("clamp", np.uint64(2**63), np.uint64([1, 2**63 + 7, 2**64 - 1]), np.uint64(2**64 - 2))
    assert out.tolist() == [2**63, 2**63 + 7, 2**64 - 2]


def test_clamp_spec_example():
    # Clamp section: operand s32[3] {-1, 5, 9}, min 0, max 6 ==> {0, 5, 6}.
    out = run("clamp", np.int32(0), np.int32([-1, 5, 9]), np.int32(6))
    np.testing.assert_array_equal(out, [0, 5, 6])


@pytest.mark.parametrize("lo, x, hi, expected", [
    (5.0, 1.0, 2.0, 2.0),     # clamp(a, x, b) = min(max(a, x), b): min > max gives max
    (5.0, 7.0, 2.0, 2.0),
    (5.0, 3.0, 2.0, 2.0),
    (-1.0, NAN, 1.0, NAN),    # Max/Min propagate NaN
    (-INF, -INF, INF, -INF),
    (0.0, -3.0, 1.0, 0.0),
    (0.0, 0.5, 1.0, 0.5),
])
def test_clamp_float(lo, x, hi, expected):
    assert_same_float(run("clamp", lo, x, hi), expected)


def test_clamp_elementwise_bounds():
    out = run("clamp", np.int64([0, 10, -5]), np.int64([3, 3, 3]), np.int64([1, 20, -6]))
    np.testing.assert_array_equal(out, [1, 10, -6])


def test_clamp_draws_e8m0_bounds_from_its_own_ranges(specs):
    """float8_e8m0fnu holds no value at or below 0, where clamp's float min range ends: its own
    ranges (min in [1/16, 1], max in [1, 16]) draw the normal plan's bounds, so that the
    operand is clamped on both sides."""
    from conform.generators import generate_cases
    cases = [c for c in generate_cases(specs["clamp"], "float8_e8m0fnu", count=8, seed=1)
             if c.plan == "normal"]
    assert cases
    for case in cases:
        low, operand, high = (x.astype(np.float64) for x in case.inputs)
        assert (0.0625 <= low).all() and (low <= 1).all() and (1 <= high).all() and (high <= 16).all()
        np.testing.assert_array_equal(run("clamp", *case.inputs).astype(np.float64),
                                      np.minimum(np.maximum(low, operand), high))


# --- Unary functions ---------------------------------------------------------------------------

@pytest.mark.parametrize("x, expected", [
    (0.5, 1.0), (-0.5, -1.0), (1.5, 2.0), (2.5, 3.0), (-2.5, -3.0), (-1.5, -2.0),
    (0.49999999999999994, 0.0),       # largest double below 0.5: not a tie (floor(x+0.5) gets 1)
    (-0.49999999999999994, -0.0),
    (-0.4, -0.0), (0.4, 0.0), (-0.0, -0.0), (0.0, 0.0),
    (4503599627370495.5, 4503599627370496.0),    # 2**52 - 0.5: a tie, away from zero
    (-4503599627370495.5, -4503599627370496.0),
    (2.0**52 + 1, 2.0**52 + 1), (1e300, 1e300), (5e-324, 0.0), (-5e-324, -0.0),
    (INF, INF), (-INF, -INF), (NAN, NAN), (2.4999999999999996, 2.0), (-3.5, -4.0),
])
def test_round_ties_away_from_zero(x, expected):
    # Element-wise unary functions: Round rounds to nearest, ties away from zero.
    assert_same_float(run("round", x), expected)


@pytest.mark.parametrize("x, expected", [
    (-0.0, -0.0), (0.0, 0.0), (-1.0, NAN), (-INF, NAN), (INF, INF), (4.0, 2.0),
    (2.0, math.sqrt(2.0)), (NAN, NAN), (5e-324, 2.2227587494850775e-162),
])
def test_sqrt(x, expected):
    assert_same_float(run("sqrt", x), expected)


@pytest.mark.parametrize("op, x, expected", [
    ("floor", -0.5, -1.0), ("floor", -0.0, -0.0), ("floor", 0.5, 0.0), ("floor", -INF, -INF),
    ("floor", 2.0, 2.0), ("floor", -2.000000000000001, -3.0), ("floor", NAN, NAN),
    ("abs", -0.0, 0.0), ("abs", -INF, INF), ("abs", -3.5, 3.5),
    ("negate", 0.0, -0.0), ("negate", -0.0, 0.0), ("negate", INF, -INF),
    ("exp", -INF, 0.0), ("exp", INF, INF), ("exp", -0.0, 1.0), ("exp", NAN, NAN),
    ("exp", 710.0, INF), ("exp", -746.0, 0.0),
    ("log", 0.0, -INF), ("log", -0.0, -INF), ("log", -1.0, NAN), ("log", 1.0, 0.0),
    ("log", INF, INF), ("log", -INF, NAN),
    ("tanh", -0.0, -0.0), ("tanh", 0.0, 0.0), ("tanh", INF, 1.0), ("tanh", -INF, -1.0),
    ("tanh", NAN, NAN),
])
def test_unary_special_values(op, x, expected):
    assert_same_float(run(op, x), expected)


def test_int_abs_and_negate():
    np.testing.assert_array_equal(run("abs", np.int32([-5, 0, 7, -2**31])), [5, 0, 7, 2**31])
    np.testing.assert_array_equal(run("negate", np.int64([-5, 0, 7])), [5, 0, -7])


# --- exp, log, tanh against mpmath (float64 reference within 1 ULP) -------------------------------

_RNG = np.random.default_rng(20240601)
MPMATH_POINTS = {
    "exp": [-745.0, -708.5, -700.0, -100.25, -20.5, -1.0, -1e-10, 1e-300, 0.5, 1.0, 2.0,
            math.pi, 10.0, 50.5, 100.0, 300.0, 700.0, 709.78]
           + list(_RNG.uniform(-30, 30, 12)),
    "log": [5e-324, 1e-310, 1e-300, 1e-5, 0.1, 0.5, 1 - 2**-53, 1 + 2**-52, 1.5, 2.0, math.e,
            10.0, 1e10, 1e300, 1.7976931348623157e308]
           + list(_RNG.uniform(0.0, 4.0, 8)) + list(10.0 ** _RNG.uniform(-200, 200, 7)),
    "tanh": [5e-324, 1e-300, 1e-8, -1e-8, 0.01, 0.25, 0.5, -0.5, 0.75, 1.0, -1.0, 2.0, 5.0,
             10.0, 18.0, 19.5, 20.0, -20.0, 100.0]
            + list(_RNG.uniform(-5, 5, 11)),
}


def ulp_error(value: float, exact) -> float:
    """|value - exact| in units of the float64 ULP at ``exact`` (subnormal spacing below 2**-1022)."""
    if exact == 0:
        return 0.0 if value == 0 else math.inf
    _, e = mpmath.frexp(exact)                       # |exact| in [2**(e-1), 2**e)
    ulp = mpmath.mpf(2) ** (max(int(e) - 1, -1022) - 52)
    return float(abs(mpmath.mpf(value) - exact) / ulp)


@needs_mpmath
@pytest.mark.parametrize("op", sorted(MPMATH_POINTS))
def test_transcendental_within_one_ulp_of_mpmath(op):
    points = np.array(MPMATH_POINTS[op], dtype=np.float64)
    assert len(points) >= 24
    out = run(op, points)
    with mpmath.workprec(256):
        function = getattr(mpmath, op)                 # mpmath.exp, mpmath.log, mpmath.tanh
        errors = [ulp_error(float(y), function(mpmath.mpf(float(x)))) for x, y in zip(points, out)]
    worst = int(np.argmax(errors))
    assert errors[worst] <= 1.0, f"{op}({points[worst]!r}) is {errors[worst]:.3f} ULP off"


@needs_mpmath
def test_ulp_error_helper_detects_one_ulp():
    # The measuring stick itself: the next double above 1 is exactly 1 ULP from 1.
    assert ulp_error(1.0 + 2**-52, mpmath.mpf(1)) == 1.0
    assert ulp_error(1.0, mpmath.mpf(1)) == 0.0


# --- Select, ConvertElementType ------------------------------------------------------------------

def test_select_copies_values_bitwise():
    pred = np.array([True, False, True, False])
    on_true = np.float64([-0.0, 1.0, NAN, 2.0])
    on_false = np.float64([5.0, -0.0, 6.0, INF])
    assert_same_float(run("select", pred, on_true, on_false), [-0.0, -0.0, NAN, INF])


def test_convert_spec_example_s32_to_f32():
    # ConvertElementType section: a = s32[3] {0, 1, 2}; convert(a, f32) == f32[3] {0.0, 1.0, 2.0}.
    out = run("convert_element_type", np.int32([0, 1, 2]), new_dtype="float32")
    np.testing.assert_array_equal(out.astype(np.float32), np.float32([0.0, 1.0, 2.0]))
    np.testing.assert_array_equal(out, [0, 1, 2])


@pytest.mark.parametrize("x, new_dtype, expected", [
    (-2.7, "int32", -2.0), (2.7, "int32", 2.0), (-0.9, "int64", 0.0), (1e10, "int64", 1e10),
    (-7.5, "int8", -7.0), (NAN, "bool", True), (-0.0, "bool", False), (0.0, "bool", False),
    (0.5, "bool", True), (-INF, "bool", True), (2.5, "float32", 2.5),
])
def test_convert_float(x, new_dtype, expected):
    # static_cast semantics: float -> int truncates toward zero; -> bool is x != 0 (NaN is true).
    out = run("convert_element_type", x, new_dtype=new_dtype)
    np.testing.assert_array_equal(out, expected)
    if new_dtype == "bool":
        assert out.dtype == np.bool_


def test_convert_bool_and_int():
    out = run("convert_element_type", np.array([True, False]), new_dtype="float32")
    np.testing.assert_array_equal(out, [1, 0])
    out = run("convert_element_type", np.int32([-3, 0, 3]), new_dtype="bool")
    np.testing.assert_array_equal(out, [True, False, True])
    # a float64 target's reference is the rounded64 hook's: 2**53 + 1 is a tie, to even
    big = 2**53 + 1
    (wide,) = evaluate("convert_element_type", [np.int64([big])], {"new_dtype": "float64"},
                       rounded64=True)
    assert wide.tolist() == [2.0 ** 53]
    # narrower targets: rounded to odd in float64, then once into the target by the judge
    # (2**60 + 2**52 + 1 is just above a bfloat16 midpoint: it rounds up, where a float64
    # rounding first would land on the midpoint and round down to even)
    from conform.harness.judge.compare import round_to_dtype

    above = 2**60 + 2**52 + 1
    (narrow,) = evaluate("convert_element_type", [np.int64([above])], {"new_dtype": "bfloat16"})
    assert float(round_to_dtype(narrow, "bfloat16")[0]) == 2.0 ** 60 + 2.0 ** 53


@pytest.mark.parametrize("y, x, want", [
    (0.0, -0.0, np.pi), (-0.0, -0.0, -np.pi), (0.0, 0.0, 0.0), (-0.0, 0.0, -0.0),
    (0.0, -3.0, np.pi), (-0.0, -3.0, -np.pi), (2.0, -0.0, np.pi / 2),
    (np.inf, -np.inf, 3 * np.pi / 4), (-np.inf, np.inf, -np.pi / 4), (1.0, 1.0, np.pi / 4),
])
def test_atan2_signed_zero_and_infinity_cases(y, x, want):
    # C99 Annex F.9.1.4 / IEEE 754-2019 §9.2.1 special cases of atan2
    (out,) = evaluate("atan2", [np.array([y]), np.array([x])], {})
    assert out[0] == want and np.signbit(out[0]) == np.signbit(want)
