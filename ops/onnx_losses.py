"""ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, written from the operators'
texts (``onnx.defs.get_schema(name).doc``) and their function bodies.

NegativeLogLikelihoodLoss: ``input`` is ``(N, C, d1..dk)``, ``target`` ``(N, d1..dk)``;
``loss[n][d] = -input[n][c][d] * weight[c]`` with ``c = target[n][d]`` (weight all ones when
absent), and 0 'when target-value equals ignore_index'. Reduction ``none`` gives the loss,
``sum`` its sum, ``mean`` 'sum(loss) / sum(weight[target[n][d_1][d_2]...[d_k]]])'. The
function body (``Where(mask, 0, ...)``, ``ReduceSum(loss) / ReduceSum(weight_gather)``, with
``weight_gather`` 0 at ignored samples) divides by the weights (or the count) of the samples
not ignored; the doc's 'mean(loss), if "weight" is not provided' reads as dividing by every
sample: the two readings are the oracle's ``reading`` 0 and 1 (region ``reading_differs``).
Every target ignored under ``mean``: both give ``0 / 0``, NaN (reading 1 without weight: 0).

SoftmaxCrossEntropyLoss: ``y = Log(Softmax(scores))`` along the class axis (the function body:
LogSoftmax, whose own text is ``(x - max) - log(sum(exp(x - max)))``), then the same loss and
reductions on ``y`` (the body calls NegativeLogLikelihoodLoss); ``log_prob`` is ``y``.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op, region
from conform.ops._activation_bounds import half_ulp
from conform.ops._double_double import accurate_sum
from conform.ops.error_bounds import exceeds_max_finite, judged_bound, reaches_max_finite, sum_gamma, underflow_term
from conform.ops.indexing import index_type
from conform.ops.onnx_softmax import log_softmax, log_softmax_bound
from conform.ops.optional_inputs import ABSENT

REDUCTIONS = ("none", "sum", "mean")


# --- the loss, shared ---------------------------------------------------------------------------

def _picked(x, target, ignore_index):
    """``(values, kept, classes)``: x at each sample's class (0 where it is ignored), whether
    the sample is kept (not ignored), and its class (0 where ignored)."""
    target = np.asarray(target, np.int64)
    kept = np.ones(target.shape, bool) if ignore_index is None else target != ignore_index
    classes = np.where(kept, target, 0)
    values = np.take_along_axis(x, classes[:, None], axis=1)[:, 0] if x.size else \
        np.zeros(target.shape)
    return np.where(kept, values, 0.0), kept, classes


def _weights(weight, classes, kept):
    """Each sample's weight: ``weight[c]`` (ones without weight), 0 where ignored."""
    if weight is None:
        return kept.astype(np.float64)
    return np.where(kept, np.asarray(weight, np.float64)[classes] if weight.size else 0.0, 0.0)


def _reduce(loss, weights, weighted, reduction, reading):
    """The text's reductions of the per-sample ``loss`` (float64, double-double sums), the
    mean over the sum of the applied ``weights`` (ones for the kept samples where not
    ``weighted``)."""
    if reduction == "none":
        return loss
    total = accurate_sum(loss)
    if reduction == "sum":
        return total
    with np.errstate(divide="ignore", invalid="ignore"):
        if reading and not weighted:     # the doc's mean(loss): over every sample
            return total / loss.size if loss.size else np.float64(np.nan)
        return total / accurate_sum(weights)


def negative_log_likelihood(x, target, weight, *, reduction, ignore_index=None, reading=0):
    """NegativeLogLikelihoodLoss of log-probabilities ``x`` (see the module docstring)."""
    values, kept, classes = _picked(x, target, ignore_index)
    w = _weights(weight, classes, kept)
    with np.errstate(invalid="ignore"):
        loss = np.where(kept, -values * w, 0.0)
    if reading and weight is not None and ignore_index is not None and reduction == "mean":
        # 'sum(weight[target...]) for all samples': an ignored class index that is a class
        # counts its weight
        if 0 <= ignore_index < weight.size:
            w = w + np.where(kept, 0.0, weight[ignore_index])
    return _reduce(loss, w, weight is not None, reduction, reading)


