"""ONNX's reductions, judged by ONNX's semantics: ReduceSum (opset 13), ReduceMax, ReduceMin,
ReduceMean (opset 18+, axes as an input), and ReduceProd, ReduceL2, ReduceLogSumExp (opset 18,
the axes an optional input, with ``noop_with_empty_axes``); and CumSum (opset 14). The axes may
be negative and in any order, and ``keepdims`` (1 by default) keeps each reduced dimension with
size 1. The sums and maxima are the XLA reductions' (ops/reduction.py); products, norms and
log-sum-exps are computed with error-free transformations (ops/_exact.py) so that float64
targets keep a sound reference. The specs (ops/onnx_reduce_*.yaml, onnx_cum_sum.yaml) give
ONNX's types, error models and regions."""
from __future__ import annotations

import math

import numpy as np

from conform.ops._exact import compensated_cumsum, compensated_product, compensated_sum, two_product
from conform.op_registry import op
from conform.ops.reduction import (feed_reduce, oracle_reduce_max, oracle_reduce_mean,
                                   oracle_reduce_min, oracle_reduce_sum)


def _axes(rank: int, axes, noop: int = 0) -> list[int]:
    """The reduced axes, each in [0, rank) (ONNX: 'accepted range is [-r, r-1]'). Where the
    axes are absent (None) or empty: none with ``noop_with_empty_axes`` 1, else every axis."""
    if axes:
        return sorted(axis % rank for axis in axes)
    return [] if noop else list(range(rank))


def _case_axes(rank: int, attrs) -> list[int]:
    return _axes(rank, attrs["axes"], attrs.get("noop_with_empty_axes", 0))


def _reduced(reduce, data, axes, keepdims, noop=0, empty=None) -> tuple:
    """``reduce(data, dimensions=...)`` over the case's axes, the reduced dimensions kept with
    size 1 if ``keepdims``; over an empty set of values, ``empty`` (where given) instead."""
    dims = _axes(data.ndim, axes, noop)
    (out,) = reduce(data, dimensions=dims)
    if empty is not None and math.prod(data.shape[d] for d in dims) == 0:
        out = np.full(out.shape, empty, out.dtype)
    return (np.expand_dims(out, tuple(dims)) if keepdims else out,)


def _unsigned64(data: np.ndarray, dtypes) -> np.ndarray:
    """A uint64 input read back as uint64 (the oracle contract widens it to int64, which wraps
    values of 2**63 and above); any other input as it is."""
    return data.view(np.uint64) if dtypes and dtypes[0] == "uint64" else data


def _ordered(data: np.ndarray, dtypes) -> np.ndarray:
    """``data`` in a dtype whose order is the type's: uint64 read back as uint64, bool as
    uint8 (False < True)."""
    return data.astype(np.uint8) if data.dtype == np.bool_ else _unsigned64(data, dtypes)


def _as_data(outputs: tuple, dtypes) -> tuple:
    """A max or min reduction of bool data (computed on 0 and 1) back as bool."""
    return tuple(o.astype(np.bool_) for o in outputs) if dtypes and dtypes[0] == "bool" \
        else outputs


def _type_bound(dtype: str, *, lowest: bool):
    """For an integer type, its minimum (or maximum): what an empty max (or min) reduction
    yields for a type without infinities (bool: False, or True); None for a float type (the
    oracle's -inf or +inf)."""
    if dtype == "bool":
        return 0 if lowest else 1
    if not dtype.startswith(("int", "uint")):
        return None
    info = np.iinfo(np.dtype(dtype))
    return int(info.min if lowest else info.max)


def feed_onnx_reduce(inputs, attrs, index):
    """The slice of ``data`` reduced into out[index] (with keepdims, the reduced dimensions'
    indices, always 0, are dropped first)."""
    dims = _case_axes(inputs[0].ndim, attrs)
    if attrs["keepdims"]:
        index = [i for axis, i in enumerate(index) if axis not in dims]
    return feed_reduce(inputs, {"dimensions": dims}, index)


def onnx_reduced_count(shapes, attrs):
    """The number of elements reduced into one output element."""
    rank = len(shapes[0])
    return math.prod(shapes[0][axis] for axis in _case_axes(rank, attrs))


