"""ONNX's piecewise and rational activations (ai.onnx): HardSigmoid (opsets 6, 22), HardSwish
(14, 22), PRelu (7, 9, 16), Shrink (9), Softsign (1, 22) and ThresholdedRelu (10, 22), each
from its operator text (``onnx.defs.get_schema(op, opset).doc``) and function body.

PRelu (one multiplication) and Shrink (one addition) are correctly rounded; ThresholdedRelu
selects; HardSigmoid, HardSwish and Softsign are judged under derived bounds
(``conform.ops._activation_bounds``): their float attributes or constants are rounded into T by
the function bodies' ``CastLike``, and each of their operations rounds once. Float attributes
are read as the node stores them (float32).
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS, is_integer, np_dtype
from conform.op_registry import op
from conform.ops._activation_bounds import (attr_error, f32, finish, half_ulp, in_dtype,
                                            in_type, onnx_with_attrs)
from conform.ops._midpoints import negative_product_midpoints
from conform.ops._rounded import exact_add, exact_multiply, exact_subtract, rounded_elementwise

SIXTH = 1 / 6   # HardSwish's alpha as the text states it ('alpha = 1/6')


def _finite(x):
    return np.where(np.isfinite(x), x, 0.0)


# ------------------------------------------------------------------ HardSigmoid, HardSwish

def _hard_sigmoid_error(x, alpha, beta, dtype, exact_alpha=None):
    """First-order error of ``max(0, min(1, alpha_T * x + beta_T))`` in T (alpha and beta
    rounded into T, the product and the sum one rounding each): the clamp to [0, 1] does not
    grow it, and removes it where the computed value cannot reach [0, 1]."""
    v = _finite(x)
    a_t = in_type(alpha, dtype)
    exact = (f32(alpha) if exact_alpha is None else exact_alpha) * v + f32(beta)
    with np.errstate(over="ignore", invalid="ignore"):
        error = (np.abs(v) * attr_error(alpha, dtype, exact_alpha) + attr_error(beta, dtype)
                 + half_ulp(a_t * v, dtype) + half_ulp(exact, dtype))
        clamped = (exact - error > 1) | (exact + error < 0)
    return np.where(clamped, 0.0, error)


def hard_sigmoid_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """HardSigmoid: :func:`_hard_sigmoid_error`."""
    (x,), (y,) = inputs, outputs
    first = _hard_sigmoid_error(x, attrs["alpha"], attrs["beta"], dtypes[0])
    return (finish(first, y, dtypes[0], 4),)


def numpy_hard_sigmoid(x, *, alpha, beta):
    """The numpy backend: ``max(0, min(1, alpha * x + beta))`` in x's type."""
    one, zero = x.dtype.type(1), x.dtype.type(0)
    return np.maximum(zero, np.minimum(one, in_dtype(alpha, x) * x + in_dtype(beta, x)))


@op("onnx_hard_sigmoid", version=1, onnx=onnx_with_attrs, numpy=numpy_hard_sigmoid,
    error_bound=hard_sigmoid_bound)
def oracle_onnx_hard_sigmoid(x, *, alpha, beta):
    """ONNX HardSigmoid: 'y = max(0, min(1, alpha * x + beta))', alpha and beta as stored
    (float32)."""
    with np.errstate(invalid="ignore"):
        return (np.clip(f32(alpha) * x + f32(beta), 0.0, 1.0),)


def hard_swish_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """HardSwish ``x * HardSigmoid<1/6, 1/2>(x)``: the function body's HardSigmoid (alpha the
    float32 0.16666667, rounded into T) off by :func:`_hard_sigmoid_error` from the text's
    alpha = 1/6, or ``relu6(x + 3) / 6`` (x + 3 rounded), times |x|; the product (and the
    division by 6) one rounding each."""
    (x,), (y,) = inputs, outputs
    dtype = dtypes[0]
    v = _finite(x)
    sigmoid = _hard_sigmoid_error(v, SIXTH, 0.5, dtype, exact_alpha=SIXTH)
    shifted = half_ulp(v + 3, dtype) / 6
    shifted = np.where((v > 3) | (v < -3), 0.0, shifted)   # relu6(x + 3) saturates exactly
    # the product x * relu6(x + 3) rounds within half an ULP of 6y <= 8 half ULPs of y, then / 6
    first = np.abs(v) * np.maximum(sigmoid, shifted) + (4 / 3 + 2) * half_ulp(y, dtype)
    return (finish(first, y, dtype, 6),)


