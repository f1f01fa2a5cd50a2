"""ONNX's logical operators and float classification (ai.onnx): And, Or, Xor (opsets 1, 7: bool,
multidirectional broadcasting from 7), Not (1), IsInf (10, 20) and IsNaN (9, 13, 20), and the
variadic element-wise Sum and Mean (6, 8, 13: any number of inputs, multidirectional
broadcasting from 8). Each from its operator text (``onnx.defs.get_schema(op, opset).doc``).

The logical and classification results have one correct value (exact). Sum and Mean are judged
by the ``accumulation`` model: the text fixes neither the order of the additions nor, for Mean,
whether it divides or multiplies by 1/n.
"""
from __future__ import annotations

import functools

import numpy as np

from conform.op_registry import op
from conform.ops._double_double import accurate_sum
from conform.ops.onnx_piecewise import broadcastable_to, full_shape


@op("onnx_and", version=1)
def oracle_onnx_and(a, b):
    """ONNX And: 'the `and` logical operation elementwise on the input tensors'."""
    return (np.logical_and(a, b),)


@op("onnx_or", version=1)
def oracle_onnx_or(a, b):
    """ONNX Or: 'the `or` logical operation elementwise on the input tensors'."""
    return (np.logical_or(a, b),)


@op("onnx_xor", version=1)
def oracle_onnx_xor(a, b):
    """ONNX Xor: 'the `xor` logical operation elementwise on the input tensors'."""
    return (np.logical_xor(a, b),)


@op("onnx_not", version=1)
def oracle_onnx_not(x):
    """ONNX Not: 'the negation of the input tensor element-wise'."""
    return (np.logical_not(x),)


# ------------------------------------------------------------------ IsInf, IsNaN

def _onnx_is_inf(case, graph):
    graph.node(graph.op_type, graph.inputs, detect_positive=int(case.attrs["detect_positive"]),
               detect_negative=int(case.attrs["detect_negative"]))


def numpy_is_inf(x, *, detect_positive, detect_negative):
    """The numpy backend: ``x == inf`` where detect_positive, ``x == -inf`` where
    detect_negative (comparisons: they hold for every float type NumPy and ml_dtypes have)."""
    positive = (x == np.inf) & bool(detect_positive)
    return positive | ((x == -np.inf) & bool(detect_negative))


@op("onnx_is_inf", version=1, onnx=_onnx_is_inf, numpy=numpy_is_inf)
def oracle_onnx_is_inf(x, *, detect_positive, detect_negative):
    """ONNX IsInf: 'Map infinity to true and other values to false'; +inf only with
    detect_positive = 1, -inf only with detect_negative = 1 (a format without infinities gives
    false everywhere)."""
    return ((np.isposinf(x) & bool(detect_positive)) | (np.isneginf(x) & bool(detect_negative)),)


def numpy_is_nan(x):
    """The numpy backend: ``x != x`` (true for NaN alone, in every float type)."""
    return x != x


@op("onnx_is_nan", version=1, numpy=numpy_is_nan)
def oracle_onnx_is_nan(x):
    """ONNX IsNaN: 'Returns which elements of the input are NaN'."""
    return (np.isnan(x),)


# ------------------------------------------------------------------ Sum, Mean

def draw_variadic(draw, kit, spec, dtype):
    """1 to 4 inputs, each unidirectionally broadcastable to one drawn shape, so that together
    they broadcast multidirectionally (NumPy's rule) to it or a shape within it."""
    shape = full_shape(draw, kit)
    shapes = tuple(broadcastable_to(draw, kit, shape) for _ in range(draw(kit.st.integers(1, 4))))
    return kit.Signature((dtype,) * len(shapes), shapes, {}, dtype)


def _stacked(inputs) -> np.ndarray:
    """The inputs broadcast together and stacked along a new last axis."""
    return np.stack(np.broadcast_arrays(*inputs), axis=-1)


def _terms(shapes, attrs) -> int:
    """Each output element sums one element of every input."""
    return len(shapes)


def numpy_sum(*inputs):
    """The numpy backend: the inputs added in order with ``np.add`` in their type."""
    return functools.reduce(np.add, inputs)


def numpy_mean(*inputs):
    """The numpy backend: the inputs added in order with ``np.add``, divided by their count, in
    their type."""
    return numpy_sum(*inputs) / inputs[0].dtype.type(len(inputs))


def _onnx_variadic(case, graph):
    """One node over every input (the formal data_0 is variadic)."""
    graph.node(graph.op_type, graph.inputs)


_VARIADIC = dict(draw=draw_variadic, draw_honours=frozenset({"shapes"}),
                 accumulation_length=_terms, onnx=_onnx_variadic)


@op("onnx_sum", version=1, numpy=numpy_sum, **_VARIADIC)
def oracle_onnx_sum(*inputs):
    """ONNX Sum: 'Element-wise sum of each of the input tensors (with Numpy-style broadcasting
    support)', accumulated in double-double."""
    return (accurate_sum(_stacked(inputs), axis=-1),)


@op("onnx_mean", version=1, numpy=numpy_mean, **_VARIADIC)
def oracle_onnx_mean(*inputs):
    """ONNX Mean: 'Element-wise mean of each of the input tensors (with Numpy-style broadcasting
    support)': their sum over their count, accumulated in double-double."""
    return (accurate_sum(_stacked(inputs), axis=-1, divisor=len(inputs)),)
