"""Reductions and windowed reductions (XLA Reduce, ReduceWindow; ONNX ReduceSum/Max/Min/Mean,
MaxPool; NNEF sum/max/min/mean_reduce, max_pool). Sums accumulate in double-double
(ops/_double_double.py) so float64 targets keep a sound reference on every platform."""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from conform.ops._double_double import accurate_sum
from conform.ops._lowering import nan_refused, unsupported
from conform.op_registry import op, region
from conform.dtypes import FLOAT_FORMATS, ML_DTYPES, complex_array, component_dtype, is_complex, np_dtype
from conform.ops.error_bounds import gamma, reaches_max_finite
from conform.widening import widen



def extreme(dtype, lowest: bool) -> np.ndarray:
    """The least (``lowest``) or greatest value of ``dtype``, as a 0-d array of it: Max's or
    Min's identity, the init value of XLA Reduce and ReduceWindow with Max or Min here. -inf or
    +inf where the type has infinities, else its least or greatest finite value (float4_e2m1fn,
    the 6-bit floats, the fn and fnuz float8 formats; float8_e8m0fnu's least is 2**-127); the
    integer minimum or maximum (2- and 4-bit too); False or True for bool (StableHLO maximum of
    booleans is logical OR); -inf - inf j or +inf + inf j for complex (StableHLO orders complex
    numbers lexicographically by (real, imag)). Self-contained: the lax lowerings call it and
    ``conform repro`` writes its source beside theirs.

    >>> extreme(np.int8, True).item(), extreme(np.float32, False).item()
    (-128, inf)
    """
    import ml_dtypes   # its iinfo and finfo know the 2- and 4-bit integers and narrow floats
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array(not lowest, dtype)
    if dtype.kind == "c":
        return np.array(complex(-np.inf, -np.inf) if lowest else complex(np.inf, np.inf), dtype)
    if dtype.name.startswith(("int", "uint")):   # (int4's kind is "V")
        info = ml_dtypes.iinfo(dtype)
        return np.array(info.min if lowest else info.max, dtype)
    if np.isinf(np.array(np.inf, dtype).astype(np.float64)):
        return np.array(-np.inf if lowest else np.inf, dtype)
    info = ml_dtypes.finfo(dtype)
    return np.array(info.min if lowest else info.max, dtype)


def oracle_identity(operand, dtypes, lowest: bool):
    """:func:`extreme` of the case's operand type (``dtypes[0]``, else ``operand``'s), widened
    as the oracle sees its inputs."""
    return widen(extreme(np_dtype(dtypes[0]) if dtypes else operand.dtype, lowest))


def exact_sum(x: np.ndarray, axis) -> np.ndarray:
    """The double-double sum of float64 or complex128 ``x`` over ``axis``: a complex sum is
    the sums of its parts (StableHLO add: 'For complex numbers: complex addition')."""
    if x.dtype.kind != "c":
        return accurate_sum(x, axis=axis)
    return complex_array(accurate_sum(x.real, axis=axis), accurate_sum(x.imag, axis=axis))


@region
def complex_accumulation_overflow(ctx) -> np.ndarray:
    """Complex sums one of whose parts' finite terms, in magnitude, times ``1 + gamma_n`` reach
    the component type's largest finite value: some orders of the additions overflow that part
    and others do not (``accumulation_overflow`` of each part). Empty for other types."""
    if not is_complex(ctx.out_dtype):
        return ctx.none()
    part = component_dtype(ctx.out_dtype)
    grown = gamma(ctx.accumulation_length or 1, FLOAT_FORMATS[part].unit_roundoff)
    mask = ctx.none()
    for take in (np.real, np.imag):
        terms = [np.abs(np.where(np.isfinite(take(x)), take(x), 0.0)).astype(np.float64)
                 for x in ctx.inputs]
        with np.errstate(over="ignore", invalid="ignore"):
            mask = mask | reaches_max_finite(ctx.float_oracle(terms), part, gamma_n=grown)
    return mask


