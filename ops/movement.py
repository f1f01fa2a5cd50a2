"""Data movement (XLA Transpose, Reshape, BroadcastInDim, Slice, Pad, Concatenate; ONNX and NNEF
Tile, Squeeze, Unsqueeze): every output element is a copy of one input element, so the oracles
are exact and the elements feeding an output are traced through them (``feeding="moved"``)."""
from __future__ import annotations

import math

import numpy as np

from conform.ops._lowering import unsupported
from conform.op_registry import op
from conform.dtypes import np_dtype
from conform.model_formats import onnx_opset

#: Reshape-14 adds ``allowzero``; before it a 0 in ``shape`` means 'the actual dimension value
#: is unchanged (i.e. taken from the input tensor)'. Slice-10 makes starts, ends, axes and
#: steps inputs; Slice-1 has the first three as attributes and no steps.
RESHAPE_ALLOWZERO_SINCE, SLICE_INPUTS_SINCE = 14, 10


def moved(name: str, **hooks):
    """Declare a data-movement op (version 1): its output elements are copies of input elements."""
    return op(name, version=1, feeding="moved", **hooks)


def text_zero(data: np.ndarray) -> np.ndarray:
    """The 0-d zero of ``data``'s type; for text (an object array) the empty string, a
    stand-in where a text's 'zero' has no meaning for text (the op's region masks it)."""
    return np.array("", object) if data.dtype == object else np.zeros((), data.dtype)


def mismatched_shapes(kit, dtype, forbids: str, cases) -> list:
    """Must-reject cases whose input shapes alone the text forbids (all inputs ``dtype``): one
    per ``(shapes, attrs, output_shape)`` of ``cases``, ``output_shape`` the rank its model
    declares."""
    return [kit.MustReject(kit.Signature((dtype,) * len(shapes), tuple(shapes), attrs, dtype),
                           forbids, (output_shape,)) for shapes, attrs, output_shape in cases]


def draw_transpose(draw, kit, spec, dtype):
    """A permutation of the operand's dimensions."""
    shape = draw(kit.shape(max_rank=5))
    permutation = draw(kit.st.permutations(range(len(shape))))
    return kit.Signature((dtype,), (shape,), {"permutation": list(permutation)}, dtype)


def onnx_transpose_by(attr: str):
    """An ONNX Transpose lowering taking ``perm`` from the attribute ``attr`` (none: reversed)."""
    def lower(case, graph):
        perm = case.attrs.get(attr)
        graph.node(graph.op_type, graph.inputs, **({"perm": perm} if perm else {}))  # [] has no type
    return lower


@moved("transpose", draw=draw_transpose, onnx=onnx_transpose_by("permutation"), nnef=lambda case, call: call(["in0"], {"axes": case.attrs["permutation"]}))
def oracle_transpose(operand, *, permutation):
    """out.shape[i] = operand.shape[permutation[i]]."""
    return (np.transpose(operand, permutation),)


def _prime_factors(n):
    factor = 2
    while n > 1:
        while n % factor == 0:
            yield factor
            n //= factor
        factor += 1


def draw_reshape(draw, kit, spec, dtype):
    """new_sizes: the operand's element count split into a random number of factors."""
    shape = draw(kit.shape(max_rank=4))
    factors = [p for p in _prime_factors(math.prod(shape))]
    rank = draw(kit.st.integers(0 if not factors else 1, 4)) if math.prod(shape) != 0 else len(shape)
    if math.prod(shape) == 0:
        return kit.Signature((dtype,), (shape,), {"new_sizes": list(reversed(shape))}, dtype)
    sizes = [1] * rank
    for p in factors:
        sizes[draw(kit.st.integers(0, rank - 1))] *= p
    return kit.Signature((dtype,), (shape,), {"new_sizes": sizes}, dtype)


def _zero_keeps_extent(case, reader: str) -> list:
    """``new_sizes``, for a format that reads 0 as 'keep the input extent' (``reader`` says
    which): unsupported where such a 0 would not give the drawn size 0."""
    sizes, shape = case.attrs["new_sizes"], case.inputs[0].shape
    for i, size in enumerate(sizes):
        if size == 0 and (i >= len(shape) or shape[i] != 0):
            raise unsupported(f"{reader} reads 0 in 'shape' as 'keep the input extent'; "
                               f"it cannot spell new_sizes={sizes} for an input of shape {list(shape)}")
    return sizes


