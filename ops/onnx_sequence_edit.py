"""ONNX's sequence-editing operators (ai.onnx, opset 11): SequenceEmpty, SequenceInsert,
SequenceErase and SequenceLength, written from their operator texts
(``onnx.defs.get_schema``).

Sequences cross as tensors as for the other sequence operators (:mod:`conform.ops.sequence_values`,
ops/onnx_sequences.py): a sequence input is the case's trailing inputs, built in the graph by
SequenceConstruct, or by SequenceEmpty where the case gives none (an empty sequence); a
sequence output is the pair (values, shapes). Positions follow the texts' ranges: insertion
in [-n, n], erasure in [-n, n - 1], negative counting from the back; out-of-range positions
are errors in the texts and are not drawn.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import np_dtype
from conform.op_registry import op
from conform.ops.indexing import traced_feeding
from conform.ops.optional_inputs import onnx_operands
from conform.ops.sequence_values import pack
from conform.ops.onnx_sequences import element_shapes
from conform.ops.onnx_shape import no_input_feeds


def sequence_of(graph, elements: list, dtype: str, name: str = "sequence") -> str:
    """The graph's sequence of ``elements`` (SequenceConstruct), or an empty sequence of
    ``dtype`` (SequenceEmpty) where there are none; returns its name."""
    if elements:
        return graph.node("SequenceConstruct", list(elements), name)
    return graph.node("SequenceEmpty", [], name, dtype=graph.onnx_type(dtype))


def _split(inputs, absent_inputs, lead: int):
    """(the ``lead`` tensors before position, position or None, the sequence's elements)."""
    head, rest = list(inputs[:lead]), list(inputs[lead:])
    position = None if "position" in absent_inputs else rest.pop(0)
    return head, position, rest


def _positions(draw, kit):
    """Position present (int32 or int64) or absent."""
    if draw(kit.st.booleans()):
        return [draw(kit.st.sampled_from(("int32", "int64")))], []
    return [], ["position"]


def _sequence_signature(kit, dtype, lead_shapes, index, shapes, absent):
    dtypes = (dtype,) * len(lead_shapes) + tuple(index) + (dtype,) * len(shapes)
    all_shapes = tuple(lead_shapes) + ((),) * len(index) + tuple(shapes)
    return kit.Signature(dtypes, all_shapes, kit.with_absent({}, absent), dtype)


# ---- SequenceEmpty -----------------------------------------------------------------------

def draw_sequence_empty(draw, kit, spec, dtype):
    """No input; dtype as an attribute (left out for float, its default, half the time)."""
    attrs = {} if dtype == "float32" and draw(kit.st.booleans()) else {"dtype": dtype}
    return kit.Signature((), (), attrs, dtype)


def onnx_sequence_empty(case, graph):
    """SequenceEmpty with the case's dtype attribute where it gives one."""
    attrs = {"dtype": graph.onnx_type(case.attrs["dtype"])} if "dtype" in case.attrs else {}
    graph.node(graph.op_type, [], **attrs)


def numpy_sequence_empty(*, dtype="float32"):
    """The numpy backend: an empty list, packed in the element type."""
    return pack([], np_dtype(dtype))


@op("onnx_sequence_empty", version=1, draw=draw_sequence_empty, onnx=onnx_sequence_empty,
    numpy=numpy_sequence_empty, feeding=no_input_feeds)
def oracle_sequence_empty(*, dtype="float32"):
    """'Construct an empty tensor sequence, with given data type' (default float)."""
    return pack([], np_dtype(dtype))


# ---- SequenceInsert ----------------------------------------------------------------------

def draw_sequence_insert(draw, kit, spec, dtype):
    """The tensor and 0 to 3 elements of its rank (0 to 3), position absent or present."""
    shapes = element_shapes(draw, kit, min_rank=0, max_rank=3)
    index, absent = _positions(draw, kit)
    return _sequence_signature(kit, dtype, shapes[:1], index, shapes[1:], absent)


def values_insert(rng, inputs, attrs):
    """The position in the text's range [-n, n]."""
    if "position" in attrs.get("absent_inputs", ()):
        return inputs
    count = len(inputs) - 2
    position = np.asarray(rng.integers(-count, count + 1), inputs[1].dtype)
    return [inputs[0], position, *inputs[2:]]


def onnx_sequence_insert(case, graph):
    """SequenceInsert into the sequence of the trailing inputs (empty: SequenceEmpty)."""
    tensor, position, elements = _split(graph.inputs, case.attrs.get("absent_inputs", ()), 1)
    sequence = sequence_of(graph, elements, case.out_dtype)
    graph.node(graph.op_type, onnx_operands([sequence, tensor[0], position]))


def _inserted(tensor, position, sequence) -> list:
    items = list(sequence)
    at = len(items) if position is None else int(position)
    items.insert(at if at >= 0 else at + len(items), tensor)
    return items


def feed_sequence_insert(inputs, attrs, index, output=0):
    """A value of the output sequence is a copy of one element of tensor or of the input
    sequence's tensors (traced through the oracle with the real position, which is no term:
    it chooses where tensor goes); the shapes output (``output`` 1) is fed by no element."""
    if output != 0:
        return [None] * len(inputs)
    position = 0 if "position" in attrs.get("absent_inputs", ()) else 1
    data = tuple(k for k in range(len(inputs)) if k == 0 or k > position)
    return traced_feeding("onnx_sequence_insert", data)(inputs, attrs, index)


def numpy_sequence_insert(tensor, *rest, absent_inputs=()):
    """The numpy backend: Python's ``list.insert`` (a negative index counts from the back)."""
    _, position, elements = _split((tensor, *rest), absent_inputs, 1)
    items = list(elements)
    items.insert(len(items) if position is None else int(position), tensor)
    return pack(items, tensor.dtype)


@op("onnx_sequence_insert", version=1, draw=draw_sequence_insert, values=values_insert,
    draw_honours=frozenset({"optional", "scalar"}), feeding=feed_sequence_insert,
    onnx=onnx_sequence_insert, numpy=numpy_sequence_insert)
def oracle_sequence_insert(tensor, *rest, absent_inputs=()):
    """'inserts tensor into input_sequence at position' ('Negative value means counting
    positions from the back'; position -n is the front, n the back; absent: the back)."""
    _, position, elements = _split((tensor, *rest), absent_inputs, 1)
    return pack(_inserted(tensor, position, elements), tensor.dtype)


# ---- SequenceErase -----------------------------------------------------------------------
# The sequence is the whole case (a signature cannot start with an optional input): position,
# where given, is the attribute ``position`` with its type ``position_type``, a constant input
# of the graph (as Split's split is).

def draw_sequence_erase(draw, kit, spec, dtype):
    """1 to 4 elements of one rank (0 to 3); position absent, or in the text's [-n, n - 1]
    as an int32 or int64 scalar."""
    st = kit.st
    shapes = element_shapes(draw, kit, min_rank=0, max_rank=3)
    attrs = {}
    if draw(st.booleans()):
        attrs = {"position": draw(st.integers(-len(shapes), len(shapes) - 1)),
                 "position_type": draw(st.sampled_from(("int32", "int64")))}
    return kit.Signature((dtype,) * len(shapes), tuple(shapes), attrs, dtype)


def onnx_sequence_erase(case, graph):
    """SequenceErase from the sequence of the inputs, position a constant where given."""
    operands = [sequence_of(graph, graph.inputs, case.out_dtype)]
    if "position" in case.attrs:
        operands.append(graph.const("position", case.attrs["position"],
                                    np_dtype(case.attrs["position_type"])))
    graph.node(graph.op_type, operands)


def numpy_sequence_erase(*sequence, position=-1, position_type=None):
    """The numpy backend: Python's ``del items[position]`` (default -1, the last)."""
    items = list(sequence)
    del items[position]
    return pack(items, sequence[0].dtype)


@op("onnx_sequence_erase", version=1, draw=draw_sequence_erase, feeding="moved",
    onnx=onnx_sequence_erase, numpy=numpy_sequence_erase)
def oracle_sequence_erase(*sequence, position=None, position_type=None):
    """'removes the tensor at position from input_sequence' (negative from the back; absent:
    'erases the last tensor')."""
    at = len(sequence) - 1 if position is None else position % len(sequence)
    return pack(sequence[:at] + sequence[at + 1:], sequence[0].dtype)


# ---- SequenceLength ----------------------------------------------------------------------

def draw_sequence_length(draw, kit, spec, dtype):
    """0 to 4 elements of one rank (0 to 3); none: an empty sequence (SequenceEmpty)."""
    shapes = element_shapes(draw, kit, min_rank=0, max_rank=3, min_count=0)
    return _sequence_signature(kit, dtype, (), (), shapes, [])


def onnx_sequence_length(case, graph):
    """SequenceLength of the sequence of the inputs (empty: SequenceEmpty of the dtype)."""
    graph.node(graph.op_type, [sequence_of(graph, graph.inputs, case.out_dtype)])


def numpy_sequence_length(*sequence):
    """The numpy backend: ``len`` of the list, as an int64 scalar."""
    return (np.asarray(len(sequence), np.int64),)


@op("onnx_sequence_length", version=1, draw=draw_sequence_length,
    feeding=no_input_feeds, onnx=onnx_sequence_length,
    numpy=numpy_sequence_length)
def oracle_sequence_length(*sequence):
    """'a scalar (tensor of empty shape) containing the number of tensors in
    input_sequence' (int64)."""
    return (np.asarray(len(sequence), np.int64),)