def onnx_reduce(case, graph):
    """The axes as a constant input (left out where the case has none), the attributes as
    they are."""
    attrs = {"keepdims": int(case.attrs["keepdims"])}
    if "noop_with_empty_axes" in case.attrs:
        attrs["noop_with_empty_axes"] = int(case.attrs["noop_with_empty_axes"])
    operands = [graph.inputs[0]]
    if case.attrs["axes"] is not None:
        operands.append(graph.const("axes", case.attrs["axes"]))
    graph.node(graph.op_type, operands, **attrs)


_HOOKS = dict(feeding=feed_onnx_reduce, accumulation_length=onnx_reduced_count, onnx=onnx_reduce)


def _numpy_reduced(reduce, data, axes, keepdims, noop=0, **kwargs):
    """The numpy backend's ONNX reduction: ``reduce(data, axis=..., keepdims=...)`` over the
    case's axes (:func:`_axes`), in data's type."""
    return reduce(data, axis=tuple(_axes(data.ndim, axes, noop)), keepdims=bool(keepdims),
                  **kwargs)


def _numpy_extreme(data, lowest: bool):
    if data.dtype.kind in "iu":
        info = np.iinfo(data.dtype)
        return data.dtype.type(info.min if lowest else info.max)
    return data.dtype.type(-np.inf if lowest else np.inf)


def numpy_onnx_reduce_sum(data, *, axes, keepdims, noop_with_empty_axes=0):
    """The numpy backend: ``np.sum`` in data's type."""
    return _numpy_reduced(np.sum, data, axes, keepdims, noop_with_empty_axes, dtype=data.dtype)


def numpy_onnx_reduce_max(data, *, axes, keepdims):
    """The numpy backend: ``np.max`` with the text's empty value as ``initial``."""
    return _numpy_reduced(np.max, data, axes, keepdims, initial=_numpy_extreme(data, True))


def numpy_onnx_reduce_min(data, *, axes, keepdims):
    """The numpy backend: ``np.min`` with the text's empty value as ``initial``."""
    return _numpy_reduced(np.min, data, axes, keepdims, initial=_numpy_extreme(data, False))


def numpy_onnx_reduce_mean(data, *, axes, keepdims):
    """The numpy backend: ``np.mean`` (float16 accumulates in float32, as NumPy does)."""
    return _numpy_reduced(np.mean, data, axes, keepdims)


def numpy_onnx_reduce_prod(data, *, axes, keepdims, noop_with_empty_axes):
    """The numpy backend: ``np.prod`` in data's type."""
    return _numpy_reduced(np.prod, data, axes, keepdims, noop_with_empty_axes, dtype=data.dtype)


def numpy_onnx_reduce_l2(data, *, axes, keepdims, noop_with_empty_axes):
    """The numpy backend: ``np.sqrt(np.sum(np.square(x)))`` in data's type."""
    return np.sqrt(_numpy_reduced(np.sum, np.square(data), axes, keepdims, noop_with_empty_axes,
                                  dtype=data.dtype))


def numpy_onnx_reduce_log_sum_exp(data, *, axes, keepdims, noop_with_empty_axes):
    """The numpy backend: ``np.logaddexp.reduce`` (pairwise log(e**a + e**b)) in data's type."""
    return _numpy_reduced(np.logaddexp.reduce, data, axes, keepdims, noop_with_empty_axes)


@op("onnx_reduce_sum", version=1, numpy=numpy_onnx_reduce_sum, **_HOOKS)
def oracle_onnx_reduce_sum(data, *, axes, keepdims, noop_with_empty_axes=0, dtypes=None):
    """The sum over ``axes`` (0 over an empty set); uint64 modulo 2**64 (a sum past the type is
    the spec's int_overflow). Empty axes with ``noop_with_empty_axes`` 1 reduce nothing
    (ReduceSum-13's noop_with_empty_axes: 'reduction over an empty set of axes means that
    the reduction step behaves like a no-op (identity function)'); the spec draws
    non-empty axes, an ONNX node may give empty ones."""
    return _reduced(oracle_reduce_sum, _unsigned64(data, dtypes), axes, keepdims,
                    noop_with_empty_axes)


