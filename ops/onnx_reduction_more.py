"""ONNX ReduceL1, ReduceSumSquare and ReduceLogSum (opset 18+: the axes an optional input, with
``noop_with_empty_axes``), and CumProd (opset 26), judged by ONNX's semantics. They share the
axes, keepdims and feeding rules of ops/onnx_reduction.py; sums of floats are computed with
error-free transformations (ops/_exact.py) so that float64 targets keep a sound reference, and
integer sums and products exactly (uint64 read back as uint64, wrapping modulo 2**64 where the
text leaves overflow open: a region)."""
from __future__ import annotations

import math

import numpy as np
from conform.ops._exact import compensated_product, compensated_sum, two_product
from conform.ops.onnx_reduction import (
    _HOOKS18,
    _case_axes,
    _numpy_reduced,
    _reduce_by,
    _reduced,
    _unsigned64,
    cumulative_sum,
    feed_cum_sum,
    integer_or_open,
)

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op


def _sum(data, dims):
    """The exact sum over ``dims``: integer arithmetic for integers, else compensated (the
    correctly rounded float64 value)."""
    if data.dtype.kind in "iu":
        return np.sum(data, axis=tuple(dims), dtype=data.dtype)
    return compensated_sum(data, dims)


def _sum_of_squares(data, dims):
    if data.dtype.kind in "iu":
        return np.sum(data * data, axis=tuple(dims), dtype=data.dtype)
    squares, errors = two_product(data, data)   # x**2 = squares + errors exactly
    return compensated_sum(squares, dims) + compensated_sum(errors, dims)


def _widened_unsigned(data, dtypes):
    """uint64 data read back as uint64 (only where the oracle got it as int64)."""
    return _unsigned64(data, dtypes) if data.dtype == np.int64 else data


# -- ReduceL1 and ReduceSumSquare ---------------------------------------------------------------

def numpy_onnx_reduce_l1(data, *, axes, keepdims, noop_with_empty_axes):
    """The numpy backend: ``np.sum(np.abs(x))`` in data's type."""
    return _numpy_reduced(np.sum, np.abs(data), axes, keepdims, noop_with_empty_axes,
                          dtype=data.dtype)


@op("onnx_reduce_l1", version=1, numpy=numpy_onnx_reduce_l1, **_HOOKS18)
def oracle_onnx_reduce_l1(data, *, axes, keepdims, noop_with_empty_axes, dtypes=()):
    """ReduceL1-18: the L1 norm sum(|x|) over ``axes`` (0 over an empty set of values; |x|
    where no axis is reduced: 'composite-reduction operators will still perform the
    non-reduction steps')."""
    data = _widened_unsigned(data, dtypes)
    magnitudes = data if data.dtype == np.uint64 else np.abs(data)
    return _reduced(_reduce_by(_sum), magnitudes, axes, keepdims, noop_with_empty_axes)


def numpy_onnx_reduce_sum_square(data, *, axes, keepdims, noop_with_empty_axes):
    """The numpy backend: ``np.sum(np.square(x))`` in data's type."""
    return _numpy_reduced(np.sum, np.square(data), axes, keepdims, noop_with_empty_axes,
                          dtype=data.dtype)


@op("onnx_reduce_sum_square", version=1, numpy=numpy_onnx_reduce_sum_square, **_HOOKS18)
def oracle_onnx_reduce_sum_square(data, *, axes, keepdims, noop_with_empty_axes, dtypes=()):
    """ReduceSumSquare-18: sum(x**2) over ``axes`` (0 over an empty set of values; x**2 where
    no axis is reduced)."""
    data = _widened_unsigned(data, dtypes)
    return _reduced(_reduce_by(_sum_of_squares), data, axes, keepdims, noop_with_empty_axes)


# -- ReduceLogSum ---------------------------------------------------------------------------------

def _log_sum(data, dims):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(compensated_sum(data, dims))


def _sign_open(data, dims, dtype: str):
    """Where the sum's rounding in ``dtype`` (any order: gamma_(n-1) sum|x|, Higham 2002 §4.2)
    can reach the sum itself: its sign, so whether log has a value, depends on the order."""
    n = max(math.prod(data.shape[d] for d in dims), 1)
    nu = (n - 1) * FLOAT_FORMATS[dtype].unit_roundoff
    gamma = nu / (1 - nu) if nu < 1 else math.inf
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.where(np.isfinite(data), data, 0.0)
        total = compensated_sum(finite, dims)
        spread = gamma * compensated_sum(np.abs(finite), dims)
        return (spread > 0) & (spread >= np.abs(total)) & np.all(np.isfinite(data), axis=tuple(dims))