def _unpack(inputs, absent_inputs):
    """(x, target, weight or None) from the present inputs."""
    return inputs[0], inputs[1], inputs[2] if len(inputs) > 2 else None


# --- drawing --------------------------------------------------------------------------------

def draw_loss(draw, kit, spec, dtype):
    """``(N, C, d1..dk)`` scores or log-probabilities (k of 0 to 2, C of 1 to 6), targets
    ``(N, d1..dk)`` of an index type the spec allows, a weight of C elements or none, the
    reduction from the spec's choices, and ignore_index absent, a class (1 in 4 cases) or
    outside ``[0, C)`` (-1 or -100)."""
    st = kit.st
    classes, batch = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    dims = list(draw(kit.shape(min_rank=0, max_rank=2, max_side=4)))
    while batch * classes * int(np.prod(dims)) > kit.MAX_ARRAY_SIZE:
        dims = dims[1:]
    attrs = kit.attributes(draw, spec, {})
    ignore = draw(st.sampled_from(["absent", "absent", "class", -1, -100]))
    if ignore == "class":
        attrs["ignore_index"] = draw(st.integers(0, classes - 1))
    elif ignore != "absent":
        attrs["ignore_index"] = ignore
    absent = kit.absent_inputs(draw, spec)
    shapes = ((batch, classes, *dims), (batch, *dims), (classes,))[:3 - len(absent)]
    dtypes = (dtype, index_type(draw, kit, spec, spec.inputs[1]), dtype)[:len(shapes)]
    return kit.Signature(dtypes, shapes, kit.with_absent(attrs, absent), dtype)


def values_loss(rng, inputs, attrs):
    """Targets in ``[0, C)``; with ignore_index, a share of them (none, a quarter, half or
    all) replaced by it."""
    x, target, *rest = inputs
    labels = rng.integers(0, x.shape[1], size=target.shape)
    if "ignore_index" in attrs:
        share = rng.choice([0.0, 0.25, 0.5, 1.0])
        labels = np.where(rng.random(target.shape) < share, attrs["ignore_index"], labels)
    return [x, labels.astype(target.dtype), *rest]


# --- error bound ---------------------------------------------------------------------------

def _term_errors(terms, errors, weights, out_dtype):
    """Each computed loss term's absolute error: ``errors`` (its log-probability's) times
    ``|weight|``, plus the product's rounding; without weight (``None``) the errors alone (a
    negation and a multiplication by 1 or 0 are exact)."""
    if weights is None:
        return errors
    carried = errors * np.abs(weights)
    return carried + half_ulp(np.abs(terms) + carried, out_dtype)


def _reduced_bound(terms, errors, weights, kept, reduction, y, *, out_dtype, u):
    """The bound of the reduction of the loss terms ``terms`` (exact, 0 where ignored), each
    computed within ``errors``: ``none`` those errors; ``sum`` in any order ``sum E_i +
    gamma_(k-1) (sum |t_i| + sum E_i)`` over the k kept terms (Higham 2002, §4.2; an added
    zero is exact, and so is a sum in the subnormal range, eq. 2.8); ``mean`` that sum's
    bound ``E_N`` and the weights' sum's ``E_D = gamma_(k-1) sum |w_i|`` (0 for a count,
    exact) give ``Q = (E_N + |y| E_D) / (|D| - E_D)``, and the division adds ``u (|y| + Q)``
    and half the smallest subnormal. NaN (region ``unbounded_evaluation``) where some order
    of the sum overflows, or where ``|D| <= E_D``."""
    if reduction == "none":
        return judged_bound(errors, y)
    k = int(kept.sum())
    g = sum_gamma(max(k - 1, 0), u)
    magnitude, carried = float(np.sum(np.abs(terms))), float(np.sum(errors))
    bound = carried + g * (magnitude + carried)
    unbounded = bool(reaches_max_finite(magnitude + carried, out_dtype, gamma_n=g))
    if reduction == "mean":
        total = float(np.sum(np.abs(weights))) if weights is not None else 0.0
        denominator = abs(float(accurate_sum(weights))) if weights is not None else k
        spread = g * total
        with np.errstate(divide="ignore", invalid="ignore"):
            quotient = np.float64(bound + abs(float(y)) * spread) / np.float64(denominator - spread)
        bound = quotient + u * (abs(float(y)) + quotient) + underflow_term(1, out_dtype)
        unbounded |= bool(denominator <= spread) and bool(np.isfinite(y))
    return judged_bound(np.float64(bound), y, unbounded=np.bool_(unbounded))


