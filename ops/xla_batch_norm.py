"""XLA BatchNormInference and BatchNormTraining (operation semantics,
seeds/004_c11ff90b720ca9d5.txt, "BatchNormInference", "BatchNormTraining").

For each feature l (index ``feature_index`` of the operand) the text normalises over every other
dimension: ``y = scale_l (x - mean_l) / sqrt(var_l + epsilon) + offset_l``; Training computes
``mean_l`` and the population variance ``var_l = mean((x - mean_l)**2)`` over the batch and
spatial dimensions and returns ``(output, batch_mean, batch_var)``; Inference takes them as
inputs. ``epsilon`` is a float (f32) attribute.

The text fixes no evaluation, so the bounds (``derived``) cover the formula in the operand's
type T with the product of ``x - mean``, the reciprocal square root and ``scale`` in any order,
``1 / sqrt(var + epsilon)`` evaluated as a square root and a division (or reciprocal), or as an
rsqrt within ``rsqrt_ulp`` ULPs (the spec's constant), and the statistics as sums in any order,
in one pass or two (ops/onnx_normalization.py ``_stage_one_bound``; Higham 2002, Lemma 3.1,
§4.2). Where an intermediate overflows T or ``var + epsilon`` is within its own error of zero the
bound is NaN: the region ``unbounded_evaluation``.

jax.lax has no batch-norm function: the lax hook binds a primitive lowered to StableHLO's own
``batch_norm_inference`` / ``batch_norm_training`` op, so XLA compiles the op itself.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op
from conform.ops._batch_norm_exact import Refiner, all_float64, feature_rows, population_statistics
from conform.ops.onnx_normalization import _float32, _judged_where, _stage_one_bound
from conform.ops.narrow_floats import admitting_wider_evaluation, xla_cpu_six_bit_refusal
from conform.ops.onnx_softmax import grown


def draw_batch_norm(draw, kit, spec, dtype):
    """An operand of the spec's ranks, ``feature_index`` among its dimensions (the spec's
    attribute domains), and one (C,) array per other input, C the feature dimension's size."""
    low, high = kit.ranks(spec)
    shape = draw(kit.shape(min_rank=low, max_rank=high, max_side=5))
    attrs = kit.attributes(draw, spec, {name: len(shape) for name in spec.inputs})
    features = (shape[attrs["feature_index"]],)
    return kit.Signature((dtype,) * len(spec.inputs),
                         (shape,) + (features,) * (len(spec.inputs) - 1), attrs, dtype)


def _per_feature(values: np.ndarray, rank: int, feature: int) -> np.ndarray:
    """A (C,) array shaped to broadcast along dimension ``feature`` of a rank-``rank`` operand."""
    shape = [1] * rank
    shape[feature] = -1
    return values.reshape(shape)


def _rows(x: np.ndarray, feature: int) -> np.ndarray:
    """The operand as (C, everything else): each feature's values in one row."""
    return np.moveaxis(x, feature, 0).reshape(x.shape[feature], -1)


def _normalized(x, scale, offset, mean, var, epsilon, feature):
    rank = x.ndim
    z = (x - _per_feature(mean, rank, feature)) / np.sqrt(_per_feature(var, rank, feature)
                                                          + _float32(epsilon))
    return z * _per_feature(scale, rank, feature) + _per_feature(offset, rank, feature)


def variance_total(variance, epsilon, dtype):
    """``(total, total_error)``: ``variance + epsilon`` of an exact (input) variance and its
    error evaluated in ``dtype``: one rounding, plus epsilon's own into a type narrower than f32."""
    fmt = FLOAT_FORMATS[dtype]
    epsilon = _float32(epsilon)
    eps_error = fmt.unit_roundoff * epsilon if fmt.unit_roundoff > 2.0 ** -24 else 0.0
    total = variance + epsilon
    return total, eps_error + fmt.unit_roundoff * (np.abs(total) + eps_error)


