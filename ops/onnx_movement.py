"""ONNX's data-movement operators judged by ONNX's semantics (ai.onnx, opset 21): Concat,
Squeeze and Unsqueeze take negative axes ('accepted range is [-r, r-1]', counted from the end;
for Unsqueeze, r is the output's rank), Squeeze without axes drops every size-1 dimension,
Transpose reverses the dimensions without perm, and Expand broadcasts both ways (the shape may
be smaller than the input's). Every output element is a copy of one input element."""
from __future__ import annotations

import numpy as np

from conform.ops.movement import moved, onnx_transpose_by, onnx_with_constant


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


@moved("onnx_concat", draw=draw_onnx_concat,
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


@moved("onnx_expand", draw=draw_onnx_expand,
        onnx=lambda case, graph: graph.node(
            graph.op_type, [graph.inputs[0], graph.const("shape", case.attrs["shape"])]))
def oracle_onnx_expand(data, *, shape):
    """``data`` broadcast with ``shape`` both ways: the result's shape is their broadcast."""
    return (np.broadcast_to(data, np.broadcast_shapes(data.shape, tuple(shape))).copy(),)
