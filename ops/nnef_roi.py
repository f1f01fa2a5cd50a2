"""NNEF region-of-interest fragments: avg_roi_pool, max_roi_pool, roi_resample, avg_roi_align
and max_roi_align (NNEF 1.0 §4, region-of-interest operations).

What conform holds of their text: the declarations in the ``nnef`` package's standard library
(stdlib_source.h; nnef 1.0.10): ``input: tensor<scalar>``, ``rois: tensor<scalar>``,
``batch_index: tensor<integer>``, ``output_size: integer[]``; roi_resample takes a ``method``
(default 'symmetric'), and the two align fragments are compound:

    size = output_size * sampling_rate (per dimension)
    resized = roi_resample(input, rois, batch_index, output_size = size, method = resize_method)
    output = avg_pool (or max_pool)(resized, size = sampling_rate, stride = sampling_rate)

The output shapes come from the package's shapes.py (``roi_shape``): ``input`` of rank 2 + d,
``rois`` of shape ``[m, 4]`` (the NNEF 2.0 draft, rev. 8 §4.5.3, writes ``[n, 2 * d]``),
``batch_index`` of shape ``[m]``, ``output_size`` of length d, output ``[m, channels] +
output_size``. Region ``i`` of the output is cut from batch ``batch_index[i]``, every channel.

Neither the seeds (NNEF chapters 1-3) nor the NNEF-Docs repository (the 2.0 draft, whose
§4.5.3 gives these operators as declarations only, 'intrinsic operators') give how a region's
coordinates are laid out or where its bins and samples fall. The oracle therefore says only what
every reading gives: each output element is an average, a maximum or an interpolation (a convex
combination) of elements of one (batch, channel) plane, so where that plane holds one value
the output is that value. Cases are drawn so (``values_roi``); an element whose plane is not
constant is not judged (region ``roi_plane_not_constant``).
"""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op, region
from conform.ops.indexing import index_type


def _planes(x, batch_index) -> np.ndarray:
    """``[m, channels]``: the value of region i's plane in each channel (its first element)."""
    x = np.asarray(x, np.float64)
    return x[np.asarray(batch_index, np.int64)][:, :, 0, 0]


def roi_constant(x, rois, batch_index, output_size):
    """The output where each (batch, channel) plane is constant: the plane's value, repeated
    over ``output_size``."""
    planes = _planes(x, batch_index)
    return np.broadcast_to(planes[:, :, None, None], planes.shape + tuple(output_size)).copy()


def draw_roi(draw, kit, spec, dtype):
    """Input ``[b, c, h, w]`` with b, c in 1..2 and h, w in 2..4; 1 to 3 regions (``rois``
    ``[m, 4]``, ``batch_index`` ``[m]`` of one of the spec's integer types); the spec's attributes, ``output_size`` and
    ``sampling_rate`` of length 2 with items 1..3 and 1..2."""
    st = kit.st
    b, c, h, w, m = (draw(st.integers(*r)) for r in ((1, 2), (1, 2), (2, 4), (2, 4), (1, 3)))
    attrs = kit.attributes(draw, spec, {})
    attrs["output_size"] = [draw(st.integers(1, 3)) for _ in range(2)]
    if "resize_method" in attrs:
        attrs["sampling_rate"] = [draw(st.integers(1, 2)) for _ in range(2)]
    index = index_type(draw, kit, spec, "batch_index")
    return kit.Signature((dtype, dtype, index), ((b, c, h, w), (m, 4), (m,)), attrs, dtype)


def values_roi(rng, inputs, attrs):
    """Each (batch, channel) plane one finite value (the filled plane's first finite element,
    else a uniform one): a zero weight times an infinity is NaN in one reading and nothing in
    another. Region coordinates in [0, 1], non-decreasing along each row, so that whichever
    pairing of the four is a region's low and high corner, low <= high, and the region lies in
    the input both as pixel coordinates (h, w >= 2) and as coordinates normalized to [0, 1]."""
    x, rois, batch = inputs
    wide = x.astype(np.float64)
    wide = np.where(np.isfinite(wide), wide, rng.uniform(-4, 4, x.shape))
    planes = np.broadcast_to(wide[:, :, :1, :1], x.shape).astype(x.dtype)
    made = np.sort(rng.uniform(0, 1, rois.shape), axis=1).astype(rois.dtype)
    return [planes, made, rng.integers(0, x.shape[0], batch.shape).astype(batch.dtype)]


def feed_roi(inputs, attrs, index):
    """out[i, c, ...] combines elements of the plane (batch_index[i], c) and reads region i;
    the batch index selects."""
    x, rois, batch = inputs
    i, c = index[:2]
    return [np.asarray(x)[int(batch[i]), c].ravel(), np.asarray(rois)[i], None]


def roi_length(shapes, attrs) -> int:
    """The terms one output element combines: at most a plane's h * w elements (a bin's
    average), or a bilinear sample's 4 products with 3 roundings each in the weights, averaged
    over prod(sampling_rate) <= 4 samples (4 + 3 + 4 terms): h * w + 8 covers both."""
    return math.prod(shapes[0][2:]) + 8


def nnef_roi(case, call):
    """The NNEF invocation: input, rois, batch_index and the case's attributes."""
    return call(["in0", "in1", "in2"], dict(case.attrs))


def _register(name: str, doc: str):
    def oracle(x, rois, batch_index, *, output_size, **attrs):
        return (roi_constant(x, rois, batch_index, output_size),)

    oracle.__doc__ = doc
    oracle.__name__ = oracle.__qualname__ = f"oracle_{name}"
    return op(name, version=1, draw=draw_roi, draw_honours=frozenset({"attrs"}),
              values=values_roi, feeding=feed_roi, accumulation_length=roi_length,
              nnef=nnef_roi)(oracle)


oracle_nnef_avg_roi_pool = _register(
    "nnef_avg_roi_pool", "output[i, c] = the average of each bin of region i in plane "
    "(batch_index[i], c): the plane's value where it is constant.")
oracle_nnef_max_roi_pool = _register(
    "nnef_max_roi_pool", "output[i, c] = the maximum of each bin of region i in plane "
    "(batch_index[i], c): the plane's value where it is constant.")
oracle_nnef_roi_resample = _register(
    "nnef_roi_resample", "output[i, c] = region i of plane (batch_index[i], c) resampled "
    "to output_size (interpolated): the plane's value where it is constant.")
oracle_nnef_avg_roi_align = _register(
    "nnef_avg_roi_align", "avg_pool(roi_resample(input, ..., output_size * sampling_rate), "
    "size = stride = sampling_rate): the plane's value where it is constant.")
oracle_nnef_max_roi_align = _register(
    "nnef_max_roi_align", "max_pool(roi_resample(input, ..., output_size * sampling_rate), "
    "size = stride = sampling_rate): the plane's value where it is constant.")


@region
def roi_plane_not_constant(ctx) -> np.ndarray:
    """Output elements of a region whose (batch, channel) plane holds more than one value:
    where in the plane a region's bins and samples fall is not in the texts conform holds."""
    x = np.asarray(ctx.inputs[0], np.float64)
    batch = np.asarray(ctx.inputs[2], np.int64)
    planes = x[batch]
    first = planes[:, :, :1, :1]
    varies = ~np.all((planes == first) | (np.isnan(planes) & np.isnan(first)), axis=(2, 3))
    return np.broadcast_to(varies[:, :, None, None], ctx.expected.shape)
