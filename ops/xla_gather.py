"""XLA Gather with general dimension numbers (operation semantics, Gather).

The output index Out maps to the operand index In = Sin + Oin, where (the text's formal part):
``batch_dims`` are the output dimensions not in ``offset_dims``; G = Out at the batch
dimensions selects the start-index vector S from ``start_indices`` (G with the index vector
inserted at ``index_vector_dim``; an ``index_vector_dim`` equal to the indices' rank reads a
trailing 1-dimension); Sin[start_index_map[k]] = S[k], 0 elsewhere; Oin takes Out at the offset
dimensions, scattered into the operand dimensions not in ``collapsed_slice_dims`` in order.

Out-of-range starts: the text's informal part says each slice is 'dynamic-sliced' out of the
operand at the full start index Sin with ``slice_sizes``, and DynamicSlice defines the effective
start as clamp(start, 0, dimension_size - slice_size) 'for each index i in [1, N)', keeping the
slice in bounds. The drawer follows that reading as ops/dynamic_slicing.py does: starts for
operand dimension 0 are drawn in range (the clamp's [1, N) leaves it out), starts for the other
dimensions also below 0, past the end and at the index type's extremes; the oracle clamps. The
jax lowering asks for mode CLIP, which jax lowers to XLA's Gather as it is (no masking: jax's
FILL_OR_DROP mode, which fills out-of-range windows, is not XLA's semantics).

Dimension numbers are drawn from three templates with random sizes: a take along one axis
(jnp.take), a batched gather of windows (a random start_index_map, collapsed dimensions, offset
dimension positions and index_vector_dim), and a 2-D patch gather (windows of a 2-D or 3-D
operand at 2-D starts). ``indices_are_sorted`` ('XLA can assume that start_indices are sorted
(in ascending order ...); if they are not then the semantics are implementation defined') is
drawn true only with one-element index vectors, drawn in ascending order over the batch in
row-major order (with longer vectors the text's order is not said: lexicographic, or each
entry). Every element is a copy of an operand element: judged exactly."""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op
from conform.ops.indexing import DRAWN_HERE, index_type, traced_feeding

TEMPLATES = ("take", "batched", "patch")


# -- the text's index arithmetic ---------------------------------------------------------------

def remapped(dims: int, skipped) -> list[int]:
    """The monotone map of [0, dims - len(skipped)) onto [0, dims) without ``skipped`` (the
    text's remapped_offset_dims, and Scatter's window_dims_to_operand_dims)."""
    return [d for d in range(dims) if d not in set(skipped)]


def index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """The start-index vectors S, the vector dimension moved last (a trailing 1-dimension where
    ``index_vector_dim`` equals the indices' rank)."""
    indices = np.asarray(indices, np.int64)
    if index_vector_dim == indices.ndim:
        return indices[..., None]
    return np.moveaxis(indices, index_vector_dim, -1)


def full_starts(vectors: np.ndarray, start_index_map, operand_shape, window) -> np.ndarray:
    """Sin per index vector (shape ``vectors.shape[:-1] + (rank,)``): S[k] placed at operand
    dimension start_index_map[k], 0 elsewhere, clamped to [0, dimension_size - window size]
    (DynamicSlice's effective start; a start in bounds is unchanged)."""
    starts = np.zeros(vectors.shape[:-1] + (len(operand_shape),), np.int64)
    for k, d in enumerate(start_index_map):
        starts[..., d] = vectors[..., k]
    top = np.asarray(operand_shape, np.int64) - np.asarray(window, np.int64)
    return np.clip(starts, 0, top)


def gather_shape(operand_rank, batch_shape, offset_dims, collapsed_slice_dims, slice_sizes):
    """The output's shape: batch dimensions (the indices' without the vector dimension) at the
    positions not in ``offset_dims``, the kept slice sizes at ``offset_dims``."""
    rank = len(batch_shape) + len(offset_dims)
    kept = [slice_sizes[d] for d in remapped(operand_rank, collapsed_slice_dims)]
    batch, offset = iter(batch_shape), iter(kept)
    return tuple(next(offset) if d in offset_dims else next(batch) for d in range(rank))


# -- drawing -----------------------------------------------------------------------------------