def _loss_bound(x, target, weight, attrs, y, errors, *, out_dtype, u):
    """The bound of a loss over log-probabilities ``x`` each within ``errors``."""
    values, kept, classes = _picked(x, target, attrs.get("ignore_index"))
    w = None if weight is None else _weights(weight, classes, kept)
    picked_errors = np.where(kept, _picked(errors, target, attrs.get("ignore_index"))[0], 0.0)
    with np.errstate(invalid="ignore"):
        terms = np.where(kept, -values * (1.0 if w is None else w), 0.0)
    term_errors = np.where(kept, _term_errors(terms, picked_errors, w, out_dtype), 0.0)
    return _reduced_bound(np.where(np.isfinite(terms), terms, 0.0), term_errors, w, kept,
                          attrs["reduction"], y, out_dtype=out_dtype, u=u)


def nll_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """NegativeLogLikelihoodLoss's bound: the input is exact, each weighted term one
    correctly rounded product (half an ULP), then the reduction (:func:`_reduced_bound`)."""
    x, target, weight = _unpack(inputs, attrs.get("absent_inputs", ()))
    return (_loss_bound(x, target, weight, attrs, outputs[0], np.zeros(x.shape),
                        out_dtype=out_dtype, u=u),)


def sce_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """SoftmaxCrossEntropyLoss's bounds: log_prob within LogSoftmax's own bound along the
    class axis (ops/onnx_softmax.py ``log_softmax_bound``), carried through the loss terms and
    the reduction; log_prob's own bound that one."""
    x, target, weight = _unpack(inputs, attrs.get("absent_inputs", ()))
    (errors,) = log_softmax_bound([x], {"axis": 1}, [outputs[1]], out_dtype=out_dtype, u=u,
                                  constants=constants, dtypes=dtypes)
    # a log-probability beyond T's range is infinite in T: its product with a small weight
    # (exact: finite) has no bound
    errors = np.where(exceeds_max_finite(outputs[1], out_dtype), np.nan,
                      np.where(np.isfinite(errors), errors, np.inf))
    loss = _loss_bound(outputs[1], target, weight, attrs, outputs[0], errors,
                       out_dtype=out_dtype, u=u)
    return loss, judged_bound(np.where(np.isnan(errors), np.inf, errors), outputs[1])


# --- feeding ----------------------------------------------------------------------------------