def onnx_reshape(case, graph):
    """Reshape with the sizes as a constant ``shape``: ``allowzero=1`` from Reshape-14 (a 0 is
    a size), before it only where a 0 copying the input's extent gives the same size."""
    if onnx_opset() >= RESHAPE_ALLOWZERO_SINCE:
        shape = graph.const("shape", case.attrs["new_sizes"])
        graph.node(graph.op_type, [graph.inputs[0], shape], allowzero=1)
        return
    shape = graph.const("shape", _zero_keeps_extent(case, "ONNX Reshape before opset 14"))
    graph.node(graph.op_type, [graph.inputs[0], shape])


def nnef_reshape(case, call):
    return call(["in0"], {"shape": _zero_keeps_extent(case, "NNEF reshape")})


RESHAPE_FORBIDS = (
    "XLA Reshape: 'dimensions 维度的乘积必须等于运算元的维度大小的乘积' (the product of the "
    "dimensions must equal the product of the operand's dimension sizes); ONNX Reshape: 'The "
    "input tensor's shape and the output tensor's shape are required to have the same number "
    "of elements.'")


def invalid_reshape(kit, spec, dtype):
    """An operand of 6 elements reshaped to 4 x 2 (8 elements)."""
    return mismatched_shapes(kit, dtype, RESHAPE_FORBIDS, [([(2, 3)], {"new_sizes": [4, 2]}, (4, 2))])


def from_onnx_reshape(inputs, attrs, opset):
    """An ONNX Reshape node as a case: its shape as ``new_sizes``, each entry resolved as the
    text says: 0 'the actual dimension value is unchanged (i.e. taken from the input tensor)'
    (with allowzero 1: 'the dimension will be set explicitly to zero'), and -1 'inferred from
    the size of the tensor and the remaining dimensions'."""
    data, shape = inputs
    sizes = [int(s) for s in shape]
    if not attrs.get("allowzero", 0):
        sizes = [data.shape[i] if s == 0 and i < data.ndim else s for i, s in enumerate(sizes)]
    if -1 in sizes:
        known = math.prod(s for s in sizes if s != -1)
        sizes[sizes.index(-1)] = data.size // known if known else 0
    return [data], {"new_sizes": sizes}


@moved("reshape", draw=draw_reshape, onnx=onnx_reshape, nnef=nnef_reshape, invalid=invalid_reshape,
       from_onnx=from_onnx_reshape)
def oracle_reshape(operand, *, new_sizes):
    """Row-major (last dimension fastest) reshape to ``new_sizes``."""
    return (np.reshape(operand, new_sizes),)


def draw_broadcast_in_dim(draw, kit, spec, dtype):
    """Operand dims map in increasing order onto output dims; size-1 dims may grow."""
    st = kit.st
    operand = draw(kit.shape(max_rank=3, max_side=4))
    out_rank = draw(st.integers(len(operand), min(len(operand) + 2, 4)))
    dims = sorted(draw(st.permutations(range(out_rank)))[:len(operand)])
    out = [draw(st.integers(1, 4)) for _ in range(out_rank)]
    for operand_dim, out_dim in enumerate(dims):
        if operand[operand_dim] != 1 or draw(st.booleans()):
            out[out_dim] = operand[operand_dim]
    attrs = {"shape": out, "broadcast_dimensions": dims}
    return kit.Signature((dtype,), (operand,), attrs, dtype)


def onnx_broadcast_in_dim(case, graph):
    """Reshape to the output rank (size 1 in unmapped dims), then Expand."""
    shape, dims = case.attrs["shape"], case.attrs["broadcast_dimensions"]
    expanded = [1] * len(shape)
    for operand_dim, out_dim in enumerate(dims):
        expanded[out_dim] = case.inputs[0].shape[operand_dim]
    reshaped = graph.node("Reshape", [graph.inputs[0], graph.const("expanded", expanded)],
                          output="reshaped")
    graph.node(graph.op_type, [reshaped, graph.const("out_shape", shape)])


def numpy_broadcast_in_dim(operand, *, shape, broadcast_dimensions):
    """The numpy backend: size-1 axes inserted where no operand dimension maps, then
    ``np.broadcast_to``."""
    missing = tuple(d for d in range(len(shape)) if d not in broadcast_dimensions)
    return np.broadcast_to(np.expand_dims(operand, missing), shape)


@moved("broadcast_in_dim", numpy=numpy_broadcast_in_dim, draw=draw_broadcast_in_dim, onnx=onnx_broadcast_in_dim, onnx_shape_dependent=True)
def oracle_broadcast_in_dim(operand, *, shape, broadcast_dimensions):
    """Operand dimension i maps to output dimension broadcast_dimensions[i]; size-1 dims broadcast."""
    expanded = [1] * len(shape)
    for operand_dim, out_dim in enumerate(broadcast_dimensions):
        expanded[out_dim] = operand.shape[operand_dim]
    return (np.broadcast_to(operand.reshape(expanded), shape).copy(),)


