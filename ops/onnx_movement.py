"""ONNX's data-movement operators judged by ONNX's semantics (ai.onnx, opset 21): Concat,
Squeeze and Unsqueeze take negative axes ('accepted range is [-r, r-1]', counted from the end;
for Unsqueeze, r is the output's rank), Squeeze without axes drops every size-1 dimension,
Transpose reverses the dimensions without perm, and Expand broadcasts both ways (the shape may
be smaller than the input's), Pad (opset 19: constant, reflect, edge and wrap modes, negative
pads, optional axes and constant_value) and CenterCropPad (opset 18: a centred crop or zero pad
per axis). Every output element is a copy of one input element (or padding)."""
from __future__ import annotations

import numpy as np

from conform.ops._lowering import unsupported
from conform.ops.optional_inputs import ABSENT, onnx_operands, present
from conform.op_registry import op, region
from conform.ops.movement import (mismatched_shapes, moved, text_zero, numpy_concatenate, onnx_transpose_by,
                                  onnx_with_constant)


def _signed(draw, kit, axis: int, rank: int) -> int:
    """``axis`` (in [0, rank)), or the same axis counted from the end (negative), as drawn."""
    return axis - rank if draw(kit.st.booleans()) else axis


def draw_onnx_concat(draw, kit, spec, dtype):
    """1 to 4 inputs equal in every dimension but ``axis`` (which may be negative)."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=5))
    axis = draw(st.integers(0, len(shape) - 1))
    shapes = []
    for _ in range(draw(st.integers(1, 4))):
        sides = list(shape)
        sides[axis] = draw(st.integers(0, 5))
        shapes.append(tuple(sides))
    attrs = {"axis": _signed(draw, kit, axis, len(shape))}
    return kit.Signature((dtype,) * len(shapes), tuple(shapes), attrs, dtype)


def invalid_onnx_concat(kit, spec, dtype):
    """Inputs 2 x 3 and 3 x 4 joined on axis 0; and 2 x 3 with 2 x 3 x 1 (ranks differ)."""
    forbids = ("ONNX Concat: 'All input tensors must have the same shape, except for the "
               "dimension size of the axis to concatenate on.'")
    return mismatched_shapes(kit, dtype, forbids, [([(2, 3), (3, 4)], {"axis": 0}, (5, 3)),
                                                   ([(2, 3), (2, 3, 1)], {"axis": 0}, (4, 3))])


@moved("onnx_concat", numpy=numpy_concatenate, draw=draw_onnx_concat, invalid=invalid_onnx_concat,
        onnx=lambda case, graph: graph.node(graph.op_type, graph.inputs, axis=case.attrs["axis"]))
def oracle_onnx_concat(*inputs, axis):
    """The inputs joined along ``axis`` (negative: counted from the end), in order."""
    return (np.concatenate(inputs, axis=axis),)


def draw_onnx_squeeze(draw, kit, spec, dtype):
    """Some size-1 dimensions named in ``axes`` (each possibly negative), or no ``axes`` at all."""
    st = kit.st
    shape = list(draw(kit.shape(min_rank=1, max_rank=5, max_side=4)))
    ones = draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))
    for axis in ones:
        shape[axis] = 1
    attrs = {}
    if draw(st.integers(0, 3)):   # a quarter of the cases give no axes
        attrs["axes"] = [_signed(draw, kit, axis, len(shape)) for axis in sorted(ones)]
    return kit.Signature((dtype,), (tuple(shape),), attrs, dtype)


@moved("onnx_squeeze", draw=draw_onnx_squeeze, onnx=onnx_with_constant("axes"))
def oracle_onnx_squeeze(data, *, axes=None):
    """``data`` without the size-1 dimensions ``axes`` (without axes: every size-1 dimension)."""
    return (np.squeeze(data, axis=None if axes is None else tuple(axes)),)


def draw_onnx_unsqueeze(draw, kit, spec, dtype):
    """``axes``: distinct positions in the output, each possibly counted from its end."""
    st = kit.st
    shape = draw(kit.shape(min_rank=0, max_rank=3, max_side=4))
    out_rank = len(shape) + draw(st.integers(1, 2))
    axes = draw(st.lists(st.integers(0, out_rank - 1), min_size=out_rank - len(shape),
                         max_size=out_rank - len(shape), unique=True))
    attrs = {"axes": [_signed(draw, kit, axis, out_rank) for axis in axes]}
    return kit.Signature((dtype,), (shape,), attrs, dtype)


@moved("onnx_unsqueeze", draw=draw_onnx_unsqueeze, onnx=onnx_with_constant("axes"))
def oracle_onnx_unsqueeze(data, *, axes):
    """``data`` with size-1 dimensions at ``axes`` of the output (negative: from its end)."""
    rank = data.ndim + len(axes)
    return (np.expand_dims(data, tuple(sorted(axis % rank for axis in axes))),)


def draw_onnx_transpose(draw, kit, spec, dtype):
    """A permutation ``perm`` of the dimensions, or no perm (which reverses them)."""
    shape = draw(kit.shape(max_rank=5))
    attrs = {}
    if draw(kit.st.integers(0, 3)):
        attrs["perm"] = list(draw(kit.st.permutations(range(len(shape)))))
    return kit.Signature((dtype,), (shape,), attrs, dtype)


@moved("onnx_transpose", draw=draw_onnx_transpose, onnx=onnx_transpose_by("perm"))
def oracle_onnx_transpose(data, *, perm=None):
    """out.shape[i] = data.shape[perm[i]]; without perm the dimensions are reversed."""
    return (np.transpose(data, perm),)


def draw_onnx_expand(draw, kit, spec, dtype):
    """``shape`` and the input broadcast to each other both ways (NumPy's rule): either may have
    the larger rank, and size-1 dimensions on either side grow."""
    st = kit.st
    full = draw(kit.shape(max_rank=4, max_side=4))
    sides = []
    for size in full:
        one_side = draw(st.integers(0, 2))   # 0: both full, 1: input 1, 2: shape 1
        sides.append((1 if one_side == 1 else size, 1 if one_side == 2 else size))
    data_drop, shape_drop = draw(st.integers(0, len(full))), draw(st.integers(0, len(full)))
    data = tuple(d for d, _ in sides)[min(data_drop, len(full)):]
    shape = [s for _, s in sides][min(shape_drop, len(full)):]
    return kit.Signature((dtype,), (data,), {"shape": shape}, dtype)


def numpy_onnx_expand(data, *, shape):
    """The numpy backend: ``np.broadcast_to`` the two shapes' broadcast."""
    return np.broadcast_to(data, np.broadcast_shapes(data.shape, tuple(shape)))


@moved("onnx_expand", numpy=numpy_onnx_expand, draw=draw_onnx_expand,
        onnx=lambda case, graph: graph.node(
            graph.op_type, [graph.inputs[0], graph.const("shape", case.attrs["shape"])]))
def oracle_onnx_expand(data, *, shape):
    """``data`` broadcast with ``shape`` both ways: the result's shape is their broadcast."""
    return (np.broadcast_to(data, np.broadcast_shapes(data.shape, tuple(shape))).copy(),)


PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad_pair(draw, st, mode: str, size: int) -> tuple[int, int]:
    """``(begin, end)`` pads of one axis of ``size`` elements (negative: elements removed).

    Constant padding may remove every element. Edge and wrap padding keep at least one
    element to copy, reflect padding two (the text mirrors on the first and last values); a
    reflected pad is at most the kept size - 1, or 2 on an axis of 2 (the text's Example 2).
    Empty axes are not padded but in constant mode: edge, reflect and wrap have no value there.
    """
    if mode == "constant":
        begin = draw(st.integers(-min(size, 2), 3))
        return begin, draw(st.integers(-min(size + begin, 2), 3))
    keep = 2 if mode == "reflect" else 1
    if size < keep:
        return 0, 0
    begin = draw(st.integers(-min(size - keep, 2), 3))
    end = draw(st.integers(-min(size - keep + min(begin, 0), 2), 3))
    if mode == "reflect":
        kept = size + min(begin, 0) + min(end, 0)
        limit = 2 if kept == size == 2 else kept - 1
        begin, end = min(begin, limit), min(end, limit)
    return begin, end


def draw_onnx_pad(draw, kit, spec, dtype):
    """A mode, ``pads`` per padded axis (negative ones remove elements; the result's shape
    stays valid), ``axes`` (some of the axes in any order, each possibly negative) or none
    (every axis), and ``constant_value`` present or absent."""
    st = kit.st
    mode = draw(st.sampled_from(PAD_MODES))
    shape = draw(kit.shape(min_rank=1, max_rank=3, max_side=5,
                           min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    rank = len(shape)
    attrs = {"mode": mode}
    padded = list(range(rank))
    if draw(st.booleans()):
        padded = list(draw(st.permutations(range(rank))))[:draw(st.integers(1, rank))]
        attrs["axes"] = [_signed(draw, kit, axis, rank) for axis in padded]
    pairs = [_pad_pair(draw, st, mode, shape[axis]) for axis in padded]
    attrs["pads"] = [begin for begin, _ in pairs] + [end for _, end in pairs]
    absent = kit.absent_inputs(draw, spec)
    count = 2 - len(absent)   # data, and constant_value unless absent
    return kit.Signature((dtype,) * count, (shape, ())[:count], kit.with_absent(attrs, absent),
                         dtype)


def _pad_sources(size: int, begin: int, end: int, mode: str, crop: str) -> np.ndarray:
    """Per output position of one axis, the data index it copies (-1: the constant value).

    ``crop`` says when negative pads remove elements: ``before`` padding the other side, or
    ``after`` (the text does not say; the region ``crop_order`` holds the elements where the
    two readings differ)."""
    grow = max(begin, 0), max(end, 0)
    if crop == "before" and mode != "constant":   # (constant: the same, and a crop may
        # reach past the data into the other side's padding, which only 'after' can say)
        start = max(-begin, 0)
        kept = np.arange(start, max(size - max(-end, 0), start))
        return _copied(kept, grow, mode)
    full = _copied(np.arange(size), grow, mode)
    return full[max(-begin, 0):len(full) - max(-end, 0)]


def _copied(kept: np.ndarray, grow: tuple, mode: str) -> np.ndarray:
    """The data indices ``kept`` padded by ``grow`` = (begin, end) in ``mode`` (-1: constant)."""
    if not len(kept):   # only constant padding reaches an empty axis
        return np.full(sum(grow), -1)
    at = _padded_positions(len(kept), *grow, mode)
    return np.where(at < 0, -1, kept[at])


def _padded_positions(size: int, begin: int, end: int, mode: str) -> np.ndarray:
    """Indices into ``arange(size)`` (with -1 for the constant) of an axis padded by ``begin``
    and ``end`` in ``mode`` (ONNX Pad's text: reflect mirrors on the first and last values,
    as numpy.pad's reflect; edge repeats them; wrap reads the data as a torus)."""
    at = np.arange(-begin, size + end)
    if mode == "edge":
        return np.clip(at, 0, size - 1)
    if mode == "wrap":
        return at % size
    if mode == "reflect":
        period = 2 * size - 2
        folded = at % period
        return np.where(folded < size, folded, period - folded)
    return np.where((at >= 0) & (at < size), at, -1)   # constant; -1 indexes the appended value


def onnx_pad(case, graph):
    """Pad over the data, ``pads`` and ``axes`` as int64 constant initializers (Tind also
    allows int32 axes, which onnx's own shape inference refuses: such a model fails the
    checker) and ``constant_value`` where present ("" where axes follows an absent one)."""
    from conform.model_formats import onnx_opset

    attrs = case.attrs
    if attrs["mode"] == "wrap" and onnx_opset() < 19:
        raise unsupported("ONNX Pad has mode 'wrap' from opset 19: the standard rules this "
                          f"case out at opset {onnx_opset()}")
    given = dict(zip(present(("data", "constant_value"), attrs), graph.inputs))
    axes = graph.const("axes", attrs["axes"]) if "axes" in attrs else None
    graph.node(graph.op_type, onnx_operands([given["data"], graph.const("pads", attrs["pads"]),
                                             given.get("constant_value"), axes]),
               mode=attrs["mode"])


def numpy_onnx_pad(data, *value, mode, pads, axes=None, absent_inputs=(), crop="before"):
    """The numpy backend: ``np.pad`` in the same mode ('constant', 'reflect', 'edge', 'wrap'
    are numpy.pad's names too); it has no negative (cropping) widths: unsupported."""
    if any(p < 0 for p in pads):
        raise unsupported("np.pad has no negative (cropping) pad widths")
    rank, count = data.ndim, len(pads) // 2
    axes = list(range(rank)) if axes is None else [axis % rank for axis in axes]
    widths = [(0, 0)] * rank
    for k, axis in enumerate(axes):
        widths[axis] = (pads[k], pads[count + k])
    if mode == "constant":
        return np.pad(data, widths, constant_values=value[0] if value else 0)
    return np.pad(data, widths, mode=mode)


#: (mode, begin, end) on the first axis of a 4 x 3 input at the edges of the output length
#: ``size + begin + end``: cropped to 0 and to 1, one element kept then edge-padded, a crop
#: reaching through the data into the other side's constant padding.
PAD_BOUNDARIES = (("constant", -2, -2), ("constant", -3, 0), ("edge", -3, 2), ("constant", 2, -5))
PAD_FORBIDS = ("ONNX Pad: pads is 'the number of padding elements to add or remove (if "
               "negative) at the beginning and end of each axis': pads [-3, -2] remove 5 "
               "elements of an axis of 4, an output length of -1, and no tensor has a negative "
               "dimension")


def _pad_signature(kit, dtype, mode, begin, end):
    attrs = kit.with_absent({"mode": mode, "pads": [begin, 0, end, 0]}, ["constant_value"])
    return kit.Signature((dtype,), ((4, 3),), attrs, dtype)


def boundaries_onnx_pad(kit, spec, dtype):
    """The rows of :data:`PAD_BOUNDARIES`, constant_value absent."""
    return [_pad_signature(kit, dtype, *row) for row in PAD_BOUNDARIES]


def invalid_onnx_pad(kit, spec, dtype):
    """An axis of 4 cropped by 5 (:data:`PAD_FORBIDS`)."""
    return [kit.MustReject(_pad_signature(kit, dtype, "constant", -3, -2), PAD_FORBIDS, ((0, 3),))]


def from_onnx_pad(inputs, attrs, opset):
    """A Pad node (opset 18+) as a case: data and constant_value where given are its inputs;
    the pads and axes inputs, and mode, its attributes."""
    data, pads, value, axes = (list(inputs) + [None] * 4)[:4]
    case_attrs = {"mode": attrs["mode"], "pads": np.asarray(pads).astype(int).tolist()}
    if axes is not None:
        case_attrs["axes"] = np.asarray(axes).astype(int).tolist()
    if value is None:
        case_attrs[ABSENT] = ["constant_value"]
    return [data] + ([] if value is None else [value]), case_attrs


@region
def pad_default_zero_unrepresentable(ctx) -> np.ndarray:
    """Pad of float8e8m0 in constant mode without constant_value: the elements its default
    fills ('by default it is 0'), a value E8M0 lacks (no zero)."""
    if ctx.out_dtype != "float8_e8m0fnu" or ctx.attrs.get("mode") != "constant" \
            or "constant_value" not in ctx.attrs.get(ABSENT, ()):
        return ctx.none()
    return ctx.float_oracle([np.ones(np.shape(ctx.inputs[0]))]) == 0   # data all 1: the fill


@moved("onnx_pad", numpy=numpy_onnx_pad, draw=draw_onnx_pad, draw_honours=frozenset({"optional", "scalar"}),
       onnx=onnx_pad, boundaries=boundaries_onnx_pad, invalid=invalid_onnx_pad,
       from_onnx=from_onnx_pad)
def oracle_onnx_pad(data, *value, mode, pads, axes=None, absent_inputs=(), crop="before"):
    """ONNX Pad-19: ``pads`` = [begins..., ends...] of ``axes`` (negative: counted from the end;
    default every axis), negative pads removing elements; ``constant_value`` ('by default it
    is 0, empty string or False') fills constant padding, reflect, edge and wrap copy data
    elements."""
    rank = data.ndim
    axes = list(range(rank)) if axes is None else [axis % rank for axis in axes]
    count = len(axes)
    sources = [np.arange(size) for size in data.shape]
    for k, axis in enumerate(axes):
        sources[axis] = _pad_sources(data.shape[axis], pads[k], pads[count + k], mode, crop)
    fill = value[0] if value else np.array("", object) if data.dtype == object \
        else np.zeros((), data.dtype)
    flat = np.append(data.ravel(), fill)   # the constant sits past the data's last element
    index = np.zeros([len(s) for s in sources], dtype=np.int64)
    outside = np.zeros(index.shape, dtype=bool)
    for axis, source in enumerate(sources):
        shaped = source.reshape([-1 if k == axis else 1 for k in range(rank)])
        outside |= shaped < 0
        index = index * data.shape[axis] + np.maximum(shaped, 0)
    return (np.where(outside, fill, flat[np.minimum(index, data.size)] if data.size else fill)
            .astype(data.dtype),)


# -- CenterCropPad ------------------------------------------------------------------------------

def _center_sources(size: int, target: int) -> np.ndarray:
    """Per output position of one axis, the input position CenterCropPad copies (outside
    ``[0, size)``: padding). Cropping starts at ``floor((size - target) / 2)`` ('rounded down':
    an odd difference shifts the window half a pixel left); padding puts ``floor(total / 2)``
    before and the odd one 'to the right side'."""
    if size >= target:
        return np.arange(target) + (size - target) // 2
    return np.arange(target) - (target - size) // 2


def _center_plan(shape, targets, axes):
    """Per axis of ``shape``, the source positions (every position where it is not in axes)."""
    axes = [a % len(shape) for a in (range(len(shape)) if axes is None else axes)]
    wanted = dict(zip(axes, targets))
    return [_center_sources(size, wanted.get(k, size)) for k, size in enumerate(shape)]


def draw_onnx_center_crop_pad(draw, kit, spec, dtype):
    """Data of rank 1 to 4 (empty sides too), ``axes`` absent (every axis) or some distinct
    axes in any order, each possibly negative (the text leaves a repeated axis undefined: not
    drawn), and per axis a target from 0 to 3 past the size (crops and pads, odd differences
    included), the shape input's type (Tind) drawn too."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=5,
                           min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    rank, attrs = len(shape), {}
    axes = list(range(rank))
    if draw(st.booleans()):
        axes = list(draw(st.permutations(range(rank))))[:draw(st.integers(1, rank))]
        attrs["axes"] = [_signed(draw, kit, axis, rank) for axis in axes]
    targets = [draw(st.integers(0, shape[a] + 3)) for a in axes]
    while np.prod([t for t in targets]) * np.prod([s for k, s in enumerate(shape)
                                                   if k not in axes]) > kit.MAX_ARRAY_SIZE:
        targets = [max(t - 1, 0) for t in targets]
    attrs.update(shape=targets, shape_type=draw(st.sampled_from(["int32", "int64"])))
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def feed_onnx_center_crop_pad(inputs, attrs, index):
    """The input element copied to out[index]; none where it is padding."""
    (data,) = inputs
    sources = [p[i] for p, i in zip(_center_plan(data.shape, attrs["shape"], attrs.get("axes")), index)]
    inside = all(0 <= s < n for s, n in zip(sources, data.shape))
    return [data[tuple(sources)].reshape(1) if inside else data.ravel()[:0]]


def onnx_center_crop_pad(case, graph):
    """CenterCropPad over the data and the target sizes as a constant of the drawn Tind."""
    shape = graph.const("shape", case.attrs["shape"], dtype=np.dtype(case.attrs["shape_type"]))
    axes = {"axes": case.attrs["axes"]} if "axes" in case.attrs else {}
    graph.node(graph.op_type, [graph.inputs[0], shape], **axes)


def numpy_onnx_center_crop_pad(data, *, shape, shape_type, axes=None):
    """The numpy backend: per axis a slice ``[start:start + target]`` where it crops, or
    ``np.pad`` with zeros (text: empty strings) ``(total // 2, total - total // 2)`` where it
    pads."""
    axes = [a % data.ndim for a in (range(data.ndim) if axes is None else axes)]
    for axis, target in zip(axes, shape):
        size = data.shape[axis]
        if size >= target:
            start = (size - target) // 2
            data = np.take(data, np.arange(start, start + target), axis=axis)
        else:
            widths = [(0, 0)] * data.ndim
            widths[axis] = ((target - size) // 2, target - size - (target - size) // 2)
            data = np.pad(data, widths, constant_values=text_zero(data))
    return data


def from_onnx_center_crop_pad(inputs, attrs, opset):
    """A CenterCropPad node as a case: the shape input's values and type (Tind) as the
    attributes ``shape`` and ``shape_type``."""
    data, shape = inputs
    return [data], {"shape": shape.tolist(), "shape_type": str(shape.dtype), **attrs}


@op("onnx_center_crop_pad", version=1, draw=draw_onnx_center_crop_pad,
    feeding=feed_onnx_center_crop_pad, onnx=onnx_center_crop_pad,
    numpy=numpy_onnx_center_crop_pad, from_onnx=from_onnx_center_crop_pad)
def oracle_onnx_center_crop_pad(data, *, shape, shape_type, axes=None):
    """ONNX CenterCropPad-18: per axis of ``axes`` (every axis without it; negative counted
    from the end) a centred crop window or centred zero padding to ``shape``'s size
    (:func:`_center_sources`); the other axes unchanged."""
    plan = _center_plan(data.shape, shape, axes)
    out_shape = tuple(len(p) for p in plan)
    if data.size == 0 or 0 in out_shape:
        return (np.full(out_shape, text_zero(data), data.dtype),)
    picked = data[np.ix_(*[np.clip(p, 0, n - 1) for p, n in zip(plan, data.shape)])]
    return (np.where(_padding(plan, data.shape), text_zero(data), picked),)


def _padding(plan, shape) -> np.ndarray:
    """Where the output of ``plan`` (:func:`_center_plan`) is padding, not a copy."""
    outside = np.zeros(tuple(len(p) for p in plan), bool)
    for k, p in enumerate(plan):
        view = [1] * len(plan)
        view[k] = -1
        outside |= ((p < 0) | (p >= shape[k])).reshape(view)
    return outside


@region
def center_crop_pad_text_zero(ctx) -> np.ndarray:
    """CenterCropPad of string data: the padding, where 'The padding value used is zero',
    which the text does not define for text (the empty string, "0", or another)."""
    data = ctx.inputs[0]
    if data.dtype != object:
        return ctx.none()
    return _padding(_center_plan(data.shape, ctx.attrs["shape"], ctx.attrs.get("axes")), data.shape)
