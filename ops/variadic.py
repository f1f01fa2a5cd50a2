"""XLA's variadic ops as jax.lax exposes them: Sort of several operands together (lax.sort with
``num_keys``, ``dimension`` and ``is_stable``) and Reduce over two operands, written as an
arg-max: a (value, index) reduction whose body picks the larger value, NaN first, the lower
index among equals.

XLA's Sort text leaves the order to the comparator; lax.sort's comparator is documented by jax:
lexicographic over the first ``num_keys`` operands, ascending, '-0.0 and 0.0 are treated as
equivalent, and NaN values are sorted to the end of the array' (every NaN equal to every NaN).
'Two elements e1 and e2 are equal if and only if comparator(e1, e2) = comparator(e2, e1) =
false'; with ``is_stable`` 'the relative order of the equal values is preserved', without it
their order is open: the oracle orders tied tuples by their bits (``tie_break_keys``) and
``canonical_sort`` puts a backend's tied tuples in that order, only within runs of equal keys."""
from __future__ import annotations

import numpy as np

from conform.ops._lowering import unsupported
from conform.op_registry import op
from conform.ops.indexing import DRAWN_HERE
from conform.widening import widen
from conform.dtypes import flush_subnormals
from conform.ops.reduction import extreme, nan_parts, oracle_identity

SORT_OPERANDS = 3   # the spec's operands: the format fixes an op's inputs and outputs per spec


def comparator_keys(operands, num_keys: int) -> list[np.ndarray]:
    """np.lexsort keys (least significant first) that order along the last axis as lax.sort's
    comparator does: the first ``num_keys`` operands lexicographically, floats ascending with
    -0 == +0 and every NaN after every number and equal to every NaN."""
    keys = []
    for x in reversed(operands[:num_keys]):
        if x.dtype.kind in "fV":   # bfloat16 and float8 are of kind V
            x = x.astype(np.float64)
            nan = np.isnan(x)
            keys += [np.where(nan | (x == 0), 0.0, x), nan]   # the NaN flag is more significant
        else:
            keys.append(x)
    return keys


def _bits(x: np.ndarray) -> np.ndarray:
    """An int64 key ordering float64 values by their bits (IEEE 754 totalOrder) and integers
    by value: distinct bit patterns get distinct keys."""
    if x.dtype.kind not in "fV":
        return x.astype(np.int64)
    bits = x.astype(np.float64).view(np.int64)
    return np.where(bits < 0, bits ^ np.int64(2**63 - 1), bits)   # negatives reversed, below


def tie_break_keys(operands) -> list[np.ndarray]:
    """np.lexsort keys (least significant first) ordering tuples by every operand's bits, the
    first operand most significant (of a complex one, its real part, then its imaginary): the
    order the oracle gives tied tuples of an unstable sort."""
    return [_bits(part) for x in reversed(operands)
            for part in ((x.imag, x.real) if x.dtype.kind == "c" else (x,))]


def sort_along_last(operands, num_keys: int, stable: bool) -> tuple:
    """``operands`` (equal shapes) sorted together along the last axis by lax.sort's comparator;
    equal tuples in index order (stable), or ordered by ``tie_break_keys``."""
    keys = comparator_keys(operands, num_keys)
    if not stable:
        keys = tie_break_keys(operands) + keys
    order = np.lexsort(keys, axis=-1)
    return tuple(np.take_along_axis(x, order, axis=-1) for x in operands)


