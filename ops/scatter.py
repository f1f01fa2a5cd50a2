"""ONNX ScatterElements and ScatterND (opset 18): a copy of ``data`` in which each entry of
``updates`` is written at the position its ``indices`` entry names, or combined with the element
there by the ``reduction`` f (``add`` +, ``mul`` *, ``max``, ``min``; ``none`` replaces).

Index values lie in ``[-s, s-1]`` (negative: from the end). With ``reduction`` none the texts
ask for indices without duplicates ('this ensures that the output value does not depend on the
iteration order'), and ScatterND says 'the order of iteration ... is not specified': so under
none, and for every float type (where the order of several additions or multiplications into one
element changes the rounded result), the drawers draw distinct target positions; integer types
under add, mul, max and min get repeated positions, whose result no order changes (integer +
and * are associative and commutative where they do not overflow; overflow is a region)."""
from __future__ import annotations

import math

import numpy as np

from conform.ops._lowering import unsupported
from conform.op_registry import op
from conform.ops.onnx_elementwise import unsigned64
from conform.ops.indexing import (DRAWN_HERE, in_range, index_type, normalised,
                                  out_of_range_invalid, signed_axis)

REDUCTIONS = ("none", "add", "mul", "max", "min")
#: The first opset at which ScatterElements and ScatterND take each reduction.
REDUCTION_SINCE = {"none": 11, "add": 16, "mul": 16, "max": 18, "min": 18}


def _repeats_allowed(dtype: str, reduction: str) -> bool:
    """Whether two updates may hit one element: only where the result is order-free."""
    return reduction != "none" and dtype.startswith(("int", "uint"))


def _draw_reduction(draw, kit, dtype: str) -> str:
    """A reduction; bool and string data take none only (the texts' +, *, max and min are
    arithmetic); complex data none or add (complex numbers have no order for max and min, and
    a complex product is several roundings, not one: add is one IEEE addition per part)."""
    if dtype in ("bool", "string"):
        return "none"
    return draw(kit.st.sampled_from(("none", "add") if dtype.startswith("complex")
                                    else REDUCTIONS))


def _ieee_max(a, b):
    """IEEE 754-2019 maximum: NaN propagates, -0 < +0."""
    zeros = (a == 0) & (b == 0)
    return np.where(zeros, np.where(np.signbit(a) & np.signbit(b), a, abs(a)), np.maximum(a, b))


def _ieee_min(a, b):
    """IEEE 754-2019 minimum: NaN propagates, -0 < +0."""
    zeros = (a == 0) & (b == 0)
    return np.where(zeros, np.where(np.signbit(a) | np.signbit(b), -abs(a), a), np.minimum(a, b))


def _number_over_nan(select, zeros_by):
    """The other reading of max or min: the number over NaN (maxNum, C's fmax), and of zeros of
    both signs the one IEEE 754-2019 does not choose (``zeros_by``), as an implementation
    keeping either operand of equal ones may."""
    return lambda a, b: np.where((a == 0) & (b == 0), zeros_by(a, b), select(a, b))


#: Per reduction, per reading of max and min (see ``max_min_reading`` in ops/regions.py).
_COMBINE = {"add": {"ieee": np.add}, "mul": {"ieee": np.multiply},
            "max": {"ieee": _ieee_max, "number": _number_over_nan(np.fmax, _ieee_min)},
            "min": {"ieee": _ieee_min, "number": _number_over_nan(np.fmin, _ieee_max)}}
_AT = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def scattered(data, targets, updates, reduction: str, selection: str = "ieee"):
    """A copy of ``data`` with ``updates`` (rows matching ``targets``) written at the rows
    ``targets`` of data seen as (targets' range, rest), or combined there by ``reduction``
    (max and min under the reading ``selection``, where the text leaves NaN and -0 open)."""
    out = data.copy()
    rows = out.reshape(-1, *updates.shape[1:])
    if reduction == "none":
        rows[targets] = updates
    elif np.unique(targets).size == targets.size:   # one update per element: any order
        combine = _COMBINE[reduction]
        rows[targets] = combine.get(selection, combine["ieee"])(rows[targets], updates)
    else:   # repeated targets are drawn for integers only, where the combination is order-free
        _AT[reduction].at(rows, targets, updates)
    return out


