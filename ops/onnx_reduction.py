"""ONNX's reductions (ReduceSum, ReduceMax, ReduceMin, ReduceMean at opset 18+), judged by ONNX's
semantics: the axes (an input since opset 18) may be negative and in any order, and ``keepdims``
(1 by default) keeps each reduced dimension with size 1. The arithmetic is the XLA reductions'
(ops/reduction.py); the specs (ops/onnx_reduce_*.yaml) give ONNX's types and regions."""
from __future__ import annotations

import math

import numpy as np

from conform.ops._registry import op
from conform.ops.reduction import (feed_reduce, oracle_reduce_max, oracle_reduce_mean,
                                   oracle_reduce_min, oracle_reduce_sum)


def _axes(rank: int, axes) -> list[int]:
    """The reduced axes, each in [0, rank) (ONNX: 'accepted range is [-r, r-1]')."""
    return sorted(axis % rank for axis in axes)


def _reduced(reduce, data, axes, keepdims, empty=None) -> tuple:
    """``reduce`` over ``axes``; over an empty set, ``empty`` (where given) instead."""
    dims = _axes(data.ndim, axes)
    (out,) = reduce(data, dimensions=dims)
    if empty is not None and math.prod(data.shape[d] for d in dims) == 0:
        out = np.full(out.shape, empty, out.dtype)
    return (np.expand_dims(out, tuple(dims)) if keepdims else out,)


def _type_bound(dtype: str, *, lowest: bool):
    """For an integer type, its minimum (or maximum): what an empty max (or min) reduction
    yields for a type without infinities; None for a float type (the oracle's -inf or +inf)."""
    if not dtype.startswith(("int", "uint")):
        return None
    info = np.iinfo(np.dtype(dtype))
    return int(info.min if lowest else info.max)


def feed_onnx_reduce(inputs, attrs, index):
    """The slice of ``data`` reduced into out[index] (with keepdims, the reduced dimensions'
    indices, always 0, are dropped first)."""
    dims = _axes(inputs[0].ndim, attrs["axes"])
    if attrs["keepdims"]:
        index = [i for axis, i in enumerate(index) if axis not in dims]
    return feed_reduce(inputs, {"dimensions": dims}, index)


def onnx_reduced_count(shapes, attrs):
    """The number of elements reduced into one output element."""
    rank = len(shapes[0])
    return math.prod(shapes[0][axis] for axis in _axes(rank, attrs["axes"]))


def onnx_reduce(case, graph):
    axes = graph.const("axes", case.attrs["axes"])
    graph.node(graph.op_type, [graph.inputs[0], axes], keepdims=int(case.attrs["keepdims"]))


_HOOKS = dict(feeding=feed_onnx_reduce, accumulation_length=onnx_reduced_count, onnx=onnx_reduce)


@op("onnx_reduce_sum", version=1, **_HOOKS)
def oracle_onnx_reduce_sum(data, *, axes, keepdims):
    """The sum over ``axes`` (0 over an empty set)."""
    return _reduced(oracle_reduce_sum, data, axes, keepdims)


@op("onnx_reduce_max", version=1, **_HOOKS)
def oracle_onnx_reduce_max(data, *, axes, keepdims, dtypes):
    """The maximum over ``axes``; over an empty set 'minus infinity (if supported by the
    datatype) or the minimum value of the data type otherwise'."""
    empty = _type_bound(dtypes[0], lowest=True)
    return _reduced(oracle_reduce_max, data, axes, keepdims, empty)


@op("onnx_reduce_min", version=1, **_HOOKS)
def oracle_onnx_reduce_min(data, *, axes, keepdims, dtypes):
    """The minimum over ``axes``; over an empty set plus infinity or the type's maximum."""
    empty = _type_bound(dtypes[0], lowest=False)
    return _reduced(oracle_reduce_min, data, axes, keepdims, empty)


@op("onnx_reduce_mean", version=1, **_HOOKS)
def oracle_onnx_reduce_mean(data, *, axes, keepdims):
    """The mean over ``axes`` (undefined over an empty set: a region of the spec)."""
    return _reduced(oracle_reduce_mean, data, axes, keepdims)
