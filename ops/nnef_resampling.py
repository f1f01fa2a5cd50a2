"""NNEF up- and down-sampling (NNEF 1.0, sliding-window operations, "Up and Down-Sampling"):
nearest_upsample, nearest_downsample, area_downsample and multilinear_upsample.

The ``nnef`` package's standard fragments declare each with ``factor: integer[]`` applying to
the dimensions after batch and channel (``size = [1,1] + factor``), and define three of them
by the sliding-window operations: nearest_downsample is ``box`` of window 1 and stride
``[1,1] + factor`` (every factor-th element), area_downsample is ``box`` of window and stride
``[1,1] + factor`` with ``normalize = true`` (the average of each factor block), and
nearest_upsample is ``debox`` of window and stride ``[1,1] + factor`` (each element repeated
factor times along each dimension).

multilinear_upsample is a primitive there (``method: string = 'symmetric', border: string =
'replicate'``). Its meaning, from the NNEF text (and spelled out as a deconvolution with a
triangular filter by its successor, NNEF 2.0's ``image.linear_upsample``): each output position
``o`` along an upsampled dimension sits at input coordinate ``x = (o + 0.5) / f - 0.5``
('symmetric', the two grids' centres aligned), ``x = o / f`` ('asymmetric', the first elements
aligned) or ``x = o * (n - 1) / (f * n - 1)`` ('aligned', the corners aligned), and takes
``(1 - t) * in[k] + t * in[k + 1]`` with ``k = floor(x)``, ``t = x - k``; a neighbour outside
the input is the edge element ('replicate') or 0 ('constant'); 'aligned' never leaves the
input. Over several dimensions the weights multiply (multilinear). The output is a weighted
sum of at most ``2**d`` input elements; the error bound is derived in :func:`multilinear_bound`.
"""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op
from conform.ops.nnef_pooling import box
from conform.ops.error_bounds import gamma, judged_bound, reaches_max_finite, underflow_term

METHODS = ("symmetric", "asymmetric", "aligned")


def _draw(draw, kit, spec, dtype, *, divisible: bool):
    """A shape of rank 3 or 4 (batch, channels, 1 or 2 spatial dimensions), a factor of 1 to 3
    per spatial dimension (dividing the side for a downsample), and the spec's attributes."""
    st = kit.st
    shape = list(draw(kit.shape(min_rank=3, max_rank=4, max_side=4)))
    factor = []
    for k in range(2, len(shape)):
        f = draw(st.sampled_from([1, 2, 2, 2, 3]))   # 2 the most: a common kernel's case
        if divisible:
            shape[k] = f * draw(st.integers(1, 2))
        factor.append(f)
    attrs = {"factor": factor, **kit.attributes(draw, spec, {})}
    return kit.Signature((dtype,), (tuple(shape),), attrs, dtype)


def draw_upsample(draw, kit, spec, dtype):
    return _draw(draw, kit, spec, dtype, divisible=False)


def draw_downsample(draw, kit, spec, dtype):
    return _draw(draw, kit, spec, dtype, divisible=True)


def nnef_factor(case, call):
    """The invocation with ``factor`` and the case's other attributes (method, border)."""
    return call(["in0"], {k: v for k, v in case.attrs.items()})


def _spatial_span(x, factor, step):
    return [slice(None)] * 2 + [step(f) for f in factor]


def numpy_nearest_upsample(x, *, factor):
    """The numpy backend: ``np.repeat`` along each spatial dimension."""
    for axis, f in enumerate(factor, start=2):
        x = np.repeat(x, f, axis=axis)
    return x


@op("nnef_nearest_upsample", version=1, draw=draw_upsample, draw_honours=frozenset({"attrs"}),
    feeding="moved", nnef=nnef_factor, numpy=numpy_nearest_upsample)
def oracle_nnef_nearest_upsample(x, *, factor):
    """debox(x, size = [1,1] + factor, stride = [1,1] + factor): every element repeated
    factor[i] times along spatial dimension i."""
    for axis, f in enumerate(factor, start=2):
        x = np.repeat(x, f, axis=axis)
    return (x,)


def numpy_nearest_downsample(x, *, factor):
    """The numpy backend: basic slicing with step factor[i] along each spatial dimension."""
    return x[(slice(None),) * 2 + tuple(slice(None, None, f) for f in factor)]


@op("nnef_nearest_downsample", version=1, draw=draw_downsample,
    draw_honours=frozenset({"attrs"}), feeding="moved", nnef=nnef_factor,
    numpy=numpy_nearest_downsample)
def oracle_nnef_nearest_downsample(x, *, factor):
    """box(x, size = [1] * rank, stride = [1,1] + factor): every factor[i]-th element along
    spatial dimension i, from the first."""
    return (x[tuple(_spatial_span(x, factor, lambda f: slice(None, None, f)))],)


def _area_args(x, factor):
    size = [1, 1] + list(factor)
    return dict(size=size, border="constant", padding=[[0, 0]] * x.ndim, stride=size,
                dilation=[1] * x.ndim, normalize=True)


def feed_area(inputs, attrs, index):
    """The factor block averaged into out[index]."""
    (x,) = inputs
    f = [1, 1] + list(attrs["factor"])
    return [x[tuple(slice(i * s, (i + 1) * s) for i, s in zip(index, f))].ravel()]


