"""NNEF softmax and batch_normalization (NNEF 1.0, the standard's compound fragments):

    fragment softmax( x: tensor<scalar>, axes: integer[] = [1] ) -> ( y: tensor<scalar> )
    { m = max_reduce(x, axes = axes); e = exp(x - m); y = e / sum_reduce(e, axes = axes); }

    fragment batch_normalization( input, mean, variance, offset, scale, epsilon: scalar )
    { output = offset + scale * (input - mean) / sqrt(variance + epsilon); }

Softmax normalises over several axes at once (each in [0, rank)); batch_normalization's
parameters broadcast with their leading dimensions aligned (NNEF's shapes), drawn here as
``[1, C]`` against an input ``[N, C, ...]``. The oracles and derived bounds are the ONNX ops'
(ops/onnx_softmax.py, ops/onnx_normalization.py), which compute the same formulas with the same
roundings: the max shift, exp, a sum and a division; a subtraction, a product, a sum under a
square root, the root, a division and a sum.
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.onnx_normalization import batch_norm_bound, draw_channels, feed_batch_norm
from conform.ops.onnx_softmax import _DRAW, _numpy_softmax, feed_softmax, softmax, softmax_bound


def numpy_nnef_softmax(x, *, axes):
    """The numpy backend: ``e = np.exp(x - max); e / e.sum()`` over ``axes`` in x's type."""
    return _numpy_softmax(x, tuple(axes))


@op("nnef_softmax", numpy=numpy_nnef_softmax, version=1, **_DRAW, error_bound=softmax_bound,
    feeding=lambda inputs, attrs, index: feed_softmax(inputs, attrs["axes"], index),
    nnef=lambda case, call: call(["in0"], {"axes": list(case.attrs["axes"])}))
def oracle_nnef_softmax(x, *, axes):
    """exp(x - max) / sum(exp(x - max)) over ``axes``."""
    return (softmax(x, tuple(axes)),)


def _as_onnx_order(inputs):
    """NNEF's (input, mean, variance, offset, scale), parameters [1, C], as ONNX
    BatchNormalization's (X, scale, B, input_mean, input_var), parameters (C,)."""
    x, mean, variance, offset, scale = inputs
    return [x] + [p.reshape(-1) for p in (scale, offset, mean, variance)]


def _nnef_order(feeding):
    """Per input in ONNX's order (X, scale, B, mean, var), as NNEF orders its inputs."""
    x, scale, offset, mean, variance = feeding
    return [x, mean, variance, offset, scale]


def draw_nnef_batch_norm(draw, kit, spec, dtype):
    """An input [N, C, ...] and parameters [1, C] (see :func:`draw_channels`)."""
    drawn = draw_channels(draw, kit, spec, dtype)
    channels = drawn.shapes[0][1]
    return kit.Signature(drawn.input_dtypes, (drawn.shapes[0],) + ((1, channels),) * 4,
                         drawn.attrs, dtype)


def numpy_nnef_batch_norm(input, mean, variance, offset, scale, *, epsilon):  # noqa: A002
    """The numpy backend: the fragment's formula in the input's type, the [1, C] parameters
    given trailing singleton dimensions (NNEF's leading-aligned broadcast)."""
    trailing = (1,) * (input.ndim - 2)
    mean, variance, offset, scale = (p.reshape(p.shape + trailing)
                                     for p in (mean, variance, offset, scale))
    eps = input.dtype.type(np.float32(epsilon))
    return offset + scale * (input - mean) / np.sqrt(variance + eps)


@op("nnef_batch_normalization", numpy=numpy_nnef_batch_norm, version=1, draw=draw_nnef_batch_norm,
    draw_honours=frozenset({"min_rank", "max_rank", "attrs"}),
    feeding=lambda inputs, attrs, index: _nnef_order(feed_batch_norm(_as_onnx_order(inputs),
                                                                     attrs, index)),
    error_bound=lambda inputs, attrs, outputs, **kw: batch_norm_bound(
        _as_onnx_order(inputs), attrs, outputs, scale_first=True, **kw),
    nnef=lambda case, call: call(["in0", "in1", "in2", "in3", "in4"],
                                 {"epsilon": case.attrs["epsilon"]}))
def oracle_nnef_batch_normalization(input, mean, variance, offset, scale, *, epsilon):
    """offset + scale * (input - mean) / sqrt(variance + epsilon), the parameters broadcast
    with leading dimensions aligned."""
    trailing = (1,) * (input.ndim - 2)
    mean, variance, offset, scale = (p.reshape(p.shape + trailing)
                                     for p in (mean, variance, offset, scale))
    return (offset + scale * (input - mean) / np.sqrt(variance + float(np.float32(epsilon))),)