def draw_sort(draw, kit, spec, dtype):
    """Three operands of one shape of rank 1 to 3 (empty sides too), the second of the case's
    type too and the third int32, a dimension (negative too: lax.sort allows it), num_keys in
    [1, 3] and is_stable; ``values_sort`` makes keys repeat."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=3, max_side=6,
                           min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    dimension = draw(st.integers(-len(shape), len(shape) - 1))
    attrs = {"dimension": dimension, "num_keys": draw(st.integers(1, SORT_OPERANDS)),
             "is_stable": draw(st.booleans())}
    return kit.Signature((dtype, dtype, "int32"), (shape,) * SORT_OPERANDS, attrs, dtype)


def values_sort(rng, inputs, attrs):
    """The filled operands, the first two with about half of their elements replaced by
    copies of others of the same operand (ties in the first key, and in the second), and the
    third in [0, 3) (ties in a third key)."""
    first, second, third = (x.copy() for x in inputs)
    for x in (first, second):
        if x.size:
            flat = x.reshape(-1)
            copies = rng.random(x.size) < 0.5
            flat[copies] = flat[rng.integers(0, x.size, int(copies.sum()))]
    third = rng.integers(0, 3, third.shape).astype(third.dtype)
    return [first, second, third]


def feed_sort(inputs, attrs, index):
    """out[index] of the first operand is its element of rank index along the dimension:
    every element of that slice of the first operand sets that rank; another key operand's
    elements do where they break a tie of the earlier keys (a group of two or more)."""
    axis = attrs["dimension"] % inputs[0].ndim
    at = tuple(slice(None) if d == axis else i for d, i in enumerate(index))
    slices = [np.moveaxis(x, axis, -1)[tuple(i for d, i in enumerate(index) if d != axis)]
              for x in inputs]
    fed = [inputs[0][at]]
    ranked = sort_along_last(slices, attrs["num_keys"], True)
    group = np.ones(slices[0].shape, bool)
    for k in range(1, attrs["num_keys"]):
        for here, there in zip(comparator_keys([slices[k - 1]], 1),
                               comparator_keys([ranked[k - 1][index[axis]:index[axis] + 1]], 1)):
            group &= here == there
        fed.append(slices[k][group] if group.sum() > 1 else None)
    return fed + [None] * (len(inputs) - len(fed))


def _as_read(array: np.ndarray, subnormals: str) -> np.ndarray:
    """``array`` widened, its subnormals (of its own format; each part of a complex number)
    read as zeros of their sign by a flushing backend (``ftz``), as the judge's flushed
    reference reads them (:func:`conform.dtypes.flush_subnormals`)."""
    return widen(flush_subnormals(np.asarray(array)) if subnormals == "ftz" else array)


def canonical_sort(outputs, case, subnormals="ieee"):
    """Without is_stable the order of tuples the comparator calls equal is open: within each
    run of consecutive positions whose keys the comparator calls equal, the backend's tuples
    are put in the oracle's order (``tie_break_keys``). Only tied tuples are reordered, each
    kept whole: a wrong value, or keys out of order, still fail. A flushing backend (``ftz``)
    compares subnormals as zeros: its runs and their order are read with them flushed, as the
    judge's flushed reference is computed."""
    if case.attrs["is_stable"] or outputs[0].size == 0:
        return outputs
    axis = case.attrs["dimension"] % outputs[0].ndim
    last = [np.moveaxis(_as_read(np.asarray(o), subnormals), axis, -1) for o in outputs]
    keys = comparator_keys(last, case.attrs["num_keys"])
    changes = np.zeros(last[0].shape, bool)
    for key in keys:
        changes[..., 1:] |= key[..., 1:] != key[..., :-1]
    run = np.cumsum(changes, axis=-1)
    order = np.lexsort(tie_break_keys(last) + [run], axis=-1)
    return [np.moveaxis(np.take_along_axis(np.moveaxis(np.asarray(o), axis, -1), order, -1),
                        -1, axis) for o in outputs]


def lax_sort(lax, attrs):
    """lax.sort of the three operands together."""
    dimension, num_keys, stable = attrs["dimension"], attrs["num_keys"], attrs["is_stable"]
    return lambda *operands: tuple(lax.sort(operands, dimension=dimension, is_stable=stable,
                                            num_keys=num_keys))


def numpy_sort(*operands, dimension, num_keys, is_stable):
    """The numpy backend: ``np.lexsort`` by the first ``num_keys`` operands (stable), every
    operand taken in that order."""
    axis = dimension % operands[0].ndim
    keys = [np.moveaxis(x, axis, -1) for x in operands[:num_keys]]
    order = np.moveaxis(np.lexsort(keys[::-1], axis=-1), -1, axis)
    return tuple(np.take_along_axis(x, order, axis=axis) for x in operands)


@op("sort", numpy=numpy_sort, version=1, draw=draw_sort, draw_honours=DRAWN_HERE, values=values_sort,
    feeding=feed_sort, canonical=canonical_sort, lax=lax_sort)
def oracle_sort(*operands, dimension, num_keys, is_stable, open_elements=False):
    """XLA Sort of several operands with lax.sort's comparator: the operands sorted together
    along ``dimension`` by their first ``num_keys`` operands; equal tuples in index order with
    ``is_stable``, else in the order of their bits (see ``canonical_sort``). Complex keys in
    StableHLO's lexicographic order (``open_elements``: every position of a slice whose keys
    hold ``nan_parts``)."""
    if open_elements:
        held = np.any([nan_parts(x) for x in operands[:num_keys]], axis=0)
        held = np.any(held, axis=dimension, keepdims=True)
        return tuple(np.broadcast_to(held, x.shape) for x in operands)
    axis = dimension % operands[0].ndim
    moved = [np.moveaxis(x, axis, -1) for x in operands]
    return tuple(np.moveaxis(x, -1, axis) for x in sort_along_last(moved, num_keys, is_stable))


