"""ONNX LpNormalization (p = 1 or 2, opset 1 and 22), MeanVarianceNormalization (opset 13)
and LRN (opset 13). The oracles compute each text's formula in float64 from exact sums
(ops/_exact.py); the error bounds (``error_bound`` hooks, the ``derived`` model) follow the
evaluation each text defines, in the input's type T:

* LpNormalization: the norm (a sum of |x| or of x*x in any order, then sqrt), a division.
* MeanVarianceNormalization: the doc's ``(X - EX) / sqrt(E(X - EX)^2)`` and its function
  body's one-pass ``(X - EX) / (sqrt(E(X^2) - EX^2) + 1e-9)``: the bound admits both (the
  standardisation's figures are ops/onnx_normalization.py's).
* LRN: a windowed sum of squares, ``bias + alpha / size * square_sum``, its power ``beta``, a
  division.

Where the text's evaluation bounds nothing (its sums overflow T, a variance is 0 so that the
two readings give 0 and NaN) the bound is NaN: the ``unbounded_evaluation`` region."""
from __future__ import annotations

import math

import numpy as np
from conform.ops._exact import compensated_sum, two_product
from conform.ops.onnx_normalization import _judged_where, _stage_one_bound, standardized
from conform.ops.onnx_softmax import _together, draw_along_axis, grown

from conform.dtypes import FLOAT_FORMATS
from conform.model_formats import Unsupported
from conform.op_registry import op


def _float32(value: float) -> float:
    """A float attribute as ONNX stores it (float32)."""
    return float(np.float32(value))


def _exact_sum(values: np.ndarray, axes: tuple) -> np.ndarray:
    """The sum over ``axes`` (kept, size 1), compensated: the correctly rounded float64 sum."""
    return np.expand_dims(compensated_sum(values, list(axes)), axes)


def _squares(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x**2 = squares + errors exactly (errors 0 where the square is not finite)."""
    with np.errstate(invalid="ignore", over="ignore"):
        squares, errors = two_product(x, x)
    return squares, np.where(np.isfinite(squares), errors, 0.0)


def _sum_of_squares(x: np.ndarray, axes: tuple) -> np.ndarray:
    squares, errors = _squares(x)
    return _exact_sum(squares, axes) + _exact_sum(errors, axes)


# -- LpNormalization ------------------------------------------------------------------------------

def _lp_norm(x: np.ndarray, axis: int, p: int) -> np.ndarray:
    axes = (axis % x.ndim,)
    with np.errstate(invalid="ignore", over="ignore"):
        if p == 1:
            return _exact_sum(np.abs(x), axes)
        return np.sqrt(_sum_of_squares(x, axes))


@op("onnx_lp_normalization", version=1, draw=draw_along_axis,
    draw_honours=frozenset({"min_rank", "max_rank", "attrs"}),
    feeding=lambda inputs, attrs, index: [_together(inputs[0], (attrs["axis"] % inputs[0].ndim,),
                                                    index)],
    numpy=lambda x, *, axis, p: numpy_lp_normalization(x, axis=axis, p=p),
    onnx=lambda case, graph: graph.node(graph.op_type, graph.inputs, **case.attrs),
    error_bound=lambda inputs, attrs, outputs, *, out_dtype, **_: lp_bound(
        inputs[0], attrs, outputs[0], out_dtype))
def oracle_onnx_lp_normalization(x, *, axis, p):
    """LpNormalization: 'output = input / Lp_norm(input, axis)' (p = 1: sum |x|; p = 2:
    sqrt(sum x**2)); 'When the Lp norm is zero ... the output is defined to be zero'."""
    norm = _lp_norm(x, axis, p)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.where(norm == 0, 0.0, x / np.where(norm == 0, 1.0, norm)),)


def lp_bound(x, attrs, expected, dtype: str) -> tuple:
    """Per element: the norm evaluated in T has relative error ``e``: p = 1, gamma_(n-1) (a sum
    of non-negative terms in any order, Higham 2002 §4.2); p = 2, the sum of squares' gamma_n
    plus ``n eta / s`` for squares below the smallest normal, halved by sqrt, plus sqrt's
    rounding. The division adds one rounding: ``|y| ((1 + u) / (1 - e) - 1)``, plus half a
    subnormal for a subnormal result. NaN where the sum overflows T or (p = 2) is below its
    smallest normal and not 0."""
    fmt = FLOAT_FORMATS[dtype]
    u, tiny, big = fmt.unit_roundoff, fmt.min_subnormal, fmt.max_finite
    axes = (attrs["axis"] % x.ndim,)
    n = x.shape[axes[0]]
    finite = np.where(np.isfinite(x), x, 0.0)
    with np.errstate(all="ignore"):
        if attrs["p"] == 1:
            total = _exact_sum(np.abs(finite), axes)
            e = grown(max(n - 1, 0), u)
            out_of_range = total * (1 + grown(n, u)) >= big
        else:
            total = _sum_of_squares(finite, axes)
            e_sum = grown(n, u) + n * tiny / 2 / np.where(total > 0, total, 1.0)
            e = e_sum / 2 + u * (1 + e_sum)
            out_of_range = (total * (1 + grown(n, u)) >= big) | ((total > 0) & (total < fmt.min_normal))
        bound = np.abs(expected) * ((1 + u) / (1 - e) - 1) + tiny / 2
        unbounded = out_of_range & np.all(np.isfinite(x), axis=axes, keepdims=True)
    return (_judged_where(np.where(total == 0, 0.0, bound), expected, unbounded),)


def numpy_lp_normalization(x, *, axis, p):
    """The numpy backend: the norm and the division in x's type (0 where the norm is 0)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if p == 1:
            norm = np.sum(np.abs(x), axis=axis, keepdims=True, dtype=x.dtype)
        else:
            norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=True, dtype=x.dtype))
        return np.where(norm == 0, x.dtype.type(0), x / np.where(norm == 0, 1, norm).astype(x.dtype))