def rsqrt_relative(total, total_error, u, rsqrt_ulp):
    """``(r, relative_r, relative)``: ``r = 1 / sqrt(total)``, the relative error of its
    evaluation from ``total`` off by ``total_error`` (relative error ``relative``, halved by the
    square root) as an rsqrt within ``rsqrt_ulp`` ULPs (within ``2 * rsqrt_ulp`` u, which also
    covers a square root and a division)."""
    relative = total_error / total
    sqrt_relative = relative / (1 + np.sqrt(np.maximum(1 - relative, 0.0)))
    inv_relative = (1 + 2 * rsqrt_ulp * u) / (1 - np.minimum(sqrt_relative, 0.5)) - 1
    return 1 / np.sqrt(total), inv_relative, relative


def _output_bound(d, e, total, total_error, scale, y, dtype, rsqrt_ulp, operands_finite):
    """|error| of ``d^ * r^ * scale + offset`` in T: ``d^`` off by ``e``, ``total = var +
    epsilon`` off by ``total_error`` before its reciprocal square root ``r`` (within ``2 *
    rsqrt_ulp`` u, which also covers a square root and a division), two products in any order
    and the final addition (one rounding each, or half a smallest subnormal below the normal
    range). NaN where the evaluation bounds nothing (an intermediate overflows T or, in some order
    of the products, falls below its normal range, or ``total`` is within its error of zero).
    ``operands_finite``: where x and the mean are finite (an exact d beyond float64, which a
    float64 T gives, is then an overflow, not an infinite operand)."""
    fmt = FLOAT_FORMATS[dtype]
    u, half = fmt.unit_roundoff, fmt.min_subnormal / 2
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        r, inv_relative, relative = rsqrt_relative(total, total_error, u, rsqrt_ulp)
        grow = (1 + inv_relative) * (1 + grown(2, u))
        product_error = np.abs(scale) * r * (np.abs(d) * (grow - 1) + e * grow) + 3 * half
        bound = product_error + u * (np.abs(y) + product_error) + half
        factors = (np.abs(d) + e, r * (1 + inv_relative), np.abs(scale))
        overflow = ~(factors[0] <= fmt.max_finite)   # any product of two or three, any order
        for one, two in ((0, 1), (0, 2), (1, 2)):
            overflow = overflow | ~(factors[one] * factors[two] * (1 + u) <= fmt.max_finite)
        overflow = overflow | ~(factors[0] * factors[1] * factors[2] * grow <= fmt.max_finite)
        # below the normal range a rounding is off by an absolute amount that a later product
        # can amplify (a flushing backend loses the value): Higham's model (§2.2) does not hold
        # (an infinite result too: a factor flushed to zero makes 0 * inf = NaN)
        exact = (np.abs(d), r, np.abs(scale))
        below = np.zeros(np.shape(d * r * scale), bool)
        for value in [exact[0]] + [exact[one] * exact[two] for one, two in ((0, 1), (0, 2), (1, 2))]:
            below = below | ((value > 0) & (value < fmt.min_normal))
        finite = operands_finite & np.isfinite(r) & np.isfinite(scale)
    unbounded = np.isfinite(total) & ~(relative < 1) | (finite & overflow) | below
    return bound, unbounded


def inference_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """The output's bound for BatchNormInference: the inputs are exact, so ``x - mean`` is one
    rounding and ``var + epsilon`` one (plus epsilon's into a T narrower than f32)."""
    x, scale, offset, mean, var = inputs
    rank, feature = x.ndim, attrs["feature_index"]
    fmt = FLOAT_FORMATS[dtypes[0]]
    total, total_error = variance_total(_per_feature(var, rank, feature), attrs["epsilon"],
                                        dtypes[0])
    d = x - _per_feature(mean, rank, feature)
    e = fmt.unit_roundoff * np.abs(d) + fmt.min_subnormal / 2
    bound, unbounded = _output_bound(d, e, total, total_error, _per_feature(scale, rank, feature),
                                     outputs[0], dtypes[0], constants["rsqrt_ulp"],
                                     np.isfinite(x) & np.isfinite(_per_feature(mean, rank, feature)))
    return (_judged_where(bound, outputs[0], unbounded),)