# -- Reduce over (value, index): an arg-max ---------------------------------------------------

def draw_reduce_argmax(draw, kit, spec, dtype):
    """An operand of rank 1 to 3 (empty sides too: a reduction of nothing gives the initial
    values) and the dimension reduced (lax.reduce takes non-negative dimensions)."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=3, max_side=7,
                           min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    return kit.Signature((dtype,), (shape,), {"dimension": draw(st.integers(0, len(shape) - 1))},
                         dtype)


def values_reduce_argmax(rng, inputs, attrs):
    """The filled operand with about half of its elements copies of others: ties for the
    maximum, which the body breaks by the lower index."""
    (x,) = inputs
    x = x.copy()
    if x.size:
        flat = x.reshape(-1)
        copies = rng.random(x.size) < 0.5
        flat[copies] = flat[rng.integers(0, x.size, int(copies.sum()))]
    return [x]


def feed_reduce_argmax(inputs, attrs, index):
    """The reduced slice: every element of it competes for the maximum."""
    (x,) = inputs
    axis = attrs["dimension"]
    at = list(index)
    at.insert(axis, slice(None))
    return [x[tuple(at)]]


INT32_MAX = 2**31 - 1   # the initial index: above every real index, so a real element wins ties


def lax_reduce_argmax(lax, attrs):
    """lax.reduce over (operand, iota along the dimension) with the body: the left pair wins if
    its value is greater, or is NaN where the right one is not, or the two values are equal
    (or both NaN) and its index is lower. Initial values: (the type's least value,
    ``extreme``; INT32_MAX), an identity of the body."""
    dimension = attrs["dimension"]

    def body(left, right):
        (value, index), (other, other_index) = left, right
        nan, other_nan = lax.ne(value, value), lax.ne(other, other)
        tied = lax.bitwise_or(lax.eq(value, other), lax.bitwise_and(nan, other_nan))
        wins = lax.bitwise_or(
            lax.bitwise_or(lax.gt(value, other), lax.bitwise_and(nan, lax.bitwise_not(other_nan))),
            lax.bitwise_and(tied, lax.lt(index, other_index)))
        return lax.select(wins, value, other), lax.select(wins, index, other_index)

    def argmax(x):
        iota = lax.broadcasted_iota(np.int32, x.shape, dimension)
        return lax.reduce((x, iota), (extreme(x.dtype, True), np.array(2**31 - 1, np.int32)),
                          body, (dimension,))

    return argmax


def numpy_reduce_argmax(operand, *, dimension):
    """The numpy backend: ``np.max`` and ``np.argmax`` (its first maximum; NaN first) along
    the dimension; ``np.argmax`` refuses an empty slice (unsupported)."""
    if operand.shape[dimension] == 0:
        raise unsupported("np.argmax has no value for an empty slice")
    return (np.max(operand, axis=dimension),
            np.argmax(operand, axis=dimension).astype(np.int32))


@op("reduce_argmax", numpy=numpy_reduce_argmax, version=1, draw=draw_reduce_argmax, draw_honours=DRAWN_HERE,
    values=values_reduce_argmax, feeding=feed_reduce_argmax, lax=lax_reduce_argmax)
def oracle_reduce_argmax(operand, *, dimension, dtypes=(), open_elements=False):
    """XLA Reduce of (operand, index) with the arg-max body of ``lax_reduce_argmax``: per slice
    along ``dimension``, the first NaN if any, else the first element equal to the maximum
    (-0 == +0), with its index; an empty slice gives the initial values (the type's least
    value, ``extreme``; INT32_MAX). The body is a selection by a total preorder with ties broken
    by distinct indices, so every order of evaluation gives this answer. Complex numbers rank
    in StableHLO's lexicographic order (``open_elements``: a slice holding ``nan_parts``)."""
    if open_elements:
        held = np.any(nan_parts(operand), axis=dimension)
        return held, held
    x = np.moveaxis(operand, dimension, -1)
    if x.shape[-1] == 0:
        return (np.full(x.shape[:-1], oracle_identity(operand, dtypes, True), operand.dtype),
                np.full(x.shape[:-1], INT32_MAX, np.int64))
    if x.dtype.kind in "fV":   # bfloat16 and float8 are of kind V
        x = x.astype(np.float64)
        nan = np.isnan(x)
        first = np.where(nan.any(-1), np.argmax(nan, -1),
                         np.argmax(np.where(nan, -np.inf, np.where(x == 0, 0.0, x)), -1))
    else:
        first = np.argmax(x, -1)
    value = np.take_along_axis(x, first[..., None], -1)[..., 0]
    return value, first.astype(np.int64)
