"""XLA Scatter with general dimension numbers (operation semantics, Scatter), one op per update
computation: ``scatter`` (the update replaces), ``scatter_add`` (+), ``scatter_mul`` (*),
``scatter_min`` and ``scatter_max`` (XLA Min and Max: a NaN operand gives NaN, -0 and +0 not
ordered, as ops/maximum.yaml reads them).

For each index U of updates the text computes the operand index I = Win + Sin: G = U at the
``update_scatter_dims`` (those not in ``update_window_dims``) selects the index vector S of
``scatter_indices`` (along ``index_vector_dim``; a trailing 1-dimension where it equals the
rank); Sin[scatter_dims_to_operand_dims[k]] = S[k], 0 elsewhere; Win scatters U's window
dimensions into the operand dimensions not in ``inserted_window_dims``, in order. Then 'if O is
a valid index for output', output[O] = update_computation(output[O], updates[U]): an update
element whose index falls outside the operand is skipped, element by element (nothing is
clamped). The drawers draw such indices: windows wholly or partly outside.

'The order in which updates are applied is non-deterministic': where several updates meet one
element, the result is open unless the computation is order-free. Integer +, * (overflow is the
region ``int_overflow``), and min and max of any type are order-free; float + and * are not, and
the replacing scatter is not: for those the drawers draw disjoint windows (each element taking
at most one update), and then draw ``unique_indices`` true or false ('if unique_indices is true
and the indices are not unique, the semantics is implementation-defined': never drawn so).
``indices_are_sorted`` is drawn as for Gather (ops/xla_gather.py).

On bool (PRED) the update computations are StableHLO's (docs/spec.md, add: 'For booleans:
logical OR', multiply: 'logical AND', maximum: 'logical OR', minimum: 'logical AND'): the
oracle computes them on 0 and 1, where they are max (a sum capped at 1), product and min."""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op
from conform.ops.indexing import DRAWN_HERE, index_type
from conform.ops.reduction import nan_parts
from conform.ops.scatter import scattered
from conform.ops.xla_complex import complex_product_bound
from conform.ops.xla_gather import draw_numbers, draw_sorted, gather_shape, in_batch_order, \
    index_vectors, remapped

#: Per op, the reduction of ops/scatter.py's ``scattered`` its update computation is.
COMPUTATIONS = {"scatter": "none", "scatter_add": "add", "scatter_mul": "mul",
                "scatter_min": "min", "scatter_max": "max"}
#: Beyond this magnitude a start is outside every operand (keeps Win + Sin within int64).
_FAR = 2 ** 40


def repeats_allowed(name: str, dtype: str) -> bool:
    """Whether two updates may meet one element: only where the result is order-free."""
    reduction = COMPUTATIONS[name]
    return reduction in ("min", "max") or (reduction != "none" and
                                           dtype.startswith(("int", "uint")))


def update_targets(operand_shape, indices, update_shape, attrs):
    """Per update element, whether its operand index I is valid, and the valid ones' flat
    positions in the operand (row-major, in the order of the valid updates)."""
    vectors = np.clip(index_vectors(indices, attrs["index_vector_dim"]), -_FAR, _FAR)
    window_dims = attrs["update_window_dims"]
    position = np.indices(update_shape)
    scatter_dims = [d for d in range(len(update_shape)) if d not in window_dims]
    starts = vectors[tuple(position[d] for d in scatter_dims)]
    index = np.zeros(tuple(update_shape) + (len(operand_shape),), np.int64)
    for k, d in enumerate(attrs["scatter_dims_to_operand_dims"]):
        index[..., d] += starts[..., k]
    for k, d in enumerate(remapped(len(operand_shape), attrs["inserted_window_dims"])):
        index[..., d] += position[window_dims[k]]
    valid = np.all((index >= 0) & (index < np.asarray(operand_shape, np.int64)), axis=-1)
    inside = index[valid].reshape(-1, len(operand_shape))
    flat = np.ravel_multi_index(tuple(inside.T), operand_shape) if inside.size else \
        np.zeros(0, np.int64)
    return valid, flat


def _feeding(name: str):
    def feed(inputs, attrs, index):
        """The update elements whose (valid) index is ``index``, and operand[index] unless
        an update replaces it."""
        operand, indices, updates = inputs
        valid, flat = update_targets(operand.shape, indices, updates.shape, attrs)
        at = int(np.ravel_multi_index(tuple(index), operand.shape))
        chosen = np.zeros(updates.shape, bool)
        chosen[valid] = flat == at
        replaced = COMPUTATIONS[name] == "none" and chosen.any()
        return [operand.ravel()[at:at + (not replaced)], None, updates[chosen]]
    return feed


# -- drawing -----------------------------------------------------------------------------------