def draw_slice(draw, kit, spec, dtype):
    """start <= limit within each dimension, strides 1 to 3."""
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=8))
    starts, limits, strides = [], [], []
    for size in shape:
        start = draw(kit.st.integers(0, size))
        starts.append(start)
        limits.append(draw(kit.st.integers(start, size)))
        strides.append(draw(kit.st.integers(1, 3)))
    attrs = {"start_indices": starts, "limit_indices": limits, "strides": strides}
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def onnx_slice(case, graph):
    """Slice with every axis named: starts, ends, axes and steps as constant inputs from
    Slice-10; before it starts, ends and axes as attributes, and no step but 1."""
    a = case.attrs
    if onnx_opset() < SLICE_INPUTS_SINCE:
        if any(stride != 1 for stride in a["strides"]):
            raise unsupported(f"ONNX Slice-1 has no steps (from Slice-10): strides={a['strides']}")
        graph.node(graph.op_type, graph.inputs[:1], starts=a["start_indices"],
                   ends=a["limit_indices"], axes=list(range(len(a["start_indices"]))))
        return
    inputs = [graph.inputs[0], graph.const("starts", a["start_indices"]),
              graph.const("ends", a["limit_indices"]),
              graph.const("axes", list(range(len(a["start_indices"])))),
              graph.const("steps", a["strides"])]
    graph.node(graph.op_type, inputs)


def nnef_slice(case, call):
    a, shape = case.attrs, case.inputs[0].shape
    # NNEF reads end = 0 as 'to the end' (unit stride); -extent addresses position 0 instead.
    ends = [-size if limit == 0 and size > 0 else limit
            for limit, size in zip(a["limit_indices"], shape)]
    return call(["in0"], {"axes": list(range(len(shape))), "begin": a["start_indices"],
                          "end": ends, "stride": a["strides"]})


def numpy_slice(operand, *, start_indices, limit_indices, strides):
    """The numpy backend: basic slicing."""
    return operand[tuple(map(slice, start_indices, limit_indices, strides))]


@moved("slice", numpy=numpy_slice, draw=draw_slice, onnx=onnx_slice, nnef=nnef_slice)
def oracle_slice(operand, *, start_indices, limit_indices, strides):
    """operand[start:limit:stride] in every dimension."""
    index = tuple(slice(s, e, k) for s, e, k in zip(start_indices, limit_indices, strides))
    return (operand[index],)


