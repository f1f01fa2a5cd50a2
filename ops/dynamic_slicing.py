"""XLA DynamicSlice and DynamicUpdateSlice: a slice of static sizes read from (or an update
written into) the operand at start indices given at run time, one integer scalar per dimension.

The XLA text (operation semantics, DynamicSlice and DynamicUpdateSlice) asks for start values
>= 0 with start + size within the dimension, then defines the effective start of every index
i in [1, N) as clamp(start[i], 0, dimension_size[i] - size[i]), 'so that the slice is always in
bounds; a slice in bounds before the transformation is unchanged'. The drawers therefore draw
starts needing that clamp (negative, past the end, and the index type's extremes) in
dimensions 1 and up, and an in-range start in dimension 0, which the text's clamp does not
cover (its result there is not defined). The starts are real inputs (scalars, all int32 or all
int64) and jax is asked not to wrap negative ones (``allow_negative_indices=False``: a NumPy-
style convention of jax's Python API, not XLA's)."""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.indexing import DRAWN_HERE, index_type, traced_feeding


def _starts(draw, kit, spec, rank: int) -> tuple:
    """The dtypes of ``rank`` start-index scalars: one index type for all of them."""
    return (index_type(draw, kit, spec, "start_indices"),) * rank


def _drawn_starts(rng, operand_shape, sizes, starts) -> list:
    """Start scalars (each of its input's dtype): in dimension 0 in range; elsewhere in range
    or up to 3 outside it on either side, or (one in eight) the index type's minimum or
    maximum, so that the clamp is exercised, overflow of start + size included."""
    drawn = []
    for k, (dim, size, start) in enumerate(zip(operand_shape, sizes, starts)):
        top = dim - size
        value = int(rng.integers(0, top + 1)) if k == 0 else int(rng.integers(-3, top + 4))
        if k and rng.random() < 0.125:
            info = np.iinfo(start.dtype)
            value = int(info.min if rng.random() < 0.5 else info.max)
        drawn.append(np.asarray(value, start.dtype))
    return drawn


def clamped_starts(operand_shape, sizes, starts) -> list[int]:
    """The XLA text's effective starts: clamp(start[i], 0, dimension_size[i] - size[i]) for i in
    [1, N); dimension 0 as given (drawn in range)."""
    return [int(s) if k == 0 else int(np.clip(int(s), 0, dim - size))
            for k, (dim, size, s) in enumerate(zip(operand_shape, sizes, starts))]


# -- DynamicSlice -----------------------------------------------------------------------------

def draw_dynamic_slice(draw, kit, spec, dtype):
    """An operand of rank 0 to 4 (sides of at least 1: every slice size must be > 0), slice
    sizes in [1, side], and one start scalar per dimension."""
    shape = draw(kit.shape(min_rank=0, max_rank=4, max_side=6))
    sizes = [draw(kit.st.integers(1, side)) for side in shape]
    return kit.Signature((dtype,) + _starts(draw, kit, spec, len(shape)),
                         (shape,) + ((),) * len(shape), {"slice_sizes": sizes}, dtype)


def values_dynamic_slice(rng, inputs, attrs):
    """Starts as :func:`_drawn_starts` draws them."""
    operand, *starts = inputs
    return [operand, *_drawn_starts(rng, operand.shape, attrs["slice_sizes"], starts)]


def lax_dynamic_slice(lax, attrs):
    """lax.dynamic_slice with the starts as run-time scalars, negative ones left to XLA's clamp."""
    sizes = tuple(attrs["slice_sizes"])
    return lambda operand, *starts: lax.dynamic_slice(operand, starts, sizes,
                                                      allow_negative_indices=False)


def _numpy_window(shape, sizes, start_indices):
    """The slices at the starts clamped to [0, dim - size] (XLA's effective starts)."""
    return tuple(slice(s, s + n) for s, n in
                 ((int(np.clip(start, 0, dim - size)), size)
                  for start, dim, size in zip(start_indices, shape, sizes)))


def numpy_dynamic_slice(operand, *start_indices, slice_sizes):
    """The numpy backend: basic slicing at ``np.clip``-ed starts."""
    return operand[_numpy_window(operand.shape, slice_sizes, start_indices)].copy()


@op("dynamic_slice", numpy=numpy_dynamic_slice, version=1, draw=draw_dynamic_slice, draw_honours=DRAWN_HERE,
    values=values_dynamic_slice, feeding=traced_feeding("dynamic_slice", (0,)),
    lax=lax_dynamic_slice)
def oracle_dynamic_slice(operand, *start_indices, slice_sizes):
    """XLA DynamicSlice: operand[start_i : start_i + size_i] per dimension, at the effective
    (clamped) starts."""
    starts = clamped_starts(operand.shape, slice_sizes, start_indices)
    window = tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))
    return (np.array(np.asarray(operand)[window]),)


# -- DynamicUpdateSlice -----------------------------------------------------------------------

def draw_dynamic_update_slice(draw, kit, spec, dtype):
    """An operand of rank 0 to 4 (sides of at least 1), an update of the same rank with sides
    in [1, the operand's] (each must be > 0), and one start scalar per dimension."""
    shape = draw(kit.shape(min_rank=0, max_rank=4, max_side=6))
    update = tuple(draw(kit.st.integers(1, side)) for side in shape)
    return kit.Signature((dtype, dtype) + _starts(draw, kit, spec, len(shape)),
                         (shape, update) + ((),) * len(shape), {}, dtype)


def values_dynamic_update_slice(rng, inputs, attrs):
    """Starts as :func:`_drawn_starts` draws them, for the update's sizes."""
    operand, update, *starts = inputs
    return [operand, update, *_drawn_starts(rng, operand.shape, update.shape, starts)]


def lax_dynamic_update_slice(lax, attrs):
    """lax.dynamic_update_slice, negative starts left to XLA's clamp."""
    return lambda operand, update, *starts: lax.dynamic_update_slice(
        operand, update, starts, allow_negative_indices=False)


def numpy_dynamic_update_slice(operand, update, *start_indices):
    """The numpy backend: a copy with the update assigned at ``np.clip``-ed starts."""
    out = np.array(operand)
    out[_numpy_window(operand.shape, update.shape, start_indices)] = update
    return out


@op("dynamic_update_slice", numpy=numpy_dynamic_update_slice, version=1, draw=draw_dynamic_update_slice,
    draw_honours=DRAWN_HERE, values=values_dynamic_update_slice,
    feeding=traced_feeding("dynamic_update_slice", (0, 1)), lax=lax_dynamic_update_slice)
def oracle_dynamic_update_slice(operand, update, *start_indices):
    """XLA DynamicUpdateSlice: the operand with the update written over the slice at the
    effective (clamped) starts."""
    starts = clamped_starts(operand.shape, update.shape, start_indices)
    out = np.array(operand)   # (a 0-d input may arrive as a NumPy scalar)
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return (out,)
