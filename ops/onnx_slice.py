"""ONNX Slice (opset 10+): a sub-tensor of ``data`` along ``axes`` from ``starts`` to ``ends`` by
``steps``, all four runtime inputs of one index type (``Tind``: int32 or int64), ``axes`` and
``steps`` optional.

The oracle follows the opset-13 text: axes omitted are ``[0, ..., r-1]``, steps omitted are 1;
a negative axis has ``r`` added (from opset 11; ``onnx_slice_opset10`` draws none); a negative
start or end has ``dims[axis]`` added, then a start is clamped to ``[0, dims]`` for a positive
step or ``[0, dims-1]`` for a negative one, and an end to ``[0, dims]`` or ``[-1, dims-1]``
('must accommodate copying 0 through dims elements'). The drawers draw every sign, values up to
3 past either side of an axis, and the index type's INT_MAX and INT_MIN (the text's sentinels
for 'slice to the end', forward and backward). Every output element is a copy of a data
element: judged exactly."""
from __future__ import annotations

import numpy as np

from conform.ops.optional_inputs import by_name
from conform.op_registry import op
from conform.ops.indexing import DRAWN_HERE, index_type, traced_feeding

#: The formal inputs of Slice-10 and later, in order.
INPUTS = ("data", "starts", "ends", "axes", "steps")
#: The step magnitudes drawn (a step of 0 is an error in the text).
STEPS = (1, 1, 1, 2, 3, 5)


def draw_slice(draw, kit, spec, dtype):
    """Data of rank 1 to 4 (empty axes too), ``axes`` present or absent (absent: starts and ends
    have one entry per axis), ``steps`` present or absent, and the index type (one for all)."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=6,
                           min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    absent = kit.absent_inputs(draw, spec)
    count = len(shape) if "axes" in absent else draw(st.integers(1, len(shape)))
    present = [name for name in INPUTS if name not in absent]
    tind = index_type(draw, kit, spec, "starts")
    return kit.Signature((dtype,) + (tind,) * (len(present) - 1),
                         (shape,) + ((count,),) * (len(present) - 1),
                         kit.with_absent({}, absent), dtype)


def _bounds(rng, count: int, dims: np.ndarray, dtype) -> np.ndarray:
    """``count`` starts or ends: up to 3 past either side of their axis of size ``dims``
    (negative ones too), or (one in five) an INT_MAX or INT_MIN sentinel: the index type's, or
    int32's in an int64 input (a large value like any other to the text)."""
    near = np.floor(rng.random(count) * (2 * dims + 7)).astype(np.int64) - dims - 3
    info, narrow = np.iinfo(dtype), rng.random(count) < 0.25
    top = np.where(narrow, np.iinfo(np.int32).max, info.max)
    bottom = np.where(narrow, np.iinfo(np.int32).min, info.min)
    sentinel = np.where(rng.random(count) < 0.5, bottom, top)
    return np.where(rng.random(count) < 0.2, sentinel, near).astype(dtype)


def values_slice(rng, inputs, attrs, *, negative_axes: bool = True):
    """Distinct axes (each possibly negative), steps of either sign, starts and ends as
    :func:`_bounds` draws them for the sliced axes."""
    given = by_name(INPUTS, inputs, attrs.get("absent_inputs", ()))
    data, starts = given["data"], given["starts"]
    rank, count, tind = data.ndim, starts.shape[0], starts.dtype
    axes = rng.permutation(rank)[:count]
    if "axes" in given:
        signed = axes - rank * (rng.random(count) < 0.5) if negative_axes else axes
        given["axes"] = signed.astype(tind)
    if "steps" in given:
        sign = np.where(rng.random(count) < 0.5, -1, 1)
        given["steps"] = (sign * rng.choice(STEPS, count)).astype(tind)
    dims = np.asarray(data.shape, np.int64)[axes]
    given["starts"], given["ends"] = _bounds(rng, count, dims, tind), _bounds(rng, count, dims, tind)
    return list(given.values())


def values_slice_opset10(rng, inputs, attrs):
    """As :func:`values_slice`, with axes in ``[0, r-1]`` (Slice-10 names no negative axis) and,
    on backward axes, no start below ``-dims`` and no end at INT_MAX (int32's or int64's) but a
    plain ``dims + 1``: the Slice-10 text is silent on the first (numpy gives an empty slice,
    Slice-13's clamp one from element 0) and reads the second two ways ('larger than n
    represents n', an empty slice; 'pass INT_MAX' to slice to the end, through element 0)."""
    values = values_slice(rng, inputs, attrs, negative_axes=False)
    given = by_name(INPUTS, values, attrs.get("absent_inputs", ()))
    if "steps" not in given:
        return values
    data, starts, ends = given["data"], given["starts"], given["ends"]
    dims = np.asarray(data.shape, np.int64)[given.get("axes", np.arange(data.ndim))]
    backward = given["steps"] < 0
    given["starts"] = np.where(backward, np.maximum(starts, -dims), starts).astype(starts.dtype)
    given["ends"] = np.where(backward & (ends >= np.iinfo(np.int32).max), dims + 1,
                             ends).astype(ends.dtype)
    return list(given.values())


