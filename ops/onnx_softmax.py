"""ONNX Softmax, LogSoftmax and Hardmax at opset 13+: each normalises along one ``axis``
(negative counts from the end), the other dimensions independent.

The oracles follow the operators' texts (``onnx.defs.get_schema(name).doc``) and their function
bodies: Softmax is ``Exp(x - ReduceMax(x)) / ReduceSum(Exp(x - ReduceMax(x)))`` (the max shift
leaves the mathematical value unchanged and defines what infinities and NaN give: ``inf - inf``
is NaN), LogSoftmax is ``(x - max) - Log(ReduceSum(Exp(x - max)))`` and Hardmax is 1 at the
first maximum of each slice and 0 elsewhere.

Softmax and LogSoftmax are judged by the ``derived`` error model: the bounds below follow the
rounding errors of that evaluation in the output type (unit roundoff ``u``), with the ULP bounds
assumed for exp and log as the spec's constants. ``grown(k, u) = (1 - u)**-k - 1`` bounds the
relative error of a product or quotient of ``k`` factors ``(1 + delta)``, ``|delta| <= u``
(Higham 2002, Lemma 3.1, without its first-order simplification, so it stays finite for any
``k``); an ``exp`` within ``b`` ULPs has relative error ``<= 2 b u``, counted as ``2 b`` factors.
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op, region
from conform.ops.error_bounds import grown, underflow_term


def normalised_axes(rank: int, attrs: dict) -> tuple:
    """The axes normalised together: ONNX's one ``axis`` (negative counts from the end) or
    NNEF's ``axes``."""
    return (attrs["axis"] % rank,) if "axis" in attrs else tuple(attrs["axes"])


def _shifted(x: np.ndarray, axes: tuple) -> np.ndarray:
    """``x - max(x)`` over ``axes`` (NaN where the max is infinite or NaN, as the texts'
    function bodies give)."""
    return x - np.max(x, axis=axes, keepdims=True)


def softmax(x: np.ndarray, axes: tuple) -> np.ndarray:
    """exp(x - max) / sum(exp(x - max)) over ``axes``."""
    if x.size == 0:
        return x.copy()
    e = np.exp(_shifted(x, axes))
    return e / np.sum(e, axis=axes, keepdims=True)


def log_softmax(x: np.ndarray, axes: tuple) -> np.ndarray:
    """(x - max) - log(sum(exp(x - max))) over ``axes``."""
    if x.size == 0:
        return x.copy()
    d = _shifted(x, axes)
    return d - np.log(np.sum(np.exp(d), axis=axes, keepdims=True))


def _together(x: np.ndarray, axes, index) -> np.ndarray:
    """The elements of ``x`` normalised with element ``index``: every index along ``axes``, the
    others fixed (row-major)."""
    return x[tuple(slice(None) if d in axes else i for d, i in enumerate(index))].ravel()


def feed_softmax(inputs, axes, index):
    """Every element normalised together with out[index] (none when it is alone: a softmax of
    one element is 1, its log 0, whatever the element)."""
    together = _together(inputs[0], axes, index)
    return [together if together.size > 1 else together[:0]]


def feed_hardmax(inputs, axes, index):
    """The elements whose change moves out[index]: at the first maximum, the whole slice (any
    element raised above it takes the 1); elsewhere the element itself (raised, it takes the 1)
    and, where it is the runner-up, the maximum (lowered, it passes the 1 on)."""
    (x,) = inputs
    together = np.where(np.isnan(_together(x, axes, index)), -np.inf, _together(x, axes, index))
    if together.size <= 1:
        return [together[:0]]
    position = int(np.ravel_multi_index([index[d] for d in axes], [x.shape[d] for d in axes]))
    first = int(np.argmax(together))
    if position == first:
        return [_together(x, axes, index)]
    others = np.delete(together, [position, first])
    runner_up = others.size == 0 or together[position] > others.max()
    return [x[tuple(index)].reshape(1) if not runner_up
            else np.array([x[tuple(index)], _together(x, axes, index)[first]])]


def onnx_along_axis(case, graph):
    """One node with the case's ``axis`` attribute."""
    graph.node(graph.op_type, graph.inputs, axis=case.attrs["axis"])


