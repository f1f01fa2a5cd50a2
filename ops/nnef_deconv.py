"""NNEF deconv, separable_conv and separable_deconv (NNEF 1.0 §4.3 sliding-window operations and
§4.4 linear operations; declarations and compound bodies are the ``nnef`` package's standard
fragments, ``stdlib_source.h``, the output shapes its ``shapes.py`` ``conv_shape``).

conv: input [N, C, spatial...], filter [O, C / groups, kernel...], bias [1, O] (or 0.0);
out[n, o, y] = sum over the input channels c of o's group and the taps k of
x[n, c, y * stride + k * dilation - low] * filter[o, c, k] (+ bias[0, o]), the padding reading 0
(border 'constant'); groups = 0 means one group per input channel. deconv is conv's adjoint with
the same filter: input [N, I, ...], filter [I, O / groups, kernel...], out[n, o, y] = sum over
the input channels i of o's group and the (p, k) with p * stride + k * dilation - low = y of
x[n, i, p] * filter[i, o, k] (+ bias[0, o]); its spatial size is ``output_shape``, or
``(n - 1) * stride + (kernel - 1) * dilation + 1 - low - high``. The compound fragments:

    separable_conv: filtered = conv(input, plane_filter, border, padding, stride, dilation,
                                    groups = 0);
                    output = conv(filtered, point_filter, bias, groups = groups)
    separable_deconv: filtered = deconv(input, point_filter, groups = groups);
                      output = deconv(filtered, plane_filter, bias, border, padding, stride,
                                      dilation, output_shape, groups = 0)
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op, region
from conform.ops._double_double import sum_of_products
from conform.ops.error_bounds import gamma, reaches_max_finite
from conform.ops.nnef_windows import pooled_shape, sources, taps, unpooled_shape


def _spatial(attrs, spatial_rank):
    """The window attributes of the spatial dimensions, as nnef_windows reads them."""
    return dict(size=attrs["kernel"], padding=attrs["padding"],
                stride=attrs.get("stride") or [1] * spatial_rank,
                dilation=attrs.get("dilation") or [1] * spatial_rank,
                output_shape=attrs.get("output_shape") and attrs["output_shape"][2:])


def _window(shape, attrs, transposed):
    """Per spatial dimension the input position output position y meets through tap k (a grid
    ``(Y..., K...)``), and where it meets one (not padding, nor a position no input maps to):
    conv's ``y * stride + k * dilation - low``, deconv's ``p`` with
    ``p * stride + k * dilation - low = y``, over the spatial input ``shape``."""
    geometry = _spatial(attrs, len(shape))
    if transposed:
        return sources(shape, geometry, unpooled_shape(shape, geometry))
    return taps(shape, geometry, pooled_shape(shape, geometry))


def _patches(x, attrs, transposed):
    """``(N, C, Y..., K...)``: the input element each output position y meets through tap k,
    and the grid ``(Y..., K...)`` of the taps that meet one."""
    positions, inside = _window(x.shape[2:], attrs, transposed)
    clipped = tuple(np.clip(p, 0, n - 1) for p, n in zip(positions, x.shape[2:]))
    return np.where(inside, x[(slice(None), slice(None)) + clipped], 0.0), inside


def grouped(x, filters, bias, attrs, *, groups, transposed, reduce=None):
    """conv (or with ``transposed`` deconv) in float64 from a double-double sum: each output a
    sum of exact products over its group's channels and the taps that meet an input element
    (padding and holes take no part, not even as 0 * inf), the bias one more term.
    ``reduce(lhs, rhs)`` replaces the sum of the products ``lhs * rhs`` over the last axis."""
    n, c, spatial = x.shape[0], x.shape[1], x.ndim - 2
    groups = groups or c
    cig = c // groups
    patches, inside = _patches(x, attrs, transposed)          # (N, C, Y..., K...)
    out_spatial = patches.shape[2:2 + spatial]
    if transposed:   # filter [C, O/g, K...] -> (g, O/g, C/g, K...)
        w = filters.reshape((groups, cig) + filters.shape[1:]).swapaxes(1, 2)
    else:            # filter [O, C/g, K...] -> (g, O/g, C/g, K...)
        w = filters.reshape((groups, filters.shape[0] // groups) + filters.shape[1:])
    per_group, m = w.shape[1], cig * math.prod(patches.shape[2 + spatial:])
    # patches as (N, g, 1, Y..., C/g * K), filters as (1, g, O/g, Y..., C/g * K)
    lhs = np.moveaxis(patches.reshape((n, groups, cig) + patches.shape[2:]), 2, 2 + spatial)
    lhs = lhs.reshape((n, groups, 1) + tuple(out_spatial) + (m,))
    meets = np.moveaxis(np.broadcast_to(inside, (cig,) + inside.shape), 0, spatial)
    rhs = np.where(meets.reshape((1, 1, 1) + tuple(out_spatial) + (m,)),
                   w.reshape((1, groups, per_group) + (1,) * spatial + (m,)), 0.0)
    if bias is not None:   # the bias as one more term, times 1
        lhs = np.concatenate([lhs, np.ones(lhs.shape[:-1] + (1,))], axis=-1)
        b = np.broadcast_to(np.reshape(bias, (1, groups, per_group) + (1,) * (spatial + 1)),
                            rhs.shape[:-1] + (1,))
        rhs = np.concatenate([rhs, b], axis=-1)
    out = sum_of_products([lhs, rhs], [-1]) if reduce is None else reduce(lhs, rhs)
    return out.reshape((n, groups * per_group) + tuple(out_spatial))


# --- drawing ---------------------------------------------------------------------------------------

def _geometry(draw, st, spatial_rank):
    """Per spatial dimension a kernel of 1 to 3 taps, a stride and a dilation of 1 or 2, and
    padding of 0 to 2 per side."""
    kernel = [draw(st.integers(1, 3)) for _ in range(spatial_rank)]
    stride = [draw(st.integers(1, 2)) for _ in range(spatial_rank)]
    dilation = [draw(st.integers(1, 2)) for _ in range(spatial_rank)]
    padding = [[draw(st.integers(0, 2)), draw(st.integers(0, 2))] for _ in range(spatial_rank)]
    return kernel, stride, dilation, padding


def _conv_sizes(draw, st, kernel, dilation, padding):
    """Spatial input sizes over which every window fits at least once."""
    return [draw(st.integers(max(1, (k - 1) * d + 1 - lo - hi), 5))
            for k, d, (lo, hi) in zip(kernel, dilation, padding)]


def _deconv_sizes(draw, st, kernel, stride, dilation, padding):
    """Spatial input sizes whose default output holds at least one element, and an explicit
    output size (the default plus up to stride - 1, which conv maps back to the input size)."""
    sizes, outputs = [], []
    for k, s, d, (lo, hi) in zip(kernel, stride, dilation, padding):
        least = max(1, -((1 + lo + hi - (k - 1) * d - 1) // -s) + 1)   # ceil(...) + 1
        n = draw(st.integers(least, least + 3))
        outputs.append((n - 1) * s + (k - 1) * d + 1 - lo - hi + draw(st.integers(0, s - 1)))
        sizes.append(n)
    return sizes, outputs


def _with_bias(draw, kit, spec, dtype, shapes, attrs, channels):
    absent = kit.absent_inputs(draw, spec)
    shapes = shapes + (() if absent else ((1, channels),))
    return kit.Signature((dtype,) * len(shapes), shapes, kit.with_absent(attrs, absent), dtype)


def draw_deconv(draw, kit, spec, dtype):
    """input [N, I, spatial...] (1 or 2 spatial dimensions), filter [I, O / groups, kernel...]
    with groups 1 or 2, bias [1, O] or none, and output_shape [] or explicit."""
    st = kit.st
    spatial = draw(st.integers(1, 2))
    kernel, stride, dilation, padding = _geometry(draw, st, spatial)
    groups = draw(st.integers(1, 2))
    n, i, o = draw(st.integers(1, 2)), groups * draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sizes, outputs = _deconv_sizes(draw, st, kernel, stride, dilation, padding)
    explicit = draw(st.booleans())
    attrs = {"kernel": kernel, "padding": padding, "stride": stride, "dilation": dilation,
             "groups": groups, "output_shape": [n, o * groups] + outputs if explicit else []}
    shapes = ((n, i, *sizes), (i, o, *kernel))
    return _with_bias(draw, kit, spec, dtype, shapes, attrs, o * groups)


def draw_separable_conv(draw, kit, spec, dtype):
    """input [N, C, spatial...], plane_filter [C * m, 1, kernel...] (multiplier m of 1 or 2),
    point_filter [O, C * m / groups, 1...] with groups 1 or 2, bias [1, O] or none."""
    st = kit.st
    spatial = draw(st.integers(1, 2))
    kernel, stride, dilation, padding = _geometry(draw, st, spatial)
    n, c, m = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    groups = 2 if c * m % 2 == 0 and draw(st.booleans()) else 1
    o = groups * draw(st.integers(1, 3))
    sizes = _conv_sizes(draw, st, kernel, dilation, padding)
    attrs = {"kernel": kernel, "padding": padding, "stride": stride, "dilation": dilation,
             "groups": groups}
    shapes = ((n, c, *sizes), (c * m, 1, *kernel), (o, c * m // groups) + (1,) * spatial)
    return _with_bias(draw, kit, spec, dtype, shapes, attrs, o)


def draw_separable_deconv(draw, kit, spec, dtype):
    """input [N, I, spatial...], point_filter [I, P / groups, 1...] with groups 1 or 2,
    plane_filter [P, 1, kernel...], bias [1, P] or none, output_shape [] or explicit."""
    st = kit.st
    spatial = draw(st.integers(1, 2))
    kernel, stride, dilation, padding = _geometry(draw, st, spatial)
    groups = draw(st.integers(1, 2))
    n, i, p = (draw(st.integers(1, 2)), groups * draw(st.integers(1, 2)),
               groups * draw(st.integers(1, 2)))
    sizes, outputs = _deconv_sizes(draw, st, kernel, stride, dilation, padding)
    attrs = {"kernel": kernel, "padding": padding, "stride": stride, "dilation": dilation,
             "groups": groups, "output_shape": [n, p] + outputs if draw(st.booleans()) else []}
    shapes = ((n, i, *sizes), (p, 1, *kernel), (i, p // groups) + (1,) * spatial)
    return _with_bias(draw, kit, spec, dtype, shapes, attrs, p)


# --- feeding --------------------------------------------------------------------------------------

def _met(shape, attrs, y, transposed):
    """Output position ``y``'s taps: per spatial dimension the input positions they meet (1-D,
    one per tap meeting one, in the taps' row-major order), and the mask ``(K...)`` of those."""
    positions, inside = _window(shape, attrs, transposed)
    grid = np.broadcast_arrays(*positions, inside)
    meets = grid[-1][tuple(y)]
    return tuple(p[tuple(y)][meets] for p in grid[:-1]), meets


