"""ONNX's sequence operators (ai.onnx, opset 11 onward; conform builds at 21): SequenceConstruct,
SequenceAt, SplitToSequence and ConcatFromSequence, written from their operator texts
(``onnx.defs.get_schema``).

A sequence crosses as tensors (:mod:`conform.ops.sequence_values`): a sequence input is the case's
trailing inputs, one per element, made a sequence in the graph by SequenceConstruct; a sequence
output is the pair (elements raveled and concatenated, their int64 shapes). Elements of one
sequence share their element type and rank (their sizes differ).
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.sequence_values import onnx_sequence, pack

MAX_ELEMENTS = 4


def element_shapes(draw, kit, *, min_rank: int, max_rank: int, same_shape: bool = False,
                   axis: int | None = None, min_count: int = 1) -> list[tuple]:
    """``min_count`` (1) to MAX_ELEMENTS shapes of one rank: equal (``same_shape``), equal but
    along ``axis`` (a concatenation), or each drawn on its own."""
    st = kit.st
    rank = draw(st.integers(min_rank, max_rank))
    base = draw(kit.shape(min_rank=rank, max_rank=rank, max_side=4,
                          min_side=draw(st.sampled_from((1, 1, 1, 0)))))
    shapes = []
    for _ in range(draw(st.integers(min_count, MAX_ELEMENTS))):
        if same_shape:
            shapes.append(base)
        elif axis is not None:
            shapes.append(tuple(draw(st.integers(0, 4)) if d == axis else s
                                for d, s in enumerate(base)))
        else:
            shapes.append(draw(kit.shape(min_rank=rank, max_rank=rank, max_side=4, min_side=0)))
    return shapes


# ---- SequenceConstruct -------------------------------------------------------------------

def draw_construct(draw, kit, spec, dtype):
    """1 to 4 tensors of one rank (0 to 3), each of its own shape (empty sides too)."""
    shapes = element_shapes(draw, kit, min_rank=0, max_rank=3)
    return kit.Signature((dtype,) * len(shapes), tuple(shapes), {}, dtype)


def feed_packed(elements, index) -> list:
    """Per element of a sequence, what feeds element ``index`` of its packed values: that one
    value of the element holding it; the shapes output (a 2-index) is fed by no value."""
    fed: list = [None] * len(elements)
    if len(index) != 1:
        return fed
    ends = np.cumsum([np.size(e) for e in elements])
    k = int(np.searchsorted(ends, index[0], side="right"))
    offset = index[0] - (ends[k - 1] if k else 0)
    fed[k] = np.ravel(elements[k])[offset:offset + 1]
    return fed


def numpy_sequence_construct(*inputs):
    """The numpy backend: the inputs as a list, packed (a list is NumPy's sequence of arrays)."""
    return pack(list(inputs))


@op("onnx_sequence_construct", version=1, draw=draw_construct,
    feeding=lambda inputs, attrs, index: feed_packed(inputs, index),
    onnx=lambda case, graph: graph.node(graph.op_type, graph.inputs),
    numpy=numpy_sequence_construct)
def oracle_sequence_construct(*inputs):
    """'Construct a tensor sequence containing inputs tensors', in order: the sequence packed
    (values, shapes)."""
    return pack(inputs)


# ---- SequenceAt --------------------------------------------------------------------------

def draw_sequence_at(draw, kit, spec, dtype):
    """A position (int32 or int64, 0-d) and 1 to 4 tensors of one rank; ``values_position``
    puts the position in [-n, n - 1]."""
    shapes = element_shapes(draw, kit, min_rank=0, max_rank=3)
    index = draw(kit.st.sampled_from(("int32", "int64")))
    return kit.Signature((index,) + (dtype,) * len(shapes), ((),) + tuple(shapes), {}, dtype)


def values_position(rng, inputs, attrs):
    """The position drawn in the text's accepted range [-n, n - 1], negative half the time."""
    count = len(inputs) - 1
    position = np.asarray(rng.integers(-count, count), dtype=inputs[0].dtype)
    return [position, *inputs[1:]]


def onnx_sequence_at(case, graph):
    """SequenceAt of the sequence the trailing inputs make, at the first input."""
    sequence = onnx_sequence(graph, graph.inputs[1:])
    graph.node(graph.op_type, [sequence, graph.inputs[0]])


def feed_sequence_at(inputs, attrs, index):
    """out[index] is a copy of the element at position, at index; position is no term."""
    position, elements = int(inputs[0]), inputs[1:]
    chosen = position % len(elements)
    return [None] + [np.ravel(e[tuple(index)]) if k == chosen else None
                     for k, e in enumerate(elements)]


def numpy_sequence_at(position, *sequence):
    """The numpy backend: Python's list indexing (negative from the back), a copy."""
    return np.copy(list(sequence)[position])


@op("onnx_sequence_at", version=1, draw=draw_sequence_at, values=values_position,
    draw_honours=frozenset({"scalar"}), feeding=feed_sequence_at, onnx=onnx_sequence_at,
    numpy=numpy_sequence_at)
def oracle_sequence_at(position, *sequence):
    """'Outputs a tensor copy from the tensor at position in input_sequence'; 'negative value
    means counting positions from the back'."""
    return (sequence[int(position)],)


# ---- SplitToSequence ---------------------------------------------------------------------

def draw_split_to_sequence(draw, kit, spec, dtype):
    """A tensor of rank 1 to 3 (the axis at least 1 long), an axis (negative too), keepdims,
    and the split input absent (chunks of 1), a scalar (chunks of that size, the last smaller)
    or a 1-D tensor of 1 to size positive lengths (``values_split`` fills it)."""
    st = kit.st
    shape = list(draw(kit.shape(min_rank=1, max_rank=3, max_side=5)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    shape[axis] = max(shape[axis], 1)   # the text defines no split of an empty axis
    attrs = {"axis": axis, "keepdims": draw(st.sampled_from((0, 1)))}
    form = draw(st.sampled_from(("absent", "scalar", "list")))
    if form == "absent":
        return kit.Signature((dtype,), (tuple(shape),), kit.with_absent(attrs, ["split"]), dtype)
    split_shape = () if form == "scalar" else (draw(st.integers(1, shape[axis])),)
    index = draw(st.sampled_from(("int32", "int64")))
    return kit.Signature((dtype, index), (tuple(shape), split_shape), attrs, dtype)


def values_split(rng, inputs, attrs):
    """A scalar split in [1, size + 1] (larger than the axis too: one chunk), or a 1-D split of
    positive lengths summing to the axis' size."""
    if len(inputs) == 1:
        return inputs
    data, split = inputs
    size = data.shape[attrs["axis"]]
    if split.ndim == 0:
        return [data, np.asarray(rng.integers(1, size + 2), split.dtype)]
    cuts = np.sort(rng.choice(np.arange(1, size), split.size - 1, replace=False))
    return [data, np.diff(np.concatenate([[0], cuts, [size]])).astype(split.dtype)]


def chunk_lengths(size: int, split=None) -> list[int]:
    """The lengths along the axis: 1 each without split, chunks of ``split`` (the last one
    smaller) for a scalar, the given lengths for a 1-D split."""
    if split is None:
        split = np.asarray(1)
    if np.ndim(split) == 1:
        return [int(s) for s in split]
    step = int(split)
    return [min(step, size - start) for start in range(0, size, step)]


def onnx_split_to_sequence(case, graph):
    """SplitToSequence over the case's inputs (split left out where absent)."""
    graph.node(graph.op_type, graph.inputs, axis=case.attrs["axis"],
               keepdims=case.attrs["keepdims"])


def feed_split_to_sequence(inputs, attrs, index):
    """A packed value is a copy of one input element (found by sending the elements' numbers
    through the oracle); split sets the chunks and is no term."""
    data = inputs[0]
    fed = [None] * len(inputs)
    if len(index) == 1:
        labels = np.arange(data.size, dtype=np.float64).reshape(data.shape)
        values, _ = oracle_split_to_sequence(labels, *inputs[1:], **attrs)
        at = int(values[index[0]])
        fed[0] = np.ravel(data)[at:at + 1]
    return fed


def numpy_split_to_sequence(input, split=None, *, axis, keepdims, absent_inputs=()):  # noqa: A002
    """The numpy backend: ``np.split`` at the chunks' ends (``np.array_split``'s sizes are not
    ONNX's), ``np.squeeze`` of each chunk without split and keepdims=0."""
    size = input.shape[axis]
    if split is None:
        parts = np.split(input, size, axis=axis)
        return pack(parts if keepdims else [np.squeeze(p, axis) for p in parts])
    cuts = np.cumsum(split)[:-1] if np.ndim(split) else np.arange(split, size, split)
    return pack(np.split(input, cuts, axis=axis))


@op("onnx_split_to_sequence", version=1, draw=draw_split_to_sequence, values=values_split,
    draw_honours=frozenset({"optional"}), feeding=feed_split_to_sequence,
    onnx=onnx_split_to_sequence, numpy=numpy_split_to_sequence)
def oracle_split_to_sequence(input, split=None, *, axis, keepdims, absent_inputs=()):
    """'Split a tensor into a sequence of tensors, along the specified axis': chunks of
    ``chunk_lengths``; without split each chunk is 1 long and keepdims=0 removes the axis
    ('If input split is specified, this attribute is ignored')."""
    axis %= input.ndim
    lengths = chunk_lengths(input.shape[axis], split)
    parts = np.split(input, np.cumsum(lengths)[:-1], axis=axis)
    if split is None and not keepdims:
        parts = [np.squeeze(part, axis) for part in parts]
    return pack(parts)


# ---- ConcatFromSequence ------------------------------------------------------------------

def draw_concat_from_sequence(draw, kit, spec, dtype):
    """new_axis 0: 1 to 4 tensors of rank 1 to 3 equal but along axis (in [-r, r - 1]);
    new_axis 1: equal tensors of rank 0 to 3, axis in [-r - 1, r] (a new dimension)."""
    st = kit.st
    new_axis = draw(st.sampled_from((0, 1)))
    if new_axis:
        shapes = element_shapes(draw, kit, min_rank=0, max_rank=3, same_shape=True)
        rank = len(shapes[0]) + 1
    else:
        rank = draw(st.integers(1, 3))
        at = draw(st.integers(0, rank - 1))
        shapes = element_shapes(draw, kit, min_rank=rank, max_rank=rank, axis=at)
        axis = at - rank if draw(st.booleans()) else at
    if new_axis:
        axis = draw(st.integers(-rank, rank - 1))
    return kit.Signature((dtype,) * len(shapes), tuple(shapes),
                         {"axis": axis, "new_axis": new_axis}, dtype)


def onnx_concat_from_sequence(case, graph):
    """ConcatFromSequence of the sequence the inputs make."""
    graph.node(graph.op_type, [onnx_sequence(graph, graph.inputs)], axis=case.attrs["axis"],
               new_axis=case.attrs["new_axis"])


def numpy_concat_from_sequence(*sequence, axis, new_axis):
    """The numpy backend: ``np.stack`` (new_axis=1) or ``np.concatenate``."""
    return (np.stack if new_axis else np.concatenate)(sequence, axis=axis)


@op("onnx_concat_from_sequence", version=1, draw=draw_concat_from_sequence, feeding="moved",
    onnx=onnx_concat_from_sequence, numpy=numpy_concat_from_sequence)
def oracle_concat_from_sequence(*sequence, axis, new_axis):
    """'Concatenate a sequence of tensors into a single tensor'; with new_axis=1 'insert and
    concatenate on a new axis', axis then in [-r - 1, r]."""
    if new_axis:
        return (np.stack(sequence, axis=axis),)
    return (np.concatenate(sequence, axis=axis),)