def draw_along_axis(draw, kit, spec, dtype):
    """A shape of the spec's ranks (sides up to 6, or 0), the spec's attributes (the axis or
    axes), and the (first) normalised axis stretched up to 64 elements (within the array size cap), so that sums of
    many terms are drawn too."""
    low, high = kit.ranks(spec, default_min=1)
    shape = list(draw(kit.shape(min_rank=max(low, 1), max_rank=high,
                                min_side=draw(kit.st.sampled_from([1, 1, 1, 0])))))
    attrs = kit.attributes(draw, spec, {spec.inputs[0]: len(shape)})
    axis = normalised_axes(len(shape), attrs)[0]
    others = int(np.prod([side for k, side in enumerate(shape) if k != axis]))
    if shape[axis] and draw(kit.st.booleans()):
        shape[axis] = draw(kit.st.integers(shape[axis], max(shape[axis],
                                                            min(64, kit.MAX_ARRAY_SIZE // max(others, 1)))))
    return kit.Signature((dtype,), (tuple(shape),), attrs, dtype)


_DRAW = dict(draw=draw_along_axis, draw_honours=frozenset({"min_rank", "max_rank", "attrs"}))


def _sum_spread(weights, d, axes, k_each, u) -> np.ndarray:
    """``sigma``: the relative error bound of the sum ``s = sum_j exp(d_j)`` computed as the text
    does. Each term carries its own ``|d_j|`` (the rounded subtraction, through exp) plus
    ``k_each`` roundings (exp, and at most ``n - 1`` additions in any order); the sum's relative
    error is the weighted mean of its terms', with weights ``exp(d_j) / s``."""
    terms = np.where(weights == 0, 0.0, weights * grown(np.abs(d) + k_each, u))
    return np.sum(terms, axis=axes, keepdims=True)


def softmax_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """Softmax's absolute error bound per element.

    With ``d_i = x_i - max`` and ``y_i`` the exact result: ``exp(fl(d_i))`` is
    ``exp(d_i) (1 + delta)**|d_i|`` and ``exp`` adds ``2 b`` factors (``b``: ``exp_ulp``); the
    sum is ``s (1 + phi)``, ``|phi| <= sigma`` (:func:`_sum_spread`, ``n - 1`` additions); the
    division adds one rounding, or two where it is a multiplication by a rounded reciprocal
    (the text's formula does not exclude it). So ``|err_i| <= y_i ((1 + g_i) / (1 - sigma) - 1)``
    with ``g_i = grown(|d_i| + 2 b + 2, u)``, plus an absolute floor for exp results and
    quotients in the subnormal range, where ULPs are not relative: ``(b (n + 1) + 1)`` smallest
    subnormals over ``1 - sigma`` (the sum is at least ``exp(0) = 1``). ``sigma >= 1`` leaves
    no bound (inf)."""
    (x,), (y,) = inputs, outputs
    if x.size == 0:
        return (np.zeros(x.shape),)
    axes = normalised_axes(x.ndim, attrs)
    n, b = int(np.prod([x.shape[a] for a in axes])), constants["exp_ulp"]
    d = _shifted(x, axes)
    sigma = _sum_spread(y, d, axes, 2 * b + n - 1, u)
    shrink = np.where(sigma < 1, 1 - sigma, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = (1 + grown(np.abs(d) + 2 * b + 2, u)) / shrink - 1
        floor = underflow_term(b * (n + 1) + 1, out_dtype, ulps=1) / shrink
        bound = np.where(y == 0, 0.0, y * relative) + floor
    return (np.where(np.isnan(bound), 0.0, bound),)


def _numpy_shifted(x, axes):
    """x minus its maximum over ``axes`` (in x's type), as a NumPy user writes softmax."""
    return x - np.max(x, axis=axes, keepdims=True)


def _numpy_softmax(x, axes):
    if x.size == 0:
        return x.copy()
    e = np.exp(_numpy_shifted(x, axes))
    return e / np.sum(e, axis=axes, keepdims=True)


def _numpy_log_softmax(x, axes):
    if x.size == 0:
        return x.copy()
    d = _numpy_shifted(x, axes)
    return d - np.log(np.sum(np.exp(d), axis=axes, keepdims=True))


def _numpy_hardmax(x, axis):
    """1 at ``np.argmax`` along ``axis`` (its first maximum), 0 elsewhere, in x's type."""
    if x.size == 0:
        return x.copy()
    positions = np.arange(x.shape[axis]).reshape([-1 if d == axis else 1 for d in range(x.ndim)])
    return (positions == np.argmax(x, axis=axis, keepdims=True)).astype(x.dtype)


def _from_axis(x, axis):
    return tuple(range(axis % x.ndim, x.ndim))


def numpy_onnx_softmax(x, *, axis):
    """The numpy backend: ``e = np.exp(x - max); e / e.sum()`` along ``axis`` in x's type."""
    return _numpy_softmax(x, (axis % max(x.ndim, 1),))


def numpy_onnx_log_softmax(x, *, axis):
    """The numpy backend: ``d - np.log(np.sum(np.exp(d)))``, ``d = x - max``, in x's type."""
    return _numpy_log_softmax(x, (axis % max(x.ndim, 1),))


def numpy_onnx_hardmax(x, *, axis):
    """The numpy backend: one-hot of ``np.argmax`` along ``axis``."""
    return _numpy_hardmax(x, axis % max(x.ndim, 1))


def numpy_onnx_softmax_opset11(x, *, axis):
    """The numpy backend: Softmax-11 over every dimension from ``axis`` on."""
    return _numpy_softmax(x, _from_axis(x, axis))


def numpy_onnx_log_softmax_opset11(x, *, axis):
    """The numpy backend: LogSoftmax-11 over every dimension from ``axis`` on."""
    return _numpy_log_softmax(x, _from_axis(x, axis))


def numpy_onnx_hardmax_opset11(x, *, axis):
    """The numpy backend: Hardmax-11, x as rows of every dimension from ``axis`` on."""
    if x.size == 0:
        return x.copy()
    rows = x.reshape(int(np.prod(x.shape[:axis % x.ndim])), -1)
    return _numpy_hardmax(rows, 1).reshape(x.shape)


def _feed_one_axis(feed):
    return lambda inputs, attrs, index: feed(inputs, normalised_axes(inputs[0].ndim, attrs), index)


@op("onnx_softmax", version=1, numpy=numpy_onnx_softmax, feeding=_feed_one_axis(feed_softmax), **_DRAW,
    onnx=onnx_along_axis,
    error_bound=softmax_bound)
def oracle_onnx_softmax(x, *, axis):
    """exp(x - max) / sum(exp(x - max)) along ``axis``."""
    return (softmax(x, normalised_axes(x.ndim, {"axis": axis})),)


def log_softmax_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """LogSoftmax's absolute error bound per element.

    ``y_i = d_i - L`` with ``L = log s``. The sum is ``s (1 + phi)``, ``|phi| <= sigma`` as for
    Softmax, so ``log`` of it is off by at most ``-log(1 - sigma)``; ``log`` within ``b_log``
    ULPs adds ``2 b_log u |log s^|`` (plus ``b_log`` smallest subnormals where the logarithm is
    subnormal); ``fl(d_i)`` is off by ``u |d_i|``. With ``E`` the sum of these, the final
    subtraction gives ``E + u (|y_i| + E)``."""
    (x,), (y,) = inputs, outputs
    if x.size == 0:
        return (np.zeros(x.shape),)
    axis = normalised_axes(x.ndim, attrs)
    n, b_exp, b_log = int(np.prod([x.shape[a] for a in axis])), constants["exp_ulp"], constants["log_ulp"]
    d = _shifted(x, axis)
    sigma = _sum_spread(np.exp(y), d, axis, 2 * b_exp + n - 1, u)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_error = np.where(sigma < 1, -np.log1p(-np.minimum(sigma, 1)), np.inf)
        log_s = np.log(np.sum(np.exp(d), axis=axis, keepdims=True))
        error = (u * np.abs(d) + log_error + 2 * b_log * u * (np.abs(log_s) + log_error)
                 + underflow_term(1, out_dtype, ulps=b_log))
        bound = error + u * (np.abs(y) + error)
    return (np.where(np.isnan(bound), 0.0, bound),)


@op("onnx_log_softmax", version=1, numpy=numpy_onnx_log_softmax, feeding=_feed_one_axis(feed_softmax), **_DRAW,
    onnx=onnx_along_axis,
    error_bound=log_softmax_bound)
def oracle_onnx_log_softmax(x, *, axis):
    """(x - max) - log(sum(exp(x - max))) along ``axis``."""
    return (log_softmax(x, normalised_axes(x.ndim, {"axis": axis})),)


@region
def positive_infinity_in_slice(ctx) -> np.ndarray:
    """LogSoftmax results in a slice along ``attrs['axis']`` that holds +inf and no NaN, other
    than the +inf elements themselves: the doc's ``Log(Softmax(x))`` with Softmax's doc formula
    ``Exp(x) / ReduceSum(Exp(x))`` gives log(0) = -inf for a finite or -inf element (and NaN for
    +inf), while the function body's ``(x - max) - Log(ReduceSum(Exp(x - max)))`` gives NaN for
    every element (inf - inf is NaN). The two readings disagree there and only there."""
    x = ctx.inputs[0].astype(np.float64)
    if x.ndim == 0 or x.size == 0:
        return ctx.none()
    axis = ctx.attrs["axis"] % x.ndim
    slices = (np.isposinf(x).any(axis=axis, keepdims=True)
              & ~np.isnan(x).any(axis=axis, keepdims=True))
    return np.broadcast_to(slices, x.shape) & ~np.isposinf(x)


@op("onnx_hardmax", version=1, numpy=numpy_onnx_hardmax, feeding=_feed_one_axis(feed_hardmax), **_DRAW,
    onnx=onnx_along_axis)
def oracle_onnx_hardmax(x, *, axis):
    """1 at the first maximum of each slice along ``axis``, 0 elsewhere (-0 and +0 compare
    equal; a slice holding NaN is a region of the spec)."""
    out = np.zeros(x.shape)
    if x.size == 0:
        return (out,)
    axis %= x.ndim
    first = np.argmax(np.where(np.isnan(x), -np.inf, x), axis=axis)
    np.put_along_axis(out, np.expand_dims(first, axis), 1.0, axis=axis)
    return (out,)


# ------------------------------------------------------------------ opsets 11 and 12

def _coerced(attrs: dict, rank: int) -> dict:
    """Opsets 11-12 coerce x to 2-D at ``axis``: every dimension from it on is normalised."""
    return {"axes": list(range(attrs["axis"] % rank, rank))}


def _feed_from_axis(feed):
    return lambda inputs, attrs, index: feed(inputs, _coerced(attrs, inputs[0].ndim)["axes"], index)


_OPSET11 = dict(_DRAW, onnx=onnx_along_axis)


@op("onnx_softmax_opset11", version=1, numpy=numpy_onnx_softmax_opset11, **_OPSET11, feeding=_feed_from_axis(feed_softmax),
    error_bound=lambda inputs, attrs, outputs, **kw: softmax_bound(
        inputs, _coerced(attrs, inputs[0].ndim), outputs, **kw))
def oracle_onnx_softmax_opset11(x, *, axis):
    """Softmax-11: exp(x - max) / sum(exp(x - max)) over every dimension from ``axis`` on (x
    coerced to [a_0 * ... * a_{k-1}, a_k * ... * a_{n-1}])."""
    return (softmax(x, tuple(_coerced({"axis": axis}, x.ndim)["axes"])),)


@op("onnx_log_softmax_opset11", version=1, numpy=numpy_onnx_log_softmax_opset11, **_OPSET11, feeding=_feed_from_axis(feed_softmax),
    error_bound=lambda inputs, attrs, outputs, **kw: log_softmax_bound(
        inputs, _coerced(attrs, inputs[0].ndim), outputs, **kw))
def oracle_onnx_log_softmax_opset11(x, *, axis):
    """LogSoftmax-11: log of Softmax-11, over every dimension from ``axis`` on."""
    return (log_softmax(x, tuple(_coerced({"axis": axis}, x.ndim)["axes"])),)


@op("onnx_hardmax_opset11", version=1, numpy=numpy_onnx_hardmax_opset11, **_OPSET11, feeding=_feed_from_axis(feed_hardmax))
def oracle_onnx_hardmax_opset11(x, *, axis):
    """Hardmax-11: 1 at the first maximum (in row-major order) of every dimension from ``axis``
    on together, 0 elsewhere."""
    out = np.zeros(x.shape)
    if x.size == 0:
        return (out,)
    lead = x.shape[:axis % x.ndim]
    rows = np.where(np.isnan(x), -np.inf, x).reshape(int(np.prod(lead)), -1)
    flat = out.reshape(rows.shape)
    flat[np.arange(rows.shape[0]), np.argmax(rows, axis=1)] = 1.0
    return (flat.reshape(x.shape),)
