"""ONNX pooling (MaxPool with its Indices output, AveragePool, GlobalMaxPool, GlobalAveragePool),
written from the operators' texts (``onnx.defs.get_schema(name).doc``).

GlobalLpPool is LpPool 'with kernel size equal to the spatial dimension'.
A tensor is ``N x C x D1 x ... x Dn``; windows slide over the n spatial dimensions. Per spatial
axis the geometry is the texts' formulas: the effective kernel ``(kernel - 1) * dilation + 1``;
with explicit ``pads`` the output size ``floor`` (or, with ``ceil_mode``, ``ceil``) of
``(size + pad_begin + pad_end - effective kernel) / stride + 1``, less the windows that 'would
start in the right padded region' (they 'are ignored'); with ``auto_pad`` SAME_UPPER or
SAME_LOWER ``ceil(size / stride)`` outputs and a total pad of ``(out - 1) * stride + effective
kernel - size`` split evenly, the odd one at the end (UPPER) or the beginning (LOWER); with
VALID no padding and ``ceil((size - effective kernel + 1) / stride)`` outputs (the texts'
formulas with ceil_mode and without agree). Tap ``t`` of output ``o`` reads position ``o * stride - pad_begin + t *
dilation``; positions outside ``[0, size)`` are padding, which no maximum and (with
count_include_pad 0) no average counts.
"""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op
from conform.ops._double_double import accurate_sum, sum_of_products
from conform.ops._pooling_shapes import lp_pooling_boundaries, pooling_boundaries, pooling_invalid

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


# --- Geometry ---------------------------------------------------------------------------------

