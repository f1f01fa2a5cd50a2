"""ONNX normalisations: LayerNormalization (opset 17), GroupNormalization (opset 21),
InstanceNormalization and BatchNormalization in inference mode.

Each standardises ``x`` over a set of axes, ``(x - mean) / sqrt(var + epsilon)``, then scales and
shifts it. The oracles compute that exactly in float64 (the population variance, ``epsilon`` as
the float32 attribute it is). The error bounds (``error_bound`` hooks, the ``derived`` model)
follow the computations the texts define:

* LayerNormalization and GroupNormalization: the function bodies cast ``x`` to the stash type
  (``stash_type`` 1: float32) and evaluate the variance in one pass, ``mean(x*x) - mean(x)**2``,
  while LayerNormalization's doc string spells two passes, ``mean((x - mean)**2)``; both are the
  text, so the bound is the larger of the two per element. Then ``sqrt``, a division (or the
  reciprocal and a product), a cast back to ``T`` and the scale and shift in ``T``.
* InstanceNormalization: only the formula; it is bounded as that evaluation in ``T``.
* BatchNormalization (training_mode=0): a per-channel element-wise formula in ``T``.

Where the evaluation the text defines fails (its squares or sums overflow the type they are
computed in, or the one-pass variance can cancel to a negative number) the bound is NaN: the
``unbounded_evaluation`` region of the specs.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from conform.ops.optional_inputs import by_name
from conform.op_registry import op
from conform.ops.error_bounds import (exceeds_max_finite, grown, judged_bound, reaches_max_finite,
                                      underflow_term)
from conform.dtypes import FLOAT_FORMATS, np_dtype


def _float32(value: float) -> float:
    """A float attribute as ONNX stores it (float32)."""
    return float(np.float32(value))


def standardized(x: np.ndarray, axes: tuple, epsilon: float):
    """``(mean, d, inv)``: the mean over ``axes`` (kept), ``x - mean`` and ``1 / sqrt(var + eps)``
    with the population variance."""
    mean = np.mean(x, axis=axes, keepdims=True)
    d = x - mean
    return mean, d, 1 / np.sqrt(np.mean(d * d, axis=axes, keepdims=True) + epsilon)


class StageOne(NamedTuple):
    """Error figures of a standardisation over some axes (see :func:`_stage_one_bound`)."""

    mean_error: np.ndarray     # absolute, per slice
    var_error: np.ndarray      # absolute, per slice
    inv_relative: np.ndarray   # relative error of 1 / sqrt(var + epsilon), per slice
    z: np.ndarray              # the exact standardised values
    z_error: np.ndarray        # absolute, per element
    unbounded: np.ndarray      # per slice: the evaluation bounds nothing there


def _stage_one_bound(x, axes, epsilon, stage: str, cast: int) -> StageOne:
    """Error figures of the standardisation evaluated in type ``stage`` (its inputs first
    rounded into it where ``cast``: when ``x``'s type is wider). The evaluation is unbounded
    where it overflows or the variance's error reaches var + eps. A rounding
    into the subnormal range is off by half a smallest subnormal (``tiny`` covers it), not by
    ``u`` relative; a subtraction whose result is subnormal is exact."""
    n = int(np.prod([x.shape[a] for a in axes]))
    fmt = FLOAT_FORMATS[stage]
    u, tiny = fmt.unit_roundoff, underflow_term(1, stage, ulps=1)
    mean, d, inv = standardized(x, axes, epsilon)
    m1 = np.mean(np.abs(x), axis=axes, keepdims=True)
    m2 = np.mean(x * x, axis=axes, keepdims=True)
    var = 1 / (inv * inv) - epsilon
    # the mean: n - 1 additions, the scaling by 1/n, the input cast (Higham §4.2)
    mean_error = grown(n + 1 + cast, u) * m1 + (1 + cast) * tiny
    # two passes: each deviation off by e_j, then n squares, n - 1 additions and the scaling
    e = mean_error * (1 + u) + u * np.abs(d) + cast * (u * np.abs(x) + tiny) * (1 + u)
    two_pass = np.mean(e * (2 * np.abs(d) + e), axis=axes, keepdims=True) \
        + grown(n + 1, u) * np.mean((np.abs(d) + e) ** 2, axis=axes, keepdims=True) + tiny
    # one pass: mean of squares, square of the mean, their difference
    mean_of_squares = grown(n + 2 + 2 * cast, u) * m2 + tiny + cast * 2 * tiny * m1
    square_of_mean = mean_error * (2 * np.abs(mean) + mean_error) \
        + u * (np.abs(mean) + mean_error) ** 2 + tiny
    one_pass = mean_of_squares + square_of_mean
    one_pass = one_pass + u * (var + one_pass)
    var_error = np.maximum(two_pass, one_pass)
    total = var + epsilon
    total_error = var_error + u * (total + var_error)
    relative = total_error / total
    overflow = reaches_max_finite(n * m2, stage, gamma_n=grown(n + 2, u))
    finite = np.all(np.isfinite(x), axis=axes, keepdims=True)   # else the result is NaN too
    unbounded = finite & (overflow | ~(relative < 1))
    sqrt_relative = relative / (1 + np.sqrt(np.maximum(1 - relative, 0.0)))
    shrink = np.where(unbounded, np.nan, 1 - sqrt_relative)
    inv_relative = (1 + grown(2, u)) / shrink - 1          # sqrt and reciprocal (or division)
    ratio = (1 + grown(3, u)) / shrink - 1                  # ... and the product by d
    z = d * inv
    z_error = inv * (np.abs(d) * ratio + e * (1 + ratio)) + tiny
    return StageOne(mean_error, var_error, inv_relative, z, z_error, unbounded)


def _stage_two_bound(z, z_error, scale, bias, dtype, u_stage):
    """The error of ``cast_T(z) * scale + bias`` evaluated in ``T`` (``dtype``), ``z`` off by
    ``z_error``; the cast rounds where ``T`` is narrower than the stage-one type. Each rounding
    is off by ``u_t`` relative, or half a smallest subnormal where its result is subnormal."""
    u_t, half = FLOAT_FORMATS[dtype].unit_roundoff, underflow_term(1, dtype)
    cast = 1 if u_t > u_stage else 0
    zt_error = z_error + cast * (u_t * (np.abs(z) + z_error) + half)
    product_error = np.abs(scale) * zt_error + u_t * np.abs(scale) * (np.abs(z) + zt_error) + half
    if bias is None:
        return product_error
    return product_error + u_t * (np.abs(z * scale + bias) + product_error) + half


def _judged_where(bound, expected, unbounded):
    """``bound`` where the exact result is finite, 0 where it is a special value, NaN (the
    ``unbounded_evaluation`` region) where the text's evaluation is ``unbounded``."""
    return judged_bound(bound, expected, unbounded=unbounded, special=0.0)


#: stash_type (an ONNX element type) -> the type stage one is computed in
_STASH = {1: "float32", 16: "bfloat16", 11: "float64"}


# ------------------------------------------------------------------ LayerNormalization

def draw_layer_norm(draw, kit, spec, dtype):
    """X of rank 1 to 4 (the last side stretched up to 32), the axis, epsilon and stash_type from
    the spec; Scale (and B, when present) shaped as X's normalised dimensions."""
    low, high = kit.ranks(spec, default_min=1)
    shape = list(draw(kit.shape(min_rank=max(low, 1), max_rank=high)))
    if draw(kit.st.booleans()):
        shape[-1] = draw(kit.st.integers(shape[-1], max(shape[-1], min(
            32, kit.MAX_ARRAY_SIZE // max(int(np.prod(shape[:-1])), 1)))))
    attrs = kit.attributes(draw, spec, {"x": len(shape)})
    normalised = tuple(shape[attrs["axis"] % len(shape):])
    absent = kit.absent_inputs(draw, spec)
    shapes = (tuple(shape), normalised) + (() if "b" in absent else (normalised,))
    return kit.Signature((dtype,) * len(shapes), shapes, kit.with_absent(attrs, absent), dtype)


def _feed_standardised(together, value, parameters):
    """Feeding of a standardised, scaled and shifted element: the values standardised together
    (none where alone: the deviation is then 0), its scale where the deviation of ``value`` is
    not 0, and the other ``parameters`` (its bias)."""
    deviation = value - together.mean() if together.size else 0.0
    return [together if together.size > 1 else together[:0],
            parameters[0] if deviation != 0 and together.size > 1 else None, *parameters[1:]]


def feed_layer_norm(inputs, axis: int, index):
    """Y[index]: the slice of x normalised with it, and Scale's (and B's) element for it."""
    x = inputs[0]
    axis %= x.ndim
    at = tuple(index[axis:])
    return _feed_standardised(x[tuple(index[:axis])].ravel(), x[tuple(index)],
                              [p[at].reshape(1) for p in inputs[1:]])


def _layer_axes(x, axis):
    return tuple(range(axis % x.ndim, x.ndim))


def onnx_layer_norm(case, graph):
    graph.node(graph.op_type, graph.inputs, axis=case.attrs["axis"],
               epsilon=case.attrs["epsilon"], stash_type=case.attrs["stash_type"])


def layer_norm_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """Per output (Y, Mean, InvStdDev) the absolute error bound of the function body's
    evaluation (see :func:`_stage_one_bound` and :func:`_stage_two_bound`)."""
    named = by_name(("x", "scale", "b"), inputs, attrs.get("absent_inputs", ()))
    x = named["x"]
    if x.size == 0:
        return tuple(np.zeros(np.shape(o)) for o in outputs)
    stash = FLOAT_FORMATS[_STASH[attrs["stash_type"]]]
    wider = FLOAT_FORMATS[dtypes[0]].unit_roundoff < stash.unit_roundoff
    mean_error, _, inv_relative, z, z_error, unbounded = _stage_one_bound(
        x, _layer_axes(x, attrs["axis"]), _float32(attrs["epsilon"]), _STASH[attrs["stash_type"]],
        int(wider))
    y_error = _stage_two_bound(z, z_error, named["scale"], named.get("b"), dtypes[0],
                               stash.unit_roundoff)
    bounds = y_error, mean_error, outputs[2] * inv_relative + underflow_term(
        1, _STASH[attrs["stash_type"]], ulps=1)
    return tuple(_judged_where(bound, out, unbounded) for bound, out in zip(bounds, outputs))


def numpy_layer_norm(x, scale, *rest, axis, epsilon, stash_type, absent_inputs=()):
    """The numpy backend's LayerNormalization as the text spells it: the standardisation (two
    passes) in the stash type, its result cast to T, then the scale and shift in T."""
    stash = np_dtype(_STASH[stash_type])
    axes = _layer_axes(x, axis)
    if x.size == 0:
        reduced = tuple(1 if k in axes else side for k, side in enumerate(x.shape))
        return x.copy(), np.zeros(reduced, stash), np.zeros(reduced, stash)
    mean, z, inv = _numpy_standardized(x, axes, epsilon, stash)
    y = z * scale
    return (y + rest[0] if rest else y), mean, inv


def _numpy_standardized(x, axes, epsilon, stash):
    """``(mean, z, inv)`` as NumPy computes them in the ``stash`` dtype (two passes), ``z``
    cast back to x's dtype."""
    xu = x.astype(stash)
    mean = np.mean(xu, axis=axes, keepdims=True, dtype=stash)
    d = xu - mean
    inv = 1 / np.sqrt(np.mean(d * d, axis=axes, keepdims=True, dtype=stash) + stash.type(epsilon))
    return mean, (d * inv).astype(x.dtype), inv


#: LayerNormalization's hooks, for stash_type 1 (float32 Mean and InvStdDev: U) and 16 (bfloat16)
LAYER_NORM_HOOKS = dict(
    draw=draw_layer_norm, numpy=numpy_layer_norm,
    draw_honours=frozenset({"min_rank", "max_rank", "attrs", "optional"}),
    feeding=lambda inputs, attrs, index: feed_layer_norm(inputs, attrs["axis"], index),
    onnx=onnx_layer_norm, error_bound=layer_norm_bound)


@op("onnx_layer_normalization", version=1, **LAYER_NORM_HOOKS)
def oracle_onnx_layer_normalization(x, scale, *rest, axis, epsilon, stash_type, absent_inputs=()):
    """Y = (x - mean) / sqrt(var + epsilon) * scale + b over the axes from ``axis`` on; Mean and
    InvStdDev with those axes kept (size 1)."""
    if x.size == 0:
        reduced = x.shape[:axis % x.ndim] + (1,) * (x.ndim - axis % x.ndim)
        return x.copy(), np.zeros(reduced), np.zeros(reduced)
    mean, d, inv = standardized(x, _layer_axes(x, axis), _float32(epsilon))
    y = d * inv * scale
    return (y + rest[0] if rest else y), mean, inv


oracle_onnx_layer_normalization_stash_bfloat16 = op(
    "onnx_layer_normalization_stash_bfloat16", version=1,
    **LAYER_NORM_HOOKS)(oracle_onnx_layer_normalization.oracle)


# ------------------------------------------------------------------ per-channel normalisations

def _per_channel(values: np.ndarray, rank: int) -> np.ndarray:
    """A (C,) tensor shaped to broadcast over dimension 1 of a rank-``rank`` X."""
    return values.reshape((1, -1) + (1,) * (rank - 2))


def _grouped(x: np.ndarray, groups: int) -> np.ndarray:
    """X (N, C, ...) as (N, groups, C / groups * prod(...)): the values normalised together."""
    return x.reshape(x.shape[0], groups, -1)


def draw_channels(draw, kit, spec, dtype):
    """X (N, C, spatial...) of the spec's ranks (at least 2), the spec's attributes, C a
    multiple of ``num_groups`` where the op has one, and one (C,) tensor per further input
    (scale, bias; BatchNormalization's mean and variance)."""
    low, high = kit.ranks(spec, default_min=3)
    rank = draw(kit.st.integers(max(low, 2), high))
    attrs = kit.attributes(draw, spec, {"x": rank})
    channels = attrs.get("num_groups", 1) * draw(kit.st.integers(1, 3))
    spatial = draw(kit.shape(min_rank=rank - 2, max_rank=rank - 2, max_side=5))
    batch = draw(kit.st.integers(1, max(1, min(3, kit.MAX_ARRAY_SIZE // max(
        channels * int(np.prod(spatial)), 1)))))
    shapes = ((batch, channels) + tuple(spatial),) + ((channels,),) * (len(spec.inputs) - 1)
    return kit.Signature((dtype,) * len(shapes), shapes, attrs, dtype)


def feed_channels(inputs, attrs, index):
    """Y[index]: the values of X normalised together with it (its instance and channel, or
    group of channels), and the per-channel scale and bias of its channel."""
    x = inputs[0]
    groups = attrs.get("num_groups", x.shape[1])
    per_group = x.shape[1] // groups
    group = index[1] // per_group
    together = x[index[0], group * per_group:(group + 1) * per_group].ravel()
    return _feed_standardised(together, x[tuple(index)],
                              [p[index[1]:index[1] + 1] for p in inputs[1:]])


def feed_batch_norm(inputs, attrs, index):
    """Y[index] in inference mode: the element itself and its channel's parameters, each where
    a change moves it (the mean and the element where scale is not 0, scale and var where the
    element is not at the mean)."""
    x, scale, b, mean, var = inputs
    c = index[1]
    moves = scale[c] != 0
    away = x[tuple(index)] != mean[c]
    return [x[tuple(index)].reshape(1) if moves else None, scale[c:c + 1] if away else None,
            b[c:c + 1], mean[c:c + 1] if moves else None,
            var[c:c + 1] if moves and away else None]


def feed_batch_norm_training(inputs, attrs, index):
    """Y[index] in training mode: its channel's values over the batch and spatial dimensions
    (the statistics), its scale and bias; input_mean and input_var feed only the running
    statistics."""
    x = inputs[0]
    return _feed_standardised(_channels_first(x)[index[1]], x[tuple(index)],
                              [p[index[1]:index[1] + 1] for p in inputs[1:3]]) + [None, None]


def _channel_norm_bound(x, scale, bias, groups, epsilon, stage, dtype, expected):
    """Y's bound for a normalisation over groups of channels (the whole instance-channel
    slice for InstanceNormalization), stage one in ``stage``, then cast to and scaled in T."""
    grouped = _grouped(x, groups)
    cast = int(FLOAT_FORMATS[dtype].unit_roundoff < FLOAT_FORMATS[stage].unit_roundoff)
    _, _, _, z, z_error, unbounded = _stage_one_bound(grouped, (2,), epsilon, stage, cast)
    rank = x.ndim
    y_error = _stage_two_bound(z.reshape(x.shape), z_error.reshape(x.shape),
                               _per_channel(scale, rank), _per_channel(bias, rank), dtype,
                               FLOAT_FORMATS[stage].unit_roundoff)
    unbounded = np.broadcast_to(unbounded, grouped.shape).reshape(x.shape)
    return (_judged_where(y_error, expected, unbounded),)


def _channel_norm(x, scale, bias, groups, epsilon):
    mean, d, inv = standardized(_grouped(x, groups), (2,), _float32(epsilon))
    rank = x.ndim
    return ((d * inv).reshape(x.shape) * _per_channel(scale, rank) + _per_channel(bias, rank),)


def onnx_with_attrs(case, graph):
    """One node with the case's attributes."""
    graph.node(graph.op_type, graph.inputs, **case.attrs)


_CHANNELS = dict(draw=draw_channels, draw_honours=frozenset({"min_rank", "max_rank", "attrs"}),
                 feeding=feed_channels, onnx=onnx_with_attrs)


def numpy_group_norm(x, scale, bias, *, num_groups, epsilon, stash_type):
    """The numpy backend's GroupNormalization as the text spells it: the standardisation in the
    stash type, cast to T, then the scale and shift in T."""
    _, z, _ = _numpy_standardized(_grouped(x, num_groups), (2,), epsilon,
                                  np_dtype(_STASH[stash_type]))
    return (z.reshape(x.shape) * _per_channel(scale, x.ndim) + _per_channel(bias, x.ndim),)


@op("onnx_group_normalization", version=1, **_CHANNELS, numpy=numpy_group_norm,
    error_bound=lambda inputs, attrs, outputs, *, dtypes, **_: _channel_norm_bound(
        *inputs, attrs["num_groups"], _float32(attrs["epsilon"]), _STASH[attrs["stash_type"]],
        dtypes[0], outputs[0]))
def oracle_onnx_group_normalization(x, scale, bias, *, num_groups, epsilon, stash_type):
    """y = scale * (x - mean) / sqrt(variance + epsilon) + bias, mean and variance per instance
    per group of C / num_groups channels; scale and bias per channel (opset 21)."""
    return _channel_norm(x, scale, bias, num_groups, epsilon)


def numpy_instance_norm(x, scale, b, *, epsilon):
    """The numpy backend: the standardisation over the spatial axes, then scale and shift, all
    in x's type (InstanceNormalization names no stash type); epsilon is the float32 attribute."""
    _, z, _ = _numpy_standardized(x, tuple(range(2, x.ndim)), _float32(epsilon), x.dtype)
    return z * _per_channel(scale, x.ndim) + _per_channel(b, x.ndim)


@op("onnx_instance_normalization", numpy=numpy_instance_norm, version=1, **_CHANNELS,
    error_bound=lambda inputs, attrs, outputs, *, dtypes, **_: _channel_norm_bound(
        *inputs, inputs[0].shape[1], _float32(attrs["epsilon"]), dtypes[0], dtypes[0], outputs[0]))
def oracle_onnx_instance_normalization(x, scale, b, *, epsilon):
    """y = scale * (x - mean) / sqrt(variance + epsilon) + B, mean and variance per instance per
    channel."""
    return _channel_norm(x, scale, b, x.shape[1], epsilon)


# ------------------------------------------------------------------ BatchNormalization

def batch_norm_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                     scale_first=False) -> tuple:
    """Y's bound for ``(x - mean) / sqrt(var + epsilon) * scale + B`` evaluated in T, per
    element: ``var + epsilon`` off by one rounding (and epsilon's own rounding into a T
    narrower than its float32 attribute), at most halved by sqrt; the subtraction, sqrt and
    division (or reciprocal and product) one rounding each; then :func:`_stage_two_bound`.
    ``scale_first``: the formula multiplies ``(x - mean)`` by scale before dividing (NNEF's),
    which is another intermediate that can overflow."""
    x, scale, b, mean, var = inputs
    rank = x.ndim
    fmt = FLOAT_FORMATS[dtypes[0]]
    epsilon = _float32(attrs["epsilon"])
    eps_error = fmt.unit_roundoff * epsilon if fmt.unit_roundoff > FLOAT_FORMATS["float32"].unit_roundoff else 0.0
    total = _per_channel(var + epsilon, rank)
    relative = (eps_error + u * (total + eps_error)) / total
    sqrt_relative = relative / (1 + np.sqrt(np.maximum(1 - relative, 0.0)))
    d = x - _per_channel(mean, rank)
    z = d / np.sqrt(total)
    scale_c = _per_channel(scale, rank)
    # where an intermediate overflows T (or z underflows to a zero an infinite scale makes NaN)
    # the formula evaluated in T gives no value though the exact result may be finite
    unbounded = np.isfinite(total) & ~(relative < 1)
    for value in (d, z, z * scale_c) + ((d * scale_c,) if scale_first else ()):
        unbounded = unbounded | exceeds_max_finite(value, dtypes[0])
    unbounded |= np.isinf(scale_c) & (z != 0) & (np.abs(z) < fmt.min_normal)
    z_error = np.abs(z) * ((1 + grown(4, u)) / (1 - np.minimum(sqrt_relative, 0.5)) - 1) \
        + underflow_term(1, dtypes[0], ulps=1)
    y_error = _stage_two_bound(z, z_error, scale_c, _per_channel(b, rank), dtypes[0], u)
    return (_judged_where(y_error, outputs[0], unbounded),)


def numpy_batch_norm(x, scale, b, input_mean, input_var, *, epsilon, momentum, training_mode):
    """The numpy backend: ``(x - mean) / np.sqrt(var + epsilon) * scale + B`` in x's type."""
    rank, eps = x.ndim, x.dtype.type(_float32(epsilon))
    return ((x - _per_channel(input_mean, rank)) / np.sqrt(_per_channel(input_var, rank) + eps)
            * _per_channel(scale, rank) + _per_channel(b, rank))


@op("onnx_batch_normalization", numpy=numpy_batch_norm, version=1, **{**_CHANNELS, "feeding": feed_batch_norm},
    error_bound=batch_norm_bound)
def oracle_onnx_batch_normalization(x, scale, b, input_mean, input_var, *, epsilon, momentum,
                                    training_mode):
    """Inference mode (training_mode=0): Y = (X - input_mean) / sqrt(input_var + epsilon) *
    scale + B, every parameter per channel (dimension 1)."""
    rank = x.ndim
    z = (x - _per_channel(input_mean, rank)) / np.sqrt(_per_channel(input_var, rank) + _float32(epsilon))
    return (z * _per_channel(scale, rank) + _per_channel(b, rank),)


# ------------------------------------------------------------------ BatchNormalization, training

def _channels_first(x: np.ndarray) -> np.ndarray:
    """X (N, C, ...) as (C, N * ...): each channel's values in one row."""
    return np.moveaxis(x, 1, 0).reshape(x.shape[1], -1)


def _training_stage(dtype: str) -> str:
    """'The computation of ReduceMean and ReduceVar uses float to avoid overflow for float16
    inputs': float32 for the 16-bit types, T otherwise."""
    wider = FLOAT_FORMATS[dtype].unit_roundoff < FLOAT_FORMATS["float32"].unit_roundoff
    return dtype if wider or dtype == "float32" else "float32"


def batch_norm_training_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """Per output (Y, running_mean, running_var): Y as a standardisation of each channel over
    the batch and spatial dimensions (:func:`_stage_one_bound` in the statistics' type, then
    :func:`_stage_two_bound`); each running statistic ``input * momentum + current * (1 -
    momentum)`` off by the current statistic's error times ``|1 - momentum|`` and three roundings
    per term (momentum or 1 - momentum, the product, the sum)."""
    x, scale, b, input_mean, input_var = inputs
    stage, dtype = _training_stage(dtypes[0]), dtypes[0]
    momentum = _float32(attrs["momentum"])
    u_t = FLOAT_FORMATS[dtype].unit_roundoff
    rows = _channels_first(x)
    one = _stage_one_bound(rows, (1,), _float32(attrs["epsilon"]), stage,
                           int(FLOAT_FORMATS[dtype].unit_roundoff < FLOAT_FORMATS[stage].unit_roundoff))
    z = np.moveaxis(one.z.reshape((x.shape[1], x.shape[0]) + x.shape[2:]), 0, 1)
    z_error = np.moveaxis(np.broadcast_to(one.z_error, rows.shape).reshape(
        (x.shape[1], x.shape[0]) + x.shape[2:]), 0, 1)
    y_error = _stage_two_bound(z, z_error, _per_channel(scale, x.ndim), _per_channel(b, x.ndim),
                               dtype, FLOAT_FORMATS[stage].unit_roundoff)
    unbounded = one.unbounded.ravel()
    current_mean, current_var = rows.mean(axis=1), rows.var(axis=1)

    def running(previous, current, current_error):
        kept, taken = np.abs(previous * momentum), np.abs(current * (1 - momentum))
        return (abs(1 - momentum) * current_error.ravel() * (1 + grown(3, u_t))
                + grown(3, u_t) * (kept + taken) + underflow_term(1, dtype, ulps=1))

    # T's evaluation also fails where a value it holds overflows T: the scaled standardised
    # value, or a current statistic cast to T before its running update
    big = FLOAT_FORMATS[dtype].max_finite
    y_unbounded = np.broadcast_to(_per_channel(unbounded, x.ndim), x.shape) \
        | exceeds_max_finite(z * _per_channel(scale, x.ndim), dtype)
    return (_judged_where(y_error, outputs[0], y_unbounded),
            _judged_where(running(input_mean, current_mean, one.mean_error), outputs[1],
                          unbounded | (np.abs(current_mean) > big)),
            _judged_where(running(input_var, current_var, one.var_error), outputs[2],
                          unbounded | (np.abs(current_var) > big)))


def numpy_batch_norm_training(x, scale, b, input_mean, input_var, *, epsilon, momentum,
                              training_mode):
    """The numpy backend's training-mode BatchNormalization as the text spells it: the
    statistics and the standardisation in float32 for 16-bit inputs (else in T), the scale and
    shift and the running statistics in T."""
    stage = np_dtype(_training_stage(str(x.dtype)))
    rows = _channels_first(x).astype(stage)
    mean = rows.mean(axis=1, dtype=stage)
    var = ((rows - mean[:, None]) ** 2).mean(axis=1, dtype=stage)
    rank = x.ndim
    z = ((x.astype(stage) - _per_channel(mean, rank))
         / np.sqrt(_per_channel(var, rank) + stage.type(np.float32(epsilon)))).astype(x.dtype)
    m = x.dtype.type(_float32(momentum))   # a FLOAT attribute: float32, as 1 - momentum below
    one_minus = x.dtype.type(1 - np.float32(momentum))
    return (z * _per_channel(scale, rank) + _per_channel(b, rank),
            input_mean * m + mean.astype(x.dtype) * one_minus,
            input_var * m + var.astype(x.dtype) * one_minus)


@op("onnx_batch_normalization_training", version=1,
    **{**_CHANNELS, "feeding": feed_batch_norm_training},
    numpy=numpy_batch_norm_training, error_bound=batch_norm_training_bound)
def oracle_onnx_batch_normalization_training(x, scale, b, input_mean, input_var, *, epsilon,
                                             momentum, training_mode):
    """Training mode (training_mode=1): Y = (X - current_mean) / sqrt(current_var + epsilon) *
    scale + B with the mean and population variance of each channel over every other
    dimension; running_mean = input_mean * momentum + current_mean * (1 - momentum), and
    running_var likewise."""
    rows = _channels_first(x)
    current_mean, current_var = rows.mean(axis=1), rows.var(axis=1)
    rank = x.ndim
    z = (x - _per_channel(current_mean, rank)) / np.sqrt(_per_channel(current_var, rank)
                                                          + _float32(epsilon))
    momentum = _float32(momentum)
    return (z * _per_channel(scale, rank) + _per_channel(b, rank),
            input_mean * momentum + current_mean * (1 - momentum),
            input_var * momentum + current_var * (1 - momentum))
