"""NNEF's local_response_normalization, local_mean_normalization, local_variance_normalization
and local_contrast_normalization (NNEF 1.0 standard library, the compound fragments as the
``nnef`` package ships them in ``stdlib_source.h``):

    local_response_normalization( input, size, alpha = 1.0, beta = 0.5, bias = 1.0 )
    { sigma = bias + alpha * box(sqr(input), size = size, normalize = true);
      output = input / (sigma ^ beta); }
    local_mean_normalization( input, size )
    { mean = box(input, size = size, normalize = true); output = sub(input, mean); }
    local_variance_normalization( input, size, bias = 0.0, epsilon = 0.0 )
    { sigma = sqrt(box(sqr(input), size = size, normalize = true));
      output = input / max(sigma + bias, epsilon); }
    local_contrast_normalization( input, size, bias = 0.0, epsilon = 0.0 )
    { centered = local_mean_normalization(input, size = size);
      output = local_variance_normalization(centered, size = size, bias = bias,
                                            epsilon = epsilon); }

``box`` (ops/nnef_pooling.py) with its defaults: border 'constant' (zeros), stride and dilation 1,
and ``padding = []``, automatic padding. The texts at hand do not define automatic padding; the
results broadcast against the input, so with stride 1 each dimension is padded by ``size - 1``
in total, and how that splits between the sides is open where ``size - 1`` is odd: the oracles
take the smaller half in front (reading 0) or behind (reading 1), and the specs declare the
region ``reading_differs``. The window's average divides by its size (zeros included).
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op
from conform.ops.nnef_axis_normalization import normalization_bound
from conform.ops.nnef_pooling import box, feed_box, numpy_box
from conform.ops.onnx_softmax import grown


def auto_padding(size, reading: int = 0) -> list:
    """``(front, back)`` per dimension: ``size - 1`` in all, the smaller half in front (reading
    0) or behind (reading 1)."""
    return [((s - 1) // 2, s // 2) if reading == 0 else (s // 2, (s - 1) // 2) for s in size]


def window_mean(x, size, reading=0):
    """box(x, size, normalize = true) with automatic padding (float64, double-double sums)."""
    return box(x, size, "constant", auto_padding(size, reading), None, None, True)


def _mean(x, size, reading):
    if x.size == 0:
        return x.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        return window_mean(x, size, reading)


def _lvn(x, size, bias, epsilon, reading):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        sigma = np.sqrt(_mean(np.square(x), size, reading))
        return x / np.maximum(sigma + float(bias), float(epsilon))


# ------------------------------------------------------------------ drawing, feeding, lowering

def draw_local(draw, kit, spec, dtype):
    """A shape of rank 1 to 4 (sides up to 5), a window size of 1 or 3 per dimension (in one
    signature in four, 2 too: an even size, whose automatic padding the texts leave open),
    and the spec's attributes."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=5))
    sizes = [1, 3, 2] if draw(st.integers(0, 3)) == 0 else [1, 3]
    size = [draw(st.sampled_from(sizes)) for _ in shape]
    attrs = {"size": size, **kit.attributes(draw, spec, {spec.inputs[0]: len(shape)})}
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def _box_attrs(size, reading=0) -> dict:
    return {"size": size, "border": "constant", "padding": auto_padding(size, reading),
            "stride": None, "dilation": None}


def feed_local(inputs, attrs, index):
    """The input elements of out[index]'s window."""
    return feed_box(inputs, _box_attrs(attrs["size"]), index)


def feed_contrast(inputs, attrs, index):
    """The input elements of the windows of out[index]'s window (its centred values' windows):
    a window of ``2 size - 1``."""
    wide = [2 * s - 1 for s in attrs["size"]]
    padding = [(2 * front, 2 * back) for front, back in auto_padding(attrs["size"])]
    return feed_box(inputs, {**_box_attrs(wide), "padding": padding}, index)


def _nnef_local(case, call):
    return call(["in0"], {k: (list(v) if k == "size" else float(v))
                          for k, v in case.attrs.items()})


_HOOKS = dict(draw=draw_local, draw_honours=frozenset({"attrs"}), feeding=feed_local,
              nnef=_nnef_local)


# ------------------------------------------------------------------ bounds

def _square_mean_bound(x, size, u, eta):
    """``box(sqr(x))`` (exact, float64) and its error in the type: a rounding per square (an
    ``eta`` where it underflows), n - 1 additions of non-negative terms in any order and the
    division by n (or a product by a rounded 1/n): ``gamma_(n+2) S + 2 eta`` (Higham 2002,
    Lemma 3.1, §4.2; §2.1 eq. 2.8); NaN where the window's sum can overflow the type."""
    n = math.prod(size)
    with np.errstate(over="ignore", invalid="ignore"):
        squares = _mean(np.square(np.where(np.isfinite(x), x, 0.0)), size, 0)
        error = grown(n + 2, u) * squares + 2 * eta
    return squares, error, n


