"""XLA SelectAndScatter with a GE or GT select and an Add scatter (operation semantics,
seeds/004_c11ff90b720ca9d5.txt, "SelectAndScatter").

The text: the op "first computes ReduceWindow on the operand to select one element from each
window, then scatters the source array to the selected elements' indices, building an output of
the operand's shape". The select function is applied to the elements of each window "with the
first argument's index vector lexicographically smaller than the second's"; it returns true if
the first is selected and must be transitive, "so that the selected element does not depend on
the order in which a window's elements are traversed". The scatter function combines the
output's current value at a selected index with the scattered source value; "initially every
index of the output is init_value"; "the evaluation order of the scatter function is arbitrary
and may be non-deterministic". The source has the shape of ReduceWindow's result.

Read for select = GE (a >= b): of two equal maxima the lower index wins every comparison, so
each window selects its *first* (lexicographically smallest) maximal element; for GT (a > b) the
higher index wins, the *last* maximal element. A padding position is no element of the operand
(the output, the operand's shape, has no index for it), so a window selects among its operand
elements; with the text's two paddings (kValid: none; kSame: padded so that a stride-1 output
has the operand's shape, ``w - 1`` positions, split evenly for the odd windows drawn here, as
the ReduceWindow section's example pads one on each side of a window of 3; with a stride above 1
drawn only where ``(n - 1)`` is a multiple of it, where that amount and the one recomputed for
ceil(n / s) outputs coincide) every window holds one. The output is ``init_value`` plus the source values selecting the index, summed in any
order (an ``accumulation`` bound, Higham 2002, §4.2).

Open (the oracle marks them, region ``oracle_marked``): every operand element of a window
holding a NaN (GE and GT are not transitive over NaN: the selection depends on the order of the
comparisons) and, in a float type, a sum whose magnitudes can overflow in some order.

jax.lax has no function for the op: the lax hook binds a primitive lowered to StableHLO's own
``select_and_scatter`` with a ``compare GE|GT`` select region and an ``add`` scatter region.
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import FLOAT_FORMATS, component_dtype, is_complex
from conform.op_registry import op
from conform.ops.error_bounds import gamma, reaches_max_finite
from conform.ops.reduction import exact_sum, extreme, reduce_windows


def draw_select_and_scatter(draw, kit, spec, dtype):
    """An operand of rank 1 to 4, a window of 1 to 3 and a stride of 1 or 2 per dimension,
    padding kValid or kSame (under kSame odd windows only, and a stride of 2 with an odd size:
    the text fixes no split of an even window's padding, and where the stride-1 amount and the
    amount recomputed for the strided output differ, not which), select GE or GT; the source
    of ReduceWindow's result shape and a scalar init value."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=5))
    same = draw(st.booleans())
    shape, window, strides, padding = list(shape), [], [], []
    for axis, size in enumerate(shape):
        w = draw(st.sampled_from([1, 3]) if same else st.integers(1, min(size, 3)))
        window.append(w)
        strides.append(draw(st.integers(1, 2)))
        padding.append([(w - 1) // 2] * 2 if same else [0, 0])
        if same and (size - 1) % strides[-1]:   # where kSame's two readings coincide
            shape[axis] = size + 1
    attrs = {"window_dimensions": window, "window_strides": strides, "padding": padding,
             "select": draw(st.sampled_from(["GE", "GT"]))}
    source = tuple((n + lo + hi - w) // s + 1
                   for n, w, s, (lo, hi) in zip(shape, window, strides, padding))
    return kit.Signature((dtype,) * 3, (tuple(shape), source, ()), attrs, dtype)


def _window_taps(operand, window_dimensions, window_strides, padding):
    """Per window (ReduceWindow's result shape) its taps in lexicographic order: the operand's
    values and flat indices (-1 at a padding position)."""
    flat = np.arange(operand.size).reshape(operand.shape)
    index = reduce_windows(flat, -1, window_dimensions, window_strides, padding)
    values = reduce_windows(operand, operand.dtype.type(0), window_dimensions, window_strides,
                            padding)
    taps = math.prod(window_dimensions)
    return (values.reshape(values.shape[:operand.ndim] + (taps,)),
            index.reshape(index.shape[:operand.ndim] + (taps,)))


def selected_indices(operand, window_dimensions, window_strides, padding, select):
    """The flat operand index each window selects: its first maximal operand element (GE) or its
    last (GT), padding positions excluded; -1 where a NaN leaves no element maximal."""
    values, index = _window_taps(operand, window_dimensions, window_strides, padding)
    valid = index >= 0
    lowest = extreme(operand.dtype, True)
    top = np.max(np.where(valid, values, lowest), axis=-1, keepdims=True)
    maximal = valid & (values == top)
    if select == "GT":
        maximal = maximal[..., ::-1]
    pick = np.argmax(maximal, axis=-1)[..., None]
    if select == "GT":
        pick = maximal.shape[-1] - 1 - pick
    return np.where(maximal.any(axis=-1), np.take_along_axis(index, pick, axis=-1)[..., 0], -1)


def _terms(operand, source, init_value, selected):
    """(operand.size, windows + 1): row t holds the source values scattered to flat index t
    (zero elsewhere) and the init value; a window selecting nothing (-1: it holds a NaN, an open
    region) scatters nowhere."""
    terms = np.zeros((operand.size, source.size + 1), np.result_type(source, init_value))
    chosen = selected.ravel() >= 0
    terms[selected.ravel()[chosen], np.arange(source.size)[chosen]] = source.ravel()[chosen]
    terms[:, -1] = init_value
    return terms


def _open(operand, source, init_value, attrs, dtype):
    """Operand elements of a window holding a NaN, and float sums that can overflow."""
    values, index = _window_taps(operand, attrs["window_dimensions"], attrs["window_strides"],
                                 attrs["padding"])
    flagged = np.zeros(operand.size, bool)
    if operand.dtype.kind in "fc":   # (a complex NaN part: StableHLO's order says nothing of it)
        nan_window = np.any(np.isnan(values) & (index >= 0), axis=-1)
        flagged[index[nan_window][index[nan_window] >= 0]] = True
    part = component_dtype(dtype) if is_complex(dtype) else dtype
    n = accumulation_length(None, attrs)
    for take in ((np.real, np.imag) if is_complex(dtype) else (np.asarray,)) \
            if part in FLOAT_FORMATS else ():   # a complex sum overflows part by part
        terms = [take(source), take(init_value)]
        magnitude = scatter_magnitude([operand, *terms], attrs)[0]
        finite = scatter_magnitude([operand, *(np.where(np.isfinite(t), t, 0) for t in terms)],
                                   attrs)[0]
        flagged |= (reaches_max_finite(finite, part, gamma_n=gamma(
            n, FLOAT_FORMATS[part].unit_roundoff)) & np.isfinite(magnitude)).ravel()
    return flagged.reshape(operand.shape)


def accumulation_length(shapes, attrs):
    """The terms summed into one output element: the init value and at most one source value
    per window holding the element, at most ``ceil(w / s)`` windows along each dimension."""
    return math.prod(-(-w // s) for w, s in zip(attrs["window_dimensions"],
                                                 attrs["window_strides"])) + 1


def scatter_magnitude(inputs, attrs):
    """The accumulation model's S: ``|init| + sum |source|`` over the windows selecting the
    element (the selection by the operand's own values, not their magnitudes)."""
    operand, source, init_value = inputs
    selected = selected_indices(operand, attrs["window_dimensions"], attrs["window_strides"],
                                attrs["padding"], attrs["select"])
    terms = np.abs(_terms(operand, source, init_value, selected))
    return (terms.sum(axis=1).reshape(operand.shape),)


def feed_select_and_scatter(inputs, attrs, index):
    """out[index]: the operand elements that can move the choice to or from it (the element
    itself, if a window holds it; every element of a window selecting it; the choice of a window holding it whose
    runner-up it is), the source values of the windows selecting it, and init."""
    operand, source, init_value = inputs
    flat = np.ravel_multi_index(tuple(index), operand.shape)
    window = [attrs[k] for k in ("window_dimensions", "window_strides", "padding")]
    selected = selected_indices(operand, *window, attrs["select"])
    taps = _window_taps(operand, *window)[1]
    rivals = set(taps[selected == flat].ravel().tolist())
    rivals |= {flat} if np.any(taps == flat) else set()
    lowest = extreme(operand.dtype, True)
    for choice in np.unique(selected[np.any(taps == flat, axis=-1) & (selected != flat)]):
        lowered = operand.copy()
        lowered.flat[choice] = lowest
        if np.any((selected == choice) & (selected_indices(lowered, *window, attrs["select"])
                                          == flat)):
            rivals.add(int(choice))
    rivals.discard(-1)
    return [operand.ravel()[sorted(rivals)], source[selected == flat], init_value.reshape(1)]


def lax_select_and_scatter(lax, attrs):
    """A jax primitive lowered to StableHLO's ``select_and_scatter`` (operand, source, init)
    with the case's window, strides and padding, a ``compare`` select region (``select``: GE or
    GT, FLOAT or SIGNED) and an ``add`` scatter region: XLA compiles the op itself."""
    import jax
    from jax.extend.core import Primitive
    from jax.extend.mlir import ir
    from jax.extend.mlir.dialects import stablehlo
    from jax.interpreters import mlir

    prim = Primitive("xla_select_and_scatter")
    prim.def_abstract_eval(lambda x, source, init: jax.core.ShapedArray(x.shape, x.dtype))

    def lower(ctx, x, source, init):
        dtype = ctx.avals_in[0].dtype
        result = stablehlo.SelectAndScatterOp(
            mlir.aval_to_ir_type(ctx.module_context, ctx.avals_out[0]), x, source, init,
            window_dimensions=list(attrs["window_dimensions"]),
            window_strides=list(attrs["window_strides"]),
            padding=ir.DenseIntElementsAttr.get(np.asarray(attrs["padding"], np.int64)))
        scalar = ir.RankedTensorType.get([], mlir.dtype_to_ir_type(dtype))
        name = np.dtype(dtype).name   # (bfloat16, int4: kind "V")
        kind = "UNSIGNED" if name.startswith(("uint", "bool")) else \
            "SIGNED" if name.startswith("int") else "FLOAT"
        block = result.select.blocks.append(scalar, scalar)
        with ir.InsertionPoint(block):
            compare = stablehlo.CompareOp(
                *block.arguments, stablehlo.ComparisonDirectionAttr.get(attrs["select"]),
                compare_type=stablehlo.ComparisonTypeAttr.get(kind))
            stablehlo.ReturnOp(compare.results)
        block = result.scatter.blocks.append(scalar, scalar)
        with ir.InsertionPoint(block):
            stablehlo.ReturnOp(stablehlo.AddOp(*block.arguments).results)
        return result.results

    mlir.register_lowering(prim, lower)
    # jitted: a primitive without an evaluation rule runs only compiled
    return jax.jit(lambda x, source, init: prim.bind(x, source, init))


def numpy_select_and_scatter(operand, source, init_value, *, window_dimensions, window_strides,
                             padding, select):
    """The numpy backend: the text's select applied tap by tap in lexicographic order (the
    current choice first), then ``np.add.at`` of the source into ``init_value``, in T."""
    values, index = _window_taps(operand, window_dimensions, window_strides, padding)
    keep = np.greater_equal if select == "GE" else np.greater
    chosen, best = np.full(index.shape[:-1], -1), values[..., 0].copy()
    for tap in range(index.shape[-1]):
        value, at = values[..., tap], index[..., tap]
        take = (at >= 0) & ((chosen < 0) | ~keep(best, value))
        chosen, best = np.where(take, at, chosen), np.where(take, value, best)
    out = np.full(operand.size, init_value, operand.dtype)
    np.add.at(out, chosen.ravel(), source.ravel())
    return out.reshape(operand.shape)


@op("select_and_scatter", version=1, draw=draw_select_and_scatter,
    draw_honours=frozenset({"scalar"}), feeding=feed_select_and_scatter,
    accumulation_length=accumulation_length, accumulation_magnitude=scatter_magnitude,
    lax=lax_select_and_scatter, numpy=numpy_select_and_scatter)
def oracle_select_and_scatter(operand, source, init_value, *, window_dimensions, window_strides,
                              padding, select, dtypes=None, open_elements=False):
    """SelectAndScatter: out[i] = init_value + sum of source[w] over the windows w selecting i
    (each window's first maximal operand element under GE, its last under GT); the sum in
    double-double for floats (complex: part by part), exactly for integers, as OR for bool
    (StableHLO add: 'For booleans: logical OR'; GE and GT order false below true, complex
    numbers lexicographically by (real, imag), StableHLO's compare)."""
    if open_elements:
        return (_open(operand, source, init_value, {
            "window_dimensions": window_dimensions, "window_strides": window_strides,
            "padding": padding, "select": select}, dtypes[0] if dtypes else "float64"),)
    selected = selected_indices(operand, window_dimensions, window_strides, padding, select)
    terms = _terms(operand, source, init_value, selected)
    total = exact_sum(terms, axis=1) if terms.dtype.kind in "fc" else \
        terms.sum(axis=1, dtype=terms.dtype)   # (bool: OR)
    return (total.reshape(operand.shape),)