# -- MeanVarianceNormalization --------------------------------------------------------------------

#: The function body's Epsilon: Constant <value: tensor = float {1e-09}>, a float32.
MVN_EPSILON = _float32(1e-9)
MVN_DEFAULT_AXES = (0, 2, 3)


def _mvn_axes(x, axes) -> tuple:
    return tuple(sorted(a % x.ndim for a in (MVN_DEFAULT_AXES if axes is None else axes)))


def draw_mvn(draw, kit, spec, dtype):
    """X of rank 1 to 4 (rank 4 with the default axes [0, 2, 3] a quarter of the time), and
    ``axes`` some of its axes (negative or not)."""
    st = kit.st
    if draw(st.integers(0, 3)) == 0:
        shape = draw(kit.shape(min_rank=4, max_rank=4, max_side=4))
        return kit.Signature((dtype,), (shape,), {}, dtype)
    low, high = kit.ranks(spec, default_min=1)
    shape = draw(kit.shape(min_rank=max(low, 1), max_rank=high, max_side=6))
    return kit.Signature((dtype,), (shape,), kit.attributes(draw, spec, {"x": len(shape)}), dtype)


def feed_mvn(inputs, attrs, index):
    """The values standardised together with Y[index] (none where it is alone: its deviation
    from its own mean is 0, whatever it is)."""
    x = inputs[0]
    together = _together(x, _mvn_axes(x, attrs.get("axes")), index)
    return [together if together.size > 1 else together[:0]]


def mvn_bound(x, attrs, expected, dtype: str) -> tuple:
    """The standardisation's bound in T (one-pass or two-pass variance, sqrt, division:
    ``_stage_one_bound`` with no epsilon), plus the Add of epsilon's rounding and the two
    readings' difference ``|z| eps / (sqrt(var) + eps)``; NaN (unbounded) where the variance
    is 0 (the doc's 0/0 against the body's 0) or the evaluation overflows T."""
    if x.size == 0:
        return (np.zeros(np.shape(expected)),)
    u = FLOAT_FORMATS[dtype].unit_roundoff
    axes = _mvn_axes(x, attrs.get("axes"))
    one = _stage_one_bound(x, axes, 0.0, dtype, 0)
    _, d, _ = standardized(x, axes, 0.0)
    with np.errstate(all="ignore"):
        std = np.sqrt(np.mean(d * d, axis=axes, keepdims=True))
        readings = np.abs(one.z) * MVN_EPSILON / (std + MVN_EPSILON)
        bound = one.z_error * (1 + u) + np.abs(one.z) * 2 * u + readings
    return (_judged_where(bound, expected, one.unbounded),)


