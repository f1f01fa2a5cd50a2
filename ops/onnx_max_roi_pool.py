"""ONNX MaxRoiPool, from its text (``onnx.defs.get_schema("MaxRoiPool").doc``): 'apply max
pooling across each RoI, to produce output 4-D tensor of shape (num_rois, channels,
pooled_shape[0], pooled_shape[1])', rois ``[batch_id, x1, y1, x2, y2]`` times spatial_scale.

The text says no more: how a RoI becomes a window of elements and how it is split into bins is
the operator's source, Fast R-CNN's RoI pooling (Girshick 2015, section 2.1: 'dividing the h x
w RoI window into an H x W grid of sub-windows of approximate size h/H x w/W and then
max-pooling the values in each sub-window'). The oracle rounds the scaled corners to elements,
takes the window from the first to the last (inclusive, as Fast R-CNN's implementation does:
reading 0) and bin ``p`` of ``P`` over a window of ``L`` elements from ``floor(p L / P)`` to
``ceil((p + 1) L / P)``; reading 1 takes ``x2`` as the end past the window (``L = x2 - x1``).
Elements whose maximum the two readings change are the region ``reading_differs``.
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.onnx_detection import lower_with


def bins(start: int, length: int, pooled: int) -> list:
    """``(first, end)`` of each of ``pooled`` bins over ``length`` elements from ``start``
    (exact integer floor and ceil of ``p L / P``)."""
    return [(start + p * length // pooled, start - (-(p + 1) * length // pooled))
            for p in range(pooled)]


def _window(roi, scale: float, reading: int) -> list:
    """Per axis (y, then x): the first element and the window's length."""
    spans = []
    for lo, hi in ((2, 4), (1, 3)):
        first, last = np.round(roi[lo] * scale), np.round(roi[hi] * scale)
        spans.append((int(first), max(int(last - first) + (1 - reading), 1)))
    return spans


def max_roi_pool(x, rois, pooled_shape, spatial_scale=1.0, reading=0, open_elements=False):
    """``Y[r, c, ph, pw]``, each bin's maximum (or, with ``open_elements``, where a bin's end
    rests on a product ``(p + 1) L / P`` that a float evaluation may not land on: an integer
    reached through a non-dyadic bin size, which may take in one element more)."""
    out = np.zeros((len(rois), x.shape[1]) + tuple(pooled_shape), bool if open_elements else x.dtype)
    for r, roi in enumerate(rois):
        (y0, h), (x0, w) = _window(roi, float(spatial_scale), reading)
        plane = x[int(roi[0])]
        for i, (a, b) in enumerate(bins(y0, h, pooled_shape[0])):
            for j, (c, d) in enumerate(bins(x0, w, pooled_shape[1])):
                if open_elements:
                    out[r, :, i, j] = any(_inexact(n, p, k) for n, p, k in
                                          ((h, pooled_shape[0], i), (w, pooled_shape[1], j)))
                else:
                    out[r, :, i, j] = plane[:, a:b, c:d].max(axis=(1, 2))
    return out


def _inexact(length: int, pooled: int, p: int) -> bool:
    """Whether ``(p + 1) * fl(L / P)`` may miss the integer ``(p + 1) L / P``: L / P is not
    dyadic (P has an odd factor not dividing L) and the product is an integer."""
    odd = pooled
    while odd % 2 == 0:
        odd //= 2
    return length % odd != 0 and (p + 1) * length % pooled == 0


def draw_max_roi_pool(draw, kit, spec, dtype):
    """X of 1 or 2 batches, 1 or 2 channels, sides 1 to 6; 1 to 3 RoIs; pooled_shape of 1 to
    3 per axis; spatial_scale from the spec."""
    st = kit.st
    n, c, h, w, r = (draw(st.integers(*b)) for b in ((1, 2), (1, 2), (1, 6), (1, 6), (1, 3)))
    attrs = kit.attributes(draw, spec, {})
    attrs["pooled_shape"] = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    return kit.Signature((dtype, dtype), ((n, c, h, w), (r, 5)), attrs, dtype)


def values_max_roi_pool(rng, inputs, attrs):
    """Finite X (the text says nothing of NaN in a window); RoIs whose scaled corners are
    elements of X (so that the rounding to elements is exact and no bin is empty or outside),
    x2 >= x1 and y2 >= y1, with a batch index in range."""
    x, rois = inputs
    wide = x.astype(np.float64)
    x = np.where(np.isfinite(wide), wide, rng.uniform(-4, 4, x.shape)).astype(x.dtype)
    scale = float(attrs.get("spatial_scale", 1.0))
    made = np.zeros(rois.shape)
    made[:, 0] = rng.integers(0, x.shape[0], len(rois))
    for lo, hi, side in ((1, 3, x.shape[3]), (2, 4, x.shape[2])):
        first = rng.integers(0, side, len(rois))
        made[:, lo], made[:, hi] = first, [rng.integers(f, side) for f in first]
    made[:, 1:] /= scale
    return [x, made.astype(rois.dtype)]


def feed_max_roi_pool(inputs, attrs, index):
    """Y[r, c, ph, pw] is the maximum of bin (ph, pw) of RoI r's window in channel c of its
    batch (row-major), and reads RoI r (its batch index and corners)."""
    x, rois = inputs
    r, c, ph, pw = index
    (y0, h), (x0, w) = _window(rois[r], float(attrs.get("spatial_scale", 1.0)), 0)
    pooled = attrs["pooled_shape"]
    (a, b), (first, end) = bins(y0, h, pooled[0])[ph], bins(x0, w, pooled[1])[pw]
    return [x[int(rois[r, 0]), c, a:b, first:end].ravel(), rois[r]]


def numpy_max_roi_pool(x, rois, *, pooled_shape, spatial_scale=1.0):
    """The numpy backend: corners rounded by ``np.round`` in X's type, bin edges by
    ``np.floor`` and ``np.ceil`` of float64 products, ``np.max`` over each bin."""
    out = np.zeros((len(rois), x.shape[1]) + tuple(pooled_shape), x.dtype)
    scale = x.dtype.type(spatial_scale)
    for r, roi in enumerate(rois):
        x1, y1, x2, y2 = (int(v) for v in np.round(roi[1:] * scale))
        size = (max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1))
        step = [s / p for s, p in zip(size, pooled_shape)]
        for i in range(pooled_shape[0]):
            rows = slice(y1 + int(np.floor(i * step[0])), y1 + int(np.ceil((i + 1) * step[0])))
            for j in range(pooled_shape[1]):
                cols = slice(x1 + int(np.floor(j * step[1])), x1 + int(np.ceil((j + 1) * step[1])))
                out[r, :, i, j] = np.max(x[int(roi[0]), :, rows, cols], axis=(1, 2))
    return out


@op("onnx_max_roi_pool", version=1, draw=draw_max_roi_pool, draw_honours=frozenset({"attrs"}),
    values=values_max_roi_pool, feeding=feed_max_roi_pool, numpy=numpy_max_roi_pool,
    onnx=lower_with(("x", "rois"), "pooled_shape", "spatial_scale"))
def oracle_onnx_max_roi_pool(x, rois, *, pooled_shape, spatial_scale=1.0, reading=0,
                             open_elements=False):
    """ONNX MaxRoiPool-1/22: each RoI's window split into pooled_shape bins, each bin's
    maximum (see the module's docstring for the window and the bins)."""
    return (max_roi_pool(x, rois, pooled_shape, spatial_scale, reading, open_elements),)