def numpy_area_downsample(x, *, factor):
    """The numpy backend: each spatial dimension of side ``n * f`` reshaped into ``(n, f)`` and
    ``np.mean`` over the block axes, in x's type (NumPy sums float16 in float32)."""
    blocks = list(x.shape[:2])
    for n, f in zip(x.shape[2:], factor):
        blocks += [n // f, f]
    return np.mean(x.reshape(blocks), axis=tuple(range(3, len(blocks), 2)))


@op("nnef_area_downsample", version=1, draw=draw_downsample, draw_honours=frozenset({"attrs"}),
    feeding=feed_area, nnef=nnef_factor, numpy=numpy_area_downsample,
    accumulation_length=lambda shapes, attrs: math.prod(attrs["factor"]))
def oracle_nnef_area_downsample(x, *, factor):
    """box(x, size = [1,1] + factor, stride = [1,1] + factor, normalize = true): the average of
    each factor block."""
    return (box(x, **_area_args(x, factor)),)


# -- multilinear_upsample ---------------------------------------------------------------------

def coordinates(n: int, f: int, method: str) -> np.ndarray:
    """The input coordinate of each of the ``f * n`` output positions along one dimension."""
    o = np.arange(f * n, dtype=np.float64)
    if method == "symmetric":
        return (o + 0.5) / f - 0.5
    if method == "asymmetric":
        return o / f
    return o * (n - 1) / (f * n - 1) if f * n > 1 else o * 0.0


def neighbours(n: int, f: int, method: str, border: str) -> tuple:
    """``(index, weight)``, each ``f * n`` x 2: output ``o`` along the dimension is
    ``sum_c weight[o, c] * in[index[o, c]]`` over the entries of nonzero weight (a neighbour
    at weight 0 takes no part: the text's deconvolution has no such term); a neighbour past an
    edge is that edge element ('replicate') or weighs 0 ('constant')."""
    x = coordinates(n, f, method)
    k = np.floor(x).astype(np.int64)
    t = x - k
    index = np.stack([k, k + 1], axis=1)
    weight = np.stack([1.0 - t, t], axis=1)
    outside = (index < 0) | (index >= n)
    if border != "replicate":
        weight = np.where(outside, 0.0, weight)
    return np.clip(index, 0, max(n - 1, 0)), weight


def _apply(x, factor, method, border, *, magnitudes=False):
    """``x`` interpolated along each spatial dimension ``2 + i`` (with ``magnitudes``, the
    sums of ``|w_j| |x_j|``)."""
    for axis, (n, f) in enumerate(zip(x.shape[2:], factor), start=2):
        index, weight = neighbours(n, f, method, border)
        out = 0.0
        for c in range(2):
            taken = np.take(x, index[:, c], axis=axis)
            w = weight[:, c].reshape([-1 if a == axis else 1 for a in range(x.ndim)])
            w = np.abs(w) if magnitudes else w
            out = out + np.where(w != 0, w * np.where(w != 0, taken, 0.0), 0.0)
        x = np.asarray(out, np.float64)
    return x


def _terms(x, factor, method, border):
    """Per output element, the products it sums: one per neighbour of nonzero weight along
    each upsampled dimension, multiplied out (at most 2**d)."""
    total = np.ones([1, 1] + [f * n for n, f in zip(x.shape[2:], factor)])
    for axis, (n, f) in enumerate(zip(x.shape[2:], factor), start=2):
        count = (neighbours(n, f, method, border)[1] != 0).sum(axis=1)
        total = total * count.reshape([-1 if a == axis else 1 for a in range(total.ndim)])
    return total


def feed_multilinear(inputs, attrs, index):
    """The input elements weighted into out[index]: per spatial dimension the one or two
    neighbours with a nonzero weight (an edge element once per entry under 'replicate')."""
    (x,) = inputs
    spans = [[index[0]], [index[1]]]
    for i, (n, f) in enumerate(zip(x.shape[2:], attrs["factor"])):
        columns, weight = neighbours(n, f, attrs["method"], attrs["border"])
        spans.append(columns[index[2 + i]][weight[index[2 + i]] != 0])
    return [x[np.ix_(*spans)].ravel()]


def multilinear_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """|err| <= gamma_(m + r) * sum_j |w_j x_j| per output element.

    The text defines each output as a weighted sum of its m <= 2**d neighbours (the
    deconvolution with a triangular filter). In any order, each term w_j * x_j goes through
    at most m + 1 roundings in the output type (its product and m additions: m - 1 in the sum,
    plus one more where the sum starts from an accumulator of 0), and each weight, computed
    from the text's formula in that type (as ``1 - |i - f + offset| / f`` or a product of d
    such factors), carries up to ``constants['weight_roundings']`` more: r = that + 1
    (Higham 2002, Lemma 3.1 and §3.1). NaN (the region ``unbounded_evaluation``) where a
    partial sum can overflow: sum |w_j x_j| times 1 + gamma reaching the largest finite value."""
    (x,) = inputs
    factor, method, border = attrs["factor"], attrs["method"], attrs["border"]
    m = _terms(x, factor, method, border)
    g = gamma(m + 1 + constants["weight_roundings"], u)
    finite = np.abs(np.where(np.isfinite(x), x, 0.0))
    magnitude = _apply(finite, factor, method, border, magnitudes=True)
    underflow = underflow_term(m, out_dtype, ulps=1)   # each product rounded below the normal range
    return (judged_bound(g * magnitude + underflow, outputs[0],
                         unbounded=reaches_max_finite(magnitude, out_dtype, gamma_n=g)),)


@op("nnef_multilinear_upsample", version=1, draw=draw_upsample,
    draw_honours=frozenset({"attrs"}), feeding=feed_multilinear, nnef=nnef_factor,
    error_bound=multilinear_bound)
def oracle_nnef_multilinear_upsample(x, *, factor, method, border):
    """Each spatial dimension linearly interpolated at the method's input coordinates, the
    border ('replicate' or 'constant') supplying neighbours past the edges."""
    with np.errstate(invalid="ignore"):
        return (_apply(x, factor, method, border),)
