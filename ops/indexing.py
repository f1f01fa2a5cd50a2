"""ONNX's gathering operators (ai.onnx): Gather, GatherElements and GatherND read the elements
that an index tensor names, OneHot writes on_value where its indices name a class, Compress
keeps the slices its condition selects; and the helpers the other index ops (ops/scatter.py,
ops/dynamic_slicing.py) share. Index values lie in ``[-s, s-1]`` along an axis of size ``s``
('it is an error if any of the index values are out of bounds'), negative ones counting from
the end: the drawers draw them there (OneHot's text defines indices out of range too: those
are drawn as well).

Indices are real inputs of each case (int32 or int64 as the schema's ``Tind`` allows), filled
from the case's seed by each op's ``values`` hook once the shapes are drawn. Every output is
judged exactly: each element is a copy of an input element."""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import definition, op
from conform.widening import widen

#: The spec signature fields the drawers here read: none (they draw every shape themselves).
DRAWN_HERE = frozenset()


def index_type(draw, kit, spec, name: str) -> str:
    """One of the dtypes the spec allows for index input ``name`` (a type variable, or fixed)."""
    kind = spec.input_types[spec.inputs.index(name)]
    return draw(kit.st.sampled_from(kind)) if isinstance(kind, tuple) else kind


def signed_axis(draw, kit, axis: int, rank: int) -> int:
    """``axis`` in [0, rank), or the same axis counted from the end, as drawn."""
    return axis - rank if draw(kit.st.booleans()) else axis


def in_range(rng, sizes, shape, dtype) -> np.ndarray:
    """Indices of ``shape`` in ``[-s, s)`` for the axis sizes ``sizes`` (broadcast against the
    shape: one size, or one per position of the last dimension), half of them negative."""
    sizes = np.broadcast_to(np.asarray(sizes, np.int64), shape)
    positions = np.floor(rng.random(shape) * sizes).astype(np.int64)
    return np.where(rng.random(shape) < 0.5, positions - sizes, positions).astype(dtype)


def normalised(indices: np.ndarray, sizes) -> np.ndarray:
    """Indices with the negative ones counted from the end of an axis of size ``sizes``."""
    indices = np.asarray(indices, np.int64)
    return np.where(indices < 0, indices + np.asarray(sizes, np.int64), indices)


def moved_from(name: str, inputs, attrs: dict, index, data_inputs, output: int = 0) -> list:
    """Per input, the one element of the inputs at ``data_inputs`` that op ``name`` copies to
    ``out[index]`` (None for the others): those inputs' elements are numbered (exact in
    float64 below 2**53) and sent through the op's oracle with the other inputs as they are;
    the numbers start at 1, so a value the op writes itself (a pad's constant 0) is no input
    element's, and none feeds it."""
    numbered, offset, starts = list(inputs), 1, {}
    for k in data_inputs:
        starts[k] = offset
        numbered[k] = np.arange(offset, offset + inputs[k].size, dtype=np.float64) \
            .reshape(inputs[k].shape)
        offset += inputs[k].size
    found = definition(name)
    extra = {"dtypes": tuple(str(x.dtype) for x in numbered)} if found.takes_dtypes else {}
    with np.errstate(all="ignore"):
        moved = found(*(widen(x) for x in numbered), **attrs, **extra)[output]
    label = int(np.asarray(moved)[tuple(index)])
    source = next((k for k in data_inputs if starts[k] <= label < starts[k] + inputs[k].size),
                  None)
    return [x.ravel()[label - starts[k]:label - starts[k] + 1] if k == source else None
            for k, x in enumerate(inputs)]


def traced_feeding(name: str, data_inputs: tuple[int, ...]):
    """A feeding rule for op ``name``, which copies elements of the inputs at ``data_inputs``
    to places that other (index) inputs choose (:func:`moved_from`, with the real indices);
    the index inputs are reported as not feeding (an index is not a term of the value)."""
    def feed(inputs, attrs, index):
        return moved_from(name, inputs, attrs, index, data_inputs)
    return feed


#: The ONNX texts' words on the indices of Gather, GatherElements and ScatterElements.
OUT_OF_BOUNDS = ("ONNX {op}, input indices: 'All index values are expected to be within bounds "
                 "[-s, s-1] along axis of size s. It is an error if any of the index values are "
                 "out of bounds.'")