def _overflowing(mean_magnitude, n, u, fmt):
    """Windows whose sum of ``n`` terms (mean ``mean_magnitude``) can overflow the type."""
    with np.errstate(over="ignore", invalid="ignore"):
        return mean_magnitude * n * (1 + grown(n, u)) >= fmt.max_finite


def _root_error(squares, error, u, eta):
    """sqrt of a mean of squares off by ``error``: the relative error halved, sqrt's own
    rounding, and ``sqrt(2 eta)`` for the underflow term."""
    relative = error / np.where(squares > 0, squares, np.inf)
    return np.sqrt(squares) * (np.sqrt(1 + relative) * (1 + u) - 1) + np.sqrt(2 * eta) * (1 + u)


def _with_region(bound, overflows, y):
    return np.where(overflows & ~np.isnan(y), np.nan, np.where(np.isfinite(y), bound, 0.0))


def mean_normalization_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                             terms=None) -> tuple:
    """x - mean: the window's n-term sum within ``gamma_(n-1)`` of its magnitudes, the division
    two roundings and an ``eta``, the subtraction one rounding."""
    (x,), (y,) = inputs, outputs
    fmt, size = FLOAT_FORMATS[out_dtype], attrs["size"]
    eta, n = fmt.min_subnormal, math.prod(size)   # (eta: half of one is the bound)
    with np.errstate(over="ignore", invalid="ignore"):
        magnitude = _mean(np.abs(np.where(np.isfinite(x), x, 0.0)), size, 0)
        g = grown(n - 1, u)
        mean = _mean(x, size, 0)
        error = g * magnitude + grown(2, u) * (np.abs(mean) + g * magnitude) + eta
        bound = error * (1 + u) + u * np.abs(y)
    return (_with_region(bound, _overflowing(magnitude, n, u, fmt), y),)


def variance_normalization_bound(inputs, attrs, outputs, *, out_dtype, u, constants,
                                 dtypes) -> tuple:
    """x / max(sqrt(box(sqr(x))) + bias, epsilon): :func:`_square_mean_bound`, the root
    (:func:`_root_error`), then :func:`normalization_bound`."""
    (x,), (y,) = inputs, outputs
    fmt, size = FLOAT_FORMATS[out_dtype], attrs["size"]
    eta = fmt.min_subnormal
    squares, error, n = _square_mean_bound(x, size, u, eta)
    with np.errstate(over="ignore", invalid="ignore"):
        sigma = np.sqrt(squares)
        bound = normalization_bound(sigma, _root_error(squares, error, u, eta), x, y, attrs,
                                    out_dtype, u)
    return (_with_region(bound, _overflowing(squares, n, u, fmt), y),)


def response_normalization_bound(inputs, attrs, outputs, *, out_dtype, u, constants,
                                 dtypes) -> tuple:
    """x / (bias + alpha box(sqr(x)))**beta: :func:`_square_mean_bound`; alpha's literal and
    the product two roundings, the sum with bias (and its literal) two; the power within
    ``pow_ulp`` (relative ``2 pow_ulp u``), moved by ``(1 - r)**-beta - 1`` for a base off by
    ``r`` relative and by ``exp(beta u |ln sigma|) - 1`` for beta's literal; the division one
    rounding. NaN where the base's error can reach the base."""
    (x,), (y,) = inputs, outputs
    fmt, size = FLOAT_FORMATS[out_dtype], attrs["size"]
    alpha, beta, bias = (float(attrs[k]) for k in ("alpha", "beta", "bias"))
    eta = fmt.min_subnormal
    squares, error, n = _square_mean_bound(x, size, u, eta)
    with np.errstate(all="ignore"):
        t_error = abs(alpha) * (error + grown(2, u) * (squares + error))
        sigma = bias + alpha * squares
        s_error = t_error + u * (np.abs(sigma) + t_error) + u * abs(bias)
        r = s_error / sigma
        rho = ((1 - r) ** -abs(beta)) * np.exp(abs(beta) * u * np.abs(np.log(sigma))) \
            * (1 + 2 * constants["pow_ulp"] * u) - 1
        bound = np.abs(y) * ((1 + u) / (1 - rho) - 1) + eta
        unbounded = ~((sigma > 0) & (r < 1) & (rho < 1))
    return (_with_region(bound, _overflowing(squares, n, u, fmt) | unbounded, y),)