def numpy_hard_swish(x):
    """The numpy backend: ``x * max(0, min(1, x / 6 + 0.5))`` in x's type."""
    t = x.dtype.type
    return x * np.maximum(t(0), np.minimum(t(1), x / t(6) + t(0.5)))


@op("onnx_hard_swish", version=1, numpy=numpy_hard_swish, error_bound=hard_swish_bound)
def oracle_onnx_hard_swish(x, *, open_elements=False):
    """ONNX HardSwish: 'y = x * max(0, min(1, alpha * x + beta))' with 'alpha = 1/6 and beta
    = 0.5'; x for x >= 3, -0 (x times +0) for x <= -3 and at -inf, where the formula is
    -inf * 0 (open)."""
    if open_elements:
        return (np.isneginf(x),)
    with np.errstate(invalid="ignore"):
        y = x * np.clip(x / 6 + 0.5, 0.0, 1.0)
    return (np.where(np.isneginf(x), -0.0, y),)


# ------------------------------------------------------------------ Softsign

def softsign_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """Softsign ``x / (1 + |x|)``: the sum one rounding (its relative error passes to the
    quotient), then the division one rounding, or a multiplication by the rounded reciprocal
    (which the text does not exclude: its rounding, absolute, is subnormal for |x| near the
    largest finite value)."""
    (x,), (y,) = inputs, outputs
    dtype = dtypes[0]
    v = _finite(x)
    denominator = 1 + np.abs(v)
    reciprocal = np.abs(v) * half_ulp(1 / denominator, dtype)
    first = np.abs(y) * half_ulp(denominator, dtype) / denominator + reciprocal \
        + half_ulp(y, dtype)
    return (finish(first, y, dtype, 3),)


def numpy_softsign(x):
    """The numpy backend: ``x / (1 + np.abs(x))`` in x's type."""
    return x / (x.dtype.type(1) + np.abs(x))


@op("onnx_softsign", version=1, numpy=numpy_softsign, error_bound=softsign_bound)
def oracle_onnx_softsign(x, *, open_elements=False):
    """ONNX Softsign: 'x/(1+|x|)'; +-1 at +-inf, where the formula is inf / inf (open)."""
    if open_elements:
        return (np.isinf(x),)
    with np.errstate(invalid="ignore"):
        return (np.where(np.isinf(x), np.sign(x), x / (1 + np.abs(x))),)


# ------------------------------------------------------------------ ThresholdedRelu

def numpy_thresholded_relu(x, *, alpha):
    """The numpy backend: ``np.where(x > alpha, x, 0)`` in x's type."""
    return np.where(x > in_dtype(alpha, x), x, x.dtype.type(0))


@op("onnx_thresholded_relu", version=1, onnx=onnx_with_attrs, numpy=numpy_thresholded_relu)
def oracle_onnx_thresholded_relu(x, *, alpha):
    """ONNX ThresholdedRelu: 'y = x for x > alpha, y = 0 otherwise' (NaN > alpha is false: 0)."""
    return (np.where(x > f32(alpha), x, 0.0),)


# ------------------------------------------------------------------ PRelu

def full_shape(draw, kit) -> tuple:
    """A shape of rank 0 to 4 (empty ones too) that the inputs broadcast to."""
    return draw(kit.shape(min_rank=0, max_rank=4, min_side=draw(kit.st.sampled_from((1, 1, 1, 0)))))


def broadcastable_to(draw, kit, shape: tuple) -> tuple:
    """A shape unidirectionally broadcastable to ``shape`` (ONNX Broadcasting.md: some leading
    dimensions dropped, some of the rest set to 1)."""
    kept = shape[draw(kit.st.integers(0, len(shape))):]
    return tuple(1 if draw(kit.st.integers(0, 3)) == 0 else side for side in kept)


