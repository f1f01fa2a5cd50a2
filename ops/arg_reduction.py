"""Index-of-extreme reductions: ONNX ArgMax and ArgMin (opset 13), NNEF argmax_reduce and
argmin_reduce. One output, the int64 (ONNX) or integer (NNEF) index along the reduced axis of
the slice's largest (smallest) element, judged exactly: an index has one correct value.

ONNX breaks ties by ``select_last_index`` (first occurrence by default, last with 1). The NNEF
fragment declarations (``argmax_reduce(input: tensor<scalar>, axes: integer[]) -> (output:
tensor<integer>)``) say nothing of ties, so any index of an extreme element is right there: the
``canonical`` hook maps such an index to the first one, and never repairs an index whose element
is not extreme. Neither text says where NaN ranks (a region of each spec)."""
from __future__ import annotations

import numpy as np

from conform.op_registry import op


def _ordered(x: np.ndarray, dtypes) -> np.ndarray:
    """The widened input in an order-preserving dtype: a uint64 input (widened to int64 by
    the oracle contract, which wraps values of 2**63 and above) read back as uint64."""
    if dtypes and dtypes[0] == "uint64":
        return x.view(np.uint64)
    return x


def arg_extreme(x: np.ndarray, axis: int, *, largest: bool, last: bool, keepdims: bool):
    """The int64 index along ``axis`` of the largest (or smallest) element of each slice of
    ``x``: of equal elements the first, or with ``last`` the last. -0 and +0 are equal
    (IEEE 754 comparison). The slice along ``axis`` must not be empty."""
    axis %= x.ndim
    find = np.argmax if largest else np.argmin
    if last:
        size = x.shape[axis]
        index = size - 1 - find(np.flip(x, axis), axis=axis, keepdims=True)
    else:
        index = find(x, axis=axis, keepdims=True)
    index = index.astype(np.int64)
    return index if keepdims else np.squeeze(index, axis)


def draw_arg_reduce(draw, kit, spec, dtype):
    """A shape of rank >= 1 whose reduced axis is not empty (an arg-extreme of an empty slice is
    undefined; other sides may be 0), and the spec's attributes."""
    low, high = kit.ranks(spec, default_min=1)
    min_side = draw(kit.st.sampled_from([1, 1, 1, 0]))
    shape = list(draw(kit.shape(min_rank=max(low, 1), max_rank=high, min_side=min_side,
                                max_side=8)))
    attrs = kit.attributes(draw, spec, {spec.inputs[0]: len(shape)})
    shape[attrs["axis"]] = max(shape[attrs["axis"]], 1)
    return kit.Signature((dtype,), (tuple(shape),), attrs, dtype)


def feed_arg_reduce(inputs, attrs, index):
    """The slice along the reduced axis that out[index] indexes into (with keepdims the reduced
    axis' index, always 0, is in ``index``; without it, it is not)."""
    (x,) = inputs
    axis = attrs["axis"] % x.ndim
    index = list(index)
    if not attrs.get("keepdims", 1):
        index.insert(axis, 0)
    at = tuple(slice(None) if d == axis else i for d, i in enumerate(index))
    return [x[at]]


def onnx_arg_reduce(case, graph):
    graph.node(graph.op_type, [graph.inputs[0]], axis=case.attrs["axis"],
               keepdims=case.attrs["keepdims"], select_last_index=case.attrs["select_last_index"])


def nnef_arg_reduce(case, call):
    """NNEF reduces over a list of axes: here the one drawn axis."""
    return call(["in0"], {"axes": [case.attrs["axis"]]})


def _canonical_ties(largest: bool):
    def canonical(outputs, case):
        """Where the backend's index (in range) points at an element equal to the slice's
        extreme, it becomes the first such index; any other index is left as it is."""
        (index,) = outputs
        x = case.inputs[0]
        axis = case.attrs["axis"] % x.ndim
        wide = x.astype(np.float64) if x.dtype.kind not in "iu" else x
        index = np.asarray(index)
        if index.shape != tuple(1 if d == axis else s for d, s in enumerate(x.shape)):
            return outputs
        inside = (index >= 0) & (index < x.shape[axis])
        picked = np.take_along_axis(wide, np.where(inside, index, 0).astype(np.intp), axis=axis)
        extreme = (np.max if largest else np.min)(wide, axis=axis, keepdims=True)
        first = arg_extreme(wide, axis, largest=largest, last=False, keepdims=True)
        tied = inside & (picked == extreme)
        return [np.where(tied, first.astype(index.dtype), index)]

    return canonical


