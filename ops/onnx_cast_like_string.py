"""ONNX CastLike to and from strings (opsets 21 to 25): 'casts the elements of a given input
tensor (the first input) to the same data type as the elements of the second input tensor. See
documentation of the Cast operator for further details' (``onnx.defs.get_schema("CastLike",
N).doc``), and its function body is ``Cast(input, to=<target_type's element type>)``. So the
string rules are Cast's string paragraph, which ops/onnx_cast_string.py reads; this module
gives its oracle, numerals and canonical reading a second input, ``target_type`` (a string or
a number tensor whose values are unused)."""
from __future__ import annotations

from conform.op_registry import op
from conform.ops.onnx_cast import onnx_cast_like_node
from conform.ops.onnx_cast_string import (canonical_cast_string, numpy_cast_string,
                                          oracle_onnx_cast_string, rounded_cast_string,
                                          string_labels, values_cast_string)


def draw_cast_like_string(draw, kit, spec, dtype):
    """dtype is 'SRC->DST': the input SRC, and target_type DST (a scalar, the input's shape,
    or one element)."""
    source, target = dtype.split("->")
    shape = draw(kit.shape())
    like_shape = draw(kit.st.sampled_from([(), shape, (1,)]))
    return kit.Signature((source, target), (shape, like_shape), {"new_dtype": target}, target)


def values_cast_like_string(rng, inputs, attrs):
    """The input's numerals as Cast's (:func:`values_cast_string`); target_type as drawn."""
    return values_cast_string(rng, inputs[:1], attrs) + list(inputs[1:])


def numpy_cast_like_string(operand, target_type, *, new_dtype, **_):
    """The numpy backend: NumPy's own conversion through its unicode type (target_type's
    values are unused)."""
    return numpy_cast_string(operand, new_dtype=new_dtype)


def rounded_cast_like_string(input, target_type, *, new_dtype, dtypes):  # noqa: A002
    """A numeral read into float64, correctly rounded (:func:`rounded_cast_string`)."""
    return rounded_cast_string(input, new_dtype=new_dtype, dtypes=dtypes)


@op("onnx_cast_like_string", version=1, draw=draw_cast_like_string, dtype_labels=string_labels,
    values=values_cast_like_string, onnx=onnx_cast_like_node, numpy=numpy_cast_like_string,
    rounded64=rounded_cast_like_string, canonical=canonical_cast_string)
def oracle_onnx_cast_like_string(input, target_type, *, new_dtype, dtypes):  # noqa: A002
    """CastLike's function body: Cast to the element type of ``target_type``
    (:func:`~conform.ops.onnx_cast_string.oracle_onnx_cast_string`)."""
    return oracle_onnx_cast_string(input, new_dtype=new_dtype, dtypes=dtypes)