def _fed(inputs, attrs, index, whole_slice):
    """The input elements combined into out[index] (every sample's under a reduction): the
    kept samples' picked x (their whole class slice for SoftmaxCrossEntropyLoss, where C > 1)
    and the weights of their classes (under a weighted mean, only where two or more classes
    are kept: one class's weight cancels)."""
    x, target, weight = _unpack(inputs, attrs.get("absent_inputs", ()))
    _, kept, classes = _picked(x, target, attrs.get("ignore_index"))
    if attrs["reduction"] == "none":
        chosen = np.zeros(kept.shape, bool)
        chosen[tuple(index)] = kept[tuple(index)]
    else:
        chosen = kept
    slices = np.moveaxis(x, 1, -1)[chosen]
    if whole_slice:
        fed_x = slices.ravel() if x.shape[1] > 1 else slices[:0].ravel()
    else:
        fed_x = np.take_along_axis(slices, classes[chosen][:, None], axis=1).ravel()
    fed = [fed_x, target[:0].ravel()]
    if weight is not None:
        used = np.unique(classes[chosen])
        cancels = attrs["reduction"] == "mean" and used.size < 2
        fed.append(weight[:0] if cancels or (whole_slice and x.shape[1] < 2) else weight[used])
    return fed


def feed_nll(inputs, attrs, index):
    """Feeding of NegativeLogLikelihoodLoss (see :func:`_fed`)."""
    return _fed(inputs, attrs, index, whole_slice=False)


def feed_sce(inputs, attrs, index, output=0):
    """Feeding of SoftmaxCrossEntropyLoss: the loss as :func:`_fed`; log_prob[n, j, d] the
    class slice scores[n, :, d] (nothing where C = 1: the log-probability is 0)."""
    if output == 0:
        return _fed(inputs, attrs, index, whole_slice=True)
    scores = inputs[0]
    at = tuple(index[:1]) + (slice(None),) + tuple(index[2:])
    fed = [scores[at].ravel() if scores.shape[1] > 1 else scores[:0].ravel(), inputs[1][:0].ravel()]
    return fed + [inputs[2][:0]] if len(inputs) > 2 else fed


# --- lowering and the numpy backend ---------------------------------------------------------

def _loss_attrs(case) -> dict:
    """The node's attributes: reduction, and ignore_index where the case has one."""
    return {name: case.attrs[name] for name in ("reduction", "ignore_index") if name in case.attrs}


def onnx_nll(case, graph):
    """One NegativeLogLikelihoodLoss node (weight left out where absent)."""
    graph.node(graph.op_type, graph.inputs, **_loss_attrs(case))


def onnx_sce(case, graph):
    """One SoftmaxCrossEntropyLoss node with both outputs; or, where the case does not
    request log_prob, one node with the loss alone and a second giving log_prob."""
    if case.attrs["request_log_prob"]:
        graph.node(graph.op_type, graph.inputs, **_loss_attrs(case))
        return
    loss, log_prob = graph.outputs
    graph.node(graph.op_type, graph.inputs, [loss], **_loss_attrs(case))
    graph.node(graph.op_type, graph.inputs, ["loss_beside", log_prob], **_loss_attrs(case))


def _numpy_loss(x, target, weight, reduction, ignore_index):
    """The loss in x's type with NumPy: the picked values negated and weighted, ignored
    samples 0, reduced by ``np.sum`` (and divided by the weights' ``np.sum``)."""
    kept = np.ones(target.shape, bool) if ignore_index is None else target != ignore_index
    classes = np.where(kept, target, 0).astype(np.int64)
    picked = np.take_along_axis(x, classes[:, None], axis=1)[:, 0]
    zero = x.dtype.type(0)
    w = np.where(kept, x.dtype.type(1) if weight is None else weight[classes], zero)
    loss = np.where(kept, -picked * w, zero)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.sum(loss, dtype=x.dtype)
    return np.sum(loss, dtype=x.dtype) / np.sum(w, dtype=x.dtype)


def numpy_nll(x, target, *weight, reduction, ignore_index=None, absent_inputs=()):
    """The numpy backend: :func:`_numpy_loss`."""
    return _numpy_loss(x, target, weight[0] if weight else None, reduction, ignore_index)