@op("onnx_reduce_max", version=1, numpy=numpy_onnx_reduce_max, **_HOOKS)
def oracle_onnx_reduce_max(data, *, axes, keepdims, dtypes):
    """The maximum over ``axes``; over an empty set 'minus infinity (if supported by the
    datatype) or the minimum value of the data type otherwise'; bool data: 'the comparison
    should consider False < True' (ReduceMax-20)."""
    empty = _type_bound(dtypes[0], lowest=True)
    return _as_data(_reduced(oracle_reduce_max, _ordered(data, dtypes), axes, keepdims,
                             empty=empty), dtypes)


@op("onnx_reduce_min", version=1, numpy=numpy_onnx_reduce_min, **_HOOKS)
def oracle_onnx_reduce_min(data, *, axes, keepdims, dtypes):
    """The minimum over ``axes``; over an empty set plus infinity or the type's maximum; bool
    data with False < True (ReduceMin-20)."""
    empty = _type_bound(dtypes[0], lowest=False)
    return _as_data(_reduced(oracle_reduce_min, _ordered(data, dtypes), axes, keepdims,
                             empty=empty), dtypes)


@op("onnx_reduce_mean", version=1, numpy=numpy_onnx_reduce_mean, **_HOOKS)
def oracle_onnx_reduce_mean(data, *, axes, keepdims, dtypes=(), open_elements=False):
    """The mean over ``axes`` (undefined over an empty set: a region of the spec); an integer
    type's where it is an integer (see :func:`integer_or_open`)."""
    found = integer_or_open("mean", data, axes, keepdims, 0, dtypes, open_elements)
    return found if found is not None else _reduced(oracle_reduce_mean, data, axes, keepdims)


# --- ReduceProd, ReduceL2, ReduceLogSumExp (opset 18): optional axes, noop_with_empty_axes ------

def draw_onnx_reduce(draw, kit, spec, dtype):
    """A shape (0-d, empty and >= 8-element ones included: 'input tensors of rank zero are
    valid'), the spec's attributes, and axes of any size: where they come out empty, the axes
    input is left out (None) or an empty tensor, half the time each."""
    min_side = draw(kit.st.sampled_from([1, 1, 1, 0]))
    shape = draw(kit.shape(min_rank=0, max_rank=4, min_side=min_side, max_side=8))
    attrs = kit.attributes(draw, spec, {spec.inputs[0]: len(shape)})
    if not attrs["axes"] and draw(kit.st.booleans()):
        attrs["axes"] = None
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def _reduce_by(compute):
    """An XLA-style ``reduce(data, dimensions=...)`` from ``compute(data, dims)``."""
    return lambda data, *, dimensions: (compute(data, dimensions),)


def _product(data, dims):
    if data.dtype.kind in "iu":   # exact, wrapping modulo 2**64 where it overflows (a region)
        return np.prod(data, axis=tuple(dims), dtype=data.dtype)
    return compensated_product(data, dims)


def _l2(data, dims):
    squares, errors = two_product(data, data)   # x**2 = squares + errors exactly
    return np.sqrt(compensated_sum(squares, dims) + compensated_sum(errors, dims))


def _log_sum_exp(data, dims):
    """max + log(sum(exp(x - max))): no overflow where the value is finite; NaN propagates,
    +inf gives +inf and an empty or all -inf slice -inf."""
    if not dims:
        return data.copy()   # log(exp(x)) = x: the reduction over no axis is the identity
    with np.errstate(all="ignore"):
        top = np.max(data, axis=tuple(dims), keepdims=True, initial=-np.inf)
        shift = np.where(np.isfinite(top), top, 0.0)
        total = compensated_sum(np.exp(data - shift), dims)
        value = np.squeeze(shift, tuple(dims)) + np.log(total)
        peak = np.squeeze(top, tuple(dims))
        return np.where(np.isfinite(peak) | np.isnan(value), value, peak)


def log_sum_exp_magnitude(inputs, attrs):
    """S for ReduceLogSumExp's accumulation model (the derivation is the spec's ``why``):
    ``1 + (7 + 6 ln n) / n`` per result, n the number of reduced elements."""
    (data,) = inputs
    dims = _case_axes(data.ndim, attrs)
    n = max(math.prod(data.shape[d] for d in dims), 1)
    shape = [1 if d in dims else size for d, size in enumerate(data.shape)
             if attrs["keepdims"] or d not in dims]
    return (np.full(shape, 1 + (7 + 6 * math.log(n)) / n),)


_HOOKS18 = dict(_HOOKS, draw=draw_onnx_reduce, draw_honours=frozenset({"attrs"}))