def axis_pads(size, kernel, stride, dilation, auto_pad, begin, end):
    """``(pad_begin, pad_end, outputs)`` of one spatial axis (auto_pad by the texts of the
    pooling operators and Conv: SAME pads to ceil(size / stride) outputs, the odd one at the
    end for SAME_UPPER; outputs None with explicit pads)."""
    reach = (kernel - 1) * dilation + 1
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = -(-size // stride)
        total = (out - 1) * stride + reach - size
        head = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        return head, total - head, out
    if auto_pad == "VALID":   # ceil((size - reach + 1) / stride), with ceil_mode or not
        return 0, 0, (size - reach) // stride + 1
    return begin, end, None


def _output_size(size, reach, stride, begin, end, ceil_mode, ignore_right_starts):
    span = size + begin + end - reach
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ignore_right_starts and (out - 1) * stride >= size + begin:
        out -= 1
    return out


def window_taps(spatial, attrs, ignore_right_starts=True):
    """Per spatial axis ``(positions, inside, in_extent)``: arrays ``[outputs, kernel]`` of the
    input position each tap reads, whether it is an input element, and whether it lies within
    the padded extent ``[-pad_begin, size + pad_end)`` (a ceil_mode window may reach past it).
    ``ignore_right_starts``: drop a last window starting in the right padding (the MaxPool and
    AveragePool texts say so; the LpPool text, whose formula keeps it, does not)."""
    n = len(spatial)
    kernel = attrs["kernel_shape"]
    strides = attrs.get("strides") or [1] * n
    dilations = attrs.get("dilations") or [1] * n
    pads = attrs.get("pads") or [0] * (2 * n)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    taps = []
    for i, size in enumerate(spatial):
        k, s, d = kernel[i], strides[i], dilations[i]
        begin, end, out = axis_pads(size, k, s, d, auto_pad, pads[i], pads[n + i])
        if out is None:
            out = _output_size(size, (k - 1) * d + 1, s, begin, end, attrs.get("ceil_mode", 0),
                               ignore_right_starts)
        if out < 0:   # the kernel is larger than the padded input: no output (see _pooling_shapes)
            raise ValueError(f"pooling axis {i}: the text's output size is {out} (size {size}, "
                             f"kernel {k}, dilation {d}, stride {s}, pads {begin} and {end})")
        positions = np.arange(out)[:, None] * s - begin + np.arange(k)[None, :] * d
        taps.append((positions, (positions >= 0) & (positions < size), positions < size + end))
    return taps


def spread(arrays, n):
    """Axis ``i``'s ``[outputs, kernel]`` array shaped to broadcast over ``(O1..On, K1..Kn)``."""
    shaped = []
    for i, a in enumerate(arrays):
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = a.shape
        shaped.append(a.reshape(shape))
    return shaped


def gather_windows(x, attrs, ignore_right_starts=True):
    """``(values, inside, in_extent, flat)``: x's windows as ``(N, C, O1..On, K)`` arrays (the
    K = prod(kernel) taps in row-major order; padding taps hold a clipped neighbour), the masks,
    and each tap's spatial position as ``(N, C, O1..On, K, n)`` indices."""
    n = x.ndim - 2
    taps = window_taps(x.shape[2:], attrs, ignore_right_starts)
    positions = spread([np.clip(p, 0, max(size - 1, 0)) for (p, _, _), size
                         in zip(taps, x.shape[2:])], n)
    inside = math.prod(spread([t[1] for t in taps], n))
    extent = math.prod(spread([t[2] for t in taps], n))
    values = x[(slice(None), slice(None), *positions)]
    outs, k = values.shape[2:2 + n], math.prod(values.shape[2 + n:])   # (k: outs may be empty)
    flat_k = values.shape[:2 + n] + (k,)
    spatial = np.stack(np.broadcast_arrays(*positions), axis=-1).reshape(outs + (k, n))
    return (values.reshape(flat_k), np.broadcast_to(inside, values.shape[2:]).reshape(outs + (k,)),
            np.broadcast_to(extent, values.shape[2:]).reshape(outs + (k,)), spatial)


def flat_indices(shape, spatial, storage_order, reading=0):
    """MaxPool's Indices: the flattened index of the spatial positions ``spatial`` (``(N, C,
    ..., n)``, each in its own batch and channel) in a tensor of ``shape``. Row major for
    storage_order 0. For 1, 'column major': the whole ``N x C x D1..Dn`` tensor column major
    (``reading`` 0, the text's 'storage order of the tensor'), or each (batch, channel) plane
    column major at the row-major plane offset (``reading`` 1)."""
    batch, channels, dims = shape[0], shape[1], shape[2:]
    extra = (1,) * (spatial.ndim - 3)
    b = np.arange(batch).reshape((-1, 1) + extra)
    c = np.arange(channels).reshape((1, -1) + extra)
    if not storage_order:
        plane = np.ravel_multi_index(np.moveaxis(spatial, -1, 0), dims) if dims else 0
        return (b * channels + c) * math.prod(dims) + plane
    plane = np.ravel_multi_index(np.moveaxis(spatial, -1, 0), dims, order="F") if dims else 0
    if reading:
        return (b * channels + c) * math.prod(dims) + plane
    return b + batch * c + batch * channels * plane


# --- MaxPool and AveragePool ------------------------------------------------------------------

def _lowest(dtype):
    return np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


def _max_pool(x, attrs, reading=0):
    values, inside, _, spatial = gather_windows(x, attrs)
    masked = np.where(inside, values, _lowest(x.dtype))
    y = np.max(masked, axis=-1)
    hit = inside & (masked == y[..., None])
    if x.dtype.kind not in "iu":
        hit |= inside & np.isnan(masked) & np.isnan(y)[..., None]
    pick = np.argmax(hit, axis=-1)   # the first NaN, else the first of tied maxima
    spatial = np.broadcast_to(spatial, x.shape[:2] + spatial.shape)
    chosen = np.take_along_axis(spatial, pick[..., None, None], axis=-2)[..., 0, :]
    index = flat_indices(x.shape, chosen, attrs.get("storage_order", 0), reading)
    return y, index.astype(np.int64)


def _average_pool(x, attrs, reading=0):
    values, inside, extent, _ = gather_windows(x, attrs)
    summed = np.where(inside, values, 0)
    if not attrs.get("count_include_pad", 0):
        count = inside.sum(-1)
    elif reading:   # every tap of the kernel, those past the padded extent included
        count = np.full(inside.shape[:-1], inside.shape[-1])
    else:           # the input elements and the pad elements: taps within the padded extent
        count = extent.sum(-1)
    return accurate_sum(summed, axis=-1, divisor=count)


def draw_pooling(draw, kit, spec, dtype):
    """A ``N x C x D1..Dn`` shape (n of 1 to 3) and the pooling attributes the spec declares:
    per spatial axis a kernel, stride and dilation from their ``range`` domains, ``auto_pad``
    from its choices, explicit pads (NOTSET) of 0 to effective kernel - 1 per side, sizes at
    least as large as a window needs, and the other attributes from their domains. Under SAME
    the stride stays within the effective kernel: beyond it the text's total pad is negative
    and it gives pads no negative value."""
    st, domains = kit.st, spec.signature.get("attrs", {})
    n = draw(st.integers(1, 3))

    def per_axis(name, default):
        low, high = domains[name]["range"] if name in domains else (default, default)
        return [kit.choose_int(draw, name, low, high) for _ in range(n)]

    kernel, dilations = per_axis("kernel_shape", 1), per_axis("dilations", 1)
    reach = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    auto_pad = kit.choose(draw, "auto_pad", domains["auto_pad"]["choice"])
    strides = per_axis("strides", 1)
    if auto_pad.startswith("SAME"):
        strides = [min(s, r) for s, r in zip(strides, reach)]
    pads = [draw(st.integers(0, r - 1)) for r in reach * 2] if auto_pad == "NOTSET" else [0] * 2 * n
    least = [1 if auto_pad.startswith("SAME") else max(1, r - pads[i] - pads[n + i])
             for i, r in enumerate(reach)]
    outer = [draw(st.integers(1, 2)), draw(st.integers(1, 3))]
    budget = kit.MAX_ARRAY_SIZE // math.prod(outer)
    sizes = []
    for i in range(n):
        room = budget // (math.prod(sizes) * math.prod(least[i + 1:]))
        sizes.append(draw(st.integers(least[i], max(least[i], min(least[i] + 4, room)))))
    fixed = {"kernel_shape", "strides", "dilations", "auto_pad"}
    attrs = {name: value for name, value in kit.attributes(draw, spec, {}).items() if name not in fixed}
    attrs.update(kernel_shape=kernel, strides=strides, dilations=dilations, auto_pad=auto_pad,
                 pads=pads)
    if "dilations" not in domains:
        del attrs["dilations"]
    return kit.Signature((dtype,), (tuple(outer + sizes),), attrs, dtype)


def feed_pooling(inputs, attrs, index, ignore_right_starts=True):
    """The input elements of out[index]'s window (padding left out)."""
    (x,) = inputs
    taps = window_taps(x.shape[2:], attrs, ignore_right_starts)
    spans = [positions[o][inside[o]] for o, (positions, inside, _) in zip(index[2:], taps)]
    return [x[tuple(index[:2])][np.ix_(*spans)].ravel()]


def feed_global(inputs, attrs, index):
    """The (batch, channel) plane reduced into out[index]."""
    return [inputs[0][tuple(index[:2])].ravel()]


def kernel_size(shapes, attrs):
    """The taps of one window: at most that many terms are summed into an average."""
    return math.prod(attrs["kernel_shape"])


def plane_size(shapes, attrs):
    """The elements of one (batch, channel) plane."""
    return math.prod(shapes[0][2:])


def canonical_max_pool(outputs, case):
    """The text does not say which of a window's equal maxima (-0 and +0 included) Indices
    names: an index naming an element of the window whose value equals the maximum is mapped to
    the oracle's (the first in the window's row-major order). Any other index is left alone and
    fails."""
    y, indices = outputs
    x = np.asarray(case.inputs[0]).astype(np.float64)
    values, inside, _, spatial = gather_windows(x, case.attrs)
    spatial = np.broadcast_to(spatial, x.shape[:2] + spatial.shape)
    taps = flat_indices(x.shape, spatial.reshape(x.shape[:2] + (-1, spatial.shape[-1])),
                        case.attrs.get("storage_order", 0)).reshape(values.shape)
    expected_y, expected_indices = _max_pool(x, case.attrs)
    if indices.shape != expected_indices.shape:
        return outputs
    named = inside & (taps == np.asarray(indices, np.int64)[..., None])
    tied = (named & (values == expected_y[..., None])).any(-1)
    return [y, np.where(tied, expected_indices, indices).astype(np.asarray(indices).dtype)]


_ATTRIBUTES = ("kernel_shape", "strides", "dilations", "auto_pad", "ceil_mode", "storage_order",
               "count_include_pad", "p")


def onnx_pooling(case, graph):
    """One node with the case's attributes; pads only with explicit padding (the text: pads
    'cannot be used simultaneously with auto_pad')."""
    attrs = {name: case.attrs[name] for name in _ATTRIBUTES if name in case.attrs}
    if attrs["auto_pad"] == "NOTSET":
        attrs["pads"] = case.attrs["pads"]
    graph.node(graph.op_type, graph.inputs, **attrs)


_HONOURS = frozenset({"attrs"})
def from_onnx_pooling(inputs, attrs, opset):
    """An ONNX pooling node as a case: 'If not present, the stride defaults to 1 along each
    spatial axis', and pads to 0 at the beginning and end of each (the texts); the schemas give
    these attributes no default of their own."""
    axes = len(attrs["kernel_shape"])
    return inputs[:1], {"strides": [1] * axes, "pads": [0] * (2 * axes), **attrs}


_WINDOWED = dict(draw=draw_pooling, draw_honours=_HONOURS, feeding=feed_pooling, onnx=onnx_pooling,
                 boundaries=pooling_boundaries, invalid=pooling_invalid,
                 from_onnx=from_onnx_pooling)


def numpy_max_pool(x, *, kernel_shape, strides, pads, auto_pad, ceil_mode, storage_order,
                   dilations=None):
    """The numpy backend: ``np.max`` and ``np.argmax`` over each window's input elements
    (:func:`gather_windows`; padding taps hold the type's lowest value), the index of the
    chosen tap flattened as the text's storage order says."""
    attrs = dict(kernel_shape=kernel_shape, strides=strides, pads=pads, auto_pad=auto_pad,
                 ceil_mode=ceil_mode, dilations=dilations)
    values, inside, _, spatial = gather_windows(x, attrs)
    masked = np.where(inside, values, x.dtype.type(_lowest(x.dtype)))
    y = np.max(masked, axis=-1)
    # the first input tap holding the maximum (a padding tap never: it may tie the type's
    # lowest value), NaN as NumPy's max propagates it
    hit = inside & ((masked == y[..., None]) | (np.isnan(masked) & np.isnan(y)[..., None])
                    if x.dtype.kind in "fV" else masked == y[..., None])
    pick = np.argmax(hit, axis=-1)
    spatial = np.broadcast_to(spatial, x.shape[:2] + spatial.shape)
    chosen = np.take_along_axis(spatial, pick[..., None, None], axis=-2)[..., 0, :]
    return y, flat_indices(x.shape, chosen, storage_order).astype(np.int64)


@op("onnx_max_pool", numpy=numpy_max_pool, version=1, canonical=canonical_max_pool, **_WINDOWED)
def oracle_onnx_max_pool(x, *, kernel_shape, strides, pads, auto_pad, ceil_mode, storage_order,
                         dilations=None, reading=0):
    """ONNX MaxPool: Y, the maximum of each window's input elements ('exclude pad'; NaN
    propagates), and Indices, the flattened index of the element chosen (see flat_indices;
    ``reading`` picks the reading of storage_order 1)."""
    attrs = dict(kernel_shape=kernel_shape, strides=strides, pads=pads, auto_pad=auto_pad,
                 ceil_mode=ceil_mode, storage_order=storage_order, dilations=dilations)
    return _max_pool(x, attrs, reading)


def numpy_average_pool(x, *, kernel_shape, strides, pads, auto_pad, ceil_mode,
                       count_include_pad, dilations=None):
    """The numpy backend: each window's ``np.sum`` in x's type divided by its count (the
    input taps, or with count_include_pad the taps within the padded extent)."""
    attrs = dict(kernel_shape=kernel_shape, strides=strides, pads=pads, auto_pad=auto_pad,
                 ceil_mode=ceil_mode, dilations=dilations)
    values, inside, extent, _ = gather_windows(x, attrs)
    total = np.sum(np.where(inside, values, x.dtype.type(0)), axis=-1, dtype=x.dtype)
    count = (extent if count_include_pad else inside).sum(-1)
    return total / count.astype(x.dtype)


@op("onnx_average_pool", numpy=numpy_average_pool, version=1, accumulation_length=kernel_size, **_WINDOWED)
def oracle_onnx_average_pool(x, *, kernel_shape, strides, pads, auto_pad, ceil_mode,
                             count_include_pad, dilations=None, reading=0):
    """ONNX AveragePool: each window's sum 'divided by the number of elements (exclude pad when
    attribute count_include_pad is zero)'; ``reading`` picks what a ceil_mode window reaching
    past the end padding counts with count_include_pad 1 (see _average_pool)."""
    attrs = dict(kernel_shape=kernel_shape, strides=strides, pads=pads, auto_pad=auto_pad,
                 ceil_mode=ceil_mode, count_include_pad=count_include_pad, dilations=dilations)
    return (_average_pool(x, attrs, reading),)


def feed_lp_pool(inputs, attrs, index):
    """The input elements of out[index]'s window, LpPool's windows."""
    return feed_pooling(inputs, attrs, index, ignore_right_starts=False)


def draw_lp_pool(draw, kit, spec, dtype):
    """As draw_pooling, but with ceil_mode 0 where ceil_mode would make a window start in the
    right padding or past it: the LpPool text lacks MaxPool's and AveragePool's sentence that
    ignores such windows, and only its shape formula counts them (onnxruntime and
    onnx.reference drop them): whether they exist is open, and a shape cannot be a region."""
    signature = draw_pooling(draw, kit, spec, dtype)
    attrs = signature.attrs
    if attrs["ceil_mode"]:
        spatial = signature.shapes[0][2:]
        kept = [t[0].shape for t in window_taps(spatial, attrs, ignore_right_starts=False)]
        if kept != [t[0].shape for t in window_taps(spatial, attrs)]:
            attrs["ceil_mode"] = 0
    return signature


def numpy_lp_pool(x, *, kernel_shape, strides, pads, auto_pad, ceil_mode, p, dilations=None):
    """The numpy backend: ``np.sum(np.abs(w) ** p) ** (1 / p)`` per window, in x's type."""
    attrs = dict(kernel_shape=kernel_shape, strides=strides, pads=pads, auto_pad=auto_pad,
                 ceil_mode=ceil_mode, dilations=dilations)
    values, inside, _, _ = gather_windows(x, attrs, ignore_right_starts=False)
    powers = np.where(inside, np.abs(values), x.dtype.type(0)) ** x.dtype.type(p)
    return np.sum(powers, axis=-1, dtype=x.dtype) ** (x.dtype.type(1) / x.dtype.type(p))


@op("onnx_lp_pool", numpy=numpy_lp_pool, version=1, accumulation_length=kernel_size, onnx=onnx_pooling,
    draw=draw_lp_pool, draw_honours=_HONOURS, feeding=feed_lp_pool,
    boundaries=lp_pooling_boundaries, invalid=pooling_invalid, from_onnx=from_onnx_pooling)
def oracle_onnx_lp_pool(x, *, kernel_shape, strides, pads, auto_pad, ceil_mode, p,
                        dilations=None):
    """ONNX LpPool: 'the Lp norm on all values of a subset of the input', ``(sum |x_i|**p)**(1/p)``
    over each window's input elements (padding adds |0|**p = 0), the sum in double-double. Its
    output shape is the text's formula alone: unlike MaxPool's and AveragePool's, the LpPool text
    does not ignore a ceil_mode window starting in the right padding (its value is 0; such
    cases are not drawn, see draw_lp_pool)."""
    attrs = dict(kernel_shape=kernel_shape, strides=strides, pads=pads, auto_pad=auto_pad,
                 ceil_mode=ceil_mode, dilations=dilations)
    values, inside, _, _ = gather_windows(x, attrs, ignore_right_starts=False)
    return (_lp_norm(np.where(inside, np.abs(values), 0), [-1], p),)


def _lp_norm(magnitudes, axes, p):
    """``(sum magnitudes**p)**(1/p)`` over ``axes``, the sum of the p-factor products in
    double-double (~exact)."""
    total = sum_of_products([magnitudes] * int(p), list(axes))
    return total if p == 1 else np.sqrt(total) if p == 2 else total ** (1.0 / p)


def draw_global(draw, kit, spec, dtype):
    """A ``N x C x D1..Dn`` shape, n of 1 to 3."""
    shape = draw(kit.shape(min_rank=3, max_rank=5, max_side=6))
    return kit.Signature((dtype,), (shape,), {}, dtype)


_GLOBAL = dict(draw=draw_global, feeding=feed_global)


def numpy_global_max_pool(x):
    """The numpy backend: ``np.max`` over the spatial axes, kept."""
    return np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True)


