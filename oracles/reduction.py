"""Reductions, dot products, convolution and windowed reductions (XLA Reduce, DotGeneral, Conv,
ReduceWindow). Sums accumulate in extended precision so float64 targets keep a sound reference."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

_ACC = np.longdouble  # 64-bit significand on x86: the oracle's own rounding error stays negligible


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def oracle_reduce_sum(operand, *, dimensions):
    """Reduce with Add over ``dimensions`` (init 0)."""
    if operand.dtype.kind == "f":
        return (np.sum(operand.astype(_ACC), axis=tuple(dimensions)).astype(np.float64),)
    return (np.sum(operand, axis=tuple(dimensions)),)


def oracle_reduce_max(operand, *, dimensions):
    """Reduce with Max over ``dimensions`` (init: -inf, or the integer minimum); NaN propagates."""
    return (np.max(operand, axis=tuple(dimensions), initial=_lowest(operand.dtype)),)


def _highest(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


def oracle_reduce_min(operand, *, dimensions):
    """Reduce with Min over ``dimensions`` (init: +inf, or the integer maximum); NaN propagates."""
    return (np.min(operand, axis=tuple(dimensions), initial=_highest(operand.dtype)),)


def oracle_reduce_mean(operand, *, dimensions):
    """The sum over ``dimensions`` divided by the number of reduced elements (NNEF mean_reduce =
    sum_reduce with normalize = true; ONNX ReduceMean), accumulated in extended precision."""
    count = int(np.prod([operand.shape[d] for d in dimensions], dtype=np.int64))
    total = np.sum(operand.astype(_ACC), axis=tuple(dimensions))
    return ((total / count).astype(np.float64),)


def oracle_dot_general(lhs, rhs):
    """DotGeneral as batched matmul: out[b..., m, n] = sum_k lhs[b..., m, k] * rhs[b..., k, n]."""
    if lhs.dtype.kind != "f":
        return (np.einsum("...mk,...kn->...mn", lhs, rhs),)
    out = np.einsum("...mk,...kn->...mn", lhs.astype(_ACC), rhs.astype(_ACC))
    return (out.astype(np.float64),)


def _pad_or_crop(x, padding):
    """Zero-pad the spatial dims; a negative amount removes that many elements instead."""
    grow = [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    padded = np.pad(x, grow)
    crop = tuple(slice(max(-lo, 0), padded.shape[2 + i] - max(-hi, 0))
                 for i, (lo, hi) in enumerate(padding))
    return padded[(slice(None), slice(None), *crop)]


def oracle_conv(lhs, rhs, *, window_strides, padding, rhs_dilation):
    """2-D ConvGeneralDilated, NCHW x OIHW -> NCHW (cross-correlation, no kernel flip).

    out[n, o, y, x] = sum_{c, i, j} lhs_pad[n, c, y*sy + i*dy, x*sx + j*dx] * rhs[o, c, i, j]
    """
    acc = _ACC if lhs.dtype.kind == "f" else np.int64
    padded = _pad_or_crop(lhs.astype(acc), padding)
    kh, kw = rhs.shape[2:]
    dh, dw = rhs_dilation
    windows = sliding_window_view(padded, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    windows = windows[:, :, ::window_strides[0], ::window_strides[1], ::dh, ::dw]
    out = np.einsum("ncyxij,ocij->noyx", windows, rhs.astype(acc))
    return (out.astype(np.float64 if acc is _ACC else np.int64),)


def oracle_reduce_window_max(operand, *, window_dimensions, window_strides, padding):
    """ReduceWindow with Max; padding elements take the init value (-inf or the integer minimum)."""
    padded = np.pad(operand, [tuple(p) for p in padding], constant_values=_lowest(operand.dtype))
    axes = tuple(range(operand.ndim))
    windows = sliding_window_view(padded, tuple(window_dimensions), axis=axes)
    windows = windows[tuple(slice(None, None, s) for s in window_strides)]
    return (np.max(windows, axis=tuple(range(operand.ndim, 2 * operand.ndim))),)
