"""ONNX detection operators, written from their texts (``onnx.defs.get_schema(name).doc``):
NonMaxSuppression (10+), RoiAlign (10 and 16+: coordinate_transformation_mode) and MaxRoiPool.

NonMaxSuppression: per batch and class, the boxes whose score is not 'less than
score_threshold' are taken greedily by descending score; a box is 'suppressed if [its] IOU with
a previously selected box is strictly greater than iou_threshold' ('boxes with IOU exactly equal
to the threshold are kept'), at most ``max_output_boxes_per_class`` of them (absent: 0, 'no
output'). The output is 'a set' of ``[batch, class, box]`` rows: its order is open, and so is
the order of boxes of equal score (which of two overlapping equal-score boxes survives):
``canonical_nms`` accepts any answer some order of the equal scores gives, in any row order.
Boxes are drawn on a dyadic grid (every area, intersection and union exact in float32) and the
thresholds away from every pair's IoU unless they equal it exactly (``values_nms``), so no
rounding of the IoU can flip a comparison and the text's tie rule is judged where it applies.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from conform.op_registry import op
from conform.ops.error_bounds import gamma, judged_bound, reaches_max_finite, underflow_term
from conform.ops.optional_inputs import by_name, onnx_operands

NMS_INPUTS = ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold")
#: Enumerated orders of equal scores per (batch, class), at most (6 equal boxes: 720).
MAX_ORDERS = 5040



def lower_with(names: tuple, *attributes: str):
    """An ONNX lowering of one node over the present inputs of the signature's ``names`` (an
    absent one followed by a present one as ""), with the case's ``attributes``."""
    def lower(case, graph):
        supplied = dict(zip((n for n in names if n not in case.attrs.get("absent_inputs", ())),
                            graph.inputs))
        graph.node(graph.op_type, onnx_operands(supplied.get(n) for n in names),
                   **{a: case.attrs[a] for a in attributes if a in case.attrs})
    return lower


# --- NonMaxSuppression ----------------------------------------------------------------------

def corners(boxes: np.ndarray, center_point_box: int) -> np.ndarray:
    """``[..., 4]`` boxes as ``(y_min, x_min, y_max, x_max)``: format 0 is '[y1, x1, y2, x2]
    ... any diagonal pair of box corners', format 1 '[x_center, y_center, width, height]'."""
    if center_point_box:
        xc, yc, w, h = np.moveaxis(boxes, -1, 0)
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=-1)
    y1, x1, y2, x2 = np.moveaxis(boxes, -1, 0)
    return np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2),
                     np.maximum(x1, x2)], axis=-1)


