"""Element-wise unary math oracles beyond the basics in elementwise.py (trigonometric, hyperbolic,
logistic, rounding variants, ...): float64 in, float64 out.

The transcendental ones are evaluated with :func:`conform.ops.multiprecision.refined`: for
float64 operands in Arb ball arithmetic, as a double-double ``hi + lo`` accurate to ~2**-106
relative on every platform; for narrower operands with NumPy's float64 function (within a few
float64 ULPs: 2**-28 of a float32 ULP). Special values come from each spec's
``special_values`` table (C11 Annex F, F.10), which overrides whatever is computed here.
"""
from __future__ import annotations

import numpy as np

from conform.ops._midpoints import SQUARE_MIDPOINTS
from conform.ops.multiprecision import refined
from conform.op_registry import op
from conform.ops._rounded import exact_divide, exact_multiply, rounded_elementwise
from conform.ops.xla_complex import (complex_circular_bound, complex_expm1_bound,
                                     complex_hyperbolic_bound, complex_logistic_bound,
                                     complex_refined, complex_rsqrt_bound, complex_sign_bound,
                                     complex_tan_bound)
from conform.ops.xla_complex_inverse import complex_inverse_bound, refined_on_axes


def _real_or_complex(fast, exact, operand, dtypes, *, on_axes=False):
    """``refined`` of a real operand; of a complex one, :func:`complex_refined` (Arb complex
    balls for complex128, NumPy's complex128 function for complex64; ``on_axes``: Arb on the
    axes too, :func:`conform.ops.xla_complex_inverse.refined_on_axes`)."""
    if np.iscomplexobj(operand):
        complex_fn = refined_on_axes if on_axes else complex_refined
        return complex_fn(fast, exact, operand, dtypes=dtypes)
    return refined(fast, exact, operand, dtypes=dtypes)


def _arb_cbrt(x):
    """The real cube root of an Arb ball (Arb's root is for x >= 0)."""
    return -((-x).root(3)) if x < 0 else x.root(3)


@op("ceil", version=1)
def oracle_ceil(operand):
    """ceil(x), the smallest integer >= x; ceil(-1 < x < 0) = -0."""
    return (np.ceil(operand),)


@op("sign", version=1, error_bound=complex_sign_bound)
def oracle_sign(operand, *, dtypes=None):
    """XLA Sign: -1 for x < 0, -0 for -0, NaN for NaN, +0 for +0, 1 for x > 0 (integers: -1, 0, 1);
    complex x (StableHLO sign): NaN + NaN i where a part is NaN, 0 for 0, else x / |x|."""
    if np.iscomplexobj(operand):
        with np.errstate(invalid="ignore"):
            unit = complex_refined(lambda z: z / np.abs(z), lambda z: z / abs(z), operand,
                                   dtypes=dtypes)
        nan = np.isnan(operand.real) | np.isnan(operand.imag)
        return (np.where(nan, complex(np.nan, np.nan), np.where(operand == 0, operand, unit)),)
    return (np.where(operand == 0, operand, np.sign(operand)),)  # np.sign(-0.0) is +0


@op("round_nearest_even", version=1)
def oracle_round_nearest_even(operand):
    """XLA RoundNearestEven: to the nearest integer, ties to even (IEEE roundToIntegralTiesToEven)."""
    return (np.rint(operand),)


@op("is_finite", version=1)
def oracle_is_finite(operand):
    """True where x is neither ±inf nor NaN."""
    return (np.isfinite(operand),)


@op("sin", version=1, error_bound=complex_circular_bound)
def oracle_sin(operand, *, dtypes=None):
    """sin(x), x in radians (NumPy's libm reduces large arguments exactly); complex x = a + bi:
    sin a cosh b + i cos a sinh b."""
    return (_real_or_complex(np.sin, lambda x: x.sin(), operand, dtypes),)


@op("cos", version=1, error_bound=complex_circular_bound)
def oracle_cos(operand, *, dtypes=None):
    """cos(x), x in radians; complex x = a + bi: cos a cosh b - i sin a sinh b."""
    return (_real_or_complex(np.cos, lambda x: x.cos(), operand, dtypes),)


@op("tan", version=1, error_bound=complex_tan_bound)
def oracle_tan(operand, *, dtypes=None):
    """tan(x), x in radians; complex x: sin x / cos x."""
    return (_real_or_complex(np.tan, lambda x: x.tan(), operand, dtypes),)