def out_of_range_invalid(kit, spec, dtype, shapes, attrs, output_shape, *, indices: int = 1):
    """Two must-reject cases of an index op on ``shapes`` (data first; the index input at
    ``indices``, int64) indexing axis 0 of size s: one index entry s, one -s - 1 (the first
    values just out of ``[-s, s-1]``); the rest valid (the op's ``values`` hook)."""
    size = shapes[0][attrs.get("axis", 0)]
    dtypes = tuple("int64" if k == indices else dtype for k in range(len(shapes)))
    signature = kit.Signature(dtypes, tuple(shapes), dict(attrs), dtype)
    op_type = spec.bindings["onnx"]["op_type"]

    def breaking(value):
        def breaks(rng, inputs):
            broken = np.array(inputs[indices], copy=True)
            broken.flat[int(rng.integers(broken.size))] = value
            return [broken if k == indices else x for k, x in enumerate(inputs)]
        return breaks

    return [kit.MustReject(signature, OUT_OF_BOUNDS.format(op=op_type), (output_shape,),
                           breaking(value)) for value in (size, -size - 1)]


def _lower_with(*names: str):
    """An ONNX lowering of one node over every input, with the case's attributes ``names``."""
    def lower(case, graph):
        graph.node(graph.op_type, graph.inputs,
                   **{name: case.attrs[name] for name in names if name in case.attrs})
    return lower


# -- Gather -----------------------------------------------------------------------------------

def draw_onnx_gather(draw, kit, spec, dtype):
    """Data of rank 1 to 4 (empty too), an axis (possibly negative), indices of rank 0 to 3
    (empty too, and always where the axis is empty: no index is valid there) of int32 or
    int64; the output has at most MAX_ARRAY_SIZE elements."""
    st = kit.st
    data = draw(kit.shape(min_rank=1, max_rank=4, max_side=5,
                          min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    axis = draw(st.integers(0, len(data) - 1))
    rest = math.prod(data[:axis] + data[axis + 1:])
    indices = draw(kit.shape(min_rank=0, max_rank=3, max_side=4,
                             min_side=draw(st.sampled_from([1, 1, 1, 0]))).filter(
        lambda s: math.prod(s) * rest <= kit.MAX_ARRAY_SIZE))
    if data[axis] == 0 and math.prod(indices):
        indices = (0,) + indices[1:]
    return kit.Signature((dtype, index_type(draw, kit, spec, "indices")), (data, indices),
                         {"axis": signed_axis(draw, kit, axis, len(data))}, dtype)


def values_onnx_gather(rng, inputs, attrs):
    """Indices in ``[-s, s)`` along the gathered axis."""
    data, indices = inputs
    return [data, in_range(rng, data.shape[attrs["axis"]], indices.shape, indices.dtype)]


def invalid_onnx_gather(kit, spec, dtype):
    """Data 3 x 4, indices of 2 entries, one out of bounds."""
    return out_of_range_invalid(kit, spec, dtype, [(3, 4), (2,)], {"axis": 0}, (2, 4))


@op("onnx_gather", version=1, draw=draw_onnx_gather, draw_honours=DRAWN_HERE, invalid=invalid_onnx_gather,
    values=values_onnx_gather, feeding=traced_feeding("onnx_gather", (0,)),
    onnx=_lower_with("axis"))
def oracle_onnx_gather(data, indices, *, axis):
    """ONNX Gather-13: output[j_0.., i_0..i_{q-1}, j_axis..] = data[j_0.., k, j_axis..] with
    k = indices[i_0..i_{q-1}] (negative: counted from the end of the axis)."""
    return (np.take(data, normalised(indices, data.shape[axis]), axis=axis),)


# -- GatherElements ---------------------------------------------------------------------------

def draw_onnx_gather_elements(draw, kit, spec, dtype):
    """Data of rank 1 to 4 (empty too), an axis (possibly negative), and indices of the same
    rank: along the axis any length (0 included; only 0 where the axis is empty), elsewhere at
    most data's size there (the text reads data at the entry's own index in those
    dimensions)."""
    st = kit.st
    data = draw(kit.shape(min_rank=1, max_rank=4, max_side=5,
                          min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    axis = draw(st.integers(0, len(data) - 1))
    indices = tuple(draw(st.integers(0 if k == axis else min(side, 1),
                                     (5 if side else 0) if k == axis else side))
                    for k, side in enumerate(data))
    return kit.Signature((dtype, index_type(draw, kit, spec, "indices")), (data, indices),
                         {"axis": signed_axis(draw, kit, axis, len(data))}, dtype)


def numpy_gather_elements(data, indices, *, axis):
    """The numpy backend: ``np.take_along_axis`` on data cut to the indices' extent in the
    other dimensions (take_along_axis wants them equal)."""
    axis %= data.ndim
    cut = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape))
    return np.take_along_axis(data[cut], indices, axis=axis)


def invalid_onnx_gather_elements(kit, spec, dtype):
    """Data 3 x 4, indices 2 x 4, one entry out of bounds."""
    return out_of_range_invalid(kit, spec, dtype, [(3, 4), (2, 4)], {"axis": 0}, (2, 4))


@op("onnx_gather_elements", numpy=numpy_gather_elements, version=1, draw=draw_onnx_gather_elements,
    invalid=invalid_onnx_gather_elements,
    draw_honours=DRAWN_HERE, values=values_onnx_gather,
    feeding=traced_feeding("onnx_gather_elements", (0,)), onnx=_lower_with("axis"))
def oracle_onnx_gather_elements(data, indices, *, axis):
    """ONNX GatherElements-13: out[i][j][k] = data[index[i][j][k]][j][k] for axis 0 (and so
    on for the other axes); the output has the indices' shape."""
    axis %= data.ndim
    index = normalised(indices, data.shape[axis])
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis] = index
    return (data[tuple(grid)],)


# -- GatherND ---------------------------------------------------------------------------------

def draw_onnx_gather_nd(draw, kit, spec, dtype):
    """``batch_dims`` b below min(q, r), data of rank r in [b+1, b+3], index tuples of length
    k in [1, r - b], and indices of shape batch + some dimensions (none too) + (k,)."""
    st = kit.st
    batch = draw(st.integers(0, 2))
    batch_shape = tuple(draw(st.lists(st.integers(1, 3), min_size=batch, max_size=batch)))
    data = batch_shape + tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    k = draw(st.integers(1, len(data) - batch))
    middle = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=2)))
    indices = batch_shape + middle + (k,)
    out_size = math.prod(indices[:-1]) * math.prod(data[batch + k:])
    if out_size > kit.MAX_ARRAY_SIZE or math.prod(data) > kit.MAX_ARRAY_SIZE:
        indices = batch_shape + (k,)
    return kit.Signature((dtype, "int64"), (data, indices), {"batch_dims": batch}, dtype)