def numpy_sce(scores, labels, *weights, reduction, request_log_prob, ignore_index=None,
              absent_inputs=()):
    """The numpy backend: ``d - np.log(np.sum(np.exp(d)))``, ``d = x - max`` along the class
    axis, then :func:`_numpy_loss`."""
    d = scores - np.max(scores, axis=1, keepdims=True) if scores.size else scores
    log_prob = d - np.log(np.sum(np.exp(d), axis=1, keepdims=True)) if scores.size else d
    loss = _numpy_loss(log_prob, labels, weights[0] if weights else None, reduction, ignore_index)
    return loss, log_prob


def from_onnx_sce(inputs, attrs, opset):
    """A SoftmaxCrossEntropyLoss node as a case: scores, labels and weights where given, the
    node's reduction and ignore_index; ``request_log_prob`` chooses the lowering (one node
    giving both outputs, or two), not a value, so it is 1 (the node's requested outputs are
    the ones judged)."""
    present = [x for x in inputs[:3] if x is not None]
    case_attrs = {"reduction": attrs["reduction"], "request_log_prob": 1}
    if "ignore_index" in attrs:
        case_attrs["ignore_index"] = attrs["ignore_index"]
    if len(inputs) < 3 or inputs[2] is None:
        case_attrs[ABSENT] = ["weights"]
    return present, case_attrs


_LOSS = dict(draw=draw_loss, draw_honours=frozenset({"attrs", "optional"}), values=values_loss)


@op("onnx_negative_log_likelihood_loss", version=1, numpy=numpy_nll, onnx=onnx_nll,
    error_bound=nll_bound, feeding=feed_nll, **_LOSS)
def oracle_onnx_negative_log_likelihood_loss(x, target, *weight, reduction, ignore_index=None,
                                             absent_inputs=(), reading=0):
    """NegativeLogLikelihoodLoss: ``-input[n][c][d] * weight[c]``, 0 where target equals
    ignore_index, reduced (none, sum, mean: see the module docstring)."""
    return (negative_log_likelihood(x, target, weight[0] if weight else None,
                                    reduction=reduction, ignore_index=ignore_index,
                                    reading=reading),)


@region
def positive_infinity_in_class_slice(ctx) -> np.ndarray:
    """SoftmaxCrossEntropyLoss results fed by a class slice (axis 1 of ``scores``) that holds
    +inf and no NaN: log_prob = LogSoftmax(scores) is -inf (doc: Log(Softmax), Softmax's doc
    formula Exp(x) / ReduceSum(Exp(x))) or NaN (the function body's x - max) for the slice's
    other elements, so the losses read from it differ too (every element of a reduced loss).
    A loss whose label is the +inf class itself is NaN both ways; it is left in the region."""
    scores = ctx.inputs[0].astype(np.float64)
    slices = np.isposinf(scores).any(axis=1, keepdims=True) & ~np.isnan(scores).any(axis=1, keepdims=True)
    if ctx.expected.shape == scores.shape:   # log_prob
        return np.broadcast_to(slices, scores.shape) & ~np.isposinf(scores)
    if ctx.expected.ndim == 0:   # a loss reduced over every sample
        return np.full((), bool(slices.any()))
    return np.squeeze(slices, 1)   # reduction none: one loss per sample


@op("onnx_softmax_cross_entropy_loss", version=1, numpy=numpy_sce, onnx=onnx_sce,
    error_bound=sce_bound, feeding=feed_sce, from_onnx=from_onnx_sce, **_LOSS)
def oracle_onnx_softmax_cross_entropy_loss(scores, labels, *weights, reduction, request_log_prob,
                                           ignore_index=None, absent_inputs=(), reading=0):
    """SoftmaxCrossEntropyLoss: ``y = Log(Softmax(scores))`` along the class axis (LogSoftmax's
    text), the loss of NegativeLogLikelihoodLoss on ``y``; outputs the loss and ``y``."""
    y = log_softmax(scores, (1,))
    return (negative_log_likelihood(y, labels, weights[0] if weights else None,
                                    reduction=reduction, ignore_index=ignore_index,
                                    reading=reading), y)
