"""Activation functions (NNEF 1.0 §4 activation fragments; ONNX Relu, Softplus, Elu, LeakyRelu):
float64 in, float64 out.

The NNEF fragments spell each function as a formula over exp, log and select; the oracles compute
the mathematical function those formulas denote, evaluated so that float64 keeps it accurate
(``log(exp(x) + 1)`` overflows at x = 710 although its value is about x; ``exp(x) - 1`` cancels
near 0): the formulas define values, not an evaluation order.
"""
from __future__ import annotations

import math

import numpy as np

from conform.ops.multiprecision import refined, with_residual
from conform.op_registry import op
from conform.ops._midpoints import product_midpoints
from conform.ops._rounded import exact_multiply, rounded_elementwise


def numpy_relu(operand):
    """The numpy backend: ``np.maximum(x, 0)`` in x's type (NaN propagates)."""
    return np.maximum(operand, operand.dtype.type(0))


def numpy_softplus(operand):
    """The numpy backend: ``np.logaddexp(x, 0)`` = ln(e**x + e**0), in x's type."""
    return np.logaddexp(operand, operand.dtype.type(0))


def numpy_elu(operand, *, alpha=1.0):
    """The numpy backend: ``alpha * np.expm1(x)`` for x < 0, else x, in x's type."""
    return np.where(operand < 0, operand.dtype.type(alpha) * np.expm1(operand), operand)


def numpy_leaky_relu(operand, *, alpha):
    """The numpy backend: ``x * alpha`` for x < 0, else x, in x's type (alpha rounded to it)."""
    return np.where(operand < 0, operand * operand.dtype.type(alpha), operand)


@op("relu", version=1, numpy=numpy_relu)
def oracle_relu(operand):
    """max(x, 0): x for x > 0, else +0. NaN in, NaN out (unjudged: see spec/ops/relu.yaml).
    Integers (Relu-14's int8 to int64) exactly, in their own type."""
    if operand.dtype.kind in "iu":
        return (np.maximum(operand, 0),)
    return (np.where(operand > 0, operand, np.where(np.isnan(operand), operand, 0.0)),)


@op("softplus", version=1, numpy=numpy_softplus)
def oracle_softplus(operand, *, dtypes=None):
    """ln(1 + e**x) = max(x, 0) + ln(1 + e**-|x|) (float64: Arb, to ~2**-106): softplus(-inf)
    = +0, softplus(+inf) = +inf, softplus(0) = ln 2."""
    return (refined(_softplus, lambda x: (x if x > 0 else 0 * x) + (-abs(x)).exp().log1p(),
                    operand, dtypes=dtypes),)


def _softplus(x):
    """max(x, 0) + ln(1 + e**-|x|) in float64 (NaN stays NaN)."""
    return np.where(np.isnan(x), x, np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))))


def from_onnx_elu(inputs, attrs, opset):
    """An ONNX Elu node as a case: its alpha where it is not the default 1 (the spec draws
    alpha = 1). Only a power of two is taken: it scales expm1 exactly, so the spec's bound on
    expm1 holds for ``alpha * (exp(x) - 1)``; another alpha adds a rounding it does not cover.
    Nor is -inf taken with another alpha: the spec's special-value row elu(-inf) = -1 is
    alpha 1's."""
    alpha = float(attrs.get("alpha", 1.0))
    if alpha <= 0 or math.frexp(alpha)[0] != 0.5:
        raise ValueError(f"alpha={alpha!r}: the spec's bound covers a power of two (an exact "
                         f"scaling of expm1), not another rounding")
    if alpha != 1.0 and np.isneginf(np.asarray(inputs[0], np.float64)).any():
        raise ValueError("-inf with alpha != 1: the spec's row elu(-inf) = -1 is alpha 1's")
    return inputs[:1], ({} if alpha == 1.0 else {"alpha": alpha})


@op("elu", version=1, numpy=numpy_elu, from_onnx=from_onnx_elu)
def oracle_elu(operand, *, alpha=1.0, dtypes=None):
    """alpha * (e**x - 1) for x < 0, else x; the spec draws alpha = 1 (the default of NNEF
    and ONNX), an ONNX node may give another (:func:`from_onnx_elu`): expm1 for x < 0
    (elu(-inf) = -alpha; float64: Arb, to ~2**-106); -0 and NaN pass through."""
    negative = refined(np.expm1, lambda x: x.expm1(), np.minimum(operand, 0), dtypes=dtypes)
    lo = getattr(negative, "residual", None)
    out = np.where(operand < 0, alpha * negative, operand)
    return (out if lo is None else with_residual(out, np.where(operand < 0, alpha * lo, 0.0)),)


def _onnx_leaky_relu(case, graph):
    graph.node(graph.op_type, graph.inputs, alpha=float(case.attrs["alpha"]))


def _nnef_leaky_relu(case, call):
    return call(["in0"], {"alpha": float(case.attrs["alpha"])})


def rounded_leaky_relu(operand, *, alpha):
    """alpha * x for x < 0, else x, correctly rounded into float64 (exact integer arithmetic)."""
    product = rounded_elementwise(exact_multiply, alpha, operand)
    return (np.where(operand < 0, product, operand),)


def leaky_relu_midpoints(rng, spec, dtype):
    """Negative operands whose product with the spec's alpha is a rounding midpoint (and
    operands one ULP beside them)."""
    made = product_midpoints(rng, dtype, factor=spec.signature["attrs"]["alpha"])
    return None if made is None else ([-np.abs(made[0])], {}, dtype)


@op("leaky_relu", version=1, onnx=_onnx_leaky_relu, nnef=_nnef_leaky_relu,
    numpy=numpy_leaky_relu, rounded64=rounded_leaky_relu, midpoints=leaky_relu_midpoints)
def oracle_leaky_relu(operand, *, alpha):
    """alpha * x for x < 0, else x (NNEF leaky_relu = prelu with a scalar alpha; ONNX LeakyRelu):
    -0 and NaN pass through."""
    return (np.where(operand < 0, alpha * operand, operand),)