def values_onnx_gather_nd(rng, inputs, attrs):
    """Each tuple's j-th index in ``[-s, s)`` for the axis b + j of data it indexes."""
    data, indices = inputs
    batch, k = attrs["batch_dims"], indices.shape[-1]
    return [data, in_range(rng, data.shape[batch:batch + k], indices.shape, indices.dtype)]


def numpy_gather_nd(data, indices, *, batch_dims):
    """The numpy backend: advanced indexing by the index tuples, each batch dimension indexed
    by an ``np.arange`` along its own axis."""
    lead = indices.ndim - 1
    batch = tuple(np.arange(size).reshape([-1 if d == i else 1 for d in range(lead)])
                  for i, size in enumerate(indices.shape[:batch_dims]))
    return data[batch + tuple(np.moveaxis(indices, -1, 0))]


@op("onnx_gather_nd", numpy=numpy_gather_nd, version=1, draw=draw_onnx_gather_nd, draw_honours=DRAWN_HERE,
    values=values_onnx_gather_nd, feeding=traced_feeding("onnx_gather_nd", (0,)),
    onnx=_lower_with("batch_dims"))
def oracle_onnx_gather_nd(data, indices, *, batch_dims):
    """ONNX GatherND-13: for each batch position and each index tuple of length k (negative
    entries counted from the end), the slice data[batch, tuple, ...]; the output's shape is
    indices.shape[:-1] + data.shape[batch_dims + k:]."""
    b, k = batch_dims, indices.shape[-1]
    batches = math.prod(data.shape[:b])
    flat = data.reshape((batches,) + data.shape[b:])
    tuples = normalised(indices, data.shape[b:b + k]).reshape(batches, -1, k)
    at = (np.arange(batches)[:, None],) + tuple(tuples[..., j] for j in range(k))
    return (flat[at].reshape(indices.shape[:-1] + data.shape[b + k:]),)


# -- OneHot -----------------------------------------------------------------------------------