def numpy_mvn(x, *, axes=None):
    """The numpy backend: the function body in x's type (one-pass variance, epsilon added to
    the standard deviation)."""
    axes = _mvn_axes(x, axes)
    with np.errstate(invalid="ignore", over="ignore"):
        mean = np.mean(x, axis=axes, keepdims=True, dtype=x.dtype)
        variance = np.mean(x * x, axis=axes, keepdims=True, dtype=x.dtype) - mean * mean
        return (x - mean) / (np.sqrt(variance) + x.dtype.type(MVN_EPSILON))


def onnx_mvn(case, graph):
    """One MeanVarianceNormalization node with its axes written out; for T other than float32
    the onnx package's checker refuses the model: the function body adds its float32 Epsilon
    constant to a T value ('B has inconsistent type tensor(float)'), so no valid model can be
    emitted."""
    if case.dtype != "float32":
        raise Unsupported(f"onnx's checker refuses MeanVarianceNormalization of {case.dtype}: "
                          "its function body adds a float32 Epsilon to a T value")
    # the body's Constant <value_ints = @axes> has no value where axes is left out: the checker
    # refuses that model too, so the default [0, 2, 3] is written out (the same operator)
    graph.node(graph.op_type, graph.inputs, axes=list(case.attrs.get("axes", MVN_DEFAULT_AXES)))


@op("onnx_mean_variance_normalization", version=1, draw=draw_mvn,
    draw_honours=frozenset({"min_rank", "attrs"}), feeding=feed_mvn, numpy=numpy_mvn,
    onnx=onnx_mvn,
    error_bound=lambda inputs, attrs, outputs, *, out_dtype, **_: mvn_bound(
        inputs[0], attrs, outputs[0], out_dtype))
def oracle_onnx_mean_variance_normalization(x, *, axes=None):
    """MeanVarianceNormalization-13: (X - EX) / (sqrt(E(X - EX)^2) + 1e-9) over ``axes``
    (default [0, 2, 3]); the function body's epsilon, which the doc's formula leaves out (the
    bound admits both)."""
    if x.size == 0:
        return (x.copy(),)
    _, d, _ = standardized(x, _mvn_axes(x, axes), 0.0)
    with np.errstate(invalid="ignore"):
        std = np.sqrt(np.mean(d * d, axis=_mvn_axes(x, axes), keepdims=True))
        return (d / (std + MVN_EPSILON),)


# -- LRN ------------------------------------------------------------------------------------------

def _window(c: int, size: int, channels: int) -> tuple[int, int]:
    """The channels summed for channel ``c``: from max(0, c - floor((size - 1) / 2)) to
    min(C - 1, c + ceil((size - 1) / 2)), both included."""
    return max(0, c - (size - 1) // 2), min(channels - 1, c + math.ceil((size - 1) / 2))


def _square_sum(x: np.ndarray, size: int) -> np.ndarray:
    """Per element, the sum of the squares over its channel window (exactly rounded)."""
    channels = x.shape[1]
    squares, errors = _squares(x)
    sums = []
    for c in range(channels):
        lo, hi = _window(c, size, channels)
        sums.append(_exact_sum(squares[:, lo:hi + 1], (1,)) + _exact_sum(errors[:, lo:hi + 1], (1,)))
    return np.concatenate(sums, axis=1) if sums else np.zeros(x.shape)


def draw_lrn(draw, kit, spec, dtype):
    """X (N, C, D1, ...) of rank 3 to 5 and the spec's size, alpha, beta and bias."""
    st = kit.st
    rank = draw(st.integers(3, 5))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 7))) + draw(
        kit.shape(min_rank=rank - 2, max_rank=rank - 2, max_side=3))
    return kit.Signature((dtype,), (shape,), kit.attributes(draw, spec, {"x": rank}), dtype)


def feed_lrn(inputs, attrs, index):
    """Y[index]: the element and the others of its channel window (at the same position)."""
    x = inputs[0]
    lo, hi = _window(index[1], attrs["size"], x.shape[1])
    return [x[(index[0], slice(lo, hi + 1)) + tuple(index[2:])]]


