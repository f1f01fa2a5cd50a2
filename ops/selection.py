"""Select, Clamp and ConvertElementType (XLA; ONNX Where, Clip; NNEF select, cast):
element-aligned ops whose inputs do not all share the output's type or shape."""
from __future__ import annotations

import numpy as np

from conform.ops._lowering import nan_refused, unsupported
from conform.ops._midpoints import conversion_hook
from conform.op_registry import op
from conform.ops._rounded import converted64
from conform.ops.onnx_cast import exact_float
from conform.dtypes import FLOAT_FORMATS, np_dtype
from conform.ops.xla_complex_order import lexicographic_pick


def draw_select(draw, kit, spec, dtype):
    """pred (bool), on_true, on_false: one shape."""
    shape = draw(kit.shape())
    return kit.Signature(("bool", dtype, dtype), (shape,) * 3, {}, dtype)


@op("select", version=1, draw=draw_select)
def oracle_select(pred, on_true, on_false):
    """on_true where pred else on_false."""
    return (np.where(pred, on_true, on_false),)


def draw_clamp(draw, kit, spec, dtype):
    """min, operand, max: min and max are scalars or have the operand's shape.

    Half the signatures have scalar bounds both, the only ones ONNX Clip takes."""
    shape = draw(kit.shape())
    scalar_bounds = draw(kit.st.booleans())
    bound_shapes = [() if scalar_bounds else draw(kit.st.sampled_from([(), shape])) for _ in range(2)]
    return kit.Signature((dtype,) * 3, (bound_shapes[0], shape, bound_shapes[1]), {}, dtype)


def onnx_clip(case, graph):
    if any(case.inputs[i].ndim != 0 for i in (0, 2)):
        raise unsupported("ONNX Clip takes only scalar min and max")
    low, operand, high = graph.inputs
    graph.node(graph.op_type, [operand, low, high])


def numpy_clamp(min, operand, max):  # noqa: A002 - XLA's parameter names
    """The numpy backend: ``np.clip(operand, min, max)``."""
    return np.clip(operand, min, max)


@op("clamp", version=1, draw=draw_clamp, onnx=onnx_clip, onnx_shape_dependent=True,
    onnx_refuses=nan_refused("ONNX Clip", "region nan_operand of onnx_clip"), numpy=numpy_clamp)
def oracle_clamp(min, operand, max):  # noqa: A002 - XLA's parameter names
    """XLA Clamp: clamp(a, x, b) = min(max(a, x), b); bool: StableHLO's maximum is OR and its
    minimum AND (NumPy's on bool); complex: StableHLO's ``minimum(maximum(operand, min),
    max)`` in the lexicographic order (:mod:`conform.ops.xla_complex_order`)."""
    if any(np.iscomplexobj(x) for x in (min, operand, max)):
        return (lexicographic_pick(False, lexicographic_pick(True, operand, min), max),)
    return (np.minimum(np.maximum(min, operand), max),)


def conversion_labels(spec):
    """'SRC->DST' for every ordered pair of distinct dtypes of the spec."""
    return [f"{a}->{b}" for a in spec.dtypes for b in spec.dtypes if a != b]


def draw_convert(draw, kit, spec, dtype):
    """dtype is 'SRC->DST'; the operand is SRC and the result DST."""
    src, dst = dtype.split("->")
    shape = draw(kit.shape())
    return kit.Signature((src,), (shape,), {"new_dtype": dst}, dst)


def nnef_cast(case, call):
    return call(["in0"], generic=case.out_dtype)


def lax_convert(lax, attrs):
    # np.dtype knows the float8 and int4 names once ml_dtypes is imported, as jax imports it
    # (written out as it stands into repro scripts: nothing of conform's in scope)
    return lambda x: lax.convert_element_type(x, np.dtype(attrs["new_dtype"]))


def numpy_convert(operand, *, new_dtype):
    target = np_dtype(new_dtype)
    if {operand.dtype.name, target.name} == {"int4", "uint4"}:   # ml_dtypes casts neither way
        operand = operand.astype(np.int64)
    return (operand.astype(target),)


def rounded_convert(operand, *, new_dtype, dtypes):
    """The operand converted to float64, correctly rounded (for a float64 ``new_dtype``)."""
    return (converted64(operand, dtypes[0]),)


@op("convert_element_type", version=1, draw=draw_convert, dtype_labels=conversion_labels,
    nnef=nnef_cast, lax=lax_convert, numpy=numpy_convert, rounded64=rounded_convert,
    midpoints=conversion_hook())
def oracle_convert_element_type(operand, *, new_dtype, dtypes=()):
    """ConvertElementType: the value itself; rounding to the target type happens at comparison.

    float -> int truncates toward zero (C++ static_cast); to bool, nonzero (and NaN) is true.
    Into a float type the judge rounds the value once, to nearest even, by the target format's
    parameters (:func:`conform.dtypes.round_to_format`: float8 too, overflowing to the
    format's infinity, or NaN where it has none).
    """
    if new_dtype == "bool":
        return (operand != 0,)
    if operand.dtype.kind == "f" and new_dtype.startswith(("int", "uint")):
        return (np.trunc(operand),)
    if operand.dtype == np.bool_:
        return (operand.astype(np.int64),)
    if operand.dtype.kind in "iu" and new_dtype in FLOAT_FORMATS:
        # an integer wider than float64's significand, rounded to odd: one rounding at the judge
        return (exact_float(operand, dtypes[0], FLOAT_FORMATS[new_dtype].precision),)
    return (operand,)