@op("onnx_reduce_prod", version=1, numpy=numpy_onnx_reduce_prod, **_HOOKS18)
def oracle_onnx_reduce_prod(data, *, axes, keepdims, noop_with_empty_axes, dtypes=()):
    """The product over ``axes`` (1 over an empty set of values)."""
    reduce = _reduce_by(_product)
    return _reduced(reduce, _unsigned64(data, dtypes), axes, keepdims, noop_with_empty_axes)


@op("onnx_reduce_l2", version=1, numpy=numpy_onnx_reduce_l2, **_HOOKS18)
def oracle_onnx_reduce_l2(data, *, axes, keepdims, noop_with_empty_axes, dtypes=(),
                          open_elements=False):
    """sqrt(sum(x**2)) over ``axes`` (0 over an empty set of values; |x| over no axis: 'the
    non-reduction steps' still run); an integer type's where it is an integer."""
    found = integer_or_open("l2", data, axes, keepdims, noop_with_empty_axes, dtypes,
                            open_elements)
    return found if found is not None else \
        _reduced(_reduce_by(_l2), data, axes, keepdims, noop_with_empty_axes)


@op("onnx_reduce_log_sum_exp", version=1, accumulation_magnitude=log_sum_exp_magnitude,
    numpy=numpy_onnx_reduce_log_sum_exp,
    **_HOOKS18)
def oracle_onnx_reduce_log_sum_exp(data, *, axes, keepdims, noop_with_empty_axes, dtypes=(),
                                   open_elements=False):
    """log(sum(exp(x))) over ``axes`` (-inf over an empty set of values; x over no axis); an
    integer type's log(e**0) = 0 alone (see :func:`integer_or_open`)."""
    found = integer_or_open("log_sum_exp", data, axes, keepdims, noop_with_empty_axes, dtypes,
                            open_elements)
    return found if found is not None else \
        _reduced(_reduce_by(_log_sum_exp), data, axes, keepdims, noop_with_empty_axes)


# --- Integer ReduceMean, ReduceL2, ReduceLogSum, ReduceLogSumExp --------------------------------
# Their texts name a mean, a norm, a log and a log-sum-exp, whose value is seldom an integer, and
# give no rounding of it to the integer type T: the oracle gives the exact value where it is an
# integer that every reading of the text agrees on, and marks the rest open (``open_elements``,
# the specs' region ``oracle_marked``), with where a sum in T can overflow in some order.

def _exact_integer(kind: str, data, dims, info):
    """``(value, open)`` of one integer reduction ``kind`` over ``dims``, in Python integers."""
    x = np.asarray(data.astype(object))
    axis, n = tuple(dims), math.prod(data.shape[d] for d in dims)
    total = np.asarray(np.sum(x, axis=axis), object)
    spread = np.asarray(np.sum(np.abs(x), axis=axis), object)
    if kind == "mean":   # 'undefined' over an empty set; a fraction where n does not divide
        value = total // max(n, 1)
        opened = (spread > info.max) | (total % max(n, 1) != 0) | (n == 0)
    elif kind == "l2":   # body: ReduceSum(x * x) in T, Cast to float32 (exact below 2**24), Sqrt
        squares = np.asarray(np.sum(x * x, axis=axis), object)
        value = np.asarray(np.frompyfunc(math.isqrt, 1, 1)(squares), object)
        opened = (squares > min(info.max, 2 ** 24)) | (value * value != squares)
    elif kind == "log_sum":   # log 1 = 0 is the one integer; empty: 'undefined' for T
        value = total * 0
        opened = (spread > info.max) | (total != 1) | (n == 0)
    else:   # log_sum_exp, body Cast(double) Exp ReduceSum Log CastLike: log(e**0) = 0 exactly
        value = total * 0
        opened = (n != 1) | (total != 0)
    opened = np.asarray(opened, bool)
    return np.asarray(np.where(opened, 0, value)).astype(np.int64), opened