def lrn_bound(x, attrs, expected, dtype: str, pow_ulp: float) -> tuple:
    """``t = bias + alpha / size * square_sum`` in T: at most size squares and additions of
    non-negative terms, alpha / size, the product and the addition of bias: relative error
    ``g = gamma_(size + 3)`` (plus ``size eta`` absolute for squares below the smallest normal);
    ``t**beta`` within ``(1 - g)**-|beta| - 1`` from it and ``pow_ulp`` ULP (2 pow_ulp u) of its
    own; the division one rounding. NaN where a square sum or the power overflows T (the
    result, x over a huge power, may be finite and small)."""
    fmt = FLOAT_FORMATS[dtype]
    u, tiny = fmt.unit_roundoff, fmt.min_subnormal
    size, alpha = attrs["size"], _float32(attrs["alpha"])
    bias, beta = _float32(attrs["bias"]), _float32(attrs["beta"])
    with np.errstate(all="ignore"):
        finite = np.where(np.isfinite(x), x, 0.0)
        square_sum = _square_sum(finite, size)
        t = bias + alpha / size * square_sum
        g = grown(size + 3, u) + alpha / size * size * tiny / 2 / np.abs(t)
        powered = (1 - g) ** -abs(beta) * (1 + 2 * pow_ulp * u) - 1
        bound = np.abs(expected) * ((1 + u) / (1 - powered) - 1) + tiny / 2
        overflows = (square_sum * (1 + grown(size, u)) >= fmt.max_finite) \
            | (t ** abs(beta) * (1 + powered) >= fmt.max_finite)
        unbounded = np.isfinite(x) & (overflows | ~(powered < 1) | ~(np.abs(t) >= fmt.min_normal))
    return (_judged_where(bound, expected, unbounded),)