def _group(size, groups, g):
    """The channels of group ``g`` among ``size`` split into ``groups`` (0: one per channel)."""
    per = size // (groups or size)
    return np.arange(g * per, (g + 1) * per)


def _read(x, n, channels, positions):
    """x[n, c, p] for each channel c and each position p (a tuple of per-dimension indices),
    each element once, in row-major order."""
    flat = np.ravel_multi_index((n, np.asarray(channels)[:, None])
                                + tuple(p[None, :] for p in positions), x.shape)
    return x.ravel()[np.unique(flat)]


def feed_deconv(inputs, attrs, index):
    """x[n, i, p] and filter[i, o % (O / groups), k] over the input channels i of o's group and
    the (p, k) with p * stride + k * dilation - low = y, and bias[0, o]."""
    x, filters, *bias = inputs
    n, o, *y = index
    per_group = filters.shape[1]
    channels = _group(x.shape[1], attrs["groups"], o // per_group)
    positions, meets = _met(x.shape[2:], attrs, y, transposed=True)
    return ([_read(x, n, channels, positions), filters[channels, o % per_group][:, meets].ravel()]
            + [b[:, o].ravel() for b in bias])


def feed_separable_conv(inputs, attrs, index):
    """The depthwise channels j of o's group (point_filter's columns): x[n, j // multiplier, .]
    and plane_filter[j, 0, k] over the taps k of y meeting the input; point_filter[o] unless
    no tap does (then every filtered[n, j, y] is a sum of no term); bias[0, o]."""
    x, plane, point, *bias = inputs
    n, o, *y = index
    groups = attrs["groups"] or plane.shape[0]
    depthwise = _group(plane.shape[0], groups, o // (point.shape[0] // groups))
    positions, meets = _met(x.shape[2:], attrs, y, transposed=False)
    points = point[o].ravel()
    return ([_read(x, n, depthwise // (plane.shape[0] // x.shape[1]), positions),
             plane[depthwise, 0][:, meets].ravel(), points if meets.any() else points[:0]]
            + [b[:, o].ravel() for b in bias])


def feed_separable_deconv(inputs, attrs, index):
    """The input channels i of j's group: x[n, i, p] over the (p, k) with p * stride + k *
    dilation - low = y, point_filter[i, j % (P / groups)] unless no such p exists (then
    output[n, j, y] reads no filtered element), plane_filter[j, 0, k] over those k; bias[0, j]."""
    x, plane, point, *bias = inputs
    n, j, *y = index
    per_group = point.shape[1]
    channels = _group(x.shape[1], attrs["groups"], j // per_group)
    positions, meets = _met(x.shape[2:], attrs, y, transposed=True)
    points = point[channels, j % per_group].ravel()
    return ([_read(x, n, channels, positions), plane[j, 0][meets],
             points if meets.any() else points[:0]] + [b[:, j].ravel() for b in bias])


# --- the ops ---------------------------------------------------------------------------------------

def _bias(rest):
    return rest[0] if rest else None


def _pointwise(spatial):
    return {"kernel": [1] * spatial, "padding": [[0, 0]] * spatial, "stride": [], "dilation": []}


def nnef_attrs(case, *names) -> dict:
    """The NNEF attributes: border 'constant', padding as tuples, stride, dilation, ``names``."""
    attrs = {"border": "constant", "stride": case.attrs["stride"],
             "dilation": case.attrs["dilation"],
             "padding": [tuple(int(p) for p in pair) for pair in case.attrs["padding"]]}
    return {**attrs, **{name: case.attrs[name] for name in names}}


def _inputs(case):
    return [f"in{i}" for i in range(len(case.inputs))]


def channels_size(shapes, attrs):
    """deconv's terms per output: the group's input channels times the taps, and the bias."""
    return shapes[1][0] // attrs["groups"] * math.prod(shapes[1][2:]) + 1


# --- numpy -----------------------------------------------------------------------------------------

def _by_group(x, w, groups, transposed):
    """x as (N, g, C/g, spatial...) and w as (g, C/g, O/g, kernel...) (filters in deconv's
    layout [C, O/g, ...]; conv's [O, C/g, ...] regrouped)."""
    n, c = x.shape[:2]
    groups = groups or c
    xs = x.reshape((n, groups, c // groups) + x.shape[2:])
    if transposed:
        return xs, w.reshape((groups, c // groups) + w.shape[1:])
    ws = w.reshape((groups, w.shape[0] // groups) + w.shape[1:])
    return xs, ws.swapaxes(1, 2)


def _tap_slices(k, sizes, out_sizes, stride, dilation, low, transposed):
    """Per spatial dimension, (input slice, output slice) tap ``k`` pairs up."""
    pairs = []
    for kk, n, m, s, d, lo in zip(k, sizes, out_sizes, stride, dilation, low):
        if transposed:   # input p -> output p * s + kk * d - lo
            first = max(0, -(-(lo - kk * d) // s))
            last = min(n - 1, (m - 1 + lo - kk * d) // s)
            start = first * s + kk * d - lo
            pairs.append((slice(first, last + 1), slice(start, start + (last - first) * s + 1, s)
                          if last >= first else slice(0, 0)))
        else:            # output y <- padded input y * s + kk * d
            pairs.append((slice(kk * d, kk * d + (m - 1) * s + 1, s), slice(0, m)))
    return pairs


def numpy_grouped(x, w, bias, attrs, *, groups, transposed):
    """The numpy backend's conv or deconv in x's type: per tap, ``np.einsum`` over the group's
    channels added into the output (conv over ``np.pad``-ded zeros)."""
    spatial = x.ndim - 2
    geometry = _spatial(attrs, spatial)
    stride, dilation = geometry["stride"], geometry["dilation"]
    low = [p[0] for p in attrs["padding"]]
    if transposed:
        out_sizes = unpooled_shape(x.shape[2:], geometry)
    else:
        out_sizes = pooled_shape(x.shape[2:], geometry)
        x = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in attrs["padding"]])
    xs, ws = _by_group(x, w, groups, transposed)
    out = np.zeros((x.shape[0], ws.shape[0], ws.shape[2]) + tuple(out_sizes), x.dtype)
    for k in np.ndindex(*attrs["kernel"]):
        pairs = _tap_slices(k, x.shape[2:], out_sizes, stride, dilation, low, transposed)
        source = xs[(Ellipsis,) + tuple(a for a, _ in pairs)]
        out[(Ellipsis,) + tuple(b for _, b in pairs)] += np.einsum(
            "ngi...,gio->ngo...", source, ws[(Ellipsis,) + k], dtype=x.dtype)
    out = out.reshape((out.shape[0], -1) + out.shape[3:])
    return out if bias is None else out + bias.reshape((1, -1) + (1,) * spatial)


def numpy_deconv(x, filters, *bias, kernel, padding, stride, dilation, groups, output_shape,
                 absent_inputs=()):
    """The numpy backend: :func:`numpy_grouped`, transposed."""
    attrs = dict(kernel=kernel, padding=padding, stride=stride, dilation=dilation,
                 output_shape=output_shape)
    return numpy_grouped(x, filters, _bias(bias), attrs, groups=groups, transposed=True)


def numpy_separable_conv(x, plane, point, *bias, kernel, padding, stride, dilation, groups,
                         absent_inputs=()):
    """The numpy backend: :func:`numpy_grouped` twice, as the fragment's body."""
    attrs = dict(kernel=kernel, padding=padding, stride=stride, dilation=dilation)
    filtered = numpy_grouped(x, plane, None, attrs, groups=0, transposed=False)
    return numpy_grouped(filtered, point, _bias(bias), _pointwise(x.ndim - 2), groups=groups,
                         transposed=False)


def numpy_separable_deconv(x, plane, point, *bias, kernel, padding, stride, dilation, groups,
                           output_shape, absent_inputs=()):
    """The numpy backend: :func:`numpy_grouped` twice, transposed, as the fragment's body."""
    filtered = numpy_grouped(x, point, None, _pointwise(x.ndim - 2), groups=groups,
                             transposed=True)
    attrs = dict(kernel=kernel, padding=padding, stride=stride, dilation=dilation,
                 output_shape=output_shape)
    return numpy_grouped(filtered, plane, _bias(bias), attrs, groups=0, transposed=True)



@op("nnef_deconv", version=1, draw=draw_deconv, draw_honours=frozenset({"optional"}),
    feeding=feed_deconv,
    accumulation_length=channels_size,
    nnef=lambda case, call: call(_inputs(case), nnef_attrs(case, "output_shape", "groups")),
    numpy=numpy_deconv)
def oracle_nnef_deconv(x, filters, *bias, kernel, padding, stride, dilation, groups,
                       output_shape, absent_inputs=()):
    """deconv: the adjoint of conv with the same filter (+ bias)."""
    attrs = dict(kernel=kernel, padding=padding, stride=stride, dilation=dilation,
                 output_shape=output_shape)
    return (grouped(x, filters, _bias(bias), attrs, groups=groups, transposed=True),)


@op("nnef_separable_conv", version=1, draw=draw_separable_conv,
    draw_honours=frozenset({"optional"}), feeding=feed_separable_conv,
    accumulation_length=lambda shapes, attrs: math.prod(shapes[1][2:]) + shapes[2][1] + 1,
    nnef=lambda case, call: call(_inputs(case), nnef_attrs(case, "groups")),
    numpy=numpy_separable_conv)
def oracle_nnef_separable_conv(x, plane, point, *bias, kernel, padding, stride, dilation,
                               groups, absent_inputs=()):
    """filtered = conv(input, plane_filter, ..., groups = 0);
    output = conv(filtered, point_filter, bias, groups = groups)."""
    attrs = dict(kernel=kernel, padding=padding, stride=stride, dilation=dilation)
    filtered = grouped(x, plane, None, attrs, groups=0, transposed=False)
    return (grouped(filtered, point, _bias(bias), _pointwise(x.ndim - 2), groups=groups,
                    transposed=False),)


@op("nnef_separable_deconv", version=1, draw=draw_separable_deconv,
    draw_honours=frozenset({"optional"}), feeding=feed_separable_deconv,
    accumulation_length=lambda shapes, attrs: (shapes[2][0] // attrs["groups"]
                                               + math.prod(shapes[1][2:]) + 1),
    nnef=lambda case, call: call(_inputs(case), nnef_attrs(case, "output_shape", "groups")),
    numpy=numpy_separable_deconv)
def oracle_nnef_separable_deconv(x, plane, point, *bias, kernel, padding, stride, dilation,
                                 groups, output_shape, absent_inputs=()):
    """filtered = deconv(input, point_filter, groups = groups);
    output = deconv(filtered, plane_filter, bias, ..., output_shape, groups = 0)."""
    filtered = grouped(x, point, None, _pointwise(x.ndim - 2), groups=groups, transposed=True)
    attrs = dict(kernel=kernel, padding=padding, stride=stride, dilation=dilation,
                 output_shape=output_shape)
    return (grouped(filtered, plane, _bias(bias), attrs, groups=0, transposed=True),)


# --- regions ---------------------------------------------------------------------------------------

def _separable_stages(inputs, attrs):
    """``((first, its weights), (second, its weights))``: the two stages of separable_conv or
    separable_deconv (which has ``output_shape``), each a function of its input and weights
    (and ``reduce``, as :func:`grouped`'s)."""
    x, plane, point = inputs[:3]
    spatial = x.ndim - 2
    window = dict(kernel=attrs["kernel"], padding=attrs["padding"], stride=attrs["stride"],
                  dilation=attrs["dilation"], output_shape=attrs.get("output_shape") or [])
    transposed = "output_shape" in attrs

    def stage(geometry, groups):
        return lambda v, w, reduce=None: grouped(v, w, None, geometry, groups=groups,
                                                 transposed=transposed, reduce=reduce)

    pointwise, depthwise = stage(_pointwise(spatial), attrs["groups"]), stage(window, 0)
    if transposed:
        return (pointwise, point), (depthwise, plane)
    return (depthwise, plane), (pointwise, point)


@region
def intermediate_overflow(ctx) -> np.ndarray:
    """separable_conv and separable_deconv outputs fed by a first-stage result whose finite
    terms' magnitudes (times ``1 + gamma_n``) reach the largest finite value of the output type:
    the body evaluated in the type makes that intermediate inf, and the second stage inf or NaN
    (inf times a zero weight, inf - inf), where the exact result may be finite."""
    if ctx.out_dtype not in FLOAT_FORMATS:
        return ctx.none()
    (first, w1), (second, w2) = _separable_stages(ctx.inputs, ctx.attrs)
    finite = [np.abs(np.where(np.isfinite(a), a, 0.0)).astype(np.float64) for a in ctx.inputs]
    with np.errstate(over="ignore", invalid="ignore"):
        magnitude = first(finite[0], np.abs(np.where(np.isfinite(w1), w1, 0.0)))
    u = FLOAT_FORMATS[ctx.out_dtype].unit_roundoff
    overflows = reaches_max_finite(magnitude, ctx.out_dtype,
                                   gamma_n=gamma(ctx.accumulation_length or 1, u))
    return second(overflows.astype(np.float64), np.ones(w2.shape)) > 0


@region
def padded_tap_times_nonfinite(ctx) -> np.ndarray:
    """separable_conv outputs fed by a depthwise result where a padded tap meets an infinite or
    NaN plane weight: border 'constant' extends the input with zeros, and whether such a zero
    times inf contributes NaN (IEEE arithmetic on the materialised zeros) or nothing (padding
    as absent, the oracle's reading) the text does not say."""
    if "output_shape" in ctx.attrs:
        return ctx.none()
    (_, plane), (second, point) = _separable_stages(ctx.inputs, ctx.attrs)
    x = ctx.inputs[0]
    nonfinite = (~np.isfinite(plane)).astype(np.float64)
    window = dict(kernel=ctx.attrs["kernel"], padding=ctx.attrs["padding"],
                  stride=ctx.attrs["stride"], dilation=ctx.attrs["dilation"])
    # the nonfinite weights a window meets over the input, and over the input and its padding
    inside = grouped(np.ones(x.shape), nonfinite, None, window, groups=0, transposed=False)
    padded = np.pad(np.ones(x.shape), [(0, 0), (0, 0)] + [tuple(p) for p in window["padding"]],
                    constant_values=1.0)
    all_taps = grouped(padded, nonfinite, None, dict(window, padding=[[0, 0]] * (x.ndim - 2)),
                       groups=0, transposed=False)
    hit = (all_taps - inside > 0).astype(np.float64)
    return second(hit, np.ones(point.shape)) > 0


@region
def intermediate_underflow(ctx) -> np.ndarray:
    """separable_conv and separable_deconv outputs fed by a first-stage result with a product
    below the smallest normal of the output type (non-zero): its rounding's absolute error
    (up to half the smallest subnormal) is then multiplied by a second-stage weight, which may
    exceed 1, so the model's underflow term (per product, unscaled) does not bound it."""
    if ctx.out_dtype not in FLOAT_FORMATS:
        return ctx.none()
    tiny = FLOAT_FORMATS[ctx.out_dtype].min_normal
    (first, w1), (second, w2) = _separable_stages(ctx.inputs, ctx.attrs)

    def underflows(lhs, rhs):
        with np.errstate(all="ignore"):
            size = np.abs(lhs.astype(np.float64) * rhs)
        return np.any((size > 0) & (size < tiny), axis=-1).astype(np.float64)

    hit = first(np.asarray(ctx.inputs[0], np.float64), np.asarray(w1, np.float64), underflows)
    return second(hit, np.ones(w2.shape)) > 0