def _effective(start: int, end: int, step: int, dim: int) -> slice:
    """The text's effective start and end of one axis, as a Python slice of that axis."""
    start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
    if step > 0:
        return slice(min(max(start, 0), dim), min(max(end, 0), dim), step)
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return slice(max(start, 0), None if end < 0 else end, step)   # end -1: through element 0


def slice_window(shape, starts, ends, axes=None, steps=None) -> tuple:
    """Per axis of ``shape``, the slice the text's effective values select (every axis
    ``slice(None)`` unless named)."""
    rank = len(shape)
    axes = range(len(starts)) if axes is None else [int(a) + rank if a < 0 else int(a) for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    window = [slice(None)] * rank
    for axis, start, end, step in zip(axes, starts, ends, steps):
        window[axis] = _effective(int(start), int(end), step, shape[axis])
    return tuple(window)


def numpy_slice(data, *indices, absent_inputs=()):
    """The numpy backend: NumPy basic slicing of ``data`` in its own dtype, the effective starts
    and ends computed with ``np.where`` and ``np.clip`` over all the sliced axes at once (in the
    index type; Python's own slice clamping differs for a negative step's start below -dims)."""
    given = by_name(INPUTS[1:], indices, absent_inputs)
    starts, ends = given["starts"], given["ends"]
    rank = data.ndim
    axes = np.asarray(given.get("axes", np.arange(rank)), np.int64) % rank
    steps = np.asarray(given.get("steps", np.ones(len(starts), np.int64)), np.int64)
    dims = np.asarray(data.shape, np.int64)[axes]
    starts, ends = (np.where(x < 0, np.maximum(x.astype(np.int64), -dims - 1) + dims,
                             np.minimum(x.astype(np.int64), dims)) for x in (starts, ends))
    backward = steps < 0
    starts = np.clip(starts, 0, np.where(backward, dims - 1, dims))
    ends = np.clip(ends, np.where(backward, -1, 0), np.where(backward, dims - 1, dims))
    window = [slice(None)] * rank
    for axis, start, end, step in zip(axes.tolist(), starts.tolist(), ends.tolist(), steps.tolist()):
        window[axis] = slice(max(start, 0), None if end < 0 else end, step)
    return data[tuple(window)].copy()


_BIG, _SMALL = np.iinfo(np.int64).max, np.iinfo(np.int64).min
#: (start, end, step) on an axis of 5 at the edges of the opset-13 clamping: a start at dims
#: (clamped to dims: empty; backward to dims - 1), at -dims - 1 (clamped to 0), an end at
#: -dims - 1 backward (-1: through element 0), the INT_MIN and INT_MAX sentinels, one element
#: exactly, and an empty range from equal effective values.
SLICE_BOUNDARIES = ((5, _BIG, 1), (-6, 1, 1), (5, -6, -1), (-1, -1, -1), (0, 1, 2),
                    (_SMALL, -6, -2), (0, -5, 1), (4, _SMALL, -1))


def boundaries_slice(kit, spec, dtype):
    """Data of 5 elements sliced along axis 0 by each row of :data:`SLICE_BOUNDARIES`."""
    signature = kit.Signature((dtype,) + ("int64",) * 4, ((5,),) + ((1,),) * 4, {}, dtype)

    def at(start, end, step):
        return lambda inputs: [inputs[0]] + [np.array([v], np.int64) for v in (start, end, 0, step)]

    return [kit.Boundary(signature, at(*row)) for row in SLICE_BOUNDARIES]


def _register(name: str, values, **hooks):
    """Declare the Slice op ``name`` (one oracle; the drawn axes differ per opset)."""
    @op(name, version=1, draw=draw_slice, draw_honours=frozenset({"optional"}), values=values, **hooks,
        numpy=numpy_slice, feeding=traced_feeding(name, (0,)), value_dependent_shape=True)
    def oracle(data, starts, ends, *rest, absent_inputs=()):
        """ONNX Slice-13: data[effective start : effective end : step] along each named axis."""
        given = by_name(INPUTS[3:], rest, absent_inputs)
        window = slice_window(data.shape, starts, ends, given.get("axes"), given.get("steps"))
        return (np.array(np.asarray(data)[window]),)
    return oracle


oracle_onnx_slice = _register("onnx_slice", values_slice, boundaries=boundaries_slice)
oracle_onnx_slice_opset10 = _register("onnx_slice_opset10", values_slice_opset10)