def overlaps(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(intersection, union)`` of every pair of the ``[S, 4]`` corner boxes ``c`` (float64,
    exact for boxes on a dyadic grid)."""
    low = np.maximum(c[:, None, :2], c[None, :, :2])
    high = np.minimum(c[:, None, 2:], c[None, :, 2:])
    inter = np.prod(np.maximum(high - low, 0.0), axis=-1)
    area = (c[:, 2] - c[:, 0]) * (c[:, 3] - c[:, 1])
    return inter, area[:, None] + area[None, :] - inter


def _greedy(order, suppresses, limit: int) -> list:
    """The boxes taken from ``order``, each skipped where a taken one ``suppresses`` it."""
    taken = []
    for box in order:
        if len(taken) >= limit:
            break
        if not any(suppresses[t, box] for t in taken):
            taken.append(box)
    return taken


def _settings(inputs, absent_inputs):
    given = by_name(NMS_INPUTS, inputs, absent_inputs)
    def scalar(name, default):   # 'a scalar' (the onnx node tests give shape [1])
        return np.asarray(given[name]).reshape(-1)[0] if name in given else default

    limit, score = int(scalar("max_output_boxes_per_class", 0)), scalar("score_threshold", None)
    iou = float(scalar("iou_threshold", 0.0))
    return given["boxes"], given["scores"], limit, iou, None if score is None else float(score)


def nms_groups(inputs, center_point_box: int, absent_inputs=(), tie_orders: bool = False):
    """Per ``(batch, class)``: the boxes selected in order (``tie_orders``: the set of the
    selections every order of equal scores gives, as frozensets)."""
    boxes, scores, limit, iou, score_threshold = _settings(inputs, absent_inputs)
    groups = {}
    for b, c in itertools.product(range(scores.shape[0]), range(scores.shape[1])):
        s = scores[b, c]
        inter, union = overlaps(corners(boxes[b], center_point_box))
        suppresses = inter > iou * union    # IoU > iou_threshold, exactly
        kept = [i for i in np.argsort(-s, kind="stable")
                if score_threshold is None or not s[i] < score_threshold]
        if not tie_orders:
            groups[b, c] = _greedy(kept, suppresses, limit)
            continue
        runs = [list(run) for _, run in itertools.groupby(kept, key=lambda i: s[i])]
        orders = itertools.product(*(itertools.permutations(run) for run in runs))
        groups[b, c] = {frozenset(_greedy([i for run in order for i in run], suppresses, limit))
                        for order in itertools.islice(orders, MAX_ORDERS)}
    return groups


def _rows(groups) -> np.ndarray:
    rows = [(b, c, i) for (b, c), taken in groups.items() for i in taken]
    return np.array(rows, np.int64).reshape(-1, 3)


def canonical_nms(outputs, case):
    """The text's output is 'a set' (any row order) and leaves the order of equal scores open:
    a backend's rows that form, per (batch, class), the selection of some order of the equal
    scores (each row once) become the oracle's answer; any other answer is left alone (fails)."""
    (actual,) = outputs
    actual = np.asarray(actual)
    inputs = [np.asarray(x).astype(np.float64) if np.asarray(x).dtype.kind == "f"
              else np.asarray(x) for x in case.inputs]
    absent = case.attrs.get("absent_inputs", ())
    center = case.attrs.get("center_point_box", 0)
    if actual.ndim != 2 or actual.shape[1:] != (3,):
        return outputs
    rows = [tuple(int(v) for v in row) for row in actual]
    if len(set(rows)) != len(rows):
        return outputs
    valid = nms_groups(inputs, center, absent, tie_orders=True)
    got = {key: frozenset(i for b, c, i in rows if (b, c) == key) for key in valid}
    if sum(map(len, got.values())) != len(rows) or any(got[k] not in valid[k] for k in valid):
        return outputs
    return [_rows(nms_groups(inputs, center, absent)).astype(actual.dtype)]


def draw_nms(draw, kit, spec, dtype):
    """1 or 2 batches, 1 to 3 classes, 0 to 6 boxes; center_point_box; each optional input
    present or absent (values from ``values_nms``)."""
    st = kit.st
    batches, classes, boxes = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(0, 6))
    absent = kit.absent_inputs(draw, spec)
    attrs = kit.with_absent(kit.attributes(draw, spec, {}), absent)
    shapes = {"boxes": (batches, boxes, 4), "scores": (batches, classes, boxes)}
    dtypes = {"max_output_boxes_per_class": "int64"}
    names = [n for n in NMS_INPUTS if n not in absent]
    return kit.Signature(tuple(dtypes.get(n, dtype) for n in names),
                         tuple(shapes.get(n, ()) for n in names), attrs, dtype)


def _grid_boxes(rng, shape, center: int) -> np.ndarray:
    """Boxes on a 1/4 grid, positive sides, some repeated (IoU 1), corners sometimes given in
    the other diagonal order (format 0)."""
    start = rng.integers(0, 12, shape[:-1] + (2,)) / 4
    side = rng.integers(1, 9, shape[:-1] + (2,)) / 4 * (2 if center else 1)
    if center:
        boxes = np.concatenate([(start + side / 2)[..., ::-1], side[..., ::-1]], axis=-1)
    else:
        boxes = np.concatenate([start, start + side], axis=-1)
        flip = rng.random(shape[:-1]) < 0.25
        boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    for b in range(shape[0]):
        for k in range(1, shape[1]):
            if rng.random() < 0.15:
                boxes[b, k] = boxes[b, rng.integers(0, k)]
    return boxes


def _exact_iou_values(boxes, center) -> list:
    """Every pair's IoU that a float32 holds exactly (a threshold there is a tie the text
    decides), and the midpoints between consecutive distinct IoUs (far from every IoU)."""
    from fractions import Fraction

    values = {Fraction(0), Fraction(1)}
    for group in boxes:
        inter, union = overlaps(corners(group, center))
        for i, u in zip(inter.ravel(), union.ravel()):
            values.add(Fraction(i) / Fraction(u))
    ordered = sorted(values)
    exact = [float(v) for v in ordered if Fraction(float(np.float32(float(v)))) == v]
    middle = [float(np.float32(float(a + b) / 2)) for a, b in zip(ordered, ordered[1:])]
    return exact + middle