def nan_parts(x: np.ndarray) -> np.ndarray:
    """Where a complex element has a NaN part; False everywhere in any other type. StableHLO
    orders complex numbers lexicographically by (real, imag) (docs/spec.md, maximum: 'For
    complex numbers: lexicographic maximum for the (real, imaginary) pair'; compare:
    'lexicographic comparison of (real, imag) pairs') and says nothing of a NaN part: which
    element a max, min, sort or top-k over such an element picks is open (the region
    ``oracle_marked`` of these ops, with their oracles' ``open_elements``).

    >>> nan_parts(np.array([1 + 1j, complex(1, np.nan)])).tolist(), nan_parts(np.ones(1)).tolist()
    ([False, True], [False])
    """
    return np.isnan(x) if x.dtype.kind == "c" else np.zeros(x.shape, bool)


# --- Reduce over a set of dimensions ----------------------------------------------------------

def draw_reduce(draw, kit, spec, dtype):
    """A non-empty, sorted set of reduced dimensions."""
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=8))
    dims = draw(kit.st.sets(kit.st.integers(0, len(shape) - 1), min_size=1))
    return kit.Signature((dtype,), (shape,), {"dimensions": sorted(dims)}, dtype)


def feed_reduce(inputs, attrs, index):
    """The slice of the operand reduced into out[index]."""
    (operand,) = inputs
    reduced = set(attrs["dimensions"])
    kept = iter(index)
    at = tuple(slice(None) if axis in reduced else next(kept) for axis in range(operand.ndim))
    return [operand[at].ravel()]


def reduced_count(shapes, attrs):
    """The number of elements reduced into one output element."""
    return math.prod(shapes[0][d] for d in attrs["dimensions"])


def onnx_reduce(case, graph):
    axes = graph.const("axes", case.attrs["dimensions"])
    graph.node(graph.op_type, [graph.inputs[0], axes], keepdims=0)


def nnef_reduce(case, call):
    dims = case.attrs["dimensions"]
    kept = tuple(s for i, s in enumerate(case.inputs[0].shape) if i not in dims)
    return call(["in0"], {"axes": list(dims)}, output_shape=kept)


def lax_reduce_sum(lax, attrs):
    return lambda x: lax.reduce(x, np.array(0, x.dtype), lax.add, attrs["dimensions"])


def lax_reduce_max(lax, attrs):
    def reduce_max(x):
        return lax.reduce(x, extreme(x.dtype, True), lax.max, attrs["dimensions"])
    return reduce_max


def lax_reduce_min(lax, attrs):
    def reduce_min(x):
        return lax.reduce(x, extreme(x.dtype, False), lax.min, attrs["dimensions"])
    return reduce_min


def numpy_reduce_sum(operand, *, dimensions):
    return (np.sum(operand, axis=tuple(dimensions), dtype=operand.dtype),)


#: Why an NNEF max or min says nothing of NaN.
_NNEF_REALS = "NNEF 1.0 says nothing of NaN in max and min"
_REDUCE = dict(draw=draw_reduce, feeding=feed_reduce, onnx=onnx_reduce, nnef=nnef_reduce)


@op("reduce_sum", version=1, accumulation_length=reduced_count, lax=lax_reduce_sum,
    numpy=numpy_reduce_sum, **_REDUCE)
def oracle_reduce_sum(operand, *, dimensions):
    """Reduce with Add over ``dimensions`` (init 0); on bool StableHLO's add (docs/spec.md,
    add: 'For booleans: logical OR'), as NumPy adds bools; complex part by part."""
    if operand.dtype.kind in "fc":
        return (exact_sum(operand, axis=tuple(dimensions)),)
    return (np.sum(operand, axis=tuple(dimensions), dtype=operand.dtype),)   # bool: OR


def numpy_reduce_max(operand, *, dimensions):
    """The numpy backend: ``np.max`` with XLA's init value (-inf, or the integer minimum)."""
    return np.max(operand, axis=tuple(dimensions), initial=extreme(operand.dtype, True))


@op("reduce_max", numpy=numpy_reduce_max, version=1, lax=lax_reduce_max,
    nnef_refuses=nan_refused("NNEF max_reduce", _NNEF_REALS), **_REDUCE)
def oracle_reduce_max(operand, *, dimensions, dtypes=None, open_elements=False):
    """Reduce with Max over ``dimensions`` (init: :func:`extreme`, the type's least value);
    NaN propagates; complex numbers in StableHLO's lexicographic order (``open_elements``:
    :func:`nan_parts` in the slice)."""
    if open_elements:
        return (np.any(nan_parts(operand), axis=tuple(dimensions)),)
    return (np.max(operand, axis=tuple(dimensions), initial=oracle_identity(operand, dtypes, True)),)