def _draw(name: str):
    def draw_scatter(draw, kit, spec, dtype):
        """Dimension numbers from a gather template (ops/xla_gather.py: the scatter that a
        gather of those numbers inverts), the index vector dimension anywhere (or implicit),
        updates within MAX_ARRAY_SIZE; ``unique_indices`` drawn where the windows are drawn
        disjoint."""
        st = kit.st
        operand, batch, start_map, inserted, sizes, window, indices, vector_dim = \
            draw_numbers(draw, kit)
        updates = gather_shape(len(operand), batch, window, inserted, sizes)
        unique = not repeats_allowed(name, dtype) and draw(st.booleans())
        attrs = {"update_window_dims": window, "inserted_window_dims": inserted,
                 "scatter_dims_to_operand_dims": start_map,
                 "index_vector_dim": vector_dim, "unique_indices": unique,
                 "indices_are_sorted": draw_sorted(draw, kit, start_map)}
        return kit.Signature((dtype, index_type(draw, kit, spec, "scatter_indices"), dtype),
                             (operand, indices, updates), attrs, dtype)
    return draw_scatter


def _window_sizes(operand_shape, update_shape, attrs) -> list[int]:
    """The window's extent along each operand dimension (1 where inserted)."""
    sizes = [1] * len(operand_shape)
    for k, d in enumerate(remapped(len(operand_shape), attrs["inserted_window_dims"])):
        sizes[d] = update_shape[attrs["update_window_dims"][k]]
    return sizes


def _outside(rng, dim, window, dtype) -> int:
    """A start putting the window wholly outside an operand dimension: below, past the end, or
    at the index type's extremes."""
    info = np.iinfo(dtype)
    return int(rng.choice([-window - int(rng.integers(0, 3)), dim + int(rng.integers(0, 3)),
                           max(info.min, -_FAR), min(info.max, _FAR)]))


def _disjoint_starts(rng, dims, windows, count, dtype) -> np.ndarray:
    """``count`` start vectors of disjoint windows: distinct cells of the grid of window-sized
    blocks (a block's start is a multiple of the window), or (one in eight, and those beyond
    the number of cells) a window wholly outside one dimension."""
    cells = [max(dim // w, 1) for dim, w in zip(dims, windows)]
    chosen = rng.permutation(math.prod(cells))[:count]
    starts = np.stack(np.unravel_index(chosen, cells), axis=-1) * windows if chosen.size \
        else np.zeros((0, len(dims)), np.int64)
    starts = np.concatenate([starts, np.zeros((count - len(chosen), len(dims)), np.int64)])
    for row in np.flatnonzero((np.arange(count) >= len(chosen)) | (rng.random(count) < 0.125)):
        k = int(rng.integers(0, len(dims)))
        starts[row, k] = _outside(rng, dims[k], windows[k], dtype)
    return starts


def _any_starts(rng, dims, windows, count, dtype) -> np.ndarray:
    """``count`` start vectors, each entry in range (seven in ten) or anywhere from a window
    wholly below to wholly past the dimension (partly outside too), or at the type's extremes."""
    starts = np.empty((count, len(dims)), np.int64)
    for k, (dim, w) in enumerate(zip(dims, windows)):
        inside = rng.integers(0, dim - w + 1, size=count)
        anywhere = rng.integers(-w - 1, dim + 2, size=count)
        starts[:, k] = np.where(rng.random(count) < 0.7, inside, anywhere)
        for row in np.flatnonzero(rng.random(count) < 0.04):
            starts[row, k] = _outside(rng, dim, w, dtype)
    return starts


def _values(name: str):
    def values_scatter(rng, inputs, attrs):
        """Index vectors as :func:`_disjoint_starts` draws them where repeated targets are not
        order-free, else as :func:`_any_starts` does."""
        operand, indices, updates = inputs
        windows = _window_sizes(operand.shape, updates.shape, attrs)
        start_map, vector_dim = attrs["scatter_dims_to_operand_dims"], attrs["index_vector_dim"]
        implicit = vector_dim == indices.ndim
        batch = indices.shape if implicit else indices.shape[:vector_dim] + \
            indices.shape[vector_dim + 1:]
        dims = [operand.shape[d] for d in start_map]
        mapped = [windows[d] for d in start_map]
        drawer = _any_starts if repeats_allowed(name, str(operand.dtype)) else _disjoint_starts
        vectors = drawer(rng, dims, mapped, math.prod(batch), indices.dtype)
        vectors = in_batch_order(vectors.astype(indices.dtype).reshape(
            tuple(batch) + (len(start_map),)), attrs["indices_are_sorted"])
        return [operand, vectors[..., 0] if implicit else np.moveaxis(vectors, -1, vector_dim),
                updates]
    return values_scatter


def lax_scatter(lax, attrs, bound):
    """The binding's lax scatter in mode FILL_OR_DROP (jax lowers it to XLA's Scatter
    unchanged: no clamp), the index vector dimension moved last (jax's fixed place for it)."""
    numbers = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(attrs["update_window_dims"]),
        inserted_window_dims=tuple(attrs["inserted_window_dims"]),
        scatter_dims_to_operand_dims=tuple(attrs["scatter_dims_to_operand_dims"]))
    vector_dim, unique = attrs["index_vector_dim"], attrs["unique_indices"]
    ascending = attrs["indices_are_sorted"]

    def scatter(operand, indices, updates):
        if vector_dim == indices.ndim:
            indices = lax.expand_dims(indices, (vector_dim,))
        else:
            order = [d for d in range(indices.ndim) if d != vector_dim] + [vector_dim]
            indices = lax.transpose(indices, order)
        return bound(operand, indices, updates, numbers, unique_indices=unique,
                     indices_are_sorted=ascending, mode=lax.GatherScatterMode.FILL_OR_DROP)
    return scatter


def _nonfinite_parts(x: np.ndarray) -> np.ndarray:
    """Where a complex element has an infinite or NaN part; False in any other type."""
    return ~np.isfinite(x) if x.dtype.kind == "c" else np.zeros(x.shape, bool)


def scatter_product_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                          subnormals="ieee"):
    """The ``derived`` bound of a complex scatter_mul: an updated element is one complex
    product of the operand's element and its one update (complex windows are drawn disjoint),
    bounded as multiply's (ops/xla_complex.py complex_product_bound: sqrt(5) u |x| |y| and the
    underflow terms; NaN where the textbook formula can overflow); a copied element is exact."""
    operand, indices, updates = inputs
    valid, flat = update_targets(operand.shape, indices, updates.shape, attrs)
    factor = np.ones(operand.size, operand.dtype)
    factor[flat] = updates[valid].ravel()
    (bound,) = complex_product_bound([operand.ravel(), factor], {}, [outputs[0].ravel()],
                                     out_dtype=out_dtype, u=u, constants=constants,
                                     dtypes=dtypes, subnormals=subnormals)
    touched = np.zeros(operand.size, bool)
    touched[flat] = True
    return (np.where(touched, bound, 0.0).reshape(operand.shape),)