def values_nms(rng, inputs, attrs):
    """Boxes on a dyadic grid, scores in sixteenths of [-0.5, 1.5) (ties likely), a score
    threshold at a score (kept: 'less than' removes) or between scores, an IoU threshold in
    [0, 1] at an IoU a float32 holds (kept: 'strictly greater' suppresses) or midway between
    two IoUs, and max_output_boxes_per_class of 0 to S + 1 or 100."""
    absent = attrs.get("absent_inputs", ())
    given = by_name(NMS_INPUTS, inputs, absent)
    center = attrs.get("center_point_box", 0)
    boxes = _grid_boxes(rng, given["boxes"].shape, center)
    given["boxes"] = boxes.astype(np.float32)
    scores = rng.integers(-8, 24, given["scores"].shape) / 16
    given["scores"] = scores.astype(np.float32)
    if "score_threshold" in given:
        pool = list(scores.ravel()) + [-1.0, 0.03125, 0.5 + 1 / 32, 2.0]
        given["score_threshold"] = np.float32(pool[rng.integers(0, len(pool))])
    if "iou_threshold" in given:
        pool = _exact_iou_values(boxes, center)
        given["iou_threshold"] = np.float32(pool[rng.integers(0, len(pool))])
    if "max_output_boxes_per_class" in given:
        count = boxes.shape[1]
        given["max_output_boxes_per_class"] = np.int64(rng.choice([0, 1, 2, count, count + 1, 100]))
    return [np.asarray(given[n], given[n].dtype if hasattr(given[n], "dtype") else None)
            for n in NMS_INPUTS if n in given]


def feed_nms(inputs, attrs, index):
    """Row ``index[0]`` names a kept box of batch b and class c: the text's selection compares
    every box of batch b, every score of (b, c) and the thresholds (each present input whole;
    max_output_boxes_per_class too: it ends the selection)."""
    absent = attrs.get("absent_inputs", ())
    given = by_name(NMS_INPUTS, inputs, absent)
    rows = _rows(nms_groups(inputs, attrs.get("center_point_box", 0), absent))
    b, c = (int(v) for v in rows[index[0], :2])
    picked = {"boxes": given["boxes"][b].ravel(), "scores": given["scores"][b, c]}
    return [picked.get(name, np.asarray(given[name]).ravel()) for name in given]


