"""NNEF's split, stack, unstack and gather (NNEF 1.0 standard library; the texts at hand give
their declarations, in the ``nnef`` package's stdlib_source.h):

    fragment split<?>( value: tensor<?>, axis: integer, ratios: integer[] )
        -> ( values: tensor<?>[] );
    fragment stack<?>( values: tensor<?>[], axis: integer ) -> ( value: tensor<?> );
    fragment unstack<?>( value: tensor<?>, axis: integer ) -> ( values: tensor<?>[] );
    fragment gather<?>( input: tensor<?>, indices: tensor<integer>, axis: integer = 0 )
        -> ( output: tensor<?> );

Read as their names and parameters say: split cuts ``value`` along ``axis`` into consecutive
parts whose sizes are in the proportions ``ratios`` (the axis's size a multiple of their sum);
stack joins equal-shaped tensors along a new dimension at ``axis``; unstack is its inverse, the
slices along ``axis`` with that dimension removed; gather takes the slices of ``input`` along
``axis`` at ``indices`` (in ``[0, size)``), arranged in the indices' shape. conform's spec
format fixes an op's number of outputs: split makes three parts and unstack is drawn over an
axis of size three. Every output element is a copy of an input element: the oracles are exact.
"""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op
from conform.ops.indexing import draw_onnx_gather, traced_feeding

#: the outputs of split and unstack (their specs' ``signature.outputs``)
PARTS = 3


def _operand_shape(draw, kit):
    """A shape of rank 1 to 4 (sides 0 to 5: empty too)."""
    return draw(kit.shape(min_rank=1, max_rank=4, max_side=5,
                          min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))


# ------------------------------------------------------------------ split

def draw_split(draw, kit, spec, dtype):
    """An axis and three ratios of 1 to 3, the axis's size a multiple (0 to 2) of their sum."""
    st = kit.st
    shape = list(_operand_shape(draw, kit))
    axis = draw(st.integers(0, len(shape) - 1))
    ratios = [draw(st.integers(1, 3)) for _ in range(PARTS)]
    others = math.prod(shape[:axis] + shape[axis + 1:])
    most = max(0, min(2, kit.MAX_ARRAY_SIZE // max(others * sum(ratios), 1)))
    shape[axis] = sum(ratios) * draw(st.integers(0, most))
    return kit.Signature((dtype,), (tuple(shape),), {"axis": axis, "ratios": ratios}, dtype)


def _cuts(size: int, ratios) -> list:
    """Where the parts end: sizes ``size * r_k / sum(ratios)``."""
    unit = size // sum(ratios)
    return list(np.cumsum([unit * r for r in ratios])[:-1])


def numpy_split(value, *, axis, ratios):
    """The numpy backend: ``np.split`` at the parts' ends."""
    return tuple(np.split(value, _cuts(value.shape[axis], ratios), axis=axis))


@op("nnef_split", version=1, draw=draw_split, draw_honours=frozenset(), feeding="moved",
    numpy=numpy_split,
    nnef=lambda case, call: call(["in0"], {"axis": case.attrs["axis"],
                                          "ratios": list(case.attrs["ratios"])},
                                 array_result=True))
def oracle_nnef_split(value, *, axis, ratios):
    """The consecutive parts of ``value`` along ``axis``, of sizes ``size * r_k / sum(r)``."""
    return tuple(np.split(value, _cuts(value.shape[axis], ratios), axis=axis))


# ------------------------------------------------------------------ unstack

def draw_unstack(draw, kit, spec, dtype):
    """An axis of size three (the spec's three outputs) of a shape of rank 1 to 4."""
    shape = list(_operand_shape(draw, kit))
    axis = draw(kit.st.integers(0, len(shape) - 1))
    shape[axis] = PARTS
    return kit.Signature((dtype,), (tuple(shape),), {"axis": axis}, dtype)


def numpy_unstack(value, *, axis):
    """The numpy backend: ``np.moveaxis`` the axis first and iterate."""
    return tuple(np.moveaxis(value, axis, 0))


@op("nnef_unstack", version=1, draw=draw_unstack, draw_honours=frozenset(), feeding="moved",
    numpy=numpy_unstack,
    nnef=lambda case, call: call(["in0"], {"axis": case.attrs["axis"]}, array_result=True))
def oracle_nnef_unstack(value, *, axis):
    """The slices of ``value`` along ``axis``, that dimension removed, in order."""
    return tuple(value.take(k, axis=axis) for k in range(value.shape[axis]))


# ------------------------------------------------------------------ stack

def draw_stack(draw, kit, spec, dtype):
    """1 to 4 tensors of one shape (rank 0 to 3, empty too) and an axis in [0, rank]."""
    st = kit.st
    shape = draw(kit.shape(min_rank=0, max_rank=3, max_side=5,
                           min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    count = draw(st.integers(1, 4))
    axis = draw(st.integers(0, len(shape)))
    return kit.Signature((dtype,) * count, (shape,) * count, {"axis": axis}, dtype)


def _nnef_stack(case, call):
    values = "[" + ", ".join(f"in{i}" for i in range(len(case.inputs))) + "]"
    return call([values], {"axis": case.attrs["axis"]})


def numpy_stack(*values, axis):
    """The numpy backend: ``np.stack``."""
    return np.stack(values, axis=axis)


@op("nnef_stack", version=1, draw=draw_stack, draw_honours=frozenset(), feeding="moved",
    numpy=numpy_stack, nnef=_nnef_stack)
def oracle_nnef_stack(*values, axis):
    """The tensors joined along a new dimension at ``axis``: out[..., k, ...] = values[k]."""
    return (np.stack(values, axis=axis),)


# ------------------------------------------------------------------ gather

def draw_gather(draw, kit, spec, dtype):
    """As ONNX Gather's drawer (ops/indexing.py: input of rank 1 to 4, empty too; indices of
    rank 0 to 3, the spec's int32 or int64; at most MAX_ARRAY_SIZE output elements), the axis counted
    in [0, rank)."""
    drawn = draw_onnx_gather(draw, kit, spec, dtype)
    axis = drawn.attrs["axis"] % len(drawn.shapes[0])
    return drawn._replace(attrs={"axis": axis})


def values_gather(rng, inputs, attrs):
    """Indices in ``[0, size)`` of the gathered axis."""
    data, indices = inputs
    size = data.shape[attrs["axis"]]
    return [data, np.floor(rng.random(indices.shape) * size).astype(indices.dtype)]


def numpy_gather(data, indices, *, axis):
    """The numpy backend: ``np.take``."""
    return np.take(data, indices, axis=axis)


@op("nnef_gather", version=1, draw=draw_gather, draw_honours=frozenset(), values=values_gather,
    feeding=traced_feeding("nnef_gather", (0,)), numpy=numpy_gather,
    nnef=lambda case, call: call(["in0", "in1"], {"axis": case.attrs["axis"]}))
def oracle_nnef_gather(data, indices, *, axis):
    """output[j_0.., i_0.., j_axis+1..] = data[j_0.., indices[i_0..], j_axis+1..]."""
    return (np.take(data, np.asarray(indices, np.int64), axis=axis),)
