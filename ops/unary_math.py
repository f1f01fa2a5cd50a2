"""Element-wise unary math oracles beyond the basics in elementwise.py (trigonometric, hyperbolic,
logistic, rounding variants, ...): float64 in, float64 out.

Most are NumPy's float64 functions, which are within 1 ULP of the exact value (the tests check
this against mpmath). Where float64 libm is not (cbrt is up to ~2.5 ULP off, sinh/cosh ~1.3, a
float64 1/sqrt ~1.4, 1/(1 + exp(-x)) far more in the subnormal tail), the function is evaluated
in ``np.longdouble`` and rounded once to float64 (:func:`_extended`).
"""
from __future__ import annotations

import numpy as np

from conform.ops._midpoints import SQUARE_MIDPOINTS
from conform.ops._registry import op
from conform.ops._rounded import exact_divide, exact_multiply, rounded_elementwise


def _extended(fn, operand):
    """``fn`` evaluated in ``np.longdouble`` and rounded once to float64.

    On x86-64 long double has a 64-bit significand, so a long-double libm result within a few of
    its own ULPs is within 0.5 + 2**-10 float64 ULP after the final rounding.

    >>> float(_extended(np.cbrt, np.float64(-8.0)))
    -2.0
    """
    return fn(np.asarray(operand, dtype=np.longdouble)).astype(np.float64)


@op("ceil", version=1)
def oracle_ceil(operand):
    """ceil(x), the smallest integer >= x; ceil(-1 < x < 0) = -0."""
    return (np.ceil(operand),)


@op("sign", version=1)
def oracle_sign(operand):
    """XLA Sign: -1 for x < 0, -0 for -0, NaN for NaN, +0 for +0, 1 for x > 0 (integers: -1, 0, 1)."""
    return (np.where(operand == 0, operand, np.sign(operand)),)  # np.sign(-0.0) is +0


@op("round_nearest_even", version=1)
def oracle_round_nearest_even(operand):
    """XLA RoundNearestEven: to the nearest integer, ties to even (IEEE roundToIntegralTiesToEven)."""
    return (np.rint(operand),)


@op("is_finite", version=1)
def oracle_is_finite(operand):
    """True where x is neither ±inf nor NaN."""
    return (np.isfinite(operand),)


@op("sin", version=1)
def oracle_sin(operand):
    """sin(x), x in radians (NumPy's libm reduces large arguments exactly)."""
    return (np.sin(operand),)


@op("cos", version=1)
def oracle_cos(operand):
    """cos(x), x in radians."""
    return (np.cos(operand),)


@op("tan", version=1)
def oracle_tan(operand):
    """tan(x), x in radians."""
    return (np.tan(operand),)


@op("atan", version=1)
def oracle_atan(operand):
    """atan(x) in [-pi/2, pi/2]."""
    return (np.arctan(operand),)


@op("asin", version=1)
def oracle_asin(operand):
    """asin(x) in [-pi/2, pi/2]; NaN for |x| > 1."""
    return (np.arcsin(operand),)


@op("acos", version=1)
def oracle_acos(operand):
    """acos(x) in [0, pi]; NaN for |x| > 1."""
    return (np.arccos(operand),)


@op("sinh", version=1)
def oracle_sinh(operand):
    """sinh(x) = (e**x - e**-x) / 2, evaluated in extended precision."""
    return (_extended(np.sinh, operand),)


@op("cosh", version=1)
def oracle_cosh(operand):
    """cosh(x) = (e**x + e**-x) / 2, evaluated in extended precision."""
    return (_extended(np.cosh, operand),)


@op("log1p", version=1)
def oracle_log1p(operand):
    """ln(1 + x); log1p(-1) = -inf, log1p(x < -1) = NaN."""
    return (np.log1p(operand),)


@op("expm1", version=1)
def oracle_expm1(operand):
    """e**x - 1."""
    return (np.expm1(operand),)


def numpy_rsqrt(operand):
    """The numpy backend: ``1 / np.sqrt(x)`` in x's type (NumPy has no rsqrt)."""
    return operand.dtype.type(1) / np.sqrt(operand)