_ONNX = dict(draw=draw_arg_reduce, draw_honours=frozenset({"attrs", "min_rank", "max_rank"}),
             feeding=feed_arg_reduce, onnx=onnx_arg_reduce)


def _numpy_arg(data, axis, keepdims, last, reduce):
    """``np.argmax``/``np.argmin`` (the first extreme; NaN counts as one); the last extreme as
    the first of the slice reversed, counted back."""
    axis %= data.ndim
    if not last:
        return reduce(data, axis=axis, keepdims=bool(keepdims))
    size = data.shape[axis]
    return size - 1 - reduce(np.flip(data, axis), axis=axis, keepdims=bool(keepdims))


def numpy_onnx_arg_max(data, *, axis, keepdims, select_last_index):
    """The numpy backend: ``np.argmax`` (int64 indices)."""
    return _numpy_arg(data, axis, keepdims, select_last_index, np.argmax)


@op("onnx_arg_max", numpy=numpy_onnx_arg_max, version=1, **_ONNX)
def oracle_onnx_arg_max(data, *, axis, keepdims, select_last_index, dtypes=()):
    """ONNX ArgMax: 'the indices of the max elements ... along the provided axis'; of several
    equal maxima the first, or the last with select_last_index=1."""
    return (arg_extreme(_ordered(data, dtypes), axis, largest=True, last=bool(select_last_index),
                        keepdims=bool(keepdims)),)


def numpy_onnx_arg_min(data, *, axis, keepdims, select_last_index):
    """The numpy backend: ``np.argmin`` (int64 indices)."""
    return _numpy_arg(data, axis, keepdims, select_last_index, np.argmin)


@op("onnx_arg_min", numpy=numpy_onnx_arg_min, version=1, **_ONNX)
def oracle_onnx_arg_min(data, *, axis, keepdims, select_last_index, dtypes=()):
    """ONNX ArgMin: the indices of the min elements along the axis; ties as ArgMax's."""
    return (arg_extreme(_ordered(data, dtypes), axis, largest=False, last=bool(select_last_index),
                        keepdims=bool(keepdims)),)


_NNEF = dict(draw=draw_arg_reduce, draw_honours=frozenset({"attrs", "min_rank", "max_rank"}),
             feeding=feed_arg_reduce, nnef=nnef_arg_reduce)


def numpy_nnef_argmax_reduce(input, *, axis):  # noqa: A002 - NNEF's name
    """The numpy backend: ``np.argmax`` keeping the axis (its int64 index as NNEF's int32)."""
    return _numpy_arg(input, axis, True, False, np.argmax).astype(np.int32)


@op("nnef_argmax_reduce", numpy=numpy_nnef_argmax_reduce, version=1, canonical=_canonical_ties(True), **_NNEF)
def oracle_nnef_argmax_reduce(input, *, axis):
    """NNEF argmax_reduce over one axis: the index of a largest element, the reduced axis kept
    with size 1 (NNEF reductions keep it); ties are open (see canonical)."""
    return (arg_extreme(input, axis, largest=True, last=False, keepdims=True),)


def numpy_nnef_argmin_reduce(input, *, axis):  # noqa: A002 - NNEF's name
    """The numpy backend: ``np.argmin`` keeping the axis (its int64 index as NNEF's int32)."""
    return _numpy_arg(input, axis, True, False, np.argmin).astype(np.int32)


@op("nnef_argmin_reduce", numpy=numpy_nnef_argmin_reduce, version=1, canonical=_canonical_ties(False), **_NNEF)
def oracle_nnef_argmin_reduce(input, *, axis):
    """NNEF argmin_reduce over one axis: the index of a smallest element (see argmax_reduce)."""
    return (arg_extreme(input, axis, largest=False, last=False, keepdims=True),)