@op("onnx_global_max_pool", numpy=numpy_global_max_pool, version=1, **_GLOBAL)
def oracle_onnx_global_max_pool(x):
    """ONNX GlobalMaxPool: MaxPool 'with kernel size equal to the spatial dimension': the
    maximum of each (batch, channel) plane, spatial dimensions kept with size 1."""
    return (np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True),)


def numpy_global_average_pool(x):
    """The numpy backend: ``np.mean`` over the spatial axes, kept (float16 accumulates in
    float32, as NumPy does)."""
    return np.mean(x, axis=tuple(range(2, x.ndim)), keepdims=True)


@op("onnx_global_average_pool", numpy=numpy_global_average_pool, version=1, accumulation_length=plane_size, **_GLOBAL)
def oracle_onnx_global_average_pool(x):
    """ONNX GlobalAveragePool: the mean of each (batch, channel) plane (no padding, so no
    count_include_pad question), spatial dimensions kept with size 1."""
    return (accurate_sum(x, axis=tuple(range(2, x.ndim)), keepdims=True,
                         divisor=math.prod(x.shape[2:])),)




def numpy_global_lp_pool(x, *, p=2):
    """The numpy backend: ``np.sum(np.abs(x) ** p)`` over the spatial axes, kept, in x's type,
    then its root by ``np.sqrt`` or ``np.cbrt`` (a power ``1 / p`` rounded into a narrow type
    errs by ``u ln(sum) / p`` relative)."""
    powers = np.abs(x) ** x.dtype.type(p)
    total = np.sum(powers, axis=tuple(range(2, x.ndim)), keepdims=True, dtype=x.dtype)
    return {1: np.positive, 2: np.sqrt, 3: np.cbrt}[p](total)


def draw_global_lp_pool(draw, kit, spec, dtype):
    """As draw_global, with ``p`` from the spec's domain."""
    signature = draw_global(draw, kit, spec, dtype)
    return signature._replace(attrs=kit.attributes(draw, spec, {}))


def onnx_global_lp_pool(case, graph):
    """One node with the case's ``p``."""
    graph.node(graph.op_type, graph.inputs, p=case.attrs["p"])


@op("onnx_global_lp_pool", numpy=numpy_global_lp_pool, version=1, accumulation_length=plane_size,
    draw=draw_global_lp_pool, draw_honours=_HONOURS, feeding=feed_global, onnx=onnx_global_lp_pool)
def oracle_onnx_global_lp_pool(x, *, p=2):
    """ONNX GlobalLpPool: 'equivalent to LpPool with kernel size equal to the spatial dimension
    of input tensor': the Lp norm ``(sum |x_i|**p)**(1/p)`` of each (batch, channel) plane, the
    spatial dimensions kept with size 1 (no padding)."""
    axes = tuple(range(2, x.ndim))
    return (np.expand_dims(_lp_norm(np.abs(x), axes, p), axes),)