def numpy_logistic(operand):
    """The numpy backend: ``1 / (1 + np.exp(-x))`` in x's type (NumPy has no logistic)."""
    one = operand.dtype.type(1)
    return one / (one + np.exp(-operand))


@op("rsqrt", version=1, numpy=numpy_rsqrt)
def oracle_rsqrt(operand):
    """1 / sqrt(x) (XLA Rsqrt), in extended precision: rsqrt(-0) = -inf, rsqrt(x < 0) = NaN."""
    return (_extended(lambda x: 1 / np.sqrt(x), operand),)


@op("cbrt", version=1)
def oracle_cbrt(operand):
    """The real cube root; cbrt(-x) = -cbrt(x), evaluated in extended precision."""
    return (_extended(np.cbrt, operand),)


@op("logistic", version=1, numpy=numpy_logistic)
def oracle_logistic(operand):
    """1 / (1 + e**-x), in extended precision (e**-x cannot overflow for any float64 x > -11356)."""
    return (_extended(lambda x: 1 / (1 + np.exp(-x)), operand),)


@op("erf", version=1)
def oracle_erf(operand):
    """erf(x) = 2/sqrt(pi) * integral_0^x e**(-t*t) dt (scipy.special.erf, Cephes)."""
    from scipy import special  # imported on first use: scipy.special costs ~0.7 s per process

    return (special.erf(operand),)


@op("asinh", version=1)
def oracle_asinh(operand):
    """asinh(x) = ln(x + sqrt(x**2 + 1)); odd, asinh(±0) = ±0, asinh(±inf) = ±inf; in extended
    precision."""
    return (_extended(np.arcsinh, operand),)


@op("acosh", version=1)
def oracle_acosh(operand):
    """acosh(x) = ln(x + sqrt(x**2 - 1)) for x >= 1 (acosh(1) = +0); NaN for x < 1; in extended
    precision."""
    return (_extended(np.arccosh, operand),)


@op("atanh", version=1)
def oracle_atanh(operand):
    """atanh(x) = ln((1 + x) / (1 - x)) / 2; atanh(±1) = ±inf, NaN for |x| > 1; in extended
    precision."""
    return (_extended(np.arctanh, operand),)


@op("log2", version=1)
def oracle_log2(operand):
    """log2(x) = ln(x) / ln(2) (NNEF log2); log2(±0) = -inf, NaN for x < 0; in extended precision
    (exact at powers of two)."""
    return (_extended(np.log2, operand),)


def rounded_reciprocal(operand):
    """1 / x correctly rounded into float64, in exact integer arithmetic.

    (reciprocal has no ``midpoints`` hook: a normal quotient of p-bit numbers is never a
    midpoint (:func:`conform.ops._midpoints.quotient_midpoints`), and a subnormal one would be
    ``1 / x = M 2**(emin - p)``, ``M`` odd, so ``M = 1`` and ``x = 2**(p - emin)``, beyond the
    largest finite value in every format.)"""
    return (rounded_elementwise(exact_divide, 1.0, operand),)


def rounded_square(operand):
    """x * x correctly rounded into float64, in exact integer arithmetic."""
    return (rounded_elementwise(exact_multiply, operand, operand),)


@op("reciprocal", version=1, rounded64=rounded_reciprocal)
def oracle_reciprocal(operand):
    """1 / x (NNEF rcp, ONNX Reciprocal): 1/±0 = ±inf, 1/±inf = ±0."""
    return (np.divide(1.0, operand),)


@op("square", version=1, rounded64=rounded_square, midpoints=SQUARE_MIDPOINTS)
def oracle_square(operand):
    """x * x (NNEF sqr, defined as x ^ 2.0): exact in float64 for 24-bit or narrower inputs,
    correctly rounded for float64 ones; sqr(-0) = +0, sqr(±inf) = +inf."""
    return (operand * operand,)


@op("copy", version=1)
def oracle_copy(operand):
    """The operand itself (NNEF copy, ONNX Identity): every bit, NaN payloads and -0 included."""
    return (operand.copy(),)