def draw_prelu(draw, kit, spec, dtype):
    """X of any shape, and a slope unidirectionally broadcastable to it."""
    shape = full_shape(draw, kit)
    return kit.Signature((dtype, dtype), (shape, broadcastable_to(draw, kit, shape)), {}, dtype)


def rounded_prelu(x, slope):
    """slope * x for x < 0, else x, correctly rounded into float64 (exact integer arithmetic)."""
    product = rounded_elementwise(exact_multiply, slope, x)
    return (np.where(x < 0, product, x),)


def numpy_prelu(x, slope):
    """The numpy backend: ``np.where(x < 0, slope * x, x)`` in x's type."""
    return np.where(x < 0, slope * x, x)


@op("onnx_prelu", version=1, draw=draw_prelu, draw_honours=frozenset({"shapes"}),
    rounded64=rounded_prelu, midpoints=negative_product_midpoints, numpy=numpy_prelu)
def oracle_onnx_prelu(x, slope):
    """ONNX PRelu: 'f(x) = slope * x for x < 0, f(x) = x for x >= 0', slope unidirectionally
    broadcast to X (-0 and NaN pass through)."""
    return (np.where(x < 0, slope * x, x),)


# ------------------------------------------------------------------ Shrink

def _open_bias(x, lambd, bias, dtypes):
    """Where Shrink's text gives an integer T no value: a bias that is not an integer added to
    (or taken from) an integer element."""
    if not (dtypes and is_integer(dtypes[0])) or float(bias) == int(bias):
        return np.zeros(np.shape(x), bool)
    return (x < -f32(lambd)) | (x > f32(lambd))


def rounded_shrink(x, *, lambd, bias):
    """Shrink's float64 result correctly rounded (exact integer arithmetic)."""
    b, lam = f32(bias), f32(lambd)
    added = rounded_elementwise(exact_add, x, b)
    taken = rounded_elementwise(exact_subtract, x, b)
    return (np.where(x < -lam, added, np.where(x > lam, taken, 0.0)),)


def numpy_shrink(x, *, lambd, bias):
    """The numpy backend: ``x + bias`` below -lambd, ``x - bias`` above lambd, else 0, in x's
    type (bias converted to it)."""
    lam, b = f32(lambd), x.dtype.type(f32(bias))
    return np.where(x < -lam, x + b, np.where(x > lam, x - b, x.dtype.type(0)))


def shrink_midpoints(rng, spec, dtype):
    """Shrink with lambd 0.5 and bias 1.5 on x of both signs: half of them integers in
    ``[2**(p-1), 2**p)``, whose spacing is 1, so that ``x +- 1.5`` is a rounding midpoint (odd
    and even neighbours alike), half in the binade below (spacing 1/2: exact results)."""
    if dtype not in FLOAT_FORMATS:
        return None
    p = FLOAT_FORMATS[dtype].precision
    steps = rng.integers(0, 2 ** (p - 1), 64).astype(np.float64)
    x = np.concatenate([2.0 ** (p - 1) + steps[:32], 2.0 ** (p - 2) + steps[32:] / 2])
    x *= rng.choice([-1.0, 1.0], x.size)
    return [x.astype(np_dtype(dtype))], {"lambd": 0.5, "bias": 1.5}, dtype


@op("onnx_shrink", version=1, onnx=onnx_with_attrs, numpy=numpy_shrink, rounded64=rounded_shrink,
    midpoints=shrink_midpoints)
def oracle_onnx_shrink(x, *, lambd, bias, dtypes=None, open_elements=False):
    """ONNX Shrink: 'If x < -lambd, y = x + bias; If x > lambd, y = x - bias; Otherwise, y =
    0' (NaN: 0); integers in exact integer arithmetic, open where bias is not an integer."""
    if open_elements:
        return (_open_bias(x, lambd, bias, dtypes),)
    lam, b = f32(lambd), f32(bias)
    if x.dtype.kind in "iu":
        b = int(b)
        return (np.where(x < -lam, x + b, np.where(x > lam, x - b, 0)).astype(x.dtype),)
    return (np.where(x < -lam, x + b, np.where(x > lam, x - b, 0.0)),)