def numpy_nms(*inputs, center_point_box=0, absent_inputs=()):
    """The numpy backend: the IoU of every pair in float32 (``inter / union``), a stable
    ``np.argsort`` of the negated scores, and a greedy pass per batch and class."""
    boxes, scores, limit, iou, score_threshold = _settings(inputs, absent_inputs)
    rows = []
    for b in range(scores.shape[0]):
        box = boxes[b]
        if center_point_box:
            half = box[:, 2:] / np.float32(2)
            box = np.concatenate([(box[:, :2] - half)[:, ::-1], (box[:, :2] + half)[:, ::-1]], 1)
        low, high = np.minimum(box[:, :2], box[:, 2:]), np.maximum(box[:, :2], box[:, 2:])
        side = np.clip(np.minimum(high[:, None], high[None]) - np.maximum(low[:, None], low[None]),
                       0, None)
        inter = side[..., 0] * side[..., 1]
        area = (high - low).prod(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ious = inter / (area[:, None] + area[None, :] - inter)
        for c in range(scores.shape[1]):
            taken = []
            for i in np.argsort(-scores[b, c], kind="stable"):
                if score_threshold is not None and scores[b, c, i] < np.float32(score_threshold):
                    continue
                if len(taken) < limit and not (ious[i, taken] > np.float32(iou)).any():
                    taken.append(i)
            rows += [(b, c, i) for i in taken]
    return (np.array(rows, np.int64).reshape(-1, 3),)


@op("onnx_non_max_suppression", version=1, draw=draw_nms,
    draw_honours=frozenset({"attrs", "optional", "scalar"}), values=values_nms, feeding=feed_nms,
    canonical=canonical_nms, numpy=numpy_nms, value_dependent_shape=True,
    onnx=lower_with(NMS_INPUTS, "center_point_box"))
def oracle_onnx_non_max_suppression(*inputs, center_point_box=0, absent_inputs=()):
    """ONNX NonMaxSuppression-11: ``[batch, class, box]`` rows of the boxes kept per batch and
    class, each class's in selection order (descending score, equal scores by index)."""
    return (_rows(nms_groups(inputs, center_point_box, absent_inputs)),)


# --- RoiAlign -------------------------------------------------------------------------------
# Each RoI [x1, y1, x2, y2] is scaled by spatial_scale (and shifted by -0.5 under half_pixel:
# 'pixel shift the input coordinates by -0.5'); its output_height x output_width bins each hold
# a grid of sampling_ratio x sampling_ratio points (0: ceil(roi_height / output_height) x
# ceil(roi_width / output_width)), regularly spaced at the centres of equal sub-cells (Mask R-CNN,
# He et al. 2017, section 3: 'four regularly sampled locations in each RoI bin'), each the
# bilinear interpolation of X; the bin's value is their average or maximum.

ROI_INPUTS = ("x", "rois", "batch_indices")


def roi_samples(rois, attrs: dict, reading: int = 0):
    """Per RoI and axis (y, then x): the sample coordinates ``[R, out, grid]`` and the grid
    size per RoI (``reading`` 1: the adaptive grid from the RoI's size before spatial_scale)."""
    scale = float(attrs.get("spatial_scale", 1.0))
    shift = 0.5 if attrs.get("coordinate_transformation_mode", "output_half_pixel") == "half_pixel" else 0.0
    ratio = int(attrs.get("sampling_ratio", 0))
    result = []
    for lo, hi, out in ((1, 3, int(attrs.get("output_height", 1))), (0, 2, int(attrs.get("output_width", 1)))):
        start, end = rois[:, lo] * scale - shift, rois[:, hi] * scale - shift
        size = (rois[:, hi] - rois[:, lo]) if reading else end - start
        grid = np.full(len(rois), ratio) if ratio > 0 else np.ceil(size / out).astype(np.int64)
        width = (end - start) / out
        points = [start[r] + width[r] * (np.arange(out)[:, None] + (np.arange(grid[r]) + 0.5) / grid[r])
                  for r in range(len(rois))]
        result.append((points, grid, width))
    return result


def bilinear(plane: np.ndarray, y: np.ndarray, x: np.ndarray) -> tuple:
    """The bilinear interpolation of ``plane`` (``[..., H, W]``) at ``(y, x)`` inside
    ``[0, H - 1] x [0, W - 1]``, and the sum of its terms' magnitudes."""
    h, w = plane.shape[-2:]
    y0, x0 = np.minimum(np.floor(y), h - 1).astype(int), np.minimum(np.floor(x), w - 1).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    ly, lx = y - y0, x - x0
    terms = [(1 - ly) * (1 - lx) * plane[..., y0, x0], (1 - ly) * lx * plane[..., y0, x1],
             ly * (1 - lx) * plane[..., y1, x0], ly * lx * plane[..., y1, x1]]
    return sum(terms), sum(np.abs(t) for t in terms)


def roi_align(x, rois, batch_indices, attrs: dict, reading: int = 0, magnitudes=False):
    """``Y[r, c, ph, pw]`` (or, with ``magnitudes``, per bin the mean or largest sum of the
    samples' interpolation terms' magnitudes, and the sample count)."""
    (ys, gy, _), (xs, gx, _) = roi_samples(rois, attrs, reading)
    out_h, out_w = len(ys[0]) if ys else 1, len(xs[0]) if xs else 1
    pooled = np.zeros((len(rois), x.shape[1], out_h, out_w))
    count = np.zeros(len(rois))
    for r in range(len(rois)):
        yy = ys[r][:, None, :, None] + 0 * xs[r][None, :, None, :]
        xx = xs[r][None, :, None, :] + 0 * ys[r][:, None, :, None]
        value, size = bilinear(x[int(batch_indices[r])], yy, xx)
        picked = size if magnitudes else value
        pooled[r] = picked.max(axis=(-2, -1)) if attrs.get("mode", "avg") == "max" \
            else picked.mean(axis=(-2, -1))
        count[r] = gy[r] * gx[r]
    return (pooled, count) if magnitudes else pooled


def _steepest(x: np.ndarray, axis: int) -> np.ndarray:
    """Per (batch, channel): the largest difference of neighbours along ``axis`` (a bilinear
    interpolant's slope along it is at most that)."""
    steps = np.abs(np.diff(x, axis=axis))
    return steps.max(axis=(-2, -1)) if steps.size else np.zeros(x.shape[:2])


def roi_align_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes, reading=0):
    """|err| <= gamma_k S + D_y d_y + D_x d_x + u |y| (+ the products' underflow).

    S: per bin the mean (avg) or largest (max) over its samples of the sum of the magnitudes of
    the interpolation's four terms; k = 4 n + 4 for avg (each term's weight in up to three
    roundings and its product with X, then the n samples' 4 n terms summed in any order and
    divided by n), 7 for max (one sample's terms). D_y, D_x: the largest neighbour difference
    of the channel along each axis, bounding the interpolant's slope; d_y, d_x: the error of a
    sample's coordinate, ``coordinate_roundings`` roundings of the magnitudes in the formula
    (|start| + |end| + 1). u |y| the final rounding to the output type (Higham 2002, Lemma 3.1)."""
    x, rois, batch = inputs
    magnitude, count = roi_align(x, rois, batch, attrs, reading, magnitudes=True)
    n = count[:, None, None, None]
    k = 7 if attrs.get("mode", "avg") == "max" else 4 * n + 4
    scale = abs(float(attrs.get("spatial_scale", 1.0)))
    g = gamma(int(constants.get("coordinate_roundings", 16)), u)
    b = batch.astype(np.int64)
    d_y = g * (scale * (np.abs(rois[:, 1]) + np.abs(rois[:, 3])) + 1)
    d_x = g * (scale * (np.abs(rois[:, 0]) + np.abs(rois[:, 2])) + 1)
    drift = _steepest(x, -2)[b] * d_y[:, None] + _steepest(x, -1)[b] * d_x[:, None]
    (y,) = outputs
    bound = gamma(k, u) * magnitude + drift[..., None, None] + u * np.abs(y) \
        + underflow_term(8 * n, out_dtype)
    total = magnitude if attrs.get("mode", "avg") == "max" else n * magnitude
    return (judged_bound(bound, y, unbounded=reaches_max_finite(total, out_dtype, gamma_n=gamma(k, u))),)


