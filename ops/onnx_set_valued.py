"""ONNX's set-valued operators: Unique (the distinct values or slices of a tensor, with the
first occurrence, inverse map and count of each) and NonZero (the coordinates of the non-zero
elements). Their outputs' lengths depend on the input's values (``value_dependent_shape``);
every output is judged exactly: a copy of input elements, or integers.

Unique's text says Y holds 'all unique values or subtensors of the input', sorted ascending or
'in the order of the first occurrence'; it points at numpy.unique for the rest, which orders
subtensors lexicographically (the subtensor along axis read in row-major order). The oracle
compares by IEEE equality (-0 equals +0, the first occurrence's sign kept; every NaN distinct,
after every number). Where the text is silent (is NaN one value, does it rank first or last, are
-0 and +0 one value or -0 < +0) each reading gives a valid answer: ``canonical_onnx_unique``
accepts a backend's answer that equals one of them exactly, and nothing else."""
from __future__ import annotations

import math

import numpy as np

from conform.ops._lowering import unsupported
from conform.op_registry import op
from conform.ops.indexing import DRAWN_HERE, _lower_with, signed_axis
from conform.ops.movement import text_zero
from conform.widening import widen


# -- Unique -----------------------------------------------------------------------------------

def _as_rows(x: np.ndarray, axis, parts: int = 1) -> np.ndarray:
    """The items Unique compares, one per row: the flattened elements (no axis), or each
    subtensor along ``axis`` read in row-major order (``parts`` keys an element: a trailing
    axis of ``x``, a complex element's two parts)."""
    if axis is None:
        return x.reshape(-1, parts)
    moved = np.moveaxis(x, axis, 0)
    return moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))


