"""NNEF's l1_normalization, l2_normalization and moments (NNEF 1.0 standard library, the
compound fragments as the ``nnef`` package ships them in ``stdlib_source.h``):

    fragment l1_normalization( input, axes: integer[], bias = 0.0, epsilon = 0.0 )
    { sigma = sum_reduce(abs(input), axes = axes); output = input / max(sigma + bias, epsilon); }

    fragment l2_normalization( input, axes: integer[], bias = 0.0, epsilon = 0.0 )
    { sigma = sqrt(sum_reduce(sqr(input), axes = axes));
      output = input / max(sigma + bias, epsilon); }

    fragment moments( input, axes: integer[] ) -> ( mean, variance )
    { mean = mean_reduce(input, axes = axes);
      variance = mean_reduce(sqr(input - mean), axes = axes); }

with ``mean_reduce = sum_reduce(normalize = true)``: the sum over ``axes`` divided by the
number of its terms. NNEF reductions keep the reduced axes as singletons (NNEF 1.0 ch. 2), so
``sigma``, ``mean`` and ``variance`` broadcast against the input with its own rank. The oracles
compute the exact values in float64 (sums in double-double); the bounds (``derived``) are the
fragments' evaluated in the output type, each sum in any order (the text fixes none).
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op
from conform.ops._double_double import accurate_sum, sum_of_products
from conform.ops.onnx_softmax import _DRAW, _together, grown


def _axes(attrs) -> tuple:
    return tuple(sorted(attrs["axes"]))


def _count(x, axes) -> int:
    """The terms of one reduction."""
    return int(np.prod([x.shape[a] for a in axes]))


def _normalized(x, sigma, bias, epsilon):
    """input / max(sigma + bias, epsilon), sigma kept with the input's rank."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return x / np.maximum(sigma + float(bias), float(epsilon))


def _l1_sigma(x, axes):
    return accurate_sum(np.abs(x), axis=axes, keepdims=True)