def draw_roi_align(draw, kit, spec, dtype):
    """X of 1 or 2 batches, 1 or 2 channels, sides 2 to 5; 1 to 3 RoIs; the spec's attributes
    (output sizes 1 to 3, sampling_ratio 0 to 2, spatial_scale a power of two)."""
    st = kit.st
    n, c, h, w, r = (draw(st.integers(*b)) for b in ((1, 2), (1, 2), (2, 5), (2, 5), (1, 3)))
    attrs = kit.attributes(draw, spec, {})
    return kit.Signature((dtype, dtype, "int64"), ((n, c, h, w), (r, 4), (r,)), attrs, dtype)


def _inside_rois(rng, count: int, h: int, w: int, scale: float, shift: float) -> np.ndarray:
    """RoIs on a quarter grid of the feature map, each side at least 1, inside [0, side - 1]
    (so every sample lies within X), given in input coordinates (``(map + shift) / scale``)."""
    rois = np.zeros((count, 4))
    for lo, hi, side in ((0, 2, w), (1, 3, h)):
        start = rng.integers(0, 4 * (side - 2) + 1, count) / 4
        length = np.array([rng.integers(4, 4 * (side - 1 - s) + 1) / 4 for s in start])
        rois[:, lo], rois[:, hi] = start, start + length
    return (rois + shift) / scale


def values_roi_align(rng, inputs, attrs):
    """Finite X (a zero weight times an infinity is NaN in one evaluation and nothing in
    another: the text does not say), RoIs inside the map (``_inside_rois``), batch indices in
    range."""
    x, rois, batch = inputs
    wide = x.astype(np.float64)
    x = np.where(np.isfinite(wide), wide, rng.uniform(-4, 4, x.shape)).astype(x.dtype)
    shift = 0.5 if attrs.get("coordinate_transformation_mode") == "half_pixel" else 0.0
    scale = float(attrs.get("spatial_scale", 1.0))
    made = _inside_rois(rng, len(rois), x.shape[2], x.shape[3], scale, shift).astype(rois.dtype)
    return [x, made, rng.integers(0, x.shape[0], len(rois)).astype(np.int64)]


def bilinear_reads(h: int, w: int, ys, xs) -> np.ndarray:
    """The flat indices (row-major, each once) of the ``h x w`` plane's elements that
    :func:`bilinear` reads at every pair of ``ys`` and ``xs`` (its four neighbours, clamped)."""
    y0 = np.minimum(np.floor(np.asarray(ys)), h - 1).astype(int)
    x0 = np.minimum(np.floor(np.asarray(xs)), w - 1).astype(int)
    rows = np.concatenate([y0, np.minimum(y0 + 1, h - 1)])
    cols = np.concatenate([x0, np.minimum(x0 + 1, w - 1)])
    return np.unique((rows[:, None] * w + cols[None, :]).ravel())