def draw_onnx_one_hot(draw, kit, spec, dtype):
    """Indices of rank 1 to 3 (empty too; onnx's shape inference refuses rank 0) and ``depth`` (0-d or one element; each of a type
    T1 and T2 allow, integral where a float), ``values`` = [off, on] of the case's dtype, and
    ``axis`` in [-r-1, r] (drawn negative or not)."""
    st = kit.st
    indices = draw(kit.shape(min_rank=1, max_rank=3, max_side=4,
                             min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    depth = draw(st.sampled_from([(), (1,)]))
    rank = len(indices) + 1
    attrs = {"axis": signed_axis(draw, kit, draw(st.integers(0, rank - 1)), rank)}
    types = (_one_hot_index_type(draw, kit, spec, "indices"),
             _one_hot_index_type(draw, kit, spec, "depth"), dtype)
    return kit.Signature(types, (indices, depth, (2,)), attrs, dtype)


#: the index types runtimes commonly register OneHot kernels for: drawn 3 times in 4, so that
#: widening T1 and T2 to every type the schema allows does not leave most cases unrunnable
_COMMON_INDEX_TYPES = ("int32", "int64", "float32")


def _one_hot_index_type(draw, kit, spec, name: str) -> str:
    """A type of index input ``name``: one of :data:`_COMMON_INDEX_TYPES` 3 times in 4, else
    any the spec allows."""
    common = [t for t in spec.input_types[spec.inputs.index(name)] if t in _COMMON_INDEX_TYPES]
    if common and draw(kit.st.integers(0, 3)):
        return draw(kit.st.sampled_from(common))
    return index_type(draw, kit, spec, name)


def values_onnx_one_hot(rng, inputs, attrs):
    """``depth`` in [1, 6]; indices in [-depth - 2, depth + 1]: in range, or out of it by up to
    two on either side (the text gives those an all-off slice)."""
    indices, depth, values = inputs
    count = int(rng.integers(1, 7))
    low = 0 if indices.dtype.kind == "u" else -count - 2   # unsigned: no negative entry
    drawn = rng.integers(low, count + 2, size=indices.shape)
    return [drawn.astype(indices.dtype), np.full(depth.shape, count, depth.dtype), values]


def numpy_one_hot(indices, depth, values, *, axis):
    """The numpy backend: ``np.arange(depth) == indices`` (negative ones counted from the end)
    along the new axis, then ``np.where`` of on and off values."""
    count = int(depth.ravel()[0])
    entries = indices.astype(np.int64)
    entries = np.where(entries < 0, entries + count, entries)
    axis %= indices.ndim + 1
    classes = np.arange(count).reshape([-1 if k == axis else 1 for k in range(indices.ndim + 1)])
    return np.where(np.expand_dims(entries, axis) == classes, values[1], values[0])


@op("onnx_one_hot", numpy=numpy_one_hot, version=1, draw=draw_onnx_one_hot, draw_honours=DRAWN_HERE,
    values=values_onnx_one_hot, feeding=traced_feeding("onnx_one_hot", (2,)),
    onnx=_lower_with("axis"), value_dependent_shape=True)
def oracle_onnx_one_hot(indices, depth, values, *, axis, dtypes=()):
    """ONNX OneHot-11: a new dimension of size ``depth`` at ``axis`` (in [-r-1, r], negative
    counted from the end of the output's dimensions); on_value = values[1] where the new index
    equals the entry of indices (cast to int64; negative in [-depth, -1] counted from the end),
    off_value = values[0] elsewhere, and all off for an entry outside [-depth, depth-1]."""
    count = int(depth.ravel()[0])
    entries = np.trunc(indices).astype(np.int64) if indices.dtype.kind == "f" else indices
    inside = (entries >= -count) & (entries < count)
    if dtypes and dtypes[0] == "uint64":   # widened to int64: 2**63 and above read negative
        inside &= entries >= 0
    position = np.where(entries < 0, entries + count, entries)
    axis %= indices.ndim + 1
    classes = np.arange(count).reshape([-1 if k == axis else 1 for k in range(indices.ndim + 1)])
    hot = (np.expand_dims(position, axis) == classes) & np.expand_dims(inside, axis)
    return (np.where(hot, values[1], values[0]),)


# -- Compress ---------------------------------------------------------------------------------

def draw_onnx_compress(draw, kit, spec, dtype):
    """An input of rank 1 to 4 (empty dimensions too), an axis (possibly negative) or none (the
    input flattened), and a bool condition of length up to the axis' size (or the flattened
    size): shorter ones discard the rest, as the text allows."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=5,
                           min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    attrs = {}
    if draw(st.integers(0, 3)):   # a quarter of the cases give no axis
        axis = draw(st.integers(0, len(shape) - 1))
        attrs["axis"] = signed_axis(draw, kit, axis, len(shape))
        length = shape[axis]
    else:
        length = math.prod(shape)
    condition = (draw(st.integers(max(length - 2, 0), length)),)
    return kit.Signature((dtype, "bool"), (shape, condition), attrs, dtype)


def numpy_compress(input, condition, *, axis=None):  # noqa: A002 - ONNX's name
    """The numpy backend: ``np.compress``."""
    return np.compress(condition, input, axis=axis)


@op("onnx_compress", numpy=numpy_compress, version=1, draw=draw_onnx_compress, draw_honours=DRAWN_HERE,
    feeding=traced_feeding("onnx_compress", (0,)), onnx=_lower_with("axis"),
    value_dependent_shape=True)
def oracle_onnx_compress(input, condition, *, axis=None):
    """ONNX Compress-11: the slices along ``axis`` (or the elements of the flattened input)
    whose condition entry is true; positions past the condition's length are discarded."""
    if axis is None:
        input, axis = input.ravel(), 0
    kept = np.flatnonzero(condition)
    return (np.take(input, kept, axis=axis),)