def onnx_scatter(case, graph):
    """One node; ``reduction`` exists from opset 16 (add, mul) and 18 (max, min)."""
    from conform.model_formats import onnx_opset

    reduction, version = case.attrs["reduction"], onnx_opset()
    if version < REDUCTION_SINCE[reduction]:
        raise unsupported(f"ONNX {graph.op_type} has reduction '{reduction}' from opset "
                          f"{REDUCTION_SINCE[reduction]}: the standard rules this case out at "
                          f"opset {version}")
    attrs = {"reduction": reduction} if version >= 16 else {}
    if "axis" in case.attrs:
        attrs["axis"] = case.attrs["axis"]
    graph.node(graph.op_type, graph.inputs, **attrs)


def _scatter_feeding(targets_of):
    """A feeding rule: ``data[index]`` and the updates whose target is that element."""
    def feed(inputs, attrs, index):
        data, indices, updates = inputs
        flat = int(np.ravel_multi_index(tuple(index), data.shape))
        rows, length = targets_of(data, indices, attrs)
        chosen = (rows == flat // length)[:, None] & (np.arange(length) == flat % length)
        return [data.ravel()[flat:flat + 1], None, updates[chosen.reshape(updates.shape)]]
    return feed


# -- ScatterElements --------------------------------------------------------------------------

def draw_onnx_scatter_elements(draw, kit, spec, dtype):
    """Data of rank 1 to 4, an axis (possibly negative), a reduction, and indices and updates
    of one shape and data's rank: along the axis of any length where repeated targets are
    drawn, else at most data's size there; elsewhere at most data's size."""
    st = kit.st
    data = draw(kit.shape(min_rank=1, max_rank=4, max_side=5))
    axis = draw(st.integers(0, len(data) - 1))
    reduction = _draw_reduction(draw, kit, dtype)
    longest = 6 if _repeats_allowed(dtype, reduction) else data[axis]
    shape = tuple(draw(st.integers(0, longest if k == axis else side))
                  for k, side in enumerate(data))
    attrs = {"axis": signed_axis(draw, kit, axis, len(data)), "reduction": reduction}
    return kit.Signature((dtype, index_type(draw, kit, spec, "indices"), dtype),
                         (data, shape, shape), attrs, dtype)


def values_onnx_scatter_elements(rng, inputs, attrs):
    """Indices in ``[-s, s)`` along the axis: along each line of the axis distinct where
    repeats are not drawn (a random permutation's first entries), half of them negative."""
    data, indices, updates = inputs
    axis, size = attrs["axis"] % data.ndim, data.shape[attrs["axis"]]
    if _repeats_allowed(str(data.dtype), attrs["reduction"]) or not indices.size:
        return [data, in_range(rng, size, indices.shape, indices.dtype), updates]
    lines = np.moveaxis(np.empty(indices.shape), axis, -1).shape
    order = np.argsort(rng.random(lines[:-1] + (size,)), axis=-1)[..., :lines[-1]]
    signed = np.where(rng.random(order.shape) < 0.5, order - size, order)
    return [data, np.moveaxis(signed, -1, axis).astype(indices.dtype), updates]


def _element_targets(data, indices, attrs):
    """Per update (row-major), its flat position in data; and 1 (one element a row)."""
    axis = attrs["axis"] % data.ndim
    grid = list(np.indices(indices.shape))
    grid[axis] = normalised(indices, data.shape[axis])
    return np.ravel_multi_index(tuple(grid), data.shape).ravel() if indices.size else \
        np.zeros(0, np.int64), 1


_NUMPY_REDUCTIONS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _numpy_scattered(data, targets, updates, reduction):
    """A copy of data with ``updates`` assigned at ``targets`` (an index tuple), or combined
    there by the reduction's ufunc ``at`` (unbuffered: repeated targets accumulate)."""
    out = data.copy()
    if reduction == "none":   # a 0-d update into one element of an object (string) array: its
        out[targets] = updates[()] if updates.ndim == 0 else updates   # element, not the array
    else:
        _NUMPY_REDUCTIONS[reduction].at(out, targets, updates)
    return out


def numpy_scatter_elements(data, indices, updates, *, axis, reduction, selection="ieee"):
    """The numpy backend: fancy-index assignment (or ``ufunc.at``) at each update's own index,
    but the indices' entry along ``axis``."""
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis % data.ndim] = indices
    return _numpy_scattered(data, tuple(grid), updates, reduction)


def invalid_onnx_scatter_elements(kit, spec, dtype):
    """Data 3 x 4, indices and updates 2 x 4 (reduction none), one index out of bounds."""
    return out_of_range_invalid(kit, spec, dtype, [(3, 4), (2, 4), (2, 4)],
                                {"axis": 0, "reduction": "none"}, (3, 4))


