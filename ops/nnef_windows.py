"""NNEF window fragments beside box and avg_pool (ops/nnef_pooling.py): debox, argmax_pool,
sample, desample, max_pool_with_index and rms_pool (NNEF 1.0 §4.3, sliding-window operations,
and §4.5, pooling operations; the declarations and the compound bodies are the ``nnef``
package's standard fragments, its ``stdlib_source.h``; the output shapes its ``shapes.py``).

A window of ``size`` taps per dimension, ``dilation`` apart, starts every ``stride`` elements of
the input extended by ``padding`` (low, high): tap ``k`` of window ``o`` reads position
``o * stride + k * dilation - low``. ``box`` sums each window; ``debox`` is its adjoint (each
input element added into every output position of its window: out[y] = sum of x[o] over the
(o, k) with o * stride + k * dilation - low = y, divided by the window's size with
``normalize``), of shape ``output_shape``, or by default ``(n - 1) * stride + (size - 1) *
dilation + 1 - low - high``. ``argmax_pool`` gives per window the tap of its maximum, flattened
in row-major order over ``size``; ``sample`` reads per window the tap ``index`` names;
``desample`` is sample's adjoint (each input element added into the output position its index
names). The compound fragments, as the standard library writes them:

    max_pool_with_index: index = argmax_pool(input, ...); output = sample(input, index, ...)
    rms_pool: output = sqrt(avg_pool(sqr(input), ...))

Under border 'constant' a padded tap reads 0 (and may be a window's maximum); under 'ignore' it
takes no part.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op, region
from conform.ops._double_double import accurate_sum
from conform.ops.error_bounds import gamma, reaches_max_finite
from conform.ops.indexing import index_type
from conform.ops.nnef_pooling import box, draw_box, feed_box, nnef_box, numpy_box
from conform.ops.onnx_pooling import spread


def _geometry(rank, attrs):
    """``(stride, dilation, low paddings)`` with NNEF's defaults (1) filled in."""
    return (attrs.get("stride") or [1] * rank, attrs.get("dilation") or [1] * rank,
            [int(p[0]) for p in attrs["padding"]])


def pooled_shape(shape, attrs) -> tuple:
    """box's output shape: ``(n + low + high - dilated window) // stride + 1`` per dimension."""
    stride, dilation, _ = _geometry(len(shape), attrs)
    return tuple((n + lo + hi - (k - 1) * d - 1) // s + 1 for n, k, (lo, hi), s, d
                 in zip(shape, attrs["size"], attrs["padding"], stride, dilation))


def unpooled_shape(shape, attrs) -> tuple:
    """debox's and desample's output shape: ``output_shape``, or by default
    ``(n - 1) * stride + (size - 1) * dilation + 1 - low - high`` (shapes.py ``_upsize_shape``)."""
    if attrs.get("output_shape"):
        return tuple(attrs["output_shape"])
    stride, dilation, _ = _geometry(len(shape), attrs)
    return tuple((n - 1) * s + (k - 1) * d + 1 - lo - hi for n, k, (lo, hi), s, d
                 in zip(shape, attrs["size"], attrs["padding"], stride, dilation))


def _grid(per_dim):
    """Per-dimension arrays ``[m_i, K_i]`` broadcast into one grid ``(m..., K...)``."""
    return spread(per_dim, len(per_dim))


def _all(masks):
    """The conjunction of masks that broadcast together."""
    return functools.reduce(np.logical_and, masks, np.ones((), bool))


def taps(x_shape, attrs, out_shape=None):
    """The input positions every window's taps read, as a grid ``(windows..., taps...)`` per
    dimension, and where they fall inside the input (not in padding)."""
    stride, dilation, low = _geometry(len(x_shape), attrs)
    out_shape = pooled_shape(x_shape, attrs) if out_shape is None else out_shape
    per_dim = [np.arange(m)[:, None] * s + np.arange(k)[None, :] * d - lo for m, k, s, d, lo
               in zip(out_shape, attrs["size"], stride, dilation, low)]
    positions = _grid(per_dim)
    inside = _all([(p >= 0) & (p < n) for p, n in zip(positions, x_shape)])
    return positions, inside


