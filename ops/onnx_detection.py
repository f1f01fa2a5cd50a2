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
    """Row ``index[0]`` names a box: every box and score of its batch and class decides it."""
    given = by_name(NMS_INPUTS, inputs, attrs.get("absent_inputs", ()))
    return [given["boxes"].ravel(), given["scores"].ravel()]


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
