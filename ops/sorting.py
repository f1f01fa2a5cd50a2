"""Top-k selection (XLA TopK; ONNX TopK): the k largest or smallest entries along an axis and
their indices, ties broken by the lower index (both texts say so). Two outputs, each judged
exactly: the values are copies of input elements and the indices are integers."""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.reduction import nan_parts
from conform.ops.onnx_elementwise import unsigned64
from conform.widening import widen


def _descending_key(values: np.ndarray) -> np.ndarray:
    """A key whose ascending order is ``values``' descending order, with the same ties: the
    negation for floats (-0 and +0 stay equal), the bitwise complement for integers (no
    overflow at the type's minimum) and bool (not)."""
    return ~values if values.dtype.kind in "iub" else -values


def top_k(x: np.ndarray, k: int, axis: int, largest: bool) -> tuple:
    """The ``k`` largest (or smallest) entries of ``x`` along ``axis``, in order, and their
    indices (int64); equal entries in index order (a stable sort)."""
    key = _descending_key(x) if largest else x
    order = np.argsort(key, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, indices, axis=axis), indices.astype(np.int64)


def draw_top_k(draw, kit, spec, dtype):
    """A shape of the spec's ranks (1 to 4 by default) with no empty side, the spec's attributes
    (the axis, largest, sorted) and ``k`` in ``[1, size of the sorted axis]`` (the texts ask for
    a positive k no larger than that size)."""
    low, high = kit.ranks(spec, default_min=1)
    shape = draw(kit.shape(min_rank=max(low, 1), max_rank=high, max_side=8))
    attrs = kit.attributes(draw, spec, {spec.inputs[0]: len(shape)})
    size = shape[attrs.get("axis", -1)]
    attrs["k"] = draw(kit.st.integers(1, size))
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def feed_top_k(inputs, attrs, index):
    """The slice along the sorted axis that out[index] is selected from."""
    (x,) = inputs
    axis = attrs.get("axis", -1) % x.ndim
    at = tuple(slice(None) if d == axis else i for d, i in enumerate(index))
    return [x[at]]


def canonical_top_k(outputs, case):
    """With ``sorted`` 0 the order of the k entries is left open: a backend's entries are put in
    the order the oracle gives (by value, then index), pairs kept together. Nothing else is
    changed: a wrong value or index still fails."""
    values, indices = outputs
    if case.attrs.get("sorted", 1) or values.ndim == 0 or values.size == 0:
        return outputs
    axis = case.attrs.get("axis", -1) % values.ndim
    wide = widen(values)   # uint64 kept: as int64, 2**63 and above would sort below 0
    wide = wide.astype(np.int64) if wide.dtype == np.bool_ else wide
    key = _descending_key(wide) if case.attrs.get("largest", 1) else wide
    keys = np.moveaxis(key, axis, -1)
    ties = np.moveaxis(indices.astype(np.int64), axis, -1)
    order = np.lexsort((ties, keys), axis=-1)
    order = np.moveaxis(order, -1, axis)
    return [np.take_along_axis(values, order, axis=axis), np.take_along_axis(indices, order, axis=axis)]


def onnx_top_k(case, graph):
    k = graph.const("k", [case.attrs["k"]])
    graph.node(graph.op_type, [graph.inputs[0], k], axis=case.attrs["axis"],
               largest=case.attrs["largest"], sorted=case.attrs["sorted"])


def from_onnx_top_k(inputs, attrs, opset):
    """A TopK node as a case: its K input ('A 1-D tensor containing a single positive value')
    is the case's ``k``."""
    k = int(np.asarray(inputs[1]).ravel()[0])
    return inputs[:1], {"k": k, **{n: attrs[n] for n in ("axis", "largest", "sorted")}}


def lax_top_k(lax, attrs):
    """jax.lax.top_k finds the largest entries along the last axis; the smallest are the largest
    of an order-reversing bijection of the operand (negation for floats, complement for
    integers and bool), mapped back; a float type without a sign (float8_e8m0fnu) is negated
    in float32, which holds each of its values."""
    k, largest = attrs["k"], attrs["largest"]

    def top(x):
        if largest:
            return lax.top_k(x, k)
        name = np.dtype(x.dtype).name   # (int4's kind is "V")
        if name.startswith(("int", "uint", "bool")):
            values, indices = lax.top_k(lax.bitwise_not(x), k)
            return lax.bitwise_not(values), indices
        wide = np.float32 if name == "float8_e8m0fnu" else x.dtype
        values, indices = lax.top_k(lax.neg(lax.convert_element_type(x, wide)), k)
        return lax.convert_element_type(lax.neg(values), x.dtype), indices

    return top


_HONOURS = frozenset({"attrs", "min_rank", "max_rank"})


def numpy_top_k(operand, *, k, largest, axis=-1, bits=np.int32):
    """The numpy backend: a stable ``np.argsort`` (descending: of the slice reversed, counted
    back, so that ties keep the lower index first), its first ``k``; indices as ``bits``."""
    axis %= operand.ndim
    if largest:
        flipped = np.argsort(np.flip(operand, axis), axis=axis, kind="stable")
        order = operand.shape[axis] - 1 - np.flip(flipped, axis)
    else:
        order = np.argsort(operand, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(operand, indices, axis=axis), indices.astype(bits)


@op("top_k", numpy=numpy_top_k, version=1, draw=draw_top_k, draw_honours=_HONOURS, feeding=feed_top_k,
    lax=lax_top_k)
def oracle_top_k(operand, *, k, largest, open_elements=False):
    """XLA TopK: along the last dimension; in a row, of two equal elements the one with the
    lower index comes first. Complex entries rank in StableHLO's lexicographic order
    (``open_elements``: a row holding ``nan_parts``)."""
    if open_elements:
        held = np.any(nan_parts(operand), axis=-1, keepdims=True)
        held = np.broadcast_to(held, operand.shape[:-1] + (k,))
        return held, held
    return top_k(operand, k, -1, bool(largest))


def numpy_onnx_top_k(x, *, k, axis, largest, sorted):  # noqa: A002 - ONNX's name
    """The numpy backend: :func:`numpy_top_k` along ``axis``, int64 indices."""
    return numpy_top_k(x, k=k, largest=largest, axis=axis, bits=np.int64)


@op("onnx_top_k", numpy=numpy_onnx_top_k, version=1, draw=draw_top_k, draw_honours=_HONOURS,
    feeding=feed_top_k, canonical=canonical_top_k, onnx=onnx_top_k, from_onnx=from_onnx_top_k)
def oracle_onnx_top_k(x, *, k, axis, largest, sorted, dtypes=None):
    """ONNX TopK: 'given two equivalent values, this operator uses the indices along the axis as
    a tiebreaker. That is, the element with the lower index will appear first'; with sorted 0
    the order of the k results is undefined (see canonical_top_k). uint64 is ordered as stored."""
    (x,) = unsigned64((x,), dtypes)
    return top_k(x, k, axis, bool(largest))