def unique_rows(rows: np.ndarray, ascending: bool) -> tuple:
    """For the items ``rows`` (one per row): the first occurrence of each distinct item, the
    inverse map (item -> its distinct item's position) and the counts, the distinct items
    ascending (lexicographically) or in the order of their first occurrence. Items are equal
    when every element compares equal (IEEE: -0 == +0)."""
    n = rows.shape[0]
    # a stable lexicographic sort: equal items stay in index order, so a group's first member
    # is its first occurrence
    order = np.lexsort(rows.T[::-1]) if rows.shape[1] and n else np.arange(n)
    ranked = rows[order]
    new = np.ones(n, bool)
    if n > 1:
        new[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    first = order[starts]
    counts = np.diff(np.append(starts, n))
    inverse = np.empty(n, np.int64)
    inverse[order] = group
    if not ascending:
        by_occurrence = np.argsort(first, kind="stable")
        renumber = np.empty(len(first), np.int64)
        renumber[by_occurrence] = np.arange(len(first))
        first, counts, inverse = first[by_occurrence], counts[by_occurrence], renumber[inverse]
    return first.astype(np.int64), inverse, counts.astype(np.int64)


#: The readings of the text's silences: zeros of both signs one value or two (-0 < +0), NaNs
#: all distinct or one value, NaN ranked after every number or before.
READINGS = tuple((zeros, nans, place) for zeros in ("equal", "ordered")
                 for nans in ("distinct", "equal") for place in ("last", "first"))


def reading_keys(x: np.ndarray, zeros: str, nans: str, place: str) -> np.ndarray:
    """Integer keys (as float64) that compare as ``x``'s elements do under one reading: equal
    keys for equal values, ascending with the values."""
    nan = np.isnan(x)
    numbers = np.where(nan, 0.0, x)
    rank = np.searchsorted(np.unique(numbers[~nan]), numbers)   # -0 and +0 one value here
    keys = np.array(2.0 * rank + ((zeros == "ordered") & (x == 0) & ~np.signbit(x)))
    count = int(nan.sum())
    nan_keys = np.zeros(count) if nans == "equal" else np.arange(count, dtype=np.float64)
    offset = 2.0 * (rank.max(initial=0) + 1) if place == "last" else -1.0 - count
    keys[nan] = offset + nan_keys
    return keys


def unique_under(x: np.ndarray, ascending: bool, axis, reading) -> tuple:
    """Unique's four outputs for ``x`` (float64, or complex128: a value its two parts, equal
    where both are, ordered by real part then imaginary part) under one of ``READINGS``."""
    if x.dtype.kind == "c":
        keys = np.stack([reading_keys(x.real, *reading), reading_keys(x.imag, *reading)], -1)
        rows = _as_rows(keys, axis, 2)
    else:
        rows = _as_rows(reading_keys(x, *reading), axis)
    first, inverse, counts = unique_rows(rows, ascending)
    values = x.ravel()[first] if axis is None else np.take(x, first, axis=axis)
    return values, first, inverse, counts


def _same(actual: np.ndarray, expected: np.ndarray, zero_sign_open: bool = False) -> bool:
    """Equal shapes and values, NaN equal to NaN and zeros of the same sign (of either sign
    where ``zero_sign_open``)."""
    actual = widen(np.asarray(actual))
    if actual.shape != expected.shape or not np.array_equal(actual, expected, equal_nan=True):
        return False
    parts = (np.real, np.imag) if expected.dtype.kind == "c" else (np.asarray,)
    return zero_sign_open or all(np.all(np.signbit(p(actual)) == np.signbit(p(expected)))
                                 for p in parts)


def canonical_onnx_unique(outputs, case):
    """A float input holding a NaN, or zeros of both signs, has several valid answers (one per
    reading in ``READINGS``; where -0 and +0 are one value, y may hold either sign for it): a
    backend's outputs equal to one of them exactly become the oracle's answer. Any other
    answer is returned unchanged (and fails): nothing is repaired."""
    (x,) = case.inputs
    x = widen(np.asarray(x))
    if x.dtype.kind == "O" and case.attrs["sorted"]:
        return _text_in_oracle_order(outputs, x, case.attrs.get("axis"))
    if x.dtype.kind == "c":
        return _complex_in_any_order(outputs, x, case)
    if x.dtype.kind != "f" or not (np.isnan(x).any() or (np.signbit(x) & (x == 0)).any()):
        return outputs
    return _one_reading(outputs, x, case, bool(case.attrs["sorted"]))


def _one_reading(outputs, x: np.ndarray, case, ascending: bool) -> list:
    """The oracle's answer where ``outputs`` equal one reading's (items ``ascending`` or in the
    order of their first occurrence), else ``outputs`` unchanged."""
    axis = case.attrs.get("axis")
    axis = None if axis is None else axis % x.ndim
    parts = (x.real, x.imag) if x.dtype.kind == "c" else (x,)
    both_zeros = any(bool(((p == 0) & np.signbit(p)).any() and ((p == 0) & ~np.signbit(p)).any())
                     for p in parts)
    for reading in READINGS:
        answer = unique_under(x, ascending, axis, reading)
        # where -0 and +0 are one value, which of them stands for it is open too
        open_sign = [both_zeros and reading[0] == "equal", False, False, False]
        if len(outputs) == len(answer) and all(map(_same, outputs, answer, open_sign)):
            oracle = unique_under(x, bool(case.attrs["sorted"]), axis, READINGS[0])
            return [np.asarray(o).astype(np.asarray(out).dtype) for o, out in zip(oracle, outputs)]
    return outputs


def _complex_in_any_order(outputs, x: np.ndarray, case) -> list:
    """Complex input: 'sorted in ascending order' names no order of complex numbers (nor do
    they have one), so with sorted=1 a backend's distinct items in any order are taken in the
    order of their first occurrence (indices, counts and inverse_indices permuted alike) and
    compared with the sorted=0 answer of each reading (a value's parts equal as floats are:
    NaN and the zeros' signs as for floats); a match gives the oracle's answer."""
    if not case.attrs["sorted"]:
        return _one_reading(outputs, x, case, False)
    y, first, inverse, counts = (np.asarray(o) for o in outputs)
    if first.ndim != 1 or len(first) != len(counts) or (
            inverse.size and (inverse.min() < 0 or inverse.max() >= len(first))):
        return outputs
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    axis = case.attrs.get("axis")
    taken = np.take(y, order, axis=0 if axis is None else axis % x.ndim)
    permuted = [taken, first[order], rank[inverse], counts[order]]
    found = _one_reading(permuted, x, case, False)   # the oracle's (sorted) answer, if any
    return outputs if found is permuted else found


def _text_in_oracle_order(outputs, x: np.ndarray, axis) -> list:
    """sorted=1 on strings: 'sorted in ascending order' names no order of text (code points,
    a locale's collation), so a backend's answer whose distinct items are the oracle's in
    another order, with indices and counts permuted alike and inverse_indices renumbered, is
    put in the oracle's order (the items matched by their first occurrence). Nothing is
    repaired: an answer that is no permutation of the oracle's is returned unchanged."""
    expected_first = oracle_onnx_unique(x, sorted=1, axis=axis)[1]
    y, first, inverse, counts = (np.asarray(o) for o in outputs)
    if sorted(first.ravel().tolist()) != sorted(expected_first.tolist()):
        return outputs
    where = {int(f): k for k, f in enumerate(first)}
    order = np.array([where[int(f)] for f in expected_first], np.int64)
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    if inverse.size and (inverse.min() < 0 or inverse.max() >= len(order)):
        return outputs
    taken = np.take(y, order, axis=0 if axis is None else axis % x.ndim)
    return [taken, first[order], rank[inverse], counts[order]]


def draw_onnx_unique(draw, kit, spec, dtype):
    """An input of rank 1 to 3 (rank 0 too without axis; empty sides too), an axis (possibly
    negative) in three quarters of the cases, and ``sorted`` 0 or 1. The input's values are
    made to repeat by ``values_onnx_unique``."""
    st = kit.st
    with_axis = draw(st.integers(0, 3)) > 0
    shape = draw(kit.shape(min_rank=1 if with_axis else 0, max_rank=3, max_side=5,
                           min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    attrs = {"sorted": draw(st.sampled_from([0, 1]))}
    if with_axis:
        attrs["axis"] = signed_axis(draw, kit, draw(st.integers(0, len(shape) - 1)), len(shape))
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def values_onnx_unique(rng, inputs, attrs):
    """The filled input with repeats: each element (or, with an axis, each subtensor along it)
    is, at random, replaced by a copy of an earlier one, so that groups of equal items occur."""
    (x,) = inputs
    if x.size == 0:
        return [x]
    axis = attrs.get("axis")
    moved = np.moveaxis(x.copy(), axis, 0) if axis is not None else x.copy().reshape(-1)
    for k in range(1, moved.shape[0]):
        if rng.random() < 0.5:
            moved[k] = moved[rng.integers(0, k)]
    result = np.moveaxis(moved, 0, axis) if axis is not None else moved.reshape(x.shape)
    return [np.ascontiguousarray(result)]


def feed_onnx_unique(inputs, attrs, index):
    """Y[index] is a copy of the first occurrence's element (no axis) or of the element at the
    same place in the first occurrence's subtensor; the other outputs are counts and
    positions, fed by no single element."""
    (x,) = inputs
    axis = attrs.get("axis")
    first = oracle_onnx_unique(x, **attrs)[1]
    if axis is None:
        return [x.ravel()[first[index[0]]:first[index[0]] + 1]]
    axis %= x.ndim
    at = tuple(first[i] if d == axis else i for d, i in enumerate(index))
    return [np.asarray(x[at]).reshape(1)]


def numpy_unique(x, *, sorted, axis=None):  # noqa: A002 - ONNX's name
    """The numpy backend: ``np.unique`` with indices, inverse and counts; for ``sorted`` 0
    its results put in the order of their first occurrence (text with an axis: unsupported,
    NumPy's unique takes no axis for dtype object)."""
    if axis is not None and x.dtype.kind == "O":
        raise unsupported("numpy.unique takes no axis for text (dtype object)")
    values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                               return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not sorted:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values = np.take(values, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return values, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)


@op("onnx_unique", numpy=numpy_unique, version=1, draw=draw_onnx_unique, draw_honours=DRAWN_HERE,
    values=values_onnx_unique, feeding=feed_onnx_unique, canonical=canonical_onnx_unique,
    onnx=_lower_with("axis", "sorted"),
    value_dependent_shape=True)
def oracle_onnx_unique(x, *, sorted, axis=None, dtypes=()):
    """ONNX Unique-11: Y (the distinct values of the flattened input, or the distinct
    subtensors along ``axis``), indices (each one's first occurrence in X), inverse_indices
    (for each element or subtensor of X, its position in Y) and counts; ascending with
    ``sorted`` 1, in the order of first occurrence with ``sorted`` 0."""
    if dtypes and dtypes[0] == "uint64":   # widened to int64, values above 2**63 wrapped
        x = x.astype(np.uint64)
    if axis is not None:
        axis %= x.ndim
    if x.dtype.kind in "fc":   # IEEE equality, NaN last: READINGS[0]
        return unique_under(x, bool(sorted), axis, READINGS[0])
    first, inverse, counts = unique_rows(_as_rows(x, axis), bool(sorted))
    values = x.ravel()[first] if axis is None else np.take(x, first, axis=axis)
    return values, first, inverse, counts


# -- NonZero ----------------------------------------------------------------------------------

def draw_onnx_non_zero(draw, kit, spec, dtype):
    """An input of rank 0 to 4 (empty sides too); ``values_onnx_non_zero`` zeroes some of its
    elements."""
    shape = draw(kit.shape(min_rank=0, max_rank=4, max_side=5,
                           min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))
    return kit.Signature((dtype,), (shape,), {}, dtype)


def values_onnx_non_zero(rng, inputs, attrs):
    """The filled input with about half of its elements made zero (of either sign for
    floats: -0 is a zero too; for text the empty string, numpy.nonzero's zero)."""
    (x,) = inputs
    zero = text_zero(x)
    if x.dtype.kind == "f":
        zero = np.where(rng.random(x.shape) < 0.5, -zero, zero).astype(x.dtype)
    return [np.where(rng.random(x.shape) < 0.5, zero, x).astype(x.dtype)]


def feed_onnx_non_zero(inputs, attrs, index):
    """out[d, j] is coordinate d of the j-th non-zero element: that element."""
    (x,) = inputs
    return [x.ravel()[np.flatnonzero(_non_zero(x.ravel()))[index[1]]:][:1]]


def _non_zero(x: np.ndarray) -> np.ndarray:
    """Where ``x`` is not zero; for text (an object array), where it is not the empty string:
    the text's 'NonZero behaves similar to numpy.nonzero', whose zero of a string is the empty
    one (a string's truth value in NumPy and Python)."""
    return x != ("" if x.dtype == object else 0)


def numpy_non_zero(x):
    """The numpy backend: ``np.nonzero`` stacked (one row per dimension); NumPy refuses a 0-d
    input (unsupported)."""
    if x.ndim == 0:
        raise unsupported("np.nonzero refuses 0-d arrays")
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


@op("onnx_non_zero", numpy=numpy_non_zero, version=1, draw=draw_onnx_non_zero, draw_honours=DRAWN_HERE,
    values=values_onnx_non_zero, feeding=feed_onnx_non_zero, value_dependent_shape=True)
def oracle_onnx_non_zero(x):
    """ONNX NonZero-13: the int64 coordinates (one row per dimension) of the elements that are
    not zero (NaN is not zero; -0 is), in row-major order; a 0-d input gives shape (0, N), N
    being 1 if it is not zero and 0 if it is; text: the non-empty strings (:func:`_non_zero`)."""
    nonzero = _non_zero(x)
    if x.ndim == 0:
        return (np.zeros((0, int(nonzero)), np.int64),)
    coordinates = np.nonzero(nonzero)
    return (np.stack(coordinates).astype(np.int64).reshape(x.ndim, -1),)