def _combined(operand, flat, updates, reduction: str, open_elements: bool):
    """``operand`` with ``updates`` combined at its flat positions ``flat``. bool as 0 and 1
    (+ and max are OR, * and min AND); complex max and min in NumPy's lexicographic order
    (``np.maximum.at``). With ``open_elements``, where an element meets ``nan_parts`` (max,
    min), or a complex part that is not finite (*: the text defines the complex product and is
    silent on such operands, as for multiply's region complex_nonfinite_operand)."""
    if open_elements:
        mark = _nonfinite_parts if reduction == "mul" else nan_parts
        operand, updates, reduction = mark(operand), mark(updates), "max"
    if operand.dtype == np.bool_:
        out = scattered(operand.astype(np.int64), flat, updates.astype(np.int64), reduction)
        return out.reshape(operand.shape) != 0
    if operand.dtype.kind == "c" and reduction in ("max", "min"):
        out = operand.copy()
        (np.maximum if reduction == "max" else np.minimum).at(out.reshape(-1), flat, updates)
        return out
    return scattered(operand, flat, updates, reduction).reshape(operand.shape)


def _scatter_op(name: str, doc: str):
    reduction = COMPUTATIONS[name]

    def oracle(operand, scatter_indices, updates, *, update_window_dims, inserted_window_dims,
               scatter_dims_to_operand_dims, index_vector_dim, unique_indices,
               indices_are_sorted, open_elements=False):
        attrs = {"update_window_dims": update_window_dims,
                 "inserted_window_dims": inserted_window_dims,
                 "scatter_dims_to_operand_dims": scatter_dims_to_operand_dims,
                 "index_vector_dim": index_vector_dim}
        operand, updates = np.asarray(operand), np.asarray(updates)
        valid, flat = update_targets(operand.shape, scatter_indices, updates.shape, attrs)
        return (_combined(operand, flat, updates[valid].ravel(), reduction, open_elements),)

    oracle.__doc__ = doc
    oracle.__name__ = f"oracle_{name}"
    oracle.__module__ = __name__
    bound = {"error_bound": scatter_product_bound} if reduction == "mul" else {}
    return op(name, version=1, draw=_draw(name), draw_honours=DRAWN_HERE, values=_values(name),
              feeding=_feeding(name), lax=lax_scatter, **bound)(oracle)


oracle_scatter = _scatter_op("scatter", "XLA Scatter, the update replacing output[I].")
oracle_scatter_add = _scatter_op("scatter_add", "XLA Scatter with update computation +.")
oracle_scatter_mul = _scatter_op("scatter_mul", "XLA Scatter with update computation *.")
oracle_scatter_min = _scatter_op("scatter_min", "XLA Scatter with update computation Min.")
oracle_scatter_max = _scatter_op("scatter_max", "XLA Scatter with update computation Max.")