@op("atan", version=1, error_bound=complex_inverse_bound("atan"))
def oracle_atan(operand, *, dtypes=None):
    """atan(x) in [-pi/2, pi/2]; complex x: the principal value (cuts on the imaginary axis
    beyond ±i)."""
    return (_real_or_complex(np.arctan, lambda x: x.atan(), operand, dtypes, on_axes=True),)


@op("asin", version=1, error_bound=complex_inverse_bound("asin"))
def oracle_asin(operand, *, dtypes=None):
    """asin(x) in [-pi/2, pi/2]; NaN for |x| > 1; complex x: the principal value (cuts on the
    real axis beyond ±1)."""
    return (_real_or_complex(np.arcsin, lambda x: x.asin(), operand, dtypes, on_axes=True),)


@op("acos", version=1, error_bound=complex_inverse_bound("acos"))
def oracle_acos(operand, *, dtypes=None):
    """acos(x) in [0, pi]; NaN for |x| > 1; complex x: the principal value (cuts on the real
    axis beyond ±1)."""
    return (_real_or_complex(np.arccos, lambda x: x.acos(), operand, dtypes, on_axes=True),)


@op("sinh", version=1, error_bound=complex_hyperbolic_bound)
def oracle_sinh(operand, *, dtypes=None):
    """sinh(x) = (e**x - e**-x) / 2, evaluated to ~2**-106 for float64; complex x = a + bi:
    sinh a cos b + i cosh a sin b."""
    return (_real_or_complex(np.sinh, lambda x: x.sinh(), operand, dtypes),)


@op("cosh", version=1, error_bound=complex_hyperbolic_bound)
def oracle_cosh(operand, *, dtypes=None):
    """cosh(x) = (e**x + e**-x) / 2, evaluated to ~2**-106 for float64; complex x = a + bi:
    cosh a cos b + i sinh a sin b."""
    return (_real_or_complex(np.cosh, lambda x: x.cosh(), operand, dtypes),)


def _log1p(x):
    """``log1p`` in float64 or complex128. NumPy's complex log1p takes the log of ``1 + z``,
    which loses every bit of a real part below ``2**-53`` (log1p(8.2e-19 - 4e-42i) has real
    part 0 there, 8.2e-19 in truth): for ``|z| < 1/2`` the real part is
    ``log1p(x (2 + x) + y**2) / 2`` (``|1 + z|**2 - 1`` expanded), the imaginary part
    ``atan2(y, 1 + x)``."""
    if not np.iscomplexobj(x):
        return np.log1p(x)
    z = np.asarray(x, np.complex128)
    re, im = z.real, z.imag
    with np.errstate(all="ignore"):
        near = 0.5 * np.log1p(re * (2 + re) + im * im) + 1j * np.arctan2(im, 1 + re)
        return np.where(np.abs(z) < 0.5, near, np.log1p(z))


@op("log1p", version=1, error_bound=complex_inverse_bound("log1p"))
def oracle_log1p(operand, *, dtypes=None):
    """ln(1 + x); log1p(-1) = -inf, log1p(x < -1) = NaN; complex x: the principal logarithm
    of 1 + x (cut on the real axis left of -1)."""
    return (_real_or_complex(_log1p, lambda x: x.log1p(), operand, dtypes, on_axes=True),)


@op("expm1", version=1, error_bound=complex_expm1_bound)
def oracle_expm1(operand, *, dtypes=None):
    """e**x - 1; complex x = a + bi: (e**a cos b - 1) + i e**a sin b."""
    return (_real_or_complex(np.expm1, lambda x: x.expm1(), operand, dtypes),)


def numpy_rsqrt(operand):
    """The numpy backend: ``1 / np.sqrt(x)`` in x's type (NumPy has no rsqrt)."""
    return operand.dtype.type(1) / np.sqrt(operand)


def numpy_logistic(operand):
    """The numpy backend: ``1 / (1 + np.exp(-x))`` in x's type (NumPy has no logistic)."""
    one = operand.dtype.type(1)
    return one / (one + np.exp(-operand))