def sources(x_shape, attrs, out_shape):
    """The adjoint's view: per output position ``y`` and tap ``k`` the window ``o`` with
    ``o * stride + k * dilation - low = y`` (a grid ``(outputs..., taps...)`` per dimension), and
    where such a window exists."""
    stride, dilation, low = _geometry(len(x_shape), attrs)
    per_dim, valid = [], []
    for y, k, s, d, lo, n in zip(out_shape, attrs["size"], stride, dilation, low, x_shape):
        offset = np.arange(y)[:, None] + lo - np.arange(k)[None, :] * d
        per_dim.append(offset // s)
        valid.append((offset % s == 0) & (offset >= 0) & (offset // s < n))
    return _grid(per_dim), _all(_grid(valid))


def _gather(x, positions, inside, fill):
    clipped = tuple(np.clip(p, 0, max(n - 1, 0)) for p, n in zip(positions, x.shape))
    return np.where(inside, x[clipped], fill)


def window_values(x, attrs, fill=0.0):
    """Every window's values ``(windows..., volume)``, padded taps holding ``fill``."""
    positions, inside = taps(x.shape, attrs)
    values = _gather(np.asarray(x, np.float64), positions, inside, fill)
    return values.reshape(values.shape[:x.ndim] + (-1,)), inside.reshape(values.shape[:x.ndim]
                                                                          + (-1,))


def _flat_taps(size):
    return np.arange(math.prod(size)).reshape(size)


# --- debox ----------------------------------------------------------------------------------------

def draw_debox(draw, kit, spec, dtype):
    """box's geometry (draw_box) over the output's shape, ``normalize`` drawn, ``output_shape``
    the drawn shape or [] (the default size); the input is box's output shape."""
    drawn = draw_box(draw, kit, spec, dtype)
    out_shape, attrs = drawn.shapes[0], dict(drawn.attrs)
    attrs["normalize"] = draw(kit.st.booleans())
    attrs["output_shape"] = list(out_shape) if draw(kit.st.booleans()) else []
    return drawn._replace(shapes=(pooled_shape(out_shape, attrs),), attrs=attrs)


def _adjoint_terms(x, attrs, weights=None):
    """``(outputs..., taps...)``: the input element window o adds into output y through tap k
    (0 where no window does), times ``weights`` (a grid like it) if given."""
    out_shape = unpooled_shape(x.shape, attrs)
    positions, valid = sources(x.shape, attrs, out_shape)
    terms = _gather(np.asarray(x, np.float64), positions, valid, 0.0)
    return terms if weights is None else np.where(valid, terms * weights, 0.0)


def _covering(x_shape, attrs, index):
    """The windows with a tap that reads out[index] (the adjoint's terms of that output
    element), in row-major order: their positions ``(m, rank)`` and those taps' numbers (row-major
    over ``size``)."""
    positions, valid = sources(x_shape, attrs, unpooled_shape(x_shape, attrs))
    at = tuple(index)
    valid = np.broadcast_to(valid, np.broadcast_shapes(*(p.shape for p in positions)))[at]
    where = np.stack([p[at] for p in np.broadcast_arrays(*positions)], -1)[valid]
    order = np.argsort(np.ravel_multi_index(tuple(where.T), x_shape), kind="stable")
    return where[order], _flat_taps(attrs["size"])[valid][order]


def feed_debox(inputs, attrs, index):
    """The input elements whose windows cover out[index]."""
    (x,) = inputs
    where, _ = _covering(x.shape, attrs, index)
    return [x[tuple(where.T)]]


def numpy_debox(x, *, size, border, padding, stride, dilation, output_shape, normalize):
    """The numpy backend: ``np.add.at`` of each element into the positions of its window, in
    x's type, divided by prod(size) with ``normalize``."""
    attrs = dict(size=size, padding=padding, stride=stride, dilation=dilation,
                 output_shape=output_shape)
    out = np.zeros(unpooled_shape(x.shape, attrs), x.dtype)
    positions, inside = taps(out.shape, attrs, x.shape)
    full = np.broadcast_arrays(*positions, inside)
    values = np.broadcast_to(x.reshape(x.shape + (1,) * x.ndim), full[0].shape)
    np.add.at(out, tuple(p[full[-1]] for p in full[:-1]), values[full[-1]])
    return out / x.dtype.type(math.prod(size)) if normalize else out


@region
def unnormalized_sum_overflow(ctx) -> np.ndarray:
    """debox results whose sum before the division by prod(size) (its finite terms' magnitudes,
    times ``1 + gamma_n``) reaches the largest finite value: summing in the output type gives
    inf or NaN in some orders, or before a normalising division, and not in others."""
    if ctx.out_dtype not in FLOAT_FORMATS:
        return ctx.none()
    fmt = FLOAT_FORMATS[ctx.out_dtype]
    finite = [np.abs(np.where(np.isfinite(x), x, 0.0)).astype(np.float64) for x in ctx.inputs]
    with np.errstate(over="ignore", invalid="ignore"):
        total = ctx.oracle_with(finite, normalize=False)
        return reaches_max_finite(total, ctx.out_dtype,
                                  gamma_n=gamma(ctx.accumulation_length or 1, fmt.unit_roundoff))


def window_attrs(case, *names) -> dict:
    """The NNEF attributes of a window fragment: size, border, padding (as tuples), stride,
    dilation, and ``names``."""
    attrs = {name: case.attrs[name] for name in ("size", "border", "stride", "dilation", *names)}
    attrs["padding"] = [tuple(int(p) for p in pair) for pair in case.attrs["padding"]]
    return attrs


def nnef_debox(case, call):
    return call(["in0"], window_attrs(case, "output_shape", "normalize"))


@op("nnef_debox", version=1, draw=draw_debox, draw_honours=frozenset({"attrs"}),
    feeding=feed_debox, accumulation_length=lambda shapes, attrs: math.prod(attrs["size"]),
    nnef=nnef_debox, numpy=numpy_debox)
def oracle_nnef_debox(x, *, size, border, padding, stride, dilation, output_shape, normalize):
    """out[y] = sum of x[o] over (o, k) with o * stride + k * dilation - low = y, divided by
    prod(size) with ``normalize`` (the adjoint of box)."""
    attrs = dict(size=size, padding=padding, stride=stride, dilation=dilation,
                 output_shape=output_shape)
    terms = _adjoint_terms(x, attrs)
    return (accurate_sum(terms, axis=tuple(range(x.ndim, 2 * x.ndim)),
                         divisor=math.prod(size) if normalize else 1),)


# --- rms_pool --------------------------------------------------------------------------------------

def numpy_rms_pool(x, *, size, border, padding, stride, dilation):
    """The numpy backend: ``np.sqrt`` of :func:`numpy_box` (normalised) of ``x * x``."""
    return np.sqrt(numpy_box(x * x, size=size, border=border, padding=padding, stride=stride,
                             dilation=dilation, normalize=True))


@op("nnef_rms_pool", version=1, draw=draw_box, draw_honours=frozenset({"attrs"}),
    feeding=feed_box, accumulation_length=lambda shapes, attrs: math.prod(attrs["size"]) + 2,
    nnef=nnef_box, numpy=numpy_rms_pool)
def oracle_nnef_rms_pool(x, *, size, border, padding, stride, dilation):
    """output = sqrt(avg_pool(sqr(input), ...)) (the standard library's body)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.sqrt(box(x * x, size, border, padding, stride, dilation, True)),)


@region
def square_mean_out_of_range(ctx) -> np.ndarray:
    """rms_pool results whose windows' sum of squares (finite terms, times ``1 + gamma_n``)
    reaches the largest finite value of the output type, or whose mean of squares is non-zero
    and below its smallest normal: evaluating the body in the output type overflows, or its
    squares lose their relative precision, where a scaled evaluation does not."""
    if ctx.out_dtype not in FLOAT_FORMATS:
        return ctx.none()
    fmt, n = FLOAT_FORMATS[ctx.out_dtype], ctx.accumulation_length or 1
    finite = [np.abs(np.where(np.isfinite(x), x, 0.0)).astype(np.float64) for x in ctx.inputs]
    with np.errstate(over="ignore", invalid="ignore"):
        mean_square = ctx.float_oracle(finite) ** 2
        return (reaches_max_finite(n * mean_square, ctx.out_dtype,
                                   gamma_n=gamma(n, fmt.unit_roundoff))
                | ((mean_square > 0) & (mean_square < fmt.min_normal)))


# --- argmax_pool, sample, desample, max_pool_with_index -------------------------------------------

def _argmax(x, attrs):
    """Per window the first tap holding its maximum (padding reads 0 under 'constant' and takes
    no part under 'ignore'); NaN counts as the maximum."""
    fill = -np.inf if attrs["border"] == "ignore" else 0.0
    values, _ = window_values(x, attrs, fill)
    return np.argmax(np.where(np.isnan(values), np.inf, values), axis=-1)


def _sample(x, index, attrs):
    fill = np.nan if attrs["border"] == "ignore" else 0.0   # 'ignore': a padded tap has no value
    values, _ = window_values(x, attrs, fill)
    return np.take_along_axis(values, np.asarray(index, np.int64)[..., None], -1)[..., 0]


def draw_argmax_pool(draw, kit, spec, dtype):
    """box's geometry (draw_box) with the spec's borders, its padding dropped where a window
    would hold padding only (whose maximum is a tie of padded zeros, or nothing)."""
    drawn = draw_box(draw, kit, spec, dtype)
    _, inside = window_values(np.zeros(drawn.shapes[0]), drawn.attrs)
    if inside.size and not np.all(np.any(inside, axis=-1)):   # no padding; windows that fit
        shape, attrs = drawn.shapes[0], drawn.attrs
        size = [min(k, (n - 1) // d + 1) for k, n, d in zip(attrs["size"], shape,
                                                           attrs["dilation"])]
        drawn = drawn._replace(attrs={**attrs, "size": size, "padding": [[0, 0]] * len(shape)})
    return drawn


def draw_sample(draw, kit, spec, dtype):
    """argmax_pool's geometry over the input; ``index`` (integer) shaped like the windows."""
    drawn = draw_argmax_pool(draw, kit, spec, dtype)
    shape = drawn.shapes[0]
    return drawn._replace(input_dtypes=(dtype, index_type(draw, kit, spec, "index")),
                          shapes=(shape, pooled_shape(shape, drawn.attrs)))


def draw_desample(draw, kit, spec, dtype):
    """debox's geometry (draw_debox, without normalize); ``index`` shaped like the input."""
    drawn = draw_debox(draw, kit, spec, dtype)
    attrs = {k: v for k, v in drawn.attrs.items() if k != "normalize"}
    return drawn._replace(input_dtypes=(dtype, index_type(draw, kit, spec, "index")),
                          shapes=drawn.shapes * 2, attrs=attrs)


def values_index(rng, inputs, attrs):
    """Indices in ``[0, prod(size))``: a tap of each window."""
    x, index = inputs
    return [x, rng.integers(0, math.prod(attrs["size"]), index.shape).astype(index.dtype)]


def feed_window(inputs, attrs, index):
    """The input elements of the window of out[index]."""
    return feed_box(inputs[:1], attrs, index)


def feed_sample(inputs, attrs, index):
    """The one input element that tap ``index[out index]`` of out[index]'s window reads (none on
    a padded tap); the index selects, it is no term."""
    x, idx = inputs
    positions, inside = taps(x.shape, attrs)
    at = tuple(index) + np.unravel_index(int(idx[tuple(index)]), attrs["size"])
    read = tuple(np.broadcast_to(p, inside.shape)[at] for p in positions)
    return [x[read].reshape(1) if inside[at] else x[:0].ravel(), None]


def feed_desample(inputs, attrs, index):
    """The input elements whose windows cover out[index] through the very tap their index
    names (the terms of its sum); the indices select, they are no terms."""
    x, idx = inputs
    where, tap = _covering(x.shape, attrs, index)
    return [x[tuple(where[idx[tuple(where.T)] == tap].T)], None]


def _numpy_windows(x, size, padding, stride, dilation):
    """``sliding_window_view`` windows of ``x`` zero-padded, flattened: ``(windows..., taps)``."""
    from numpy.lib.stride_tricks import sliding_window_view
    padded = np.pad(x, [tuple(p) for p in padding])
    windows = sliding_window_view(padded, [(k - 1) * d + 1 for k, d in zip(size, dilation)])
    windows = windows[tuple(slice(None, None, s) for s in stride)
                      + tuple(slice(None, None, d) for d in dilation)]
    return windows.reshape(windows.shape[:x.ndim] + (-1,))


def numpy_argmax_pool(x, *, size, border, padding, stride, dilation):
    """The numpy backend: ``np.argmax`` over the windows of the padded input (padding -inf
    under 'ignore', 0 under 'constant')."""
    if border == "ignore":   # shift the padding below every value: -inf in x's type
        x = np.pad(x, [tuple(p) for p in padding], constant_values=-np.inf)
        padding = [(0, 0)] * x.ndim
    flat = _numpy_windows(x, size, padding, stride, dilation)
    return np.argmax(flat, axis=-1).astype(np.int32)


@op("nnef_argmax_pool", version=1, draw=draw_argmax_pool, draw_honours=frozenset({"attrs"}),
    feeding=feed_window, nnef=lambda case, call: call(["in0"], window_attrs(case)),
    numpy=numpy_argmax_pool)
def oracle_nnef_argmax_pool(x, *, size, border, padding, stride, dilation):
    """index = the tap (row-major over ``size``) of each window's maximum."""
    attrs = dict(size=size, border=border, padding=padding, stride=stride, dilation=dilation)
    return (_argmax(x, attrs),)


def numpy_sample(x, index, *, size, border, padding, stride, dilation):
    """The numpy backend: ``np.take_along_axis`` over the zero-padded windows."""
    flat = _numpy_windows(x, size, padding, stride, dilation)
    return np.take_along_axis(flat, index[..., None].astype(np.intp), -1)[..., 0]


def numpy_desample(x, index, *, size, border, padding, stride, dilation, output_shape):
    """The numpy backend: ``np.add.at`` of each element at the position its index names."""
    attrs = dict(size=size, padding=padding, stride=stride, dilation=dilation,
                 output_shape=output_shape)
    out = np.zeros(unpooled_shape(x.shape, attrs), x.dtype)
    tap = np.unravel_index(index.astype(np.intp), size)
    where = [o * s + k * d - p[0] for o, k, s, d, p
             in zip(np.indices(x.shape), tap, stride, dilation, padding)]
    inside = _all([(w >= 0) & (w < n) for w, n in zip(where, out.shape)])
    np.add.at(out, tuple(w[inside] for w in where), x[inside])
    return out


@op("nnef_sample", version=1, draw=draw_sample, draw_honours=frozenset({"attrs"}),
    values=values_index, feeding=feed_sample, numpy=numpy_sample,
    nnef=lambda case, call: call(["in0", "in1"], window_attrs(case)))
def oracle_nnef_sample(x, index, *, size, border, padding, stride, dilation):
    """output = the tap ``index`` of each window (0 on a padded tap under 'constant')."""
    attrs = dict(size=size, border=border, padding=padding, stride=stride, dilation=dilation)
    return (_sample(x, index, attrs),)


@op("nnef_desample", version=1, draw=draw_desample, draw_honours=frozenset({"attrs"}),
    values=values_index, feeding=feed_desample, numpy=numpy_desample,
    accumulation_length=lambda shapes, attrs: math.prod(attrs["size"]),
    nnef=lambda case, call: call(["in0", "in1"], window_attrs(case, "output_shape")))
def oracle_nnef_desample(x, index, *, size, border, padding, stride, dilation, output_shape):
    """out[y] = sum of x[o] over the windows o whose tap ``index[o]`` reads position y (the
    adjoint of sample)."""
    attrs = dict(size=size, padding=padding, stride=stride, dilation=dilation,
                 output_shape=output_shape)
    picked = _adjoint_terms(np.asarray(index, np.float64), attrs)   # index[o] per (y, k)
    terms = _adjoint_terms(x, attrs)
    taps_k = np.broadcast_to(_flat_taps(size).reshape((1,) * x.ndim + tuple(size)), terms.shape)
    chosen = np.where(_adjoint_terms(np.ones(x.shape), attrs) > 0, picked == taps_k, False)
    return (accurate_sum(np.where(chosen, terms, 0.0), axis=tuple(range(x.ndim, 2 * x.ndim))),)


def numpy_max_pool_with_index(x, *, size, border, padding, stride, dilation):
    """The numpy backend: :func:`numpy_argmax_pool`, and the value at that tap
    (:func:`numpy_sample`)."""
    geometry = dict(size=size, border=border, padding=padding, stride=stride, dilation=dilation)
    index = numpy_argmax_pool(x, **geometry)
    return numpy_sample(x, index, **geometry), index


@op("nnef_max_pool_with_index", version=1, draw=draw_argmax_pool,
    draw_honours=frozenset({"attrs"}), feeding=feed_window,
    nnef=lambda case, call: call(["in0"], window_attrs(case)),
    numpy=numpy_max_pool_with_index)
def oracle_nnef_max_pool_with_index(x, *, size, border, padding, stride, dilation):
    """index = argmax_pool(input, ...); output = sample(input, index, ...)."""
    attrs = dict(size=size, border=border, padding=padding, stride=stride, dilation=dilation)
    index = _argmax(x, attrs)
    return _sample(x, index, attrs), index


@region
def window_maximum_not_unique(ctx) -> np.ndarray:
    """argmax_pool windows whose maximum is not held by one tap alone: two taps equal to it (a
    tie, padded zeros included under 'constant'; +0 and -0 are equal), a NaN in the window,
    or no input element in it (under 'ignore'): the text names the tap of the maximum without
    saying which of several, or what NaN ranks as."""
    x = np.asarray(ctx.inputs[0], np.float64)
    fill = -np.inf if ctx.attrs["border"] == "ignore" else 0.0
    values, inside = window_values(x, ctx.attrs, fill)
    top = np.max(np.where(np.isnan(values), -np.inf, values), axis=-1, keepdims=True)
    tied = np.sum(values == top, axis=-1) > 1
    mask = tied | np.any(np.isnan(values), axis=-1)
    if ctx.attrs["border"] == "ignore":
        mask |= ~np.any(inside, axis=-1)
    return np.broadcast_to(mask, ctx.expected.shape)


@region
def padded_tap_ignored(ctx) -> np.ndarray:
    """sample under border 'ignore' at a tap in padding, to which 'ignore' gives no value."""
    x, index = ctx.inputs[:2]
    if ctx.attrs["border"] != "ignore":
        return ctx.none()
    _, inside = window_values(np.asarray(x, np.float64), ctx.attrs)
    return ~np.take_along_axis(inside, np.asarray(index, np.int64)[..., None], -1)[..., 0]