def feed_roi_align(inputs, attrs, index):
    """Y[r, c, ph, pw] combines the neighbours of bin (ph, pw)'s sample points in channel c of
    RoI r's batch, and reads RoI r's corners; the batch index is an index."""
    x, rois, batch = inputs
    r, c, ph, pw = index
    (ys, _, _), (xs, _, _) = roi_samples(rois, attrs)
    plane = x[int(batch[r]), c]
    return [plane.ravel()[bilinear_reads(*plane.shape, ys[r][ph], xs[r][pw])], rois[r], None]


ROI_ALIGN_ATTRIBUTES = ("mode", "output_height", "output_width", "sampling_ratio",
                        "spatial_scale", "coordinate_transformation_mode")


def numpy_roi_align(x, rois, batch_indices, **attrs):
    """The numpy backend: per RoI, sample coordinates and bilinear weights in X's type from
    ``np.linspace``-free arithmetic, ``np.mean`` or ``np.max`` over each bin's samples."""
    t = x.dtype.type
    shift = t(0.5) if attrs.get("coordinate_transformation_mode", "output_half_pixel") == "half_pixel" else t(0)
    scale, ratio = t(attrs.get("spatial_scale", 1.0)), int(attrs.get("sampling_ratio", 0))
    sizes = (int(attrs.get("output_height", 1)), int(attrs.get("output_width", 1)))
    out = np.zeros((len(rois), x.shape[1]) + sizes, x.dtype)
    for r, roi in enumerate(rois):
        axes = []
        for lo, hi, n in ((1, 3, sizes[0]), (0, 2, sizes[1])):
            a, b = roi[lo] * scale - shift, roi[hi] * scale - shift
            step = (b - a) / t(n)
            grid = ratio if ratio > 0 else int(np.ceil((b - a) / t(n)))
            offsets = (np.arange(grid, dtype=x.dtype) + t(0.5)) * step / t(grid)
            axes.append((a + np.arange(n, dtype=x.dtype)[:, None] * step + offsets).ravel())
        py, px = np.meshgrid(*axes, indexing="ij")
        i, j = np.floor(py).astype(int), np.floor(px).astype(int)
        i1, j1 = np.minimum(i + 1, x.shape[2] - 1), np.minimum(j + 1, x.shape[3] - 1)
        fy, fx = py - i, px - j
        plane = x[int(batch_indices[r])]
        v = (plane[:, i, j] * ((t(1) - fy) * (t(1) - fx)) + plane[:, i, j1] * ((t(1) - fy) * fx)
             + plane[:, i1, j] * (fy * (t(1) - fx)) + plane[:, i1, j1] * (fy * fx))
        gy, gx = len(axes[0]) // sizes[0], len(axes[1]) // sizes[1]
        v = v.reshape(x.shape[1], sizes[0], gy, sizes[1], gx)
        out[r] = v.max(axis=(2, 4)) if attrs.get("mode", "avg") == "max" else v.mean(axis=(2, 4))
    return out


def _register_roi_align(name: str, opset: int):
    def oracle(x, rois, batch_indices, *, reading=0, **attrs):
        if opset < 16:   # RoiAlign-10: no coordinate_transformation_mode, no pixel shift
            attrs.pop("coordinate_transformation_mode", None)
        return (roi_align(x, rois, batch_indices, attrs, reading),)

    oracle.__doc__ = (f"ONNX RoiAlign-{opset}: each RoI's bins, the average or maximum of the "
                      "bilinear interpolations at its regularly spaced sample points.")
    oracle.__name__ = oracle.__qualname__ = f"oracle_{name}"
    return op(name, version=1, draw=draw_roi_align, draw_honours=frozenset({"attrs"}),
              values=values_roi_align, feeding=feed_roi_align, error_bound=roi_align_bound,
              numpy=numpy_roi_align, onnx=lower_with(ROI_INPUTS, *ROI_ALIGN_ATTRIBUTES))(oracle)


oracle_onnx_roi_align_opset10 = _register_roi_align("onnx_roi_align_opset10", 10)
oracle_onnx_roi_align = _register_roi_align("onnx_roi_align", 16)