def _positions(draw, st, count: int, total: int) -> list[int]:
    """``count`` ascending positions out of [0, total)."""
    return sorted(draw(st.permutations(range(total)))[:count])


def draw_take(draw, st):
    """jnp.take along ``axis``: operand[:axis] + batch + operand[axis + 1:]."""
    operand = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    axis = draw(st.integers(0, len(operand) - 1))
    batch = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=2)))
    sizes = [1 if d == axis else side for d, side in enumerate(operand)]
    offset = list(range(axis)) + list(range(axis + len(batch), len(operand) - 1 + len(batch)))
    return operand, batch, [axis], [axis], sizes, offset


def draw_batched(draw, st):
    """Windows of random sizes at index vectors naming a random ordered subset of the operand's
    dimensions; dimensions of window size 1 collapsed or not; offset dimensions anywhere."""
    operand = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    rank = len(operand)
    k = draw(st.integers(1, rank))
    start_map = draw(st.permutations(range(rank)))[:k]
    sizes = [draw(st.integers(1, side)) for side in operand]
    collapsed = sorted(d for d in range(rank) if sizes[d] == 1 and draw(st.booleans()))
    batch = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=2)))
    offset = _positions(draw, st, rank - len(collapsed), len(batch) + rank - len(collapsed))
    return operand, batch, start_map, collapsed, sizes, offset


def draw_patch(draw, st):
    """Patches of a 2-D operand (or its first two dimensions, with a channel dimension kept) at
    2-D starts: out[G.., ph, pw (, c)]."""
    operand = tuple(draw(st.lists(st.integers(1, 5), min_size=2, max_size=3)))
    sizes = [draw(st.integers(1, operand[0])), draw(st.integers(1, operand[1])), *operand[2:]]
    batch = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=2)))
    offset = list(range(len(batch), len(batch) + len(operand)))
    return operand, batch, [0, 1], [], sizes, offset


#: Per template, a drawer of (operand shape, batch shape, start_index_map, collapsed dimensions,
#: slice sizes, offset dimensions); XLA Scatter draws its dimension numbers from them too.
TEMPLATE_DRAWERS = {"take": draw_take, "batched": draw_batched, "patch": draw_patch}


def draw_numbers(draw, kit):
    """Gather dimension numbers from a template (:data:`TEMPLATES`) with random sizes, the
    batch within MAX_ARRAY_SIZE elements of slices, and the indices' shape: the index vector
    dimension anywhere (or implicit, after the last, for one-element vectors). Returns (operand
    shape, batch shape, start_index_map, collapsed dimensions, slice sizes, offset dimensions,
    indices' shape, index_vector_dim)."""
    st = kit.st
    template = draw(st.sampled_from(TEMPLATES))
    operand, batch, start_map, collapsed, sizes, offset = TEMPLATE_DRAWERS[template](draw, st)
    if math.prod(batch) * math.prod(sizes) > kit.MAX_ARRAY_SIZE:
        batch = (1,) * len(batch)
    vector_dim = draw(st.integers(0, len(batch)))
    indices = batch[:vector_dim] + (len(start_map),) + batch[vector_dim:]
    if len(start_map) == 1 and vector_dim == len(batch) and draw(st.booleans()):
        indices = batch   # the implicit trailing 1-dimension
    return operand, batch, list(start_map), collapsed, sizes, offset, indices, vector_dim


def draw_sorted(draw, kit, start_map) -> bool:
    """``indices_are_sorted``: true in half the cases with one-element index vectors."""
    return len(start_map) == 1 and draw(kit.st.booleans())


def in_batch_order(vectors: np.ndarray, ascending: bool) -> np.ndarray:
    """Index vectors (batch shape + (1,)) sorted ascending over the batch in row-major order
    where ``ascending``, else as they are."""
    return np.sort(vectors.ravel()).reshape(vectors.shape) if ascending else vectors


def draw_gather(draw, kit, spec, dtype):
    """Dimension numbers and shapes as :func:`draw_numbers` draws them."""
    operand, _, start_map, collapsed, sizes, offset, indices, vector_dim = draw_numbers(draw, kit)
    attrs = {"offset_dims": offset, "collapsed_slice_dims": collapsed,
             "start_index_map": start_map, "index_vector_dim": vector_dim,
             "slice_sizes": sizes, "indices_are_sorted": draw_sorted(draw, kit, start_map)}
    return kit.Signature((dtype, index_type(draw, kit, spec, "start_indices")),
                         (operand, indices), attrs, dtype)