def _l2_sigma(x, axes):
    """sqrt(sum x**2) from exact squares summed in double-double, the terms scaled by a power
    of two near the largest magnitude so that float64 neither overflows nor underflows."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        top = np.max(np.abs(x), axis=axes, keepdims=True, initial=0.0)
        usable = (top > 0) & np.isfinite(top)
        scale = np.ldexp(1.0, np.frexp(np.where(usable, top, 1.0))[1] - 1)   # top / scale in [1, 2)
        scaled = x / scale                                    # exact: a power of two
        root = np.sqrt(sum_of_products([scaled, scaled], axes))
        return np.where(usable, scale * np.expand_dims(root, axes), top)


def normalization_bound(sigma, sigma_error, x, y, attrs, out_dtype, u, *,
                        numerator_error=0.0) -> np.ndarray:
    """``input / max(sigma + bias, epsilon)``'s bound, given ``sigma``'s absolute error: the sum
    with bias one rounding (and bias's and epsilon's own roundings into the type), ``max`` exact and
    1-Lipschitz, the division one rounding (a smallest subnormal where the quotient is
    subnormal). A ``numerator_error`` (the input computed with that error) passes through the
    division. NaN (region ``unbounded_evaluation``) where the divisor's error can reach the
    divisor itself."""
    fmt = FLOAT_FORMATS[out_dtype]
    bias, epsilon = float(attrs["bias"]), float(attrs["epsilon"])
    with np.errstate(all="ignore"):
        total = sigma + bias
        # the literals' own roundings into the type: u |bias|, u |epsilon|
        error = sigma_error + u * (np.abs(total) + sigma_error) + u * (abs(bias) + abs(epsilon))
        divisor = np.maximum(total, epsilon)
        shrink = error / np.abs(divisor)
        relative = (1 + u) / (1 - shrink) - 1
        carried = numerator_error * (1 + relative) / np.abs(divisor) if np.any(numerator_error) \
            else 0.0
        bound = np.abs(y) * relative + carried + fmt.min_subnormal   # (its half in float64 is 0)
        bound = np.where(np.isfinite(y), bound, 0.0)
        unbounded = np.isfinite(y) & ~(shrink < 1)
    return np.where(np.broadcast_to(unbounded, np.shape(y)), np.nan, bound)


def l1_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """sum |x| over n terms in any order: within ``gamma_(n-1) sum|x|`` (Higham 2002, §4.2;
    the terms are exact, their subnormal sums exact); then :func:`normalization_bound`. NaN
    where the sum can overflow the type."""
    (x,), (y,) = inputs, outputs
    axes, fmt = _axes(attrs), FLOAT_FORMATS[out_dtype]
    sigma = _l1_sigma(x, axes)
    error = grown(max(_count(x, axes) - 1, 0), u) * sigma
    bound = normalization_bound(sigma, error, x, y, attrs, out_dtype, u)
    overflows = np.isfinite(sigma) & (sigma + error >= fmt.max_finite)
    return (np.where(np.broadcast_to(overflows, y.shape) & np.isfinite(y), np.nan, bound),)


def l2_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """x**2 one rounding each (half a smallest subnormal where it underflows) and their sum in
    any order: ``S (1 + gamma_n) + n eta``; the square root halves the relative error and adds
    one rounding: ``sigma ((1 + gamma_n)**0.5 (1 + u) - 1) + sqrt(n eta) (1 + u)``; then
    :func:`normalization_bound`. NaN where the sum of squares can overflow the type."""
    (x,), (y,) = inputs, outputs
    axes, fmt = _axes(attrs), FLOAT_FORMATS[out_dtype]
    n, eta = _count(x, axes), fmt.min_subnormal   # (its half in float64 is 0)
    sigma = _l2_sigma(x, axes)
    with np.errstate(over="ignore", invalid="ignore"):
        error = sigma * (np.sqrt(1 + grown(n, u)) * (1 + u) - 1) + np.sqrt(n * eta) * (1 + u)
        overflows = np.isfinite(sigma) & (np.square(sigma) * (1 + grown(n, u)) >= fmt.max_finite)
    bound = normalization_bound(sigma, error, x, y, attrs, out_dtype, u)
    return (np.where(np.broadcast_to(overflows, y.shape) & np.isfinite(y), np.nan, bound),)


def feed_reduced(inputs, attrs, index, output=0):
    """Every element reduced into out[index]: the slice along ``axes`` (for a normalization,
    the slice holding the element)."""
    return [_together(inputs[0], _axes(attrs), index)]


def _nnef_norm(case, call):
    return call(["in0"], {"axes": list(case.attrs["axes"]), "bias": float(case.attrs["bias"]),
                          "epsilon": float(case.attrs["epsilon"])})


def _numpy_normalized(x, sigma, bias, epsilon):
    return x / np.maximum(sigma + x.dtype.type(bias), x.dtype.type(epsilon))


def numpy_l1_normalization(x, *, axes, bias, epsilon):
    """The numpy backend: ``x / max(sum(|x|) + bias, epsilon)`` in x's type."""
    return _numpy_normalized(x, np.sum(np.abs(x), axis=tuple(axes), keepdims=True), bias, epsilon)


def numpy_l2_normalization(x, *, axes, bias, epsilon):
    """The numpy backend: ``x / max(sqrt(sum(x**2)) + bias, epsilon)`` in x's type."""
    sigma = np.sqrt(np.sum(np.square(x), axis=tuple(axes), keepdims=True))
    return _numpy_normalized(x, sigma, bias, epsilon)


_HOOKS = dict(**_DRAW, feeding=feed_reduced, nnef=_nnef_norm)


@op("nnef_l1_normalization", version=1, numpy=numpy_l1_normalization, error_bound=l1_bound,
    **_HOOKS)