def numpy_reduce_min(operand, *, dimensions):
    """The numpy backend: ``np.min`` with XLA's init value (+inf, or the integer maximum)."""
    return np.min(operand, axis=tuple(dimensions), initial=extreme(operand.dtype, False))


@op("reduce_min", numpy=numpy_reduce_min, version=1, lax=lax_reduce_min,
    nnef_refuses=nan_refused("NNEF min_reduce", _NNEF_REALS), **_REDUCE)
def oracle_reduce_min(operand, *, dimensions, dtypes=None, open_elements=False):
    """Reduce with Min over ``dimensions`` (init: :func:`extreme`, the type's greatest value);
    NaN propagates; complex numbers as in :func:`oracle_reduce_max`."""
    if open_elements:
        return (np.any(nan_parts(operand), axis=tuple(dimensions)),)
    return (np.min(operand, axis=tuple(dimensions), initial=oracle_identity(operand, dtypes, False)),)


@op("reduce_mean", version=1, accumulation_length=reduced_count, **_REDUCE)
def oracle_reduce_mean(operand, *, dimensions):
    """The sum over ``dimensions`` divided by the number of reduced elements (NNEF mean_reduce =
    sum_reduce with normalize = true; ONNX ReduceMean), accumulated in double-double."""
    count = int(np.prod([operand.shape[d] for d in dimensions], dtype=np.int64))
    if count == 0:
        return (np.sum(operand, axis=tuple(dimensions)) / count,)   # 0 / 0: NaN
    return (accurate_sum(operand, axis=tuple(dimensions), divisor=count),)


# --- ReduceWindow with Max and with Add ----------------------------------------------------------
# Window placement (the ReduceWindow section; base and window dilation, which it lists without
# defining, as StableHLO's reduce_window defines them): the operand is dilated by base_dilation
# (base_dilation - 1 holes between neighbours), padded (low, high) per dimension, holes and
# padding holding the init value; a window of window_dimensions taps spaced window_dilation
# apart starts every window_strides elements of that padded operand, as long as it fits.