def integer_or_open(kind, data, axes, keepdims, noop, dtypes, open_elements):
    """The integer oracle of ``kind`` (None for a float type), or with ``open_elements`` the
    open mask (all False for a float type, whose regions are its spec's own)."""
    integer = bool(dtypes) and dtypes[0].startswith(("int", "uint"))
    if not integer and not open_elements:
        return None
    info = np.iinfo(np.dtype(dtypes[0])) if integer else None
    data = _unsigned64(data, dtypes)

    def reduce(x, dims):
        if not integer:
            return np.zeros(np.sum(x, axis=tuple(dims)).shape, bool)
        return _exact_integer(kind, x, dims, info)[1 if open_elements else 0]
    return _reduced(_reduce_by(reduce), data, axes, keepdims, noop)


# --- CumSum (opset 14) -----------------------------------------------------------------------

def _prefix_layout(size: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """How many terms the prefix sum at each position along the axis adds up."""
    counts = np.arange(size) + (0 if exclusive else 1)
    return counts[::-1] if reverse else counts


def cumulative_sum(x, axis: int, exclusive: bool, reverse: bool, cumsum=np.cumsum, identity=0):
    """ONNX CumSum (and CumProd) with ``cumsum`` (inclusive, forward, along an axis) as the
    building block: reverse runs from the end, exclusive leaves the element itself out
    (``identity``, 0 for a sum, where nothing is left)."""
    axis %= x.ndim
    if reverse:
        x = np.flip(x, axis)
    out = cumsum(x, axis=axis)
    if exclusive:   # shifted one place along the axis, 0 in front
        shifted = np.full_like(out, identity)
        before = tuple(slice(None, -1) if d == axis else slice(None) for d in range(x.ndim))
        after = tuple(slice(1, None) if d == axis else slice(None) for d in range(x.ndim))
        shifted[after] = out[before]
        out = shifted
    return np.flip(out, axis) if reverse else out


def feed_cum_sum(inputs, attrs, index):
    """The elements of ``x`` along the axis that out[index] adds up."""
    (x,) = inputs
    axis = attrs["axis"] % x.ndim
    size, at = x.shape[axis], index[axis]
    if attrs["reverse"]:
        picked = range(at + int(bool(attrs["exclusive"])), size)
    else:
        picked = range(0, at + 1 - int(bool(attrs["exclusive"])))
    line = tuple(slice(None) if d == axis else i for d, i in enumerate(index))
    return [x[line][list(picked)]]


def cum_sum_length(shapes, attrs):
    """The longest prefix: the axis' size (each position's own length is in its magnitude)."""
    return shapes[0][attrs["axis"] % len(shapes[0])]


def cum_sum_magnitude(inputs, attrs):
    """S for CumSum's accumulation model: each position's sum of magnitudes scaled by its
    prefix length k over the axis' size N, so that gamma_N * S <= gamma_k * sum|x_i| holds as
    gamma_k <= (k / N) gamma_N; the judge's n is N."""
    (x,) = inputs
    axis = attrs["axis"] % x.ndim
    size = x.shape[axis]
    counts = _prefix_layout(size, bool(attrs["exclusive"]), bool(attrs["reverse"]))
    scale = (counts / max(size, 1)).reshape([-1 if d == axis else 1 for d in range(x.ndim)])
    (sums,) = oracle_onnx_cum_sum(np.abs(x), **attrs)
    return (sums * scale,)


def onnx_cum_sum(case, graph):
    axis = graph.const("axis", case.attrs["axis"])   # a 0-d int64 tensor
    graph.node(graph.op_type, [graph.inputs[0], axis], exclusive=case.attrs["exclusive"],
               reverse=case.attrs["reverse"])


def numpy_cum_sum(x, *, axis, exclusive, reverse):
    return (cumulative_sum(x, axis, bool(exclusive), bool(reverse),
                           cumsum=lambda v, axis: np.cumsum(v, axis=axis, dtype=v.dtype)),)


@op("onnx_cum_sum", version=1, feeding=feed_cum_sum, accumulation_length=cum_sum_length,
    accumulation_magnitude=cum_sum_magnitude, onnx=onnx_cum_sum, numpy=numpy_cum_sum)
def oracle_onnx_cum_sum(x, *, axis, exclusive, reverse, dtypes=()):
    """ONNX CumSum: 'the j-th output element would be the sum of the first j elements' (with
    exclusive, of the first j - 1), in the opposite direction with reverse."""
    x = _unsigned64(x, dtypes)
    cumsum = np.cumsum if x.dtype.kind in "iu" else compensated_cumsum
    return (cumulative_sum(x, axis, bool(exclusive), bool(reverse), cumsum=cumsum),)
