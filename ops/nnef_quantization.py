"""NNEF's quantization fragments (NNEF 1.0 standard library, the compound fragments as the
``nnef`` package ships them in ``stdlib_source.h``):

    min_max_linear_quantize( x, min, max, bits, signed, symmetric )
    { r = scalar(2 ^ bits - 1 - integer(signed && symmetric)); z = clamp(x, min, max);
      p = scalar(2 ^ (bits - 1) - integer(symmetric) if signed else 0);
      q = round((z - min) / (max - min) * r) - p; y = (q + p) / r * (max - min) + min; }
    zero_point_linear_quantize( x, zero_point: tensor<integer>, scale, bits, signed, symmetric )
    { z = cast<scalar>(zero_point); s = round(x / scale) + z;
      r = scalar(2 ^ (bits - 1) - 1 if signed else 2 ^ bits - 1);
      q = clamp(s, 0.0 if !signed else -r if symmetric else -r - 1.0, r); y = (q - z) * scale; }
    linear_quantize( x, min, max, bits )
    { y = min_max_linear_quantize(x, min, max, bits, signed = false, symmetric = false); }
    logarithmic_quantize( x, max, bits )
    { m = ceil(log2(max)); r = scalar(2 ^ bits - 1);
      q = round(clamp(log2(abs(x)), m - r, m)); y = sign(x) * 2.0 ^ q; }

The parameters (min, max, scale, zero_point) broadcast to x with leading dimensions aligned.
The oracles compute these in float64; what a fragment leaves to the evaluation is marked open
(``open_elements``, the region ``oracle_marked``): a round whose argument lies within its own
evaluation error in the output type of a half-integer (where the level chosen depends on the
rounding of that argument, and at an exact half on round's ties, which the texts at hand do not
fix), and a NaN x (clamp is min and max, defined on the reals).
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op
from conform.ops.nnef_activation import leading_broadcast_shape
from conform.ops.indexing import index_type
from conform.ops.nnef_elementwise import _aligned
from conform.ops.onnx_softmax import grown


def _u(dtypes) -> float:
    return FLOAT_FORMATS[dtypes[0] if dtypes else "float32"].unit_roundoff


def _near_half(a, error):
    """Where ``a`` is within ``error`` of a half-integer (k + 1/2)."""
    with np.errstate(invalid="ignore"):
        return np.abs(a - np.floor(a) - 0.5) <= error


def _clamp(x, low, high):
    """The standard library's ``clamp(x, a, b)``: ``y = max(min(x, b), a)`` (so ``a`` where
    ``a > b``, as a generated graph may feed min and max)."""
    return np.maximum(np.minimum(x, high), low)


# ------------------------------------------------------------------ drawing

def draw_parameters(draw, kit, spec, dtype):
    """x of rank 1 to 4 (empty too) and each parameter broadcasting to it with leading
    dimensions aligned (zero_point: one of the spec's integer types, the consumer's integer
    width); the spec's attributes."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=6,
                           min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    params = [leading_broadcast_shape(draw, kit, shape) for _ in spec.inputs[1:]]
    types = tuple(index_type(draw, kit, spec, name) if name == "zero_point" else dtype
                  for name in spec.inputs[1:])
    attrs = kit.attributes(draw, spec, {spec.inputs[0]: len(shape)})
    return kit.Signature((dtype,) + types, (shape, *params), attrs, dtype)


def min_max_values(rng, inputs, attrs):
    """min in [-8, 0] and max in [1/4, 8]: max - min at least 1/4 wherever they meet."""
    x, low, high = inputs
    return [x, (-8 * rng.random(low.shape)).astype(low.dtype),
            (0.25 + 7.75 * rng.random(high.shape)).astype(high.dtype)]


def _levels(attrs):
    """(r, lowest, highest) of the zero-point fragment's clamp."""
    bits, signed = attrs["bits"], attrs["signed"]
    r = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
    low = 0 if not signed else -r if attrs["symmetric"] else -r - 1
    return r, low, r


def zero_point_values(rng, inputs, attrs):
    """scale in [1/16, 4]; zero_point an integer of the clamp's range."""
    x, zero_point, scale = inputs
    r, low, high = _levels(attrs)
    zero = rng.integers(low, high + 1, zero_point.shape).astype(zero_point.dtype)
    return [x, zero, (0.0625 + 4 * rng.random(scale.shape)).astype(scale.dtype)]


def log_values(rng, inputs, attrs):
    """max in [1/2, 64]."""
    x, top = inputs
    return [x, (0.5 + 64 * rng.random(top.shape)).astype(top.dtype)]


def _nnef_quantize(case, call):
    names = [f"in{i}" for i in range(len(case.inputs))]
    return call(names, {k: case.attrs[k] for k in ("bits", "signed", "symmetric")
                        if k in case.attrs})


def _hooks(values):
    return dict(draw=draw_parameters, draw_honours=frozenset({"attrs"}), values=values,
                nnef=_nnef_quantize, feeding=_feed_aligned)


def _feed_aligned(inputs, attrs, index):
    """x[index] and the parameters' elements it meets (leading dimensions aligned)."""
    return [p[tuple(i if n > 1 else 0 for i, n in zip(index, p.shape))].reshape(1)
            for p in inputs]


# ------------------------------------------------------------------ min/max linear

def _min_max(x, low, high, bits, signed, symmetric, dtypes, open_elements):
    x, low, high = _aligned(x, low, high)
    r = 2 ** bits - 1 - int(signed and symmetric)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        width = high - low
        a = (_clamp(x, low, high) - low) / width * r
        if open_elements:   # a from z - min, max - min, / and * r: four roundings
            return (_near_half(a, grown(4, _u(dtypes)) * np.abs(a)) | np.isnan(x),)
        return (np.round(a) / r * width + low,)