def contrast_normalization_bound(inputs, attrs, outputs, *, out_dtype, u, constants,
                                 dtypes) -> tuple:
    """The variance normalization of the centred values ``c`` computed with an error ``e``
    (:func:`mean_normalization_bound`): its bound over values up to ``|c| + e``, the divisor
    also moved by the window's root mean square of ``e`` (at most ``|sqrt(box(c**2)) -
    sqrt(box(c'**2))|``, the triangle inequality), the numerator by ``e``."""
    (x,), (y,) = inputs, outputs
    fmt, size = FLOAT_FORMATS[out_dtype], attrs["size"]
    eta = fmt.min_subnormal
    centred = _mean_normalization(x, size)
    (c_error,) = mean_normalization_bound(inputs, attrs, [centred], out_dtype=out_dtype, u=u,
                                          constants=constants, dtypes=dtypes)
    with np.errstate(all="ignore"):
        wide = np.abs(centred) + c_error
        squares, error, n = _square_mean_bound(wide, size, u, eta)
        sigma = np.sqrt(_mean(np.square(centred), size, 0))
        sigma_error = _root_error(squares, error, u, eta) \
            + np.sqrt(_mean(np.square(np.nan_to_num(c_error)), size, 0))
        bound = normalization_bound(sigma, sigma_error, centred, y, attrs, out_dtype, u,
                                    numerator_error=c_error)
        # a centred value in the window the mean normalization leaves unbounded
        unbounded = _mean(np.isnan(c_error).astype(np.float64), size, 0) > 0
        overflows = unbounded | _overflowing(squares, n, u, fmt)
    return (_with_region(bound, overflows, y),)


# ------------------------------------------------------------------ the ops

def _numpy_mean(x, size):
    return numpy_box(x, size=size, border="constant", padding=auto_padding(size), stride=[],
                     dilation=[], normalize=True)


def numpy_lmn(x, *, size):
    """The numpy backend: ``x - box mean`` in x's type (:func:`numpy_box`)."""
    return x - _numpy_mean(x, size)


def numpy_lvn(x, *, size, bias, epsilon):
    """The numpy backend: ``x / max(sqrt(box mean of x**2) + bias, epsilon)`` in x's type."""
    sigma = np.sqrt(_numpy_mean(np.square(x), size))
    return x / np.maximum(sigma + x.dtype.type(bias), x.dtype.type(epsilon))


def numpy_lrn(x, *, size, alpha, beta, bias):
    """The numpy backend: ``x / (bias + alpha * box mean of x**2) ** beta`` in x's type."""
    kind = x.dtype.type
    return x / np.power(kind(bias) + kind(alpha) * _numpy_mean(np.square(x), size), kind(beta))


def numpy_lcn(x, *, size, bias, epsilon):
    """The numpy backend: :func:`numpy_lvn` of :func:`numpy_lmn`."""
    return numpy_lvn(numpy_lmn(x, size=size), size=size, bias=bias, epsilon=epsilon)


def _mean_normalization(x, size, reading=0):
    with np.errstate(invalid="ignore"):
        return x - _mean(x, size, reading)


@op("nnef_local_mean_normalization", version=1, numpy=numpy_lmn,
    error_bound=mean_normalization_bound, **_HOOKS)
def oracle_nnef_local_mean_normalization(x, *, size, reading=0):
    """x - box(x, size, normalize = true), automatic padding (``reading``: its split)."""
    return (_mean_normalization(x, size, reading),)


@op("nnef_local_variance_normalization", version=1, numpy=numpy_lvn,
    error_bound=variance_normalization_bound, **_HOOKS)
def oracle_nnef_local_variance_normalization(x, *, size, bias, epsilon, reading=0):
    """x / max(sqrt(box(x**2, size, normalize = true)) + bias, epsilon)."""
    return (_lvn(x, size, bias, epsilon, reading),)


@op("nnef_local_response_normalization", version=1, numpy=numpy_lrn,
    error_bound=response_normalization_bound, **_HOOKS)
def oracle_nnef_local_response_normalization(x, *, size, alpha, beta, bias, reading=0):
    """x / (bias + alpha box(x**2, size, normalize = true)) ** beta."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return (x / np.power(float(bias) + float(alpha) * _mean(np.square(x), size, reading),
                             float(beta)),)


@op("nnef_local_contrast_normalization", version=1, numpy=numpy_lcn,
    error_bound=contrast_normalization_bound, **{**_HOOKS, "feeding": feed_contrast})
def oracle_nnef_local_contrast_normalization(x, *, size, bias, epsilon, reading=0):
    """local_variance_normalization(local_mean_normalization(x))."""
    return (_lvn(_mean_normalization(x, size, reading), size, bias, epsilon, reading),)