def draw_pad(draw, kit, spec, dtype):
    """(low, high, interior) per dimension; negative edges trim, the result is never negative.

    Half the signatures have no interior padding, which ONNX Pad and NNEF pad lack."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=3, max_side=5))
    edges_only = draw(st.booleans())
    config = []
    for size in shape:
        interior = 0 if edges_only else draw(st.sampled_from([0, 0, 1, 2]))
        grown = size + max(size - 1, 0) * interior
        low = draw(st.integers(-min(grown, 2), 3))
        high = draw(st.integers(-min(grown + low, 2), 3)) if grown + low > 0 else draw(st.integers(0, 3))
        config.append([low, high, interior])
    return kit.Signature((dtype, dtype), (shape, ()), {"padding_config": config}, dtype)


def onnx_pad(case, graph):
    config = case.attrs["padding_config"]
    if any(interior for _, _, interior in config):
        raise unsupported("ONNX Pad has no interior padding")
    pads = graph.const("pads", [low for low, _, _ in config] + [high for _, high, _ in config])
    graph.node(graph.op_type, [graph.inputs[0], pads, graph.inputs[1]], mode="constant")


def nnef_pad(case, call):
    config = case.attrs["padding_config"]
    if any(interior for _, _, interior in config):
        raise unsupported("NNEF pad has no interior padding")
    # NNEF's pad value is a compile-time scalar attribute, so the padding value becomes a literal
    # (exact: it is copied, never computed with); the operand stays a runtime input.
    return call(["in0"], {"padding": [(low, high) for low, high, _ in config],
                          "value": float(case.inputs[1])}, inputs=[0])


def numpy_pad(operand, padding_value, *, padding_config):
    """The numpy backend: ``np.pad`` with the constant; it has no interior padding and no
    negative (cropping) edges, so those cases are unsupported."""
    if any(interior or low < 0 or high < 0 for low, high, interior in padding_config):
        raise unsupported("np.pad has no interior padding and no negative edges")
    return np.pad(operand, [(low, high) for low, high, _ in padding_config],
                  constant_values=padding_value)


@moved("pad", numpy=numpy_pad, draw=draw_pad, onnx=onnx_pad, nnef=nnef_pad)
def oracle_pad(operand, padding_value, *, padding_config):
    """XLA Pad: interior padding first, then edge padding (negative edges remove elements)."""
    out = operand
    for axis, (low, high, interior) in enumerate(padding_config):
        size = out.shape[axis]
        grown = list(out.shape)
        grown[axis] = size + max(size - 1, 0) * interior
        spread = np.full(grown, padding_value, dtype=out.dtype)
        spread[(slice(None),) * axis + (slice(None, None, interior + 1),)] = out
        widths = [(0, 0)] * out.ndim
        widths[axis] = (max(low, 0), max(high, 0))
        spread = np.pad(spread, widths, constant_values=padding_value)
        stop = spread.shape[axis] - max(-high, 0)
        out = spread[(slice(None),) * axis + (slice(max(-low, 0), stop),)]
    return (out,)


def draw_concatenate(draw, kit, spec, dtype):
    """1 to 4 operands equal in every dimension but ``dimension``."""
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=5))
    dimension = draw(kit.st.integers(0, len(shape) - 1))
    count = draw(kit.st.integers(1, 4))
    shapes = []
    for _ in range(count):
        s = list(shape)
        s[dimension] = draw(kit.st.integers(0, 5))
        shapes.append(tuple(s))
    return kit.Signature((dtype,) * count, tuple(shapes), {"dimension": dimension}, dtype)


def nnef_concat(case, call):
    values = "[" + ", ".join(f"in{i}" for i in range(len(case.inputs))) + "]"
    return call([values], {"axis": case.attrs["dimension"]})


def lax_concatenate(lax, attrs):
    return lambda *operands: lax.concatenate(operands, attrs["dimension"])


def numpy_concatenate(*operands, dimension=None, axis=None):
    """The numpy backend: ``np.concatenate`` (XLA's ``dimension``, ONNX's ``axis``)."""
    return np.concatenate(operands, axis=axis if dimension is None else dimension)


CONCATENATE_FORBIDS = ("XLA Concatenate: '除了 dimension 之外,所有维度都必须相同' (all "
                       "dimensions but dimension must be the same)")


def invalid_concatenate(kit, spec, dtype):
    """Operands 2 x 3 and 3 x 4 joined on dimension 0; and 2 x 3 with 2 x 3 x 1 (ranks differ)."""
    return mismatched_shapes(kit, dtype, CONCATENATE_FORBIDS, [
        ([(2, 3), (3, 4)], {"dimension": 0}, (5, 3)),
        ([(2, 3), (2, 3, 1)], {"dimension": 0}, (4, 3))])


@moved("concatenate", numpy=numpy_concatenate, draw=draw_concatenate, invalid=invalid_concatenate, nnef=nnef_concat, lax=lax_concatenate,
         onnx=lambda case, graph: graph.node(graph.op_type, graph.inputs, axis=case.attrs["dimension"]))
def oracle_concatenate(*operands, dimension):
    """Operands joined along ``dimension`` in order."""
    return (np.concatenate(operands, axis=dimension),)


def draw_tile(draw, kit, spec, dtype):
    """repeats: one count (1 to 3) per dimension of a rank >= 1 operand."""
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=4))
    repeats = [draw(kit.st.integers(1, 3)) for _ in shape]
    if math.prod(shape) * math.prod(repeats) > kit.MAX_ARRAY_SIZE:
        repeats = [1] * len(shape)
    return kit.Signature((dtype,), (shape,), {"repeats": repeats}, dtype)


def onnx_with_constant(attr: str):
    """An ONNX lowering passing the integer list attribute ``attr`` as a second, constant input
    (left out where the case has no such attribute)."""
    def lower(case, graph):
        values = case.attrs.get(attr)
        graph.node(graph.op_type, graph.inputs[:1] + ([] if values is None else [graph.const(attr, values)]))
    return lower


def nnef_with(attr: str):
    """An NNEF lowering passing the attribute ``attr`` as it is."""
    return lambda case, call: call(["in0"], {attr: case.attrs[attr]})


@moved("tile", draw=draw_tile, onnx=onnx_with_constant("repeats"), nnef=nnef_with("repeats"))
def oracle_tile(operand, *, repeats):
    """The operand repeated ``repeats[i]`` times along dimension i (NNEF tile, ONNX Tile):
    out[j...] = operand[j_0 mod s_0, j_1 mod s_1, ...]."""
    return (np.tile(operand, repeats),)


def draw_squeeze(draw, kit, spec, dtype):
    """axes: a non-empty, sorted set of size-1 dimensions of the operand."""
    shape = list(draw(kit.shape(min_rank=1, max_rank=5, max_side=4)))
    ones = draw(kit.st.sets(kit.st.integers(0, len(shape) - 1), min_size=1))
    for axis in ones:
        shape[axis] = 1
    return kit.Signature((dtype,), (tuple(shape),), {"axes": sorted(ones)}, dtype)


@moved("squeeze", draw=draw_squeeze, onnx=onnx_with_constant("axes"), nnef=nnef_with("axes"))
def oracle_squeeze(operand, *, axes):
    """The operand without its size-1 dimensions ``axes`` (NNEF squeeze, ONNX Squeeze)."""
    return (np.squeeze(operand, axis=tuple(axes)),)


def draw_unsqueeze(draw, kit, spec, dtype):
    """axes: a non-empty, sorted set of positions in the result where size-1 dimensions appear."""
    shape = draw(kit.shape(min_rank=0, max_rank=3, max_side=4))
    out_rank = len(shape) + draw(kit.st.integers(1, 2))
    axes = draw(kit.st.lists(kit.st.integers(0, out_rank - 1), min_size=out_rank - len(shape),
                             max_size=out_rank - len(shape), unique=True))
    return kit.Signature((dtype,), (shape,), {"axes": sorted(axes)}, dtype)


@moved("unsqueeze", draw=draw_unsqueeze, onnx=onnx_with_constant("axes"), nnef=nnef_with("axes"))
def oracle_unsqueeze(operand, *, axes):
    """The operand with size-1 dimensions inserted so that they sit at ``axes`` of the result
    (NNEF unsqueeze, ONNX Unsqueeze: the axes index the output)."""
    return (np.expand_dims(operand, tuple(axes)),)


def draw_rev(draw, kit, spec, dtype):
    """A shape (0-d and empty ones included) and any set of its dimensions, in any order."""
    shape = draw(kit.shape(max_rank=4, min_side=draw(kit.st.sampled_from([1, 1, 1, 0])),
                           max_side=7))
    dims = draw(kit.st.permutations(range(len(shape))))[:draw(kit.st.integers(0, len(shape)))]
    return kit.Signature((dtype,), (shape,), {"dimensions": list(dims)}, dtype)


@moved("rev", draw=draw_rev)
def oracle_rev(operand, *, dimensions):
    """XLA Rev: along each dimension in ``dimensions`` of size N, index i goes to N - 1 - i."""
    return (np.flip(operand, axis=tuple(dimensions)).copy(),)


def draw_iota(draw, kit, spec, dtype):
    """A shape of rank >= 1 (empty ones included), the dimension that counts up and the element
    type (an attribute: Iota has no operand)."""
    shape = draw(kit.shape(min_rank=1, max_rank=4, min_side=draw(kit.st.sampled_from([1, 1, 1, 0])),
                           max_side=16))
    attrs = {"shape": list(shape), "dimension": draw(kit.st.integers(0, len(shape) - 1)),
             "dtype": dtype}
    return kit.Signature((), (), attrs, dtype)


def lax_iota(lax, attrs):
    """jax.lax.broadcasted_iota(dtype, shape, dimension), a function of no operand."""
    return lambda: lax.broadcasted_iota(np.dtype(attrs["dtype"]), tuple(attrs["shape"]),
                                        attrs["dimension"])


def numpy_iota(*, shape, dimension, dtype):
    """The numpy backend: ``np.arange`` in the element type, broadcast along the others."""
    view = [-1 if d == dimension else 1 for d in range(len(shape))]
    return np.broadcast_to(np.arange(shape[dimension], dtype=np_dtype(dtype)).reshape(view), shape)


@op("iota", numpy=numpy_iota, version=1, draw=draw_iota, lax=lax_iota, feeding=lambda inputs, attrs, index: [])
def oracle_iota(*, shape, dimension, dtype):
    """XLA Iota: 0, 1, 2, ... along ``dimension``, the same across the others; for float types
    ConvertElementType of the integer Iota (the judge rounds each value once to the type)."""
    counts = np.arange(shape[dimension], dtype=np.int64)
    view = [-1 if d == dimension else 1 for d in range(len(shape))]
    out = np.broadcast_to(counts.reshape(view), shape).copy()
    if dtype.startswith("complex"):   # StableHLO: the count converted, imaginary part +0
        return (out.astype(np.complex128),)
    return (out.astype(np.float64) if dtype.startswith(("float", "bfloat")) else out,)