def oracle_nnef_l1_normalization(x, *, axes, bias, epsilon):
    """x / max(sum(|x|) + bias, epsilon) over ``axes``."""
    return (_normalized(x, _l1_sigma(x, tuple(axes)), bias, epsilon),)


@op("nnef_l2_normalization", version=1, numpy=numpy_l2_normalization, error_bound=l2_bound,
    **_HOOKS)
def oracle_nnef_l2_normalization(x, *, axes, bias, epsilon):
    """x / max(sqrt(sum(x**2)) + bias, epsilon) over ``axes``."""
    return (_normalized(x, _l2_sigma(x, tuple(axes)), bias, epsilon),)


def moments_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """mean: n terms summed in any order, within ``gamma_(n-1) sum|x|``, divided by n (or
    multiplied by a rounded 1/n: two roundings), plus half a smallest subnormal. variance: with
    ``e`` the mean's error, ``sum (x_i - mean - e)**2 = n (V + e**2)`` (the deviations from the
    exact mean sum to 0); each term's subtraction and square, the n-term sum and the division
    scale it by at most ``1 + gamma_(n+4)``; the squares' underflow adds ``eta`` per term and
    the quotient's ``eta``: ``|err| <= gamma_(n+4) V + e**2 (1 + gamma_(n+4)) + 2 eta``. NaN
    (region ``unbounded_evaluation``) where the sum of the finite terms, a deviation's square
    or their sum can overflow the type (beside an infinite term, some orders give NaN)."""
    (x,), (mean, variance) = inputs, outputs
    axes, fmt = _axes(attrs), FLOAT_FORMATS[out_dtype]
    n, eta = _count(x, axes), fmt.min_subnormal   # (its half in float64 is 0)
    with np.errstate(all="ignore"):
        magnitude = accurate_sum(np.abs(x), axis=axes, keepdims=True)
        finite = accurate_sum(np.where(np.isfinite(x), np.abs(x), 0.0), axis=axes, keepdims=True)
        g = grown(max(n - 1, 0), u)
        mean_error = g * magnitude / n + grown(2, u) * (np.abs(mean) + g * magnitude / n) + eta
        gv = grown(n + 4, u)
        var_error = gv * variance + np.square(mean_error) * (1 + gv) + 2 * eta
        worst = np.max(np.abs(x - mean) + mean_error, axis=axes, keepdims=True, initial=0.0)
        # the finite terms can overflow in some order (beside an infinite term: NaN or inf)
        sum_overflows = finite * (1 + g) >= fmt.max_finite
        overflows = sum_overflows | (np.square(worst) * n * (1 + gv) >= fmt.max_finite)
    return (np.where(sum_overflows & ~np.isnan(mean), np.nan,
                     np.where(np.isfinite(mean), mean_error, 0.0)),
            np.where(overflows & ~np.isnan(variance), np.nan,
                     np.where(np.isfinite(variance), var_error, 0.0)))


def numpy_moments(x, *, axes):
    """The numpy backend: ``np.mean`` over ``axes``, then ``np.mean`` of the squared deviations,
    in x's type (the reduced axes kept)."""
    mean = np.mean(x, axis=tuple(axes), keepdims=True)
    return mean, np.mean(np.square(x - mean), axis=tuple(axes), keepdims=True)


@op("nnef_moments", version=1, numpy=numpy_moments, error_bound=moments_bound, **_DRAW,
    feeding=feed_reduced,
    nnef=lambda case, call: call(["in0"], {"axes": list(case.attrs["axes"])}))
def oracle_nnef_moments(x, *, axes):
    """mean = sum(x) / n and variance = sum((x - mean)**2) / n over ``axes`` (n their terms),
    the reduced axes kept as singletons; float64 sums in double-double."""
    axes = tuple(sorted(axes))
    n = _count(x, axes)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = accurate_sum(x, axis=axes, keepdims=True, divisor=n)
        variance = accurate_sum(np.square(x - mean), axis=axes, keepdims=True, divisor=n)
    return mean, variance
