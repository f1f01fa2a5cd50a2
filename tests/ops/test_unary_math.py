"""Tests of the unary math oracles (conform/ops/unary_math.py).

Special values come from C99 Annex F (F.9, which OpenCL C 3.0 §7.5.1 also requires) and from the
XLA operation semantics text, ../shared/seeds/004_c11ff90b720ca9d5.txt, section
"元素级单元函数" (element-wise unary functions): Sign's table, Rsqrt = 1.0 / sqrt(x),
RoundNearestEven, IsFinite. Accuracy is checked against mpmath at 256 bits.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from conform.ops import definitions
from conform.oracles import evaluate
from test_elementwise import ulp_error  # the measuring stick of the element-wise oracle tests

try:
    import mpmath
except ImportError:          # not a declared dependency of conform; only the accuracy checks need it
    mpmath = None
needs_mpmath = pytest.mark.skipif(mpmath is None, reason="mpmath is not installed")

INF, NAN, PI = math.inf, math.nan, math.pi
TINY = 5e-324                 # the smallest float64 subnormal, 2**-1074
UNARY_MATH = ["ceil", "sign", "round_nearest_even", "is_finite", "sin", "cos", "tan", "atan",
              "asin", "acos", "sinh", "cosh", "log1p", "expm1", "rsqrt", "cbrt", "logistic", "erf"]


def run(name, x):
    """The single output of oracle ``name`` on ``x`` (a Python scalar becomes a 0-d array)."""
    (out,) = evaluate(name, [np.asarray(x)], {})
    return out


def same_float(actual, expected) -> bool:
    """Equal as IEEE values, NaN == NaN, and a zero must carry the expected sign."""
    actual, expected = float(actual), float(expected)
    if math.isnan(expected):
        return math.isnan(actual)
    return actual == expected and math.copysign(1, actual) == math.copysign(1, expected)


def test_every_op_is_registered_from_this_module():
    for op in UNARY_MATH:
        assert definitions()[op].module == "conform.ops.unary_math", op


# --- special values: C99 Annex F.9 and the XLA text ----------------------------------------------

SPECIAL_VALUES = [
    # F.9.1 trigonometric (acos F.9.1.1, asin F.9.1.2, atan F.9.1.3, cos F.9.1.5, sin F.9.1.6,
    # tan F.9.1.7): odd functions keep the sign of zero, infinite arguments give NaN.
    ("sin", -0.0, -0.0), ("sin", 0.0, 0.0), ("sin", INF, NAN), ("sin", -INF, NAN), ("sin", NAN, NAN),
    ("sin", TINY, TINY),
    ("cos", -0.0, 1.0), ("cos", 0.0, 1.0), ("cos", INF, NAN), ("cos", -INF, NAN),
    ("tan", -0.0, -0.0), ("tan", 0.0, 0.0), ("tan", INF, NAN), ("tan", -INF, NAN),
    ("asin", -0.0, -0.0), ("asin", 1.0, PI / 2), ("asin", -1.0, -PI / 2), ("asin", 2.0, NAN),
    ("asin", -1.0000000000000002, NAN),
    ("acos", 1.0, 0.0), ("acos", -1.0, PI), ("acos", 0.0, PI / 2), ("acos", -2.0, NAN),
    ("acos", INF, NAN),
    ("atan", -0.0, -0.0), ("atan", INF, PI / 2), ("atan", -INF, -PI / 2), ("atan", 1.0, PI / 4),
    # F.9.2.4 cosh, F.9.2.5 sinh
    ("sinh", -0.0, -0.0), ("sinh", INF, INF), ("sinh", -INF, -INF), ("sinh", 711.0, INF),
    ("sinh", -711.0, -INF), ("sinh", TINY, TINY),
    ("cosh", -0.0, 1.0), ("cosh", -INF, INF), ("cosh", 711.0, INF), ("cosh", -711.0, INF),
    # F.9.3.3 expm1, F.9.3.9 log1p
    ("expm1", -0.0, -0.0), ("expm1", INF, INF), ("expm1", -INF, -1.0), ("expm1", TINY, TINY),
    ("expm1", 1e-300, 1e-300), ("expm1", 710.0, INF), ("expm1", -40.0, -1.0 + 4.248354255291589e-18),
    ("log1p", -0.0, -0.0), ("log1p", -1.0, -INF), ("log1p", -2.0, NAN), ("log1p", INF, INF),
    ("log1p", -INF, NAN), ("log1p", TINY, TINY), ("log1p", 1e-300, 1e-300), ("log1p", NAN, NAN),
    # F.9.4.1 cbrt: odd, exact on cubes
    ("cbrt", -8.0, -2.0), ("cbrt", 27.0, 3.0), ("cbrt", -0.0, -0.0), ("cbrt", -INF, -INF),
    ("cbrt", INF, INF), ("cbrt", TINY, 2.0 ** -358), ("cbrt", -1.0, -1.0),
    # Rsqrt = 1.0 / sqrt(x): IEEE sqrt(-0) = -0 and 1 / -0 = -inf
    ("rsqrt", 0.0, INF), ("rsqrt", -0.0, -INF), ("rsqrt", -1.0, NAN), ("rsqrt", INF, 0.0),
    ("rsqrt", -INF, NAN), ("rsqrt", 4.0, 0.5), ("rsqrt", 0.25, 2.0), ("rsqrt", TINY, 2.0 ** 537),
    ("rsqrt", NAN, NAN),
    # F.9.5.1 erf
    ("erf", -0.0, -0.0), ("erf", 0.0, 0.0), ("erf", INF, 1.0), ("erf", -INF, -1.0), ("erf", 6.0, 1.0),
    ("erf", NAN, NAN),
    # logistic(x) = 1 / (1 + e**-x): e**-745 is 0.57 * 2**-1074, which rounds up to 2**-1074
    ("logistic", 0.0, 0.5), ("logistic", -0.0, 0.5), ("logistic", INF, 1.0), ("logistic", -INF, 0.0),
    ("logistic", 40.0, 1.0), ("logistic", -745.0, TINY), ("logistic", -800.0, 0.0),
    ("logistic", NAN, NAN),
    # F.9.6.1 ceil (and OpenCL C 3.0 §7.5.1: ceil(-1 < x < 0) = -0)
    ("ceil", -0.5, -0.0), ("ceil", -0.0, -0.0), ("ceil", 0.5, 1.0), ("ceil", -TINY, -0.0),
    ("ceil", TINY, 1.0), ("ceil", -1.5, -1.0), ("ceil", 2.0, 2.0), ("ceil", INF, INF),
    ("ceil", -INF, -INF), ("ceil", NAN, NAN), ("ceil", 4503599627370495.5, 4503599627370496.0),
]


@pytest.mark.parametrize("op, x, expected", SPECIAL_VALUES)
def test_special_values(op, x, expected):
    out = run(op, x)
    assert out.dtype == np.float64
    assert same_float(out, expected), f"{op}({x!r}) = {float(out)!r}, but should be {expected!r}"


@pytest.mark.parametrize("x, expected", [
    (0.5, 0.0), (1.5, 2.0), (2.5, 2.0), (-0.5, -0.0), (-2.5, -2.0), (-3.5, -4.0), (3.5, 4.0),
    (0.49999999999999994, 0.0),                    # largest double below 0.5: not a tie
    (4503599627370495.5, 4503599627370496.0),      # 2**52 - 0.5: a tie, to the even neighbour
    (4503599627370494.5, 4503599627370494.0),
    (-0.0, -0.0), (0.0, 0.0), (-0.4, -0.0), (TINY, 0.0), (2.0 ** 53 + 2, 2.0 ** 53 + 2),
    (INF, INF), (-INF, -INF), (NAN, NAN),
])
def test_round_nearest_even_ties_to_even(x, expected):
    # RoundNearestEven rounds to the nearest integer, ties to the even one (unlike Round).
    assert same_float(run("round_nearest_even", x), expected)


@pytest.mark.parametrize("x, expected", [
    # The XLA text's table: sgn(x) = -1 (x < 0), -0 (x = -0), NaN (x = NaN), +0 (x = +0), 1 (x > 0)
    (-3.5, -1.0), (-0.0, -0.0), (NAN, NAN), (0.0, 0.0), (2.0, 1.0),
    (-TINY, -1.0), (TINY, 1.0), (-INF, -1.0), (INF, 1.0),
])
def test_sign_table(x, expected):
    assert same_float(run("sign", x), expected)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_sign_of_integers(dtype):
    info = np.iinfo(dtype)
    out = run("sign", np.array([info.min, -5, 0, 7, info.max], dtype))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [-1, -1, 0, 1, 1])


def test_is_finite():
    x = np.array([0.0, -0.0, INF, -INF, NAN, TINY, 1.7976931348623157e308, -1.0])
    out = run("is_finite", x)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, [True, True, False, False, False, True, True, True])


@pytest.mark.parametrize("op", UNARY_MATH)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_oracles_take_narrow_floats(op, dtype):
    # An oracle handed an array of a narrow type (not widened first) still gives its values.
    x = np.array([-2.0, -0.5, 0.0, 0.25, 0.5, 3.0], dtype)
    with np.errstate(all="ignore"):
        (out,) = definitions()[op](x)
    expected = run(op, x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(out, np.float64), expected.astype(np.float64),
                               rtol=2e-2, atol=1e-3, equal_nan=True)


# --- accuracy against mpmath ------------------------------------------------------------------------

_RNG = np.random.default_rng(20260522)
_FL_PI = 3.141592653589793             # the doubles nearest pi, pi/2, 3pi/2
_FL_HALF_PI, _FL_3HALF_PI = 1.5707963267948966, 4.71238898038469
MPMATH_POINTS = {
    "sin": [TINY, 1e-300, 1e-8, 0.5, 1.0, 2.0, 3.0, _FL_PI, 2 * _FL_PI, 10.0, 100.0, 1e5, 1e10,
            1e22, 1e100, 1e300, 1.7976931348623157e308, -3.5, -1e15, 3.005304558726049]
           + list(_RNG.uniform(-10, 10, 10)),
    "cos": [TINY, 1e-8, 0.5, 1.0, _FL_HALF_PI, _FL_PI, _FL_3HALF_PI, 10.0, 1e5, 1e22, 1e300,
            1.34634126545874e+120, 1.7976931348623157e308, -2.5, -1e15]
           + list(_RNG.uniform(-10, 10, 10)),
    "tan": [TINY, 1e-8, 0.5, 0.7853981633974483, 1.0, _FL_HALF_PI, -_FL_HALF_PI, _FL_3HALF_PI,
            _FL_PI, 10.0, 1e5, 1e22, 1e300, 9.3680162194237e+126, 1.7976931348623157e308]
           + list(_RNG.uniform(-10, 10, 10)),
    "asin": [-1.0, -0.99999, -0.5, -1e-300, TINY, 1e-10, 0.1, 0.5, 0.6093251749381285, 0.9,
             0.999999, 1 - 2.0 ** -53, 1.0] + list(_RNG.uniform(-1, 1, 12)),
    "acos": [-1.0, -0.99999, -0.5, -1e-300, TINY, 1e-10, 0.1, 0.5, 0.9, 0.9722217278249525,
             0.999999, 1 - 2.0 ** -53] + list(_RNG.uniform(-1, 1, 12)),
    "atan": [TINY, 1e-300, 1e-10, 0.5, 1.0, 2.0, 4.664630767773158, 10.0, 1e10, 1e300, -1e300,
             -0.75] + list(_RNG.uniform(-10, 10, 12)),
    "sinh": [TINY, 1e-300, 1e-10, 1e-5, 0.1, 0.5, -0.856686678873416, 1.0, 2.0, 10.0, 20.0, 100.0,
             700.0, 710.0, -710.4, -0.3] + list(_RNG.uniform(-30, 30, 10)),
    "cosh": [TINY, 1e-10, 1e-5, 0.1, 0.5, 1.0, 2.0, 5.980760044338581, 10.0, 20.0, 100.0, 700.0,
             -709.7854661019215, 710.4, -0.3] + list(_RNG.uniform(-30, 30, 10)),
    "log1p": [-0.9999999999999999, -0.5, -1e-10, TINY, 1e-300, 1e-16, 1e-8, 0.5, 1.0,
              1.8428268625085407, 10.0, 1e10, 1e300, 1.7976931348623157e308]
             + list(_RNG.uniform(-1, 10, 12)),
    "expm1": [-745.0, -40.0, -1.0, -1e-10, TINY, 1e-300, 1e-16, 1e-5, 0.5, 1.0, 10.0,
              41.26926366296411, 100.0, 700.0, 709.78] + list(_RNG.uniform(-12, 12, 10)),
    "rsqrt": [TINY, 1e-310, 1e-300, 1.5338161859068982e-300, 1e-5, 0.5, 2.0, 3.0, 10.0, 1e10,
              1e300, 1.7976931348623157e308] + list(10.0 ** _RNG.uniform(-300, 300, 14)),
    "cbrt": [TINY, -TINY, 1e-310, 1e-300, 0.001, 0.5, 2.0, 3.0, 10.0, -1.2184828029864876e+32,
             1e300, -1.7976931348623157e308] + list(_RNG.uniform(-1000, 1000, 14)),
    "logistic": [-745.0, -740.0, -709.0, -700.0, -100.0, -40.0, -20.0, -1.0, -1e-10, TINY, 0.5,
                 1.0, 5.0, 20.0, 36.0, 39.0] + list(_RNG.uniform(-30, 30, 10)),
    "erf": [TINY, 1e-300, 1e-10, 0.1, 0.5, 0.8048016859030271, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 5.9,
            -0.3, -2.5] + list(_RNG.uniform(-4, 4, 10)),
}


def _exact(op, x):
    """``op`` at the double ``x``, in mpmath at the working precision."""
    x = mpmath.mpf(float(x))
    special = {
        "rsqrt": lambda: 1 / mpmath.sqrt(x),
        "cbrt": lambda: mpmath.sign(x) * mpmath.cbrt(abs(x)),
        "logistic": lambda: 1 / (1 + mpmath.exp(-x)),
    }
    return special[op]() if op in special else getattr(mpmath, op)(x)


# float64 oracles are evaluated in Arb ball arithmetic (conform/ops/multiprecision.py): hi is the
# float64 nearest the exact value, on every platform (no long double).
CORRECTLY_ROUNDED = 0.5 + 2.0 ** -20


@needs_mpmath
@pytest.mark.parametrize("op", sorted(set(MPMATH_POINTS) - {"erf"}))
def test_within_one_ulp_of_mpmath(op):
    points = np.array(MPMATH_POINTS[op], dtype=np.float64)
    assert len(points) >= 24
    out = run(op, points)
    with mpmath.workprec(256):
        errors = [ulp_error(float(y), _exact(op, x)) for x, y in zip(points, out)]
    worst = int(np.argmax(errors))
    assert errors[worst] <= CORRECTLY_ROUNDED, f"{op}({points[worst]!r}) is {errors[worst]:.4f} ULP off"


@needs_mpmath
def test_erf_within_its_documented_relative_error():
    # scipy.special.erf is Cephes' erf, documented with a peak relative error of 3.7e-16 (IEEE,
    # 30000 trials); it is NOT within 1 ULP everywhere (about 2.1 ULP near x = 0.8). The float64
    # error model of erf (16 ULP) absorbs this; here the documented figure is held to.
    # Subnormal results are held to correct rounding instead (a relative error means nothing there).
    points = np.array(MPMATH_POINTS["erf"], dtype=np.float64)
    out = run("erf", points)
    with mpmath.workprec(256):
        exact = [mpmath.erf(mpmath.mpf(float(x))) for x in points]
        errors = [0.0 if ulp_error(float(y), e) <= 0.5 else float(abs(mpmath.mpf(float(y)) / e - 1))
                  for y, e in zip(out, exact)]
    worst = int(np.argmax(errors))
    assert errors[worst] <= 3.7e-16, f"erf({points[worst]!r}) has relative error {errors[worst]:.3g}"