def log_sum_magnitude(inputs, attrs):
    """S for ReduceLogSum's accumulation model (the derivation is the spec's ``why``):
    ``2 (n - 1) / n * sum|x| / |sum x|`` per result, n the number of reduced elements."""
    (data,) = inputs
    dims = _case_axes(data.ndim, attrs)
    n = max(math.prod(data.shape[d] for d in dims), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        finite = np.where(np.isfinite(data), data, 0.0)
        ratio = compensated_sum(np.abs(finite), dims) / np.abs(compensated_sum(finite, dims))
    ratio = np.where(np.isnan(ratio), 0.0, ratio)   # an all-zero slice: log is -inf, exact
    shaped = np.expand_dims(ratio, tuple(dims)) if attrs["keepdims"] else ratio
    return (2 * (n - 1) / n * shaped,)


def numpy_onnx_reduce_log_sum(data, *, axes, keepdims, noop_with_empty_axes):
    """The numpy backend: ``np.log(np.sum(x))`` in data's type."""
    return np.log(_numpy_reduced(np.sum, data, axes, keepdims, noop_with_empty_axes,
                                 dtype=data.dtype))


@op("onnx_reduce_log_sum", version=1, numpy=numpy_onnx_reduce_log_sum,
    accumulation_magnitude=log_sum_magnitude, **_HOOKS18)
def oracle_onnx_reduce_log_sum(data, *, axes, keepdims, noop_with_empty_axes, dtypes=(),
                               open_elements=False):
    """ReduceLogSum-18: log(sum(x)) over ``axes`` (-inf over an empty set of values: log 0;
    log(x) where no axis is reduced; NaN where the sum is negative). With ``open_elements``:
    the results whose sign the order of the sum decides (see :func:`_sign_open`). An integer
    type: log 1 = 0 alone (see :func:`conform.ops.onnx_reduction.integer_or_open`)."""
    found = integer_or_open("log_sum", data, axes, keepdims, noop_with_empty_axes, dtypes,
                            open_elements) if dtypes and dtypes[0].startswith(("int", "uint")) else None
    if found is not None:
        return found
    if open_elements:
        mask = _reduce_by(lambda x, dims: _sign_open(x, dims, dtypes[0]))
        return _reduced(mask, data, axes, keepdims, noop_with_empty_axes)
    return _reduced(_reduce_by(_log_sum), data, axes, keepdims, noop_with_empty_axes)


# -- CumProd (opset 26) -------------------------------------------------------------------------

def _cumprod(x, axis):
    """Inclusive prefix products along ``axis``: exact for integers (wrapping), each prefix
    the correctly rounded float64 product for floats."""
    if x.dtype.kind in "iu":
        return np.cumprod(x, axis=axis, dtype=x.dtype)
    size = x.shape[axis]
    moved = np.moveaxis(x, axis, -1)
    prefixes = [compensated_product(moved[..., :k + 1], [moved.ndim - 1]) for k in range(size)]
    out = np.stack(prefixes, axis=-1) if prefixes else moved.astype(np.float64)
    return np.moveaxis(out, -1, axis)


def cum_prod_magnitude(inputs, attrs):
    """S for CumProd's accumulation model: each prefix product's magnitude scaled by its
    count of multiplications k - 1 over the axis' size N (gamma_(k-1) <= ((k - 1)/N) gamma_N)."""
    (x,) = inputs
    axis = attrs["axis"] % x.ndim
    size = x.shape[axis]
    counts = np.arange(size) + (0 if attrs["exclusive"] else 1) - 1
    counts = np.maximum(counts[::-1] if attrs["reverse"] else counts, 0)
    scale = (counts / max(size, 1)).reshape([-1 if d == axis else 1 for d in range(x.ndim)])
    (products,) = oracle_onnx_cum_prod(np.abs(x), **attrs)
    return (np.abs(products) * scale,)


def onnx_cum_prod(case, graph):
    axis = graph.const("axis", case.attrs["axis"])   # a 0-d int64 tensor
    graph.node(graph.op_type, [graph.inputs[0], axis], exclusive=case.attrs["exclusive"],
               reverse=case.attrs["reverse"])


def numpy_cum_prod(x, *, axis, exclusive, reverse):
    """The numpy backend: ``np.cumprod`` in x's type, flipped and shifted as the text says."""
    return (cumulative_sum(x, axis, bool(exclusive), bool(reverse), identity=1,
                           cumsum=lambda v, axis: np.cumprod(v, axis=axis, dtype=v.dtype)),)


@op("onnx_cum_prod", version=1, feeding=feed_cum_sum, accumulation_length=lambda shapes, attrs:
    shapes[0][attrs["axis"] % len(shapes[0])], accumulation_magnitude=cum_prod_magnitude,
    onnx=onnx_cum_prod, numpy=numpy_cum_prod)
def oracle_onnx_cum_prod(x, *, axis, exclusive, reverse, dtypes=()):
    """CumProd-26: the j-th output element is the product of the first j elements along
    ``axis`` (with exclusive, of the first j - 1: 1 for the first), from the end with reverse."""
    x = _widened_unsigned(x, dtypes)
    return (cumulative_sum(x, axis, bool(exclusive), bool(reverse), identity=1,
                           cumsum=_cumprod),)