def drawn_starts(rng, operand_shape, window, start_index_map, shape, dtype) -> np.ndarray:
    """Index vectors (shape ``shape``, the vector last) whose entry k starts a window along
    operand dimension d = start_index_map[k]: in range for d = 0, else in range or up to 3 past
    either end, or (one in eight) the index type's minimum or maximum, so that the clamp is
    exercised, overflow of start + size included."""
    dims = np.asarray([operand_shape[d] for d in start_index_map], np.int64)
    top = dims - np.asarray([window[d] for d in start_index_map], np.int64)
    first = np.asarray(start_index_map) == 0
    low, high = np.where(first, 0, -3), np.where(first, top, top + 3)
    drawn = np.floor(low + rng.random(shape) * (high - low + 1)).astype(np.int64)
    info = np.iinfo(dtype)
    extreme = np.where(rng.random(shape) < 0.5, info.min, info.max)
    return np.where(~first & (rng.random(shape) < 0.125), extreme, drawn).astype(dtype)


def values_gather(rng, inputs, attrs):
    """Start indices as :func:`drawn_starts` draws them, for the drawn dimension numbers."""
    operand, indices = inputs
    vector_dim, k = attrs["index_vector_dim"], len(attrs["start_index_map"])
    implicit = vector_dim == indices.ndim
    moved = indices.shape + (1,) if implicit else \
        indices.shape[:vector_dim] + indices.shape[vector_dim + 1:] + (k,)
    vectors = in_batch_order(drawn_starts(rng, operand.shape, attrs["slice_sizes"],
                                          attrs["start_index_map"], moved, indices.dtype),
                             attrs["indices_are_sorted"])
    return [operand, vectors[..., 0] if implicit else np.moveaxis(vectors, -1, vector_dim)]


def lax_gather(lax, attrs):
    """lax.gather in mode CLIP (jax lowers it to XLA's Gather unchanged), the index vector
    dimension moved last (jax's fixed place for it)."""
    numbers = lax.GatherDimensionNumbers(offset_dims=tuple(attrs["offset_dims"]),
                                         collapsed_slice_dims=tuple(attrs["collapsed_slice_dims"]),
                                         start_index_map=tuple(attrs["start_index_map"]))
    sizes, vector_dim = tuple(attrs["slice_sizes"]), attrs["index_vector_dim"]
    ascending = attrs["indices_are_sorted"]

    def gather(operand, indices):
        if vector_dim == indices.ndim:
            indices = lax.expand_dims(indices, (vector_dim,))
        else:
            order = [d for d in range(indices.ndim) if d != vector_dim] + [vector_dim]
            indices = lax.transpose(indices, order)
        return lax.gather(operand, indices, numbers, sizes, indices_are_sorted=ascending,
                          mode=lax.GatherScatterMode.CLIP)
    return gather


@op("gather", version=1, draw=draw_gather, draw_honours=DRAWN_HERE, values=values_gather,
    feeding=traced_feeding("gather", (0,)), lax=lax_gather)
def oracle_gather(operand, start_indices, *, offset_dims, collapsed_slice_dims,
                  start_index_map, index_vector_dim, slice_sizes, indices_are_sorted):
    """XLA Gather: out[Out] = operand[Sin + Oin] as the text's formal part defines them, Sin
    clamped as DynamicSlice clamps its starts."""
    operand = np.asarray(operand)
    vectors = index_vectors(start_indices, index_vector_dim)
    starts = full_starts(vectors, start_index_map, operand.shape, slice_sizes)
    shape = gather_shape(operand.ndim, vectors.shape[:-1], offset_dims, collapsed_slice_dims,
                         slice_sizes)
    out = np.indices(shape)
    batch_dims = [d for d in range(len(shape)) if d not in offset_dims]
    at = starts[tuple(out[d] for d in batch_dims)]
    index = [at[..., d] for d in range(operand.ndim)]
    for k, d in enumerate(remapped(operand.ndim, collapsed_slice_dims)):
        index[d] = index[d] + out[offset_dims[k]]
    return (np.array(operand[tuple(index)]),)