def min_max_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """y = k / r * (max - min) + min for the level k: k / r, max - min and their product one
    rounding each, the sum with min one more: ``gamma_3 |k / r (max - min)| + u |y|`` plus a
    smallest subnormal."""
    x, low, high = _aligned(*inputs)
    (y,) = outputs
    with np.errstate(invalid="ignore"):
        step = np.abs(y - low)
        eta = FLOAT_FORMATS[out_dtype].min_subnormal
        bound = grown(3, u) * step * (1 + u) + u * np.abs(y) + eta
    return (np.where(np.isfinite(y), bound, 0.0),)


def numpy_min_max(x, low, high, *, bits, signed, symmetric):
    """The numpy backend: the fragment in x's type (``np.round``: ties to even)."""
    x, low, high = _aligned(x, low, high)
    kind = x.dtype.type
    r = kind(2 ** bits - 1 - int(signed and symmetric))
    p = kind(2 ** (bits - 1) - int(symmetric) if signed else 0)
    q = np.round((_clamp(x, low, high) - low) / (high - low) * r) - p
    return (q + p) / r * (high - low) + low


def numpy_linear(x, low, high, *, bits):
    """The numpy backend: :func:`numpy_min_max` unsigned, asymmetric."""
    return numpy_min_max(x, low, high, bits=bits, signed=False, symmetric=False)


@op("nnef_min_max_linear_quantize", version=1, numpy=numpy_min_max, error_bound=min_max_bound,
    **_hooks(min_max_values))
def oracle_nnef_min_max_linear_quantize(x, low, high, *, bits, signed, symmetric, dtypes=(),
                                        open_elements=False):
    """min + round((clamp(x, min, max) - min) / (max - min) * r) / r * (max - min), r = 2**bits
    - 1 (one less if signed and symmetric); the offset p cancels."""
    return _min_max(x, low, high, bits, signed, symmetric, dtypes, open_elements)


@op("nnef_linear_quantize", version=1, numpy=numpy_linear, error_bound=min_max_bound,
    **_hooks(min_max_values))
def oracle_nnef_linear_quantize(x, low, high, *, bits, dtypes=(), open_elements=False):
    """min_max_linear_quantize(signed = false, symmetric = false)."""
    return _min_max(x, low, high, bits, False, False, dtypes, open_elements)


# ------------------------------------------------------------------ zero point

def zero_point_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """y = (q - z) * scale, q - z an exact integer: one rounding, ``u |y|`` plus a smallest
    subnormal."""
    (y,) = outputs
    bound = u * np.abs(y) + FLOAT_FORMATS[out_dtype].min_subnormal
    return (np.where(np.isfinite(y), bound, 0.0),)


def numpy_zero_point(x, zero_point, scale, *, bits, signed, symmetric):
    """The numpy backend: the fragment in x's type (``np.round``: ties to even)."""
    x, zero_point, scale = _aligned(x, zero_point, scale)
    r, low, high = _levels({"bits": bits, "signed": signed, "symmetric": symmetric})
    z = zero_point.astype(x.dtype)
    q = _clamp(np.round(x / scale) + z, x.dtype.type(low), x.dtype.type(high))
    return (q - z) * scale


@op("nnef_zero_point_linear_quantize", version=1, numpy=numpy_zero_point,
    error_bound=zero_point_bound, **_hooks(zero_point_values))
def oracle_nnef_zero_point_linear_quantize(x, zero_point, scale, *, bits, signed, symmetric,
                                           dtypes=(), open_elements=False):
    """(clamp(round(x / scale) + zero_point, low, r) - zero_point) * scale."""
    x, zero_point, scale = _aligned(x, zero_point, scale)
    r, low, high = _levels({"bits": bits, "signed": signed, "symmetric": symmetric})
    with np.errstate(invalid="ignore", over="ignore"):
        a = x / scale
        if open_elements:   # x / scale: one rounding; past the clamp's range no level moves
            inside = (a + zero_point > low - 1) & (a + zero_point < high + 1)
            return ((_near_half(a, _u(dtypes) * np.abs(a)) & inside) | np.isnan(x),)
        return ((_clamp(np.round(a) + zero_point, low, high) - zero_point) * scale,)


# ------------------------------------------------------------------ logarithmic

def numpy_logarithmic(x, top, *, bits):
    """The numpy backend: the fragment in x's type (``np.round``: ties to even)."""
    x, top = _aligned(x, top)
    m = np.ceil(np.log2(top))
    r = x.dtype.type(2 ** bits - 1)
    with np.errstate(divide="ignore"):
        q = np.round(_clamp(np.log2(np.abs(x)), m - r, m))
    return np.sign(x) * np.power(x.dtype.type(2), q)


@op("nnef_logarithmic_quantize", version=1, numpy=numpy_logarithmic,
    **_hooks(log_values))
def oracle_nnef_logarithmic_quantize(x, top, *, bits, dtypes=(), open_elements=False):
    """sign(x) * 2 ** round(clamp(log2|x|, m - r, m)), m = ceil(log2(max)), r = 2**bits - 1."""
    x, top = _aligned(x, top)
    r = 2 ** bits - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        log_top, log_x = np.log2(top), np.log2(np.abs(x))
        m = np.ceil(log_top)
        clamped = _clamp(log_x, m - r, m)
        if open_elements:   # log2 within 3 ULP (OpenCL C 3.0 §7.4): 6u relative, 2u for slack
            slack = 8 * _u(dtypes)
            near_integer = np.abs(log_top - np.round(log_top)) <= slack * np.abs(log_top)
            return (_near_half(clamped, slack * np.abs(clamped)) | near_integer
                    | np.isnan(x),)
        return (np.sign(x) * np.exp2(np.round(clamped)),)