def training_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """Per output (output, batch_mean, batch_var): the statistics' errors from
    ``_stage_one_bound`` (sums of n terms in any order, one pass or two, in T), then the output
    as for inference with ``x - mean`` off by the mean's error too."""
    x, scale, offset = inputs
    rank, feature, dtype = x.ndim, attrs["feature_index"], dtypes[0]
    fmt = FLOAT_FORMATS[dtype]
    epsilon = _float32(attrs["epsilon"])
    one = _stage_one_bound(_rows(x, feature), (1,), epsilon, dtype, 0)
    mean, var = outputs[1], outputs[2]
    mean_error, var_error = one.mean_error.ravel(), one.var_error.ravel()
    total = _per_feature(var, rank, feature) + epsilon
    total_error = _per_feature(var_error, rank, feature) + fmt.unit_roundoff * (
        np.abs(total) + _per_feature(var_error, rank, feature)) \
        + (fmt.unit_roundoff * epsilon if fmt.unit_roundoff > 2.0 ** -24 else 0.0)
    d = x - _per_feature(mean, rank, feature)
    m_error = _per_feature(mean_error, rank, feature)
    e = m_error + fmt.unit_roundoff * (np.abs(d) + m_error) + fmt.min_subnormal / 2
    bound, unbounded = _output_bound(d, e, total, total_error, _per_feature(scale, rank, feature),
                                     outputs[0], dtype, constants["rsqrt_ulp"],
                                     np.isfinite(x) & np.isfinite(_per_feature(mean, rank, feature)))
    stats_unbounded = one.unbounded.ravel()
    unbounded = unbounded | _per_feature(stats_unbounded, rank, feature)
    return (_judged_where(bound, outputs[0], unbounded),
            _judged_where(mean_error, mean, stats_unbounded),
            _judged_where(var_error, var, stats_unbounded))


def lax_batch_norm(lax, attrs):
    """A jax primitive lowered to StableHLO's ``batch_norm_inference`` (five operands),
    ``batch_norm_training`` (three operands; three results) or, where the binding's params say
    ``gradient``, ``batch_norm_grad`` (five operands; three results) with the case's
    ``epsilon`` (f32) and ``feature_index``: XLA compiles the op itself (jax.lax has no batch-norm function)."""
    import jax
    from jax.extend.core import Primitive
    from jax.extend.mlir.dialects import stablehlo
    from jax.interpreters import mlir

    epsilon, feature = float(np.float32(attrs["epsilon"])), int(attrs["feature_index"])

    def make(name, op_class, stats):
        prim = Primitive(name)
        prim.multiple_results = stats

        def shapes(x, *rest):
            out = jax.core.ShapedArray(x.shape, x.dtype)
            return [out, *(jax.core.ShapedArray((x.shape[feature],), x.dtype),) * 2] if stats else out

        prim.def_abstract_eval(shapes)
        mlir.register_lowering(prim, lambda ctx, *args: op_class(
            *args, epsilon, feature).results)
        return prim

    inference = make("xla_batch_norm_inference", stablehlo.BatchNormInferenceOp, False)
    training = make("xla_batch_norm_training", stablehlo.BatchNormTrainingOp, True)
    if attrs.get("gradient"):   # BatchNormGrad's binding params: its five operands, three results
        gradient = make("xla_batch_norm_grad", stablehlo.BatchNormGradOp, True)
        return jax.jit(lambda *inputs: gradient.bind(*inputs))
    # jitted: a primitive without an evaluation rule runs only compiled (a repro calls it eagerly)
    return jax.jit(lambda *inputs: (inference if len(inputs) == 5 else training).bind(*inputs))


def numpy_batch_norm_inference(x, scale, offset, mean, variance, *, epsilon, feature_index):
    """The numpy backend: the text's formula in x's type, ``scale * (x - mean) / sqrt(var +
    epsilon) + offset`` per feature."""
    rank, eps = x.ndim, x.dtype.type(_float32(epsilon))
    per = lambda v: _per_feature(v, rank, feature_index)   # noqa: E731
    return per(scale) * (x - per(mean)) / np.sqrt(per(variance) + eps) + per(offset)


def numpy_batch_norm_training(x, scale, offset, *, epsilon, feature_index):
    """The numpy backend: the mean and the population variance over every dimension but the
    feature's (``np.mean``, two passes), then the formula, all in x's type."""
    others = tuple(d for d in range(x.ndim) if d != feature_index)
    mean = np.mean(x, axis=others, dtype=x.dtype)
    var = np.mean((x - np.expand_dims(mean, others)) ** 2, axis=others, dtype=x.dtype)
    return (numpy_batch_norm_inference(x, scale, offset, mean, var, epsilon=epsilon,
                                       feature_index=feature_index), mean, var)


