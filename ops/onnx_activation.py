"""ONNX's exponential-family activations (ai.onnx): Celu (opset 12, 28), Selu (6, 22), Gelu (20,
both ``approximate`` values), Mish (18, 22), Swish (24) and SwiGLU (28), each from its operator
text (``onnx.defs.get_schema(op, opset).doc``) and function body.

The oracles compute the function the text's formula denotes, in float64 (for 16- and 32-bit
targets) or in Arb ball arithmetic (float64 targets, ``conform.ops.multiprecision.refined``),
evaluated so that float64 keeps it accurate (``expm1`` for ``exp(t) - 1``, ``erfc`` for
``1 + erf``, a logistic for ``1 + tanh``). The error bounds (``derived``) admit both the
formula evaluated in T as the text writes it, which cancels (``exp(x/alpha) - 1`` near 0,
``1 + erf(z)`` for z << 0, ``ln(1 + e**x)`` for x << 0) and then errs by ULPs of the terms, not
of the result, and an evaluation through the well-conditioned function: each bound is the larger
of the two first-order analyses (``conform.ops._activation_bounds``).

At x = -inf the formulas of Gelu, Mish and Swish are -inf * 0 (NaN in IEEE arithmetic) where
the function tends to -0: the oracle gives -0 and marks those elements open (region
``oracle_marked``).
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op
from conform.ops._activation_bounds import (attr_error, f32, finish, half_ulp, in_dtype,
                                            onnx_with_attrs, ulp)
from conform.ops._lowering import unsupported
from conform.ops.multiprecision import refined

GELU_CUBIC = 0.044715             # Gelu's tanh approximation, as the text writes it
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _through(slope, error):
    """``slope * error``, 0 where the slope is 0 (an error through a saturated function)."""
    with np.errstate(invalid="ignore"):
        return np.where(slope == 0, 0.0, slope * error)


def _limit_at_minus_inf(x, values):
    """``values`` with -0 (the function's limit) where x = -inf."""
    return np.where(np.isneginf(x), -0.0, values)


# ------------------------------------------------------------------ Celu

def celu_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """Celu for x < 0: ``fl(x / alpha_T)`` off by ``dq = u + |alpha - alpha_T| / alpha``
    relative, moving exp (and expm1) by ``e**t |t| dq``; then ``exp(t) - 1`` (exp within
    ``exp_ulp``, the subtraction rounded) or ``expm1(t)`` (within ``expm1_ulp``); the product
    by ``alpha_T`` one rounding and alpha's error again. x >= 0 gives x: exact."""
    (x,), (y,) = inputs, outputs
    dtype, a = dtypes[0], f32(attrs["alpha"])
    dq = u + attr_error(attrs["alpha"], dtype) / a
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.minimum(x, 0) / a
        e = np.exp(t)
        by_exp = constants["exp_ulp"] * ulp(e, dtype) + half_ulp(e - 1, dtype)
        by_expm1 = constants["expm1_ulp"] * ulp(np.expm1(t), dtype)
        arg = np.where(np.isfinite(t), e * np.abs(t) * dq, 0.0)   # e**t |t| -> 0 at -inf
        first = a * (arg + np.maximum(by_exp, by_expm1)) + np.abs(y) * dq
    b = max(constants["exp_ulp"], constants["expm1_ulp"])
    return (finish(np.where(x < 0, first, 0.0), y, dtype, 2 * b + 4),)


def numpy_celu(x, *, alpha):
    """The numpy backend: ``alpha * np.expm1(x / alpha)`` for x < 0, else x, in x's type."""
    a = in_dtype(alpha, x)
    return np.where(x < 0, a * np.expm1(x / a), x)


@op("onnx_celu", version=1, onnx=onnx_with_attrs, numpy=numpy_celu, error_bound=celu_bound)
def oracle_onnx_celu(x, *, alpha, dtypes=None):
    """ONNX Celu: 'max(0,x) + min(0,alpha*(exp(x/alpha)-1))': x for x >= 0, alpha (stored
    as float32) times expm1(x / alpha) for x < 0; Celu(-inf) = -alpha."""
    a = f32(alpha)
    return (refined(lambda v: np.where(v < 0, a * np.expm1(np.minimum(v, 0) / a), v),
                    lambda v: v if v > 0 else type(v)(a) * (v / type(v)(a)).expm1(),
                    x, dtypes=dtypes),)


# ------------------------------------------------------------------ Selu

def selu_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """Selu: for x > 0, ``gamma_T * x`` (one rounding, gamma's error in T); for x <= 0, the
    text's ``gamma * (alpha * e**x - alpha)`` (exp within ``exp_ulp``, three roundings,
    alpha's error in both terms) or ``gamma * alpha * expm1(x)`` (expm1 within
    ``expm1_ulp``, the products rounded)."""
    (x,), (y,) = inputs, outputs
    dtype = dtypes[0]
    g, a = f32(attrs["gamma"]), f32(attrs["alpha"])
    dg = attr_error(attrs["gamma"], dtype) / g
    da = attr_error(attrs["alpha"], dtype) / a
    with np.errstate(over="ignore", invalid="ignore"):
        e, m = np.exp(np.minimum(x, 0)), np.expm1(np.minimum(x, 0))
        by_exp = a * (constants["exp_ulp"] * ulp(e, dtype) + e * (u + da) + da) \
            + half_ulp(a * m, dtype)
        by_expm1 = a * constants["expm1_ulp"] * ulp(m, dtype) + np.abs(a * m) * (2 * u + da)
        negative = g * np.maximum(by_exp, by_expm1) + np.abs(y) * (u + dg)
    first = np.where(x > 0, np.abs(y) * (u + dg), negative)
    b = max(constants["exp_ulp"], constants["expm1_ulp"])
    return (finish(first, y, dtype, 2 * b + 6),)


def numpy_selu(x, *, alpha, gamma):
    """The numpy backend: ``gamma * x`` for x > 0, else ``gamma * (alpha * np.expm1(x))``, in
    x's type."""
    a, g = in_dtype(alpha, x), in_dtype(gamma, x)
    return np.where(x > 0, g * x, g * (a * np.expm1(x)))


@op("onnx_selu", version=1, onnx=onnx_with_attrs, numpy=numpy_selu, error_bound=selu_bound)
def oracle_onnx_selu(x, *, alpha, gamma, dtypes=None):
    """ONNX Selu: 'y = gamma * (alpha * e^x - alpha) for x <= 0, y = gamma * x for x > 0'
    (alpha and gamma stored as float32): gamma * alpha * expm1(x) for x <= 0."""
    g, a = f32(gamma), f32(alpha)
    return (refined(lambda v: np.where(v > 0, g * v, g * a * np.expm1(np.minimum(v, 0))),
                    lambda v: type(v)(g) * (v if v > 0 else type(v)(a) * v.expm1()),
                    x, dtypes=dtypes),)


# ------------------------------------------------------------------ Gelu

def _gelu_erf_terms(x, dtype, u, constants):
    """First-order error of ``1 + erf(x / sqrt(2))`` (or ``erfc(-x / sqrt(2))``) in T: the
    argument off by 2u (a rounded constant and one operation), through erf's derivative;
    erf within ``erf_ulp`` and the addition rounded, or erfc within ``erfc_ulp``."""
    from scipy import special

    z = x / math.sqrt(2)
    arg = 2 / math.sqrt(math.pi) * np.exp(-z * z) * np.abs(z) * 2 * u
    total = special.erfc(-z)
    by_erf = constants["erf_ulp"] * ulp(special.erf(z), dtype) + half_ulp(total, dtype)
    return arg + np.maximum(by_erf, constants["erfc_ulp"] * ulp(total, dtype))


def _gelu_tanh_terms(x, dtype, u, constants):
    """First-order error of ``1 + tanh(w)``, ``w = sqrt(2/pi) (x + 0.044715 x**3)`` in T, as the
    function body computes it: x**3 by Pow (within ``pow_ulp``; two products are within it),
    0.044715 and 2/pi as float32 constants cast to T (their distance from the text's values
    counts: the float32 0.044715 is 3.5e-8 off, which a float64 result shows), the square root
    of 2/pi, the products and the sum one rounding each; the error of w through tanh's
    derivative ``1 - tanh(w)**2``; tanh within ``tanh_ulp`` and the addition rounded, or ``2
    sigmoid(2w)`` within ``logistic_ulp``."""
    dc1 = attr_error(2 / math.pi, dtype, exact=2 / math.pi) / (2 / math.pi) / 2 + u
    dc2 = attr_error(GELU_CUBIC, dtype, exact=GELU_CUBIC) / GELU_CUBIC
    with np.errstate(over="ignore", invalid="ignore"):
        cubic = GELU_CUBIC * np.abs(x) ** 3
        inner = x + GELU_CUBIC * x ** 3
        w = SQRT_2_OVER_PI * inner
        dw = SQRT_2_OVER_PI * (cubic * (2 * constants["pow_ulp"] * u + dc2 + u)
                               + np.abs(inner) * u) + np.abs(w) * (dc1 + u)
        tw = np.tanh(w)
        total = 2 * _expit(2 * w)
        by_tanh = constants["tanh_ulp"] * ulp(tw, dtype) + half_ulp(total, dtype)
        return _through(1 - tw * tw, dw) + np.maximum(by_tanh,
                                                      constants["logistic_ulp"] * ulp(total, dtype))


def gelu_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """Gelu: ``0.5 * x * (1 + f)`` with ``1 + f``'s error from :func:`_gelu_erf_terms` or
    :func:`_gelu_tanh_terms`, times 0.5|x|; the product and the scaling by 0.5 one rounding
    each."""
    (x,), (y,) = inputs, outputs
    dtype = dtypes[0]
    terms = _gelu_tanh_terms if attrs["approximate"] == "tanh" else _gelu_erf_terms
    with np.errstate(over="ignore", invalid="ignore"):
        first = 0.5 * np.abs(x) * terms(np.where(np.isfinite(x), x, 0.0), dtype, u, constants) \
            + 2 * half_ulp(y, dtype)
    b = max(constants[k] for k in ("erf_ulp", "erfc_ulp", "tanh_ulp", "logistic_ulp", "pow_ulp"))
    return (finish(first, y, dtype, 2 * b + 8),)


def _expit(v):
    from scipy import special

    return special.expit(v)


def _gelu_fast(approximate):
    from scipy import special

    if approximate == "tanh":
        return lambda v: 0.5 * v * 2 * special.expit(2 * SQRT_2_OVER_PI * (v + GELU_CUBIC * v ** 3))
    return lambda v: 0.5 * v * special.erfc(-v / math.sqrt(2))


def _gelu_exact(approximate):
    if approximate == "tanh":
        def tanh_form(v):
            c1, c2 = (2 / type(v).pi()).sqrt(), type(v)("0.044715")
            return v * (1 + (c1 * (v + c2 * v ** 3)).tanh()) / 2
        return tanh_form
    return lambda v: v * (-v / type(v)(2).sqrt()).erfc() / 2


def numpy_gelu(x, *, approximate):
    """The numpy backend: the tanh form in x's type, as the text writes it; NumPy has no erf
    (unsupported for ``approximate = 'none'``)."""
    if approximate != "tanh":
        raise unsupported("NumPy has no erf")
    c1, c2 = x.dtype.type(SQRT_2_OVER_PI), x.dtype.type(GELU_CUBIC)
    half, one = x.dtype.type(0.5), x.dtype.type(1)
    return half * x * (one + np.tanh(c1 * (x + c2 * x * x * x)))


@op("onnx_gelu", version=1, onnx=onnx_with_attrs, numpy=numpy_gelu, error_bound=gelu_bound)
def oracle_onnx_gelu(x, *, approximate, dtypes=None, open_elements=False):
    """ONNX Gelu: '0.5 * x * (1 + erf(x/sqrt(2)))', or with approximate = 'tanh'
    '0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))'; -0 at x = -inf (open)."""
    if open_elements:
        return (np.isneginf(x),)
    with np.errstate(over="ignore", invalid="ignore"):
        y = refined(_gelu_fast(approximate), _gelu_exact(approximate), x, dtypes=dtypes)
    return (_keep_residual(y, _limit_at_minus_inf(x, y)),)


def _keep_residual(refined_values, values):
    """``values`` carrying ``refined_values``' residual (if any)."""
    lo = getattr(refined_values, "residual", None)
    if lo is None:
        return values
    from conform.ops.multiprecision import with_residual

    return with_residual(values, lo)


# ------------------------------------------------------------------ Mish

def mish_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """Mish ``x * tanh(s)``, ``s = ln(1 + e**x)``: s as the text writes it (exp within
    ``exp_ulp``, the addition rounded, an error d in ``1 + e**x`` moving ln by ``d / (1 +
    e**x)``, ln within ``log_ulp``), or the function body's Softplus within ``softplus_ulp``;
    through tanh's derivative, tanh within ``tanh_ulp``, the product one rounding."""
    (x,), (y,) = inputs, outputs
    dtype = dtypes[0]
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.where(np.isfinite(x), x, 0.0)
        e, s = np.exp(v), np.logaddexp(v, 0)
        by_formula = (constants["exp_ulp"] * ulp(e, dtype) + half_ulp(1 + e, dtype)) / (1 + e) \
            + constants["log_ulp"] * ulp(s, dtype)
        ds = np.where(np.isfinite(by_formula), by_formula, 0.0)
        ds = np.maximum(ds, constants["softplus_ulp"] * ulp(s, dtype))
        ts = np.tanh(s)
        first = np.abs(v) * (_through(1 - ts * ts, ds) + constants["tanh_ulp"] * ulp(ts, dtype)) \
            + half_ulp(y, dtype)
    b = max(constants["exp_ulp"], constants["log_ulp"], constants["softplus_ulp"])
    return (finish(first, y, dtype, 2 * b + 2 * constants["tanh_ulp"] + 4),)


def numpy_mish(x):
    """The numpy backend: ``x * np.tanh(np.logaddexp(x, 0))`` in x's type."""
    return x * np.tanh(np.logaddexp(x, x.dtype.type(0)))


@op("onnx_mish", version=1, numpy=numpy_mish, error_bound=mish_bound)
def oracle_onnx_mish(x, *, dtypes=None, open_elements=False):
    """ONNX Mish: 'mish(x) = x * tanh(softplus(x)) = x * tanh(ln(1 + e^{x}))'; -0 at x = -inf
    (open)."""
    if open_elements:
        return (np.isneginf(x),)
    with np.errstate(over="ignore", invalid="ignore"):
        y = refined(lambda v: v * np.tanh(np.logaddexp(v, 0)),
                    lambda v: v if v > 60 else v * v.exp().log1p().tanh(), x, dtypes=dtypes)
    return (_keep_residual(y, _limit_at_minus_inf(x, y)),)


# ------------------------------------------------------------------ Swish and SwiGLU

def _swish_terms(x, alpha, dtype, u, constants):
    """``(swish, first-order error)`` of ``x * sigmoid(alpha_T x)`` in T before its last
    rounding: ``alpha_T x`` off by ``u + |alpha - alpha_T| / alpha`` relative, through the
    logistic's ``s (1 - s) |z|``; the Sigmoid op within ``logistic_ulp``, or ``x / (1 +
    e**-z)`` with exp within ``exp_ulp`` and the addition rounded (the quotient's rounding is
    the last)."""
    from scipy import special

    a = f32(alpha)
    dz = u + attr_error(alpha, dtype) / a
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.where(np.isfinite(x), x, 0.0)
        z = a * v
        s = special.expit(z)
        by_sigmoid = s * (1 - s) * np.abs(z) * dz + constants["logistic_ulp"] * ulp(s, dtype)
        en = np.exp(-z)
        d = 1 + en
        by_division = s * (constants["exp_ulp"] * ulp(en, dtype) + en * np.abs(z) * dz
                           + half_ulp(d, dtype)) / d
        # where e**-z overflows T the division gives -0 for a nonzero result: not admitted
        by_division = np.where(en <= FLOAT_FORMATS[dtype].max_finite, by_division, 0.0)
        return v * s, np.abs(v) * np.maximum(by_sigmoid, by_division)


def swish_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """Swish: :func:`_swish_terms` plus the product's rounding."""
    (x,), (y,) = inputs, outputs
    _, first = _swish_terms(x, attrs["alpha"], dtypes[0], u, constants)
    b = max(constants["exp_ulp"], constants["logistic_ulp"])
    return (finish(first + half_ulp(y, dtypes[0]), y, dtypes[0], 2 * b + 6),)


def numpy_swish(x, *, alpha):
    """The numpy backend: x * sigmoid(z), z = alpha * x, in x's type, the sigmoid as
    ``1 / (1 + np.exp(-z))`` for z >= 0 and ``np.exp(z) / (1 + np.exp(z))`` below (no
    overflow)."""
    one, z = x.dtype.type(1), in_dtype(alpha, x) * x
    e = np.exp(-np.abs(z))
    return x * np.where(z >= 0, one / (one + e), e / (one + e))


def _swish(x, alpha, dtypes):
    """x * sigmoid(alpha x), alpha stored as float32 (float64: Arb); -0 at x = -inf."""
    from scipy import special

    a = f32(alpha)
    with np.errstate(over="ignore", invalid="ignore"):
        y = refined(lambda v: v * special.expit(a * v),
                    lambda v: v / (1 + (-type(v)(a) * v).exp()), x, dtypes=dtypes)
    return _keep_residual(y, _limit_at_minus_inf(x, y))


@op("onnx_swish", version=1, onnx=onnx_with_attrs, numpy=numpy_swish, error_bound=swish_bound)
def oracle_onnx_swish(x, *, alpha, dtypes=None, open_elements=False):
    """ONNX Swish-24: 'Swish(x) = x * sigmoid(alpha * x)'; -0 at x = -inf (open)."""
    if open_elements:
        return (np.isneginf(x),)
    return (_swish(x, alpha, dtypes),)


def swiglu_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """SwiGLU ``Swish(A) * B``: Swish's error (:func:`_swish_terms`, its product rounded) times
    |B|, and the last product's rounding."""
    (a, b), (y,) = inputs, outputs
    dtype = dtypes[0]
    swish, first = _swish_terms(a, attrs["alpha"], dtype, u, constants)
    with np.errstate(invalid="ignore"):
        total = _through(np.abs(b), first + half_ulp(swish, dtype)) + half_ulp(y, dtype)
    k = max(constants["exp_ulp"], constants["logistic_ulp"])
    bound = finish(total, y, dtype, 2 * k + 8)
    # Swish(A) may round to a zero in T that an infinite B makes NaN: no value to judge
    lost = np.isinf(b) & (np.abs(swish) < FLOAT_FORMATS[dtype].min_subnormal) & (swish != 0)
    return (np.where(lost, np.nan, bound),)


def numpy_swiglu(a, b, *, alpha):
    """The numpy backend: Swish(A) * B in A's type."""
    return numpy_swish(a, alpha=alpha) * b


@op("onnx_swiglu", version=1, onnx=onnx_with_attrs, numpy=numpy_swiglu, error_bound=swiglu_bound)
def oracle_onnx_swiglu(a, b, *, alpha, dtypes=None, open_elements=False):
    """ONNX SwiGLU-28: 'Y = Swish_alpha(A) * B', A and B of one shape; open where A = -inf
    (Swish's -inf * 0)."""
    if open_elements:
        return (np.isneginf(a) & np.ones(np.shape(b), bool),)
    from scipy import special

    f = f32(alpha)
    with np.errstate(over="ignore", invalid="ignore"):
        y = refined(lambda g, v: g * special.expit(f * g) * v,
                    lambda g, v: g / (1 + (-type(g)(f) * g).exp()) * v, a, b, dtypes=dtypes)
        return (_keep_residual(y, np.where(np.isneginf(a), -0.0 * b, y)),)
