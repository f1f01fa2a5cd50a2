"""Reductions and windowed reductions (XLA Reduce, ReduceWindow; ONNX ReduceSum/Max/Min/Mean,
MaxPool; NNEF sum/max/min/mean_reduce, max_pool). Sums accumulate in extended precision so
float64 targets keep a sound reference."""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from conform.oracles.feeding import span
from conform.ops._lowering import unsupported
from conform.ops._registry import op

EXTENDED = np.longdouble  # 64-bit significand on x86: the oracle's own rounding error stays negligible


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


# --- Reduce over a set of dimensions ----------------------------------------------------------

def draw_reduce(draw, kit, spec, dtype):
    """A non-empty, sorted set of reduced dimensions."""
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=8))
    dims = draw(kit.st.sets(kit.st.integers(0, len(shape) - 1), min_size=1))
    return kit.Signature((dtype,), (shape,), {"dimensions": sorted(dims)}, dtype)


def feed_reduce(inputs, attrs, index):
    """The slice of the operand reduced into out[index]."""
    (operand,) = inputs
    reduced = set(attrs["dimensions"])
    kept = iter(index)
    at = tuple(slice(None) if axis in reduced else next(kept) for axis in range(operand.ndim))
    return [operand[at].ravel()]


def reduced_count(shapes, attrs):
    """The number of elements reduced into one output element."""
    return math.prod(shapes[0][d] for d in attrs["dimensions"])


def onnx_reduce(case, graph):
    axes = graph.const("axes", case.attrs["dimensions"])
    graph.node(graph.op_type, [graph.inputs[0], axes], keepdims=0)


def nnef_reduce(case, call):
    dims = case.attrs["dimensions"]
    kept = tuple(s for i, s in enumerate(case.inputs[0].shape) if i not in dims)
    return call(["in0"], {"axes": list(dims)}, output_shape=kept)


def lax_reduce_sum(lax, attrs):
    return lambda x: lax.reduce(x, np.array(0, x.dtype), lax.add, attrs["dimensions"])


def lax_reduce_max(lax, attrs):
    def reduce_max(x):
        lowest = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
        return lax.reduce(x, np.array(lowest, x.dtype), lax.max, attrs["dimensions"])
    return reduce_max


def lax_reduce_min(lax, attrs):
    def reduce_min(x):
        highest = np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).max
        return lax.reduce(x, np.array(highest, x.dtype), lax.min, attrs["dimensions"])
    return reduce_min


def numpy_reduce_sum(operand, *, dimensions):
    return (np.sum(operand, axis=tuple(dimensions), dtype=operand.dtype),)


_REDUCE = dict(draw=draw_reduce, feeding=feed_reduce, onnx=onnx_reduce, nnef=nnef_reduce)


@op("reduce_sum", version=1, accumulation_length=reduced_count, lax=lax_reduce_sum,
    numpy=numpy_reduce_sum, **_REDUCE)
def oracle_reduce_sum(operand, *, dimensions):
    """Reduce with Add over ``dimensions`` (init 0)."""
    if operand.dtype.kind == "f":
        return (np.sum(operand.astype(EXTENDED), axis=tuple(dimensions)).astype(np.float64),)
    return (np.sum(operand, axis=tuple(dimensions)),)


@op("reduce_max", version=1, lax=lax_reduce_max, **_REDUCE)
def oracle_reduce_max(operand, *, dimensions):
    """Reduce with Max over ``dimensions`` (init: -inf, or the integer minimum); NaN propagates."""
    return (np.max(operand, axis=tuple(dimensions), initial=_lowest(operand.dtype)),)


@op("reduce_min", version=1, lax=lax_reduce_min, **_REDUCE)
def oracle_reduce_min(operand, *, dimensions):
    """Reduce with Min over ``dimensions`` (init: +inf, or the integer maximum); NaN propagates."""
    return (np.min(operand, axis=tuple(dimensions), initial=_highest(operand.dtype)),)