@op("onnx_scatter_elements", numpy=numpy_scatter_elements, version=1, draw=draw_onnx_scatter_elements,
    invalid=invalid_onnx_scatter_elements,
    draw_honours=DRAWN_HERE, values=values_onnx_scatter_elements,
    feeding=_scatter_feeding(_element_targets), onnx=onnx_scatter)
def oracle_onnx_scatter_elements(data, indices, updates, *, axis, reduction, selection="ieee",
                                 dtypes=None):
    """ONNX ScatterElements-18: for each entry of updates, the target takes the entry's own
    index in every dimension but ``axis``, where it takes the indices entry's value; there
    output = updates[...] (none) or f(output, updates[...]). uint64 combines as stored."""
    data, updates = unsigned64((data, updates), dtypes)
    targets, _ = _element_targets(data, indices, {"axis": axis})
    return (scattered(data, targets, updates.ravel(), reduction, selection),)


# -- ScatterND --------------------------------------------------------------------------------

def draw_onnx_scatter_nd(draw, kit, spec, dtype):
    """Data of rank r in [1, 4], tuples of length k in [1, r], a reduction, indices of shape
    batch + (k,) (batch: 0 to 2 dimensions, empty ones too) and updates of shape batch +
    data.shape[k:]; where repeated targets are not drawn the batch holds at most as many
    tuples as data has positions in its first k dimensions."""
    st = kit.st
    data = draw(kit.shape(min_rank=1, max_rank=4, max_side=4))
    k = draw(st.integers(1, len(data)))
    reduction = _draw_reduction(draw, kit, dtype)
    batch = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=2)))
    positions = math.prod(data[:k])
    if not _repeats_allowed(dtype, reduction) and math.prod(batch) > positions:
        batch = (draw(st.integers(0, positions)),)
    updates = batch + data[k:]
    if math.prod(updates) > kit.MAX_ARRAY_SIZE:
        batch, updates = (1,), (1,) + data[k:]
    return kit.Signature((dtype, "int64", dtype), (data, batch + (k,), updates),
                         {"reduction": reduction}, dtype)


def values_onnx_scatter_nd(rng, inputs, attrs):
    """Index tuples in range of data's first k dimensions (each entry in ``[-s, s)``),
    distinct where repeats are not drawn, half of the entries negative."""
    data, indices, updates = inputs
    k, sizes = indices.shape[-1], np.array(data.shape[:indices.shape[-1]])
    if _repeats_allowed(str(data.dtype), attrs["reduction"]):
        return [data, in_range(rng, sizes, indices.shape, indices.dtype), updates]
    count = math.prod(indices.shape[:-1])
    chosen = rng.permutation(math.prod(data.shape[:k]))[:count]
    tuples = np.stack(np.unravel_index(chosen, data.shape[:k]), axis=-1).reshape(indices.shape)
    signed = np.where(rng.random(tuples.shape) < 0.5, tuples - sizes, tuples)
    return [data, signed.astype(indices.dtype), updates]


def _tuple_targets(data, indices, attrs):
    """Per index tuple, its row of data seen as (prod(shape[:k]), rest); and the row length."""
    k = indices.shape[-1]
    tuples = normalised(indices, data.shape[:k]).reshape(-1, k)
    rows = np.ravel_multi_index(tuple(tuples.T), data.shape[:k]) if tuples.size else \
        np.zeros(0, np.int64)
    return rows, math.prod(data.shape[k:])


def numpy_scatter_nd(data, indices, updates, *, reduction, selection="ieee"):
    """The numpy backend: fancy-index assignment (or ``ufunc.at``) at the index tuples."""
    return _numpy_scattered(data, tuple(np.moveaxis(indices, -1, 0)), updates, reduction)


@op("onnx_scatter_nd", numpy=numpy_scatter_nd, version=1, draw=draw_onnx_scatter_nd, draw_honours=DRAWN_HERE,
    values=values_onnx_scatter_nd, feeding=_scatter_feeding(_tuple_targets), onnx=onnx_scatter)
def oracle_onnx_scatter_nd(data, indices, updates, *, reduction, selection="ieee", dtypes=None):
    """ONNX ScatterND-18: output = copy(data); for each idx of indices.shape[:-1],
    output[indices[idx]] = updates[idx] (none) or f(output[indices[idx]], updates[idx]);
    a tuple shorter than data's rank names a slice. uint64 combines as stored."""
    data, updates = unsigned64((data, updates), dtypes)
    rows, length = _tuple_targets(data, indices, {})
    return (scattered(data, rows, updates.reshape(rows.size, *data.shape[indices.shape[-1]:]),
                      reduction, selection),)