def draw_reduce_window(draw, kit, spec, dtype):
    """Window dimensions, strides, explicit (low, high) padding and base and window dilations
    per dimension.

    Half the signatures are pooling-shaped: rank 3 or 4 with a window of 1, stride 1, no
    padding and no dilation on the first two dimensions (batch and channels), and no base
    dilation, the only windows ONNX MaxPool expresses; drawn freely, hardly any window is."""
    st = kit.st
    pooling = draw(st.booleans())
    shape = draw(kit.shape(min_rank=3 if pooling else 1, max_rank=4, max_side=7))
    window, strides, padding, base, spacing = [], [], [], [], []
    for axis, size in enumerate(shape):
        if pooling and axis < 2:
            window.append(1)
            strides.append(1)
            padding.append([0, 0])
            base.append(1)
            spacing.append(1)
            continue
        b = 1 if pooling else draw(st.integers(1, 2))
        d = draw(st.integers(1, 2))
        dilated = (size - 1) * b + 1
        w = draw(st.integers(1, min(dilated + 1, 3)))
        low, high = draw(st.integers(0, w - 1)), draw(st.integers(0, w - 1))
        w = max(1, min(w, (dilated + low + high - 1) // d + 1))   # the window fits once
        window.append(w)
        strides.append(draw(st.integers(1, 2)))
        padding.append([low, high])
        base.append(b)
        spacing.append(d)
    attrs = {"window_dimensions": window, "window_strides": strides, "padding": padding,
             "base_dilation": base, "window_dilation": spacing}
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def dilated_taps(index, size, stride, window, low, base, spacing):
    """The operand positions the taps of window ``index`` read along one dimension (padding and
    base-dilation holes left out)."""
    dilated = np.arange(window) * spacing + index * stride - low
    inside = (dilated >= 0) & (dilated <= (size - 1) * base) & (dilated % base == 0)
    return dilated[inside] // base


def _dilations(attrs, rank):
    return (attrs.get("base_dilation") or [1] * rank, attrs.get("window_dilation") or [1] * rank)


def feed_reduce_window(inputs, attrs, index):
    """The window of the operand (padding and holes left out) reduced into out[index]."""
    (operand,) = inputs
    base, spacing = _dilations(attrs, operand.ndim)
    spans = [dilated_taps(*args) for args in zip(index, operand.shape, attrs["window_strides"],
                                          attrs["window_dimensions"],
                                          [p[0] for p in attrs["padding"]], base, spacing)]
    return [operand[np.ix_(*spans)].ravel()]


def window_size(shapes, attrs):
    """The taps of one window: at most that many terms are summed into one output element."""
    return math.prod(attrs["window_dimensions"])


def reduce_windows(operand, init, window_dimensions, window_strides, padding, base_dilation=None,
                   window_dilation=None):
    """Every window of ``operand`` as an array ``(outputs..., taps...)``, padding and holes
    holding ``init``."""
    base, spacing = _dilations({"base_dilation": base_dilation,
                                "window_dilation": window_dilation}, operand.ndim)
    dilated = [(n - 1) * b + 1 if n else 0 for n, b in zip(operand.shape, base)]
    padded = np.full([d + lo + hi for d, (lo, hi) in zip(dilated, padding)], init, operand.dtype)
    padded[tuple(slice(lo, lo + d, b) for d, (lo, _), b in zip(dilated, padding, base))] = operand
    reach = tuple((w - 1) * d + 1 for w, d in zip(window_dimensions, spacing))
    short = [max(r - n, 0) for r, n in zip(reach, padded.shape)]   # no valid position there
    if any(short):
        padded = np.pad(padded, [(0, gap) for gap in short], constant_values=init)
    stored = padded.dtype   # ml_dtypes' types strided as bytes: as_strided refuses float8_e5m2
    if stored.name in ML_DTYPES:
        padded = padded.view(f"u{stored.itemsize}")
    windows = sliding_window_view(padded, reach, axis=tuple(range(operand.ndim))).view(stored)
    windows = windows[tuple(slice(None, None, s) for s in window_strides)
                      + tuple(slice(None, None, d) for d in spacing)]
    return windows[tuple(slice(0, 0) if gap else slice(None) for gap in short)]


def onnx_max_pool(case, graph):
    window, strides = case.attrs["window_dimensions"], case.attrs["window_strides"]
    padding = case.attrs["padding"]
    base, spacing = _dilations(case.attrs, len(window))
    if len(window) < 3 or any(window[i] != 1 or strides[i] != 1 or padding[i] != [0, 0]
                              or spacing[i] != 1 for i in (0, 1)):
        raise unsupported("ONNX MaxPool windows only the spatial dimensions of an N, C, ... tensor")
    if any(b != 1 for b in base):
        raise unsupported("ONNX MaxPool has no base (input) dilation")
    graph.node(graph.op_type, graph.inputs, kernel_shape=window[2:], strides=strides[2:],
               pads=[p[0] for p in padding[2:]] + [p[1] for p in padding[2:]],
               dilations=spacing[2:])


def nnef_max_pool(case, call):
    base, spacing = _dilations(case.attrs, len(case.attrs["window_dimensions"]))
    if any(b != 1 for b in base):
        raise unsupported("NNEF max_pool has no base (input) dilation")
    attrs = {"size": case.attrs["window_dimensions"],
             "padding": [tuple(int(p) for p in pair[:2]) for pair in case.attrs["padding"]],
             "stride": case.attrs["window_strides"], "dilation": list(spacing)}
    return call(["in0"], attrs)


def lax_reduce_window_max(lax, attrs):
    def reduce_window_max(x):
        return lax.reduce_window(x, extreme(x.dtype, True), lax.max,
                                 attrs["window_dimensions"],
                                 attrs["window_strides"], [tuple(p) for p in attrs["padding"]],
                                 attrs.get("base_dilation"), attrs.get("window_dilation"))
    return reduce_window_max


def lax_reduce_window_sum(lax, attrs):
    def reduce_window_sum(x):
        return lax.reduce_window(x, np.array(0, x.dtype), lax.add, attrs["window_dimensions"],
                                 attrs["window_strides"], [tuple(p) for p in attrs["padding"]],
                                 attrs.get("base_dilation"), attrs.get("window_dilation"))
    return reduce_window_sum


#: (size, padding, stride) of the last dimension of a 1 x 2 x size operand under a 3-tap window
#: of dilation 2 (5 elements) at the edges of 'as many elements as there are valid positions of
#: the window': exactly one, one element too few (none), and a stride past the last element.
REDUCE_WINDOW_BOUNDARIES = ((3, [1, 1], 2), (3, [1, 0], 2), (4, [0, 0], 1), (6, [0, 0], 2),
                            (5, [0, 0], 3))


def boundaries_reduce_window(kit, spec, dtype):
    """The rows of :data:`REDUCE_WINDOW_BOUNDARIES`, pooling-shaped (ONNX MaxPool's windows)."""
    return [kit.Signature((dtype,), ((1, 2, size),), {
        "window_dimensions": [1, 1, 3], "window_strides": [1, 1, stride],
        "padding": [[0, 0], [0, 0], list(pad)], "base_dilation": [1, 1, 1],
        "window_dilation": [1, 1, 2]}, dtype) for size, pad, stride in REDUCE_WINDOW_BOUNDARIES]


_WINDOW = dict(draw=draw_reduce_window, feeding=feed_reduce_window,
               boundaries=boundaries_reduce_window)


def numpy_reduce_window_max(operand, *, window_dimensions, window_strides, padding,
                            base_dilation=None, window_dilation=None):
    """The numpy backend: ``np.max`` over ``sliding_window_view`` windows of the padded operand
    (:func:`reduce_windows`), the init value in the operand's type."""
    windows = reduce_windows(operand, extreme(operand.dtype, True), window_dimensions, window_strides, padding,
                             base_dilation, window_dilation)
    return np.max(windows, axis=tuple(range(operand.ndim, 2 * operand.ndim)))


@op("reduce_window_max", numpy=numpy_reduce_window_max, version=1, onnx=onnx_max_pool, nnef=nnef_max_pool,
    onnx_refuses=nan_refused("ONNX MaxPool", "region nan_in_window of onnx_max_pool"),
    nnef_refuses=nan_refused("NNEF max_pool", _NNEF_REALS), lax=lax_reduce_window_max, **_WINDOW)
def oracle_reduce_window_max(operand, *, window_dimensions, window_strides, padding,
                             base_dilation=None, window_dilation=None, dtypes=None,
                             open_elements=False):
    """ReduceWindow with Max; padding and holes take the init value (:func:`extreme`, the
    type's least value: a window of padding and holes only gives it); complex numbers as in
    :func:`oracle_reduce_max` (``open_elements``: a window holding :func:`nan_parts`)."""
    axes = tuple(range(operand.ndim, 2 * operand.ndim))
    if open_elements:
        return (np.any(reduce_windows(nan_parts(operand), False, window_dimensions,
                                      window_strides, padding, base_dilation, window_dilation),
                       axis=axes),)
    windows = reduce_windows(operand, oracle_identity(operand, dtypes, True), window_dimensions,
                             window_strides, padding, base_dilation, window_dilation)
    return (np.max(windows, axis=axes),)


def numpy_reduce_window_sum(operand, *, window_dimensions, window_strides, padding,
                            base_dilation=None, window_dilation=None):
    """The numpy backend: ``np.sum`` in the operand's type over ``sliding_window_view``
    windows of the padded operand (:func:`reduce_windows`)."""
    windows = reduce_windows(operand, operand.dtype.type(0), window_dimensions, window_strides,
                             padding, base_dilation, window_dilation)
    return np.sum(windows, axis=tuple(range(operand.ndim, 2 * operand.ndim)), dtype=operand.dtype)


@op("reduce_window_sum", numpy=numpy_reduce_window_sum, version=1, accumulation_length=window_size,
    lax=lax_reduce_window_sum, **_WINDOW)
def oracle_reduce_window_sum(operand, *, window_dimensions, window_strides, padding,
                             base_dilation=None, window_dilation=None):
    """ReduceWindow with Add (init 0): each window's sum, padding and holes adding 0; floats
    (complex: part by part) accumulate in double-double, integers exactly, bool by StableHLO's add (logical OR)."""
    windows = reduce_windows(operand, 0, window_dimensions, window_strides, padding, base_dilation,
                             window_dilation)
    axes = tuple(range(operand.ndim, 2 * operand.ndim))
    if operand.dtype.kind in "fc":
        return (exact_sum(windows, axis=axes),)
    return (np.sum(windows, axis=axes, dtype=windows.dtype),)   # bool: OR, as NumPy adds bools