@op("rsqrt", version=1, numpy=numpy_rsqrt, error_bound=complex_rsqrt_bound)
def oracle_rsqrt(operand, *, dtypes=None):
    """1 / sqrt(x) (XLA Rsqrt), to ~2**-106 for float64: rsqrt(-0) = -inf, rsqrt(x < 0) = NaN;
    complex x: the reciprocal of the principal root."""
    return (_real_or_complex(lambda x: 1 / np.sqrt(x), lambda x: x.rsqrt(), operand, dtypes),)


@op("cbrt", version=1, error_bound=complex_inverse_bound("cbrt"))
def oracle_cbrt(operand, *, dtypes=None):
    """The real cube root; cbrt(-x) = -cbrt(x), evaluated to ~2**-106 for float64; complex x
    (StableHLO cbrt: "complex cubic root"): the principal root e**(log(x) / 3), whose cut is
    the negative real axis (cbrt(-8 + 0i) = 1 + 1.732i)."""
    if np.iscomplexobj(operand):
        return (refined_on_axes(lambda z: np.power(z, 1 / 3), lambda z: z.root(3), operand,
                                dtypes=dtypes),)
    return (refined(np.cbrt, _arb_cbrt, operand, dtypes=dtypes),)


@op("logistic", version=1, numpy=numpy_logistic, error_bound=complex_logistic_bound)
def oracle_logistic(operand, *, dtypes=None):
    """1 / (1 + e**-x), to ~2**-106 for float64 (and for complex128)."""
    return (_real_or_complex(lambda x: 1 / (1 + np.exp(-x)), lambda x: 1 / (1 + (-x).exp()),
                             operand, dtypes),)


@op("erf", version=1)
def oracle_erf(operand, *, dtypes=None):
    """erf(x) = 2/sqrt(pi) * integral_0^x e**(-t*t) dt (float64: Arb; narrower: scipy.special.erf)."""
    from scipy import special  # imported on first use: scipy.special costs ~0.7 s per process

    return (refined(special.erf, lambda x: x.erf(), operand, dtypes=dtypes),)


@op("asinh", version=1, error_bound=complex_inverse_bound("asinh"))
def oracle_asinh(operand, *, dtypes=None):
    """asinh(x) = ln(x + sqrt(x**2 + 1)); odd, asinh(±0) = ±0, asinh(±inf) = ±inf; float64 to
    ~2**-106.; complex x: the
    principal value (cuts on the imaginary axis beyond ±i)."""
    return (_real_or_complex(np.arcsinh, lambda x: x.asinh(), operand, dtypes, on_axes=True),)


@op("acosh", version=1, error_bound=complex_inverse_bound("acosh"))
def oracle_acosh(operand, *, dtypes=None):
    """acosh(x) = ln(x + sqrt(x**2 - 1)) for x >= 1 (acosh(1) = +0); NaN for x < 1; float64 to
    ~2**-106.; complex x: the
    principal value (cut on the real axis left of 1)."""
    return (_real_or_complex(np.arccosh, lambda x: x.acosh(), operand, dtypes, on_axes=True),)


@op("atanh", version=1, error_bound=complex_inverse_bound("atanh"))
def oracle_atanh(operand, *, dtypes=None):
    """atanh(x) = ln((1 + x) / (1 - x)) / 2; atanh(±1) = ±inf, NaN for |x| > 1; float64 to
    ~2**-106.; complex x: the
    principal value (cuts on the real axis beyond ±1)."""
    return (_real_or_complex(np.arctanh, lambda x: x.atanh(), operand, dtypes, on_axes=True),)


@op("log2", version=1)
def oracle_log2(operand, *, dtypes=None):
    """log2(x) = ln(x) / ln(2) (NNEF log2); log2(±0) = -inf, NaN for x < 0; to ~2**-106 for float64
    (exact at powers of two)."""
    return (refined(np.log2, lambda x: x.log_base(2), operand, dtypes=dtypes),)


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


def from_onnx_identity(inputs, attrs, opset):
    """An Identity node as a case: its tensor; a sequence, or an optional holding one (the
    value a list), is not (the case's operand is a tensor)."""
    if isinstance(inputs[0], list):
        raise ValueError("Identity of a sequence: the spec's operand is a tensor")
    return inputs, attrs


@op("copy", version=1, from_onnx=from_onnx_identity)
def oracle_copy(operand):
    """The operand itself (NNEF copy, ONNX Identity): every bit, NaN payloads and -0 included."""
    return (operand.copy(),)