@op("reduce_mean", version=1, accumulation_length=reduced_count, **_REDUCE)
def oracle_reduce_mean(operand, *, dimensions):
    """The sum over ``dimensions`` divided by the number of reduced elements (NNEF mean_reduce =
    sum_reduce with normalize = true; ONNX ReduceMean), accumulated in extended precision."""
    count = int(np.prod([operand.shape[d] for d in dimensions], dtype=np.int64))
    total = np.sum(operand.astype(EXTENDED), axis=tuple(dimensions))
    return ((total / count).astype(np.float64),)


# --- ReduceWindow with Max ----------------------------------------------------------------------

def draw_reduce_window(draw, kit, spec, dtype):
    """Window dimensions, strides and explicit (low, high) padding per dimension.

    Half the signatures are pooling-shaped: rank 3 or 4 with a window of 1, stride 1 and no
    padding on the first two dimensions (batch and channels), the only windows ONNX MaxPool
    expresses; drawn freely, hardly any window is."""
    st = kit.st
    pooling = draw(st.booleans())
    shape = draw(kit.shape(min_rank=3 if pooling else 1, max_rank=4, max_side=7))
    window, strides, padding = [], [], []
    for axis, size in enumerate(shape):
        if pooling and axis < 2:
            window.append(1)
            strides.append(1)
            padding.append([0, 0])
            continue
        w = draw(st.integers(1, min(size + 1, 3)))
        low, high = draw(st.integers(0, w - 1)), draw(st.integers(0, w - 1))
        window.append(max(1, min(w, size + low + high)))
        strides.append(draw(st.integers(1, 2)))
        padding.append([low, high])
    attrs = {"window_dimensions": window, "window_strides": strides, "padding": padding}
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def feed_reduce_window(inputs, attrs, index):
    """The window of the operand (padding left out) reduced into out[index]."""
    (operand,) = inputs
    spans = [span(i * stride - low, window, 1, size)[0] for i, stride, window, (low, _), size
             in zip(index, attrs["window_strides"], attrs["window_dimensions"], attrs["padding"],
                    operand.shape)]
    return [operand[np.ix_(*spans)].ravel()]


def onnx_max_pool(case, graph):
    window, strides = case.attrs["window_dimensions"], case.attrs["window_strides"]
    padding = case.attrs["padding"]
    if len(window) < 3 or any(window[i] != 1 or strides[i] != 1 or padding[i] != [0, 0] for i in (0, 1)):
        raise unsupported("ONNX MaxPool windows only the spatial dimensions of an N, C, ... tensor")
    graph.node(graph.op_type, graph.inputs, kernel_shape=window[2:], strides=strides[2:],
               pads=[p[0] for p in padding[2:]] + [p[1] for p in padding[2:]])


def nnef_max_pool(case, call):
    attrs = {"size": case.attrs["window_dimensions"],
             "padding": [tuple(int(p) for p in pair[:2]) for pair in case.attrs["padding"]],
             "stride": case.attrs["window_strides"]}
    return call(["in0"], attrs)


def lax_reduce_window_max(lax, attrs):
    def reduce_window_max(x):
        lowest = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
        return lax.reduce_window(x, np.array(lowest, x.dtype), lax.max, attrs["window_dimensions"],
                                 attrs["window_strides"], [tuple(p) for p in attrs["padding"]])
    return reduce_window_max


@op("reduce_window_max", version=1, draw=draw_reduce_window, feeding=feed_reduce_window,
    onnx=onnx_max_pool, nnef=nnef_max_pool, lax=lax_reduce_window_max)
def oracle_reduce_window_max(operand, *, window_dimensions, window_strides, padding):
    """ReduceWindow with Max; padding elements take the init value (-inf or the integer minimum)."""
    padded = np.pad(operand, [tuple(p) for p in padding], constant_values=_lowest(operand.dtype))
    axes = tuple(range(operand.ndim))
    windows = sliding_window_view(padded, tuple(window_dimensions), axis=axes)
    windows = windows[tuple(slice(None, None, s) for s in window_strides)]
    return (np.max(windows, axis=tuple(range(operand.ndim, 2 * operand.ndim))),)