def _feed(inputs, attrs, index):
    """out[index]: the operand's values of its feature (the statistics) and the per-feature
    inputs of that feature; in training, scale does not feed an element at its feature's mean
    (x - mean is 0), nor the operand one whose feature has one element (its own mean)."""
    feature = index[attrs["feature_index"]]
    row = _rows(inputs[0], attrs["feature_index"])[feature]
    params = [p[feature:feature + 1] for p in inputs[1:]]
    if len(inputs) == 3 and row.size == 1:
        return [None, None, params[1]]
    if len(inputs) == 3 and inputs[0][tuple(index)] == row.mean():   # 0 times scale
        params[0] = None
    return [row] + params


def lax_batch_norm_refuses(inputs, attrs):
    """The 6-bit float types, refused before tracing (ops/narrow_floats.py)."""
    return xla_cpu_six_bit_refusal(inputs, "batch normalisation")


_HOOKS = dict(draw=draw_batch_norm, draw_honours=frozenset({"min_rank", "max_rank", "attrs"}),
              lax=lax_batch_norm, lax_refuses=lax_batch_norm_refuses)


@op("batch_norm_inference", version=1,
    error_bound=admitting_wider_evaluation(inference_bound),
    numpy=numpy_batch_norm_inference,
    feeding=lambda inputs, attrs, index: [inputs[0][tuple(index)].reshape(1)] + _feed(
        inputs, attrs, index)[1:], **_HOOKS)
def oracle_batch_norm_inference(x, scale, offset, mean, variance, *, epsilon, feature_index,
                                dtypes=None):
    """BatchNormInference: scale_l (x - mean_l) / sqrt(variance_l + epsilon) + offset_l with the
    given mean and variance, l the element's index along ``feature_index`` (float64 operands:
    beyond float64, ops/_batch_norm_exact.py)."""
    fast = _normalized(x, scale, offset, mean, variance, epsilon, feature_index)
    if not all_float64(dtypes):
        return (fast,)
    from flint import arb
    eps = _float32(epsilon)
    per = [np.broadcast_to(_per_feature(v, x.ndim, feature_index), x.shape)
           for v in (scale, offset, mean, variance)]
    refiner = Refiner(fast)
    refiner.arb_rows(0, list(np.ndindex(x.shape)),
                     lambda x, s, o, m, v: s * (x - m) / (v + arb(eps)).sqrt() + o,
                     np.stack([x] + per, axis=-1).reshape(-1, 5).tolist())
    return refiner.outputs()


@op("batch_norm_training", version=1,
    error_bound=admitting_wider_evaluation(training_bound),
    numpy=numpy_batch_norm_training, feeding=_feed, **_HOOKS)
def oracle_batch_norm_training(x, scale, offset, *, epsilon, feature_index, dtypes=None):
    """BatchNormTraining: per feature l the mean and population variance over every other
    dimension, then scale_l (x - mean_l) / sqrt(var_l + epsilon) + offset_l; returns
    (output, batch_mean, batch_var) (float64 operands: beyond float64,
    ops/_batch_norm_exact.py)."""
    rows = _rows(x, feature_index)
    mean = rows.mean(axis=1)
    var = ((rows - mean[:, None]) ** 2).mean(axis=1)
    fast = (_normalized(x, scale, offset, mean, var, epsilon, feature_index), mean, var)
    if not all_float64(dtypes):
        return fast
    from flint import arb
    eps, refiner = _float32(epsilon), Refiner(*fast)
    rows, positions = feature_rows(x, feature_index)
    for feature, row in enumerate(rows):
        if not (row.size and np.isfinite(row).all()):
            continue
        exact_mean, exact_var = population_statistics(row)
        refiner.rational(1, feature, exact_mean)
        refiner.rational(2, feature, exact_var)
        refiner.arb_rows(
            0, [tuple(p) for p in positions[feature]],
            lambda x, s, o: s * (x - arb(exact_mean)) / (arb(exact_var) + arb(eps)).sqrt() + o,
            [[v, scale[feature], offset[feature]] for v in row.tolist()])
    return refiner.outputs()