def numpy_lrn(x, *, size, alpha, beta, bias):
    """The numpy backend: the text's formula in x's type."""
    t = lambda value: x.dtype.type(np.float32(value))
    square_sum = np.zeros_like(x)
    for c in range(x.shape[1]):
        lo, hi = _window(c, size, x.shape[1])
        square_sum[:, c] = np.sum(x[:, lo:hi + 1] ** 2, axis=1, dtype=x.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return x / (t(bias) + t(alpha) / x.dtype.type(size) * square_sum) ** t(beta)


@op("onnx_lrn", version=1, draw=draw_lrn, draw_honours=frozenset({"attrs"}), feeding=feed_lrn,
    numpy=numpy_lrn,
    onnx=lambda case, graph: graph.node(graph.op_type, graph.inputs, **case.attrs),
    error_bound=lambda inputs, attrs, outputs, *, out_dtype, constants, **_: lrn_bound(
        inputs[0], attrs, outputs[0], out_dtype, constants["pow_ulp"]))
def oracle_onnx_lrn(x, *, size, alpha, beta, bias):
    """LRN-13: Y = X / (bias + alpha / size * square_sum) ** beta, square_sum the sum of X**2
    over the channels max(0, c - floor((size - 1) / 2)) to min(C - 1, c + ceil((size - 1) / 2))
    at the same position (alpha, beta, bias float32 attributes)."""
    with np.errstate(over="ignore", invalid="ignore"):
        square_sum = _square_sum(x, size)
        t = _float32(bias) + _float32(alpha) / size * square_sum
        return (x / t ** _float32(beta),)


# -- RMSNormalization (opset 23) ------------------------------------------------------------------

#: stash_type (an ONNX element type) -> the type stage one is computed in
_STASH = {1: "float32"}


def draw_rms_norm(draw, kit, spec, dtype):
    """X of rank 1 to 4 (the last side stretched up to 32 at times), the spec's axis, epsilon
    and stash_type, and scale shaped as X's normalised dimensions."""
    low, high = kit.ranks(spec, default_min=1)
    shape = list(draw(kit.shape(min_rank=max(low, 1), max_rank=high)))
    if draw(kit.st.booleans()):
        shape[-1] = draw(kit.st.integers(shape[-1], max(shape[-1], min(
            32, kit.MAX_ARRAY_SIZE // max(math.prod(shape[:-1]), 1)))))
    attrs = kit.attributes(draw, spec, {"x": len(shape)})
    normalised = tuple(shape[attrs["axis"] % len(shape):])
    return kit.Signature((dtype, dtype), (tuple(shape), normalised), attrs, dtype)


def _rms_axes(x, axis: int) -> tuple:
    return tuple(range(axis % x.ndim, x.ndim))


def feed_rms_norm(inputs, attrs, index):
    """Y[index]: the values normalised with it and its scale element."""
    x, scale = inputs
    axis = attrs["axis"] % x.ndim
    return [x[tuple(index[:axis])].ravel(), scale[tuple(index[axis:])].reshape(1)]


def rms_bound(x, scale, attrs, expected, dtype: str) -> tuple:
    """Stage one in the stash type s (X cast into it where T is wider: u_s each): n squares,
    n - 1 additions, the scaling by 1/n and the Add of epsilon, all non-negative, relative
    ``g = gamma_(n + 2 + 2 cast)`` (plus n eta for squares below the smallest normal); sqrt
    halves it and adds a rounding, the division another (and the cast of X): Normalized off by
    ``|z| ((1 + gamma_(2 + cast)) / (1 - g') - 1)``. Stage two (the cast to T, Mul by scale in
    T): ops/onnx_normalization.py's ``_stage_two_bound``. NaN where a square sum overflows
    the stash type, X does not fit it, the error reaches mean(x**2) + epsilon, or a Normalized
    value below the smallest normal meets an infinite scale (rounded to 0, it gives NaN)."""
    from conform.ops.onnx_normalization import _stage_two_bound

    stash = FLOAT_FORMATS[_STASH[attrs["stash_type"]]]
    u, tiny = stash.unit_roundoff, stash.min_subnormal
    cast = int(FLOAT_FORMATS[dtype].unit_roundoff < u)
    axes = _rms_axes(x, attrs["axis"])
    n = math.prod(x.shape[a] for a in axes)
    epsilon = _float32(attrs["epsilon"])
    with np.errstate(all="ignore"):
        finite = np.where(np.isfinite(x), x, 0.0)
        total = _sum_of_squares(finite, axes) / n + epsilon
        relative = grown(n + 2 + 2 * cast, u) + n * tiny / np.where(total > 0, total, 1.0)
        sqrt_relative = relative / (1 + np.sqrt(np.maximum(1 - relative, 0.0)))
        z = x / np.sqrt(total)
        z_error = np.abs(z) * ((1 + grown(2 + cast, u)) / (1 - sqrt_relative) - 1) + tiny
        misfit = np.abs(finite) > stash.max_finite   # X cast to the stash type overflows
        unbounded = ((total * n * (1 + grown(n, u)) >= stash.max_finite) | ~(relative < 1)
                     | np.any(misfit, axis=axes, keepdims=True))
        y_error = _stage_two_bound(z, z_error, scale, None, dtype, u)
        # an infinite scale times a Normalized value rounded to 0 gives NaN, not +-inf
        smallest = max(stash.min_normal, FLOAT_FORMATS[dtype].min_normal)
        misfit = misfit | (np.isinf(scale) & (z != 0) & (np.abs(z) < smallest))
    finite_slices = np.all(np.isfinite(x), axis=axes, keepdims=True)
    return (_judged_where(y_error, expected, (unbounded & finite_slices) | misfit),)


def numpy_rms_norm(x, scale, *, axis, epsilon, stash_type):
    """The numpy backend: stage one in the stash type, cast to T, then Mul by scale in T."""
    stash = np.dtype(_STASH[stash_type])
    xs = x.astype(stash)
    with np.errstate(all="ignore"):
        mean = np.mean(xs * xs, axis=_rms_axes(x, axis), keepdims=True, dtype=stash)
        return (xs / np.sqrt(mean + stash.type(epsilon))).astype(x.dtype) * scale


@op("onnx_rms_normalization", version=1, draw=draw_rms_norm, feeding=feed_rms_norm,
    draw_honours=frozenset({"min_rank", "attrs"}), numpy=numpy_rms_norm,
    onnx=lambda case, graph: graph.node(graph.op_type, graph.inputs, **case.attrs),
    error_bound=lambda inputs, attrs, outputs, *, dtypes, **_: rms_bound(
        *inputs, attrs, outputs[0], dtypes[0]))
def oracle_onnx_rms_normalization(x, scale, *, axis, epsilon, stash_type):
    """RMSNormalization-23: Normalized = X / sqrt(ReduceMean(X * X) + epsilon) over the axes
    from ``axis`` on, Y = Normalized * Scale (epsilon a float32 attribute)."""
    with np.errstate(all="ignore"):
        total = _sum_of_squares(x, _rms_axes(x, axis)) / math.prod(
            x.shape[a] for a in _rms_axes(x, axis)) + _float32(epsilon)
        return (x / np.sqrt(total) * scale,)
