"""ONNX QuantizeLinear and DequantizeLinear (opset 21; float4e2m1 from opset 23, int2 and uint2
from 25, at the opsets whose schemas allow them): per-tensor, per-axis and blocked
(``block_size``) scales and zero points, written from the operators' text
(``onnx.defs.get_schema("QuantizeLinear", 21).doc``, and 23 and 25 for the new types).

QuantizeLinear: ``y = saturate((x / y_scale) + y_zero_point)``, ``x / y_scale`` rounded to
nearest even into the integer types, saturated to the type's range (int2 [-2, 1], uint2 [0, 3]
from opset 25); into float 8 the sum is converted by Cast's float 8 tables with ``saturate``
(the attribute's 'two tables inserted in the operator description' are Cast's: those in force
at the run's opset, so Cast-24's from opset 24, where +/-Inf gives +/-FLT_MAX in the fnuz
formats);
into float4e2m1, and from opset 28 float6e2m3 and float6e3m2 ("the quantization formula remains
the same") rounded to nearest even, with no saturation range given (out of range: a region). DequantizeLinear:
``y = (x - x_zero_point) * x_scale``.
"""
from __future__ import annotations

import numpy as np

from conform.ops.optional_inputs import by_name, onnx_operands, present
from conform.model_formats import onnx_opset
from conform.op_registry import op
from conform.ops.onnx_cast import (E8M0, UNREPRESENTABLE_SPECIALS, float8_table, is_float8,
                                   numpy_astype)
from conform.dtypes import FLOAT_FORMATS, int_info, is_integer, np_dtype, round_to_format

QUANTIZE_INPUTS = ("x", "y_scale", "y_zero_point")
#: From opset 24 the scale (T2) may be float8e8m0 (MX's power-of-two scales)
E8M0_SCALE_SINCE = 24
DEQUANTIZE_INPUTS = ("x", "x_scale", "x_zero_point")


def expanded(parameter: np.ndarray, shape: tuple, axis: int = 1, block_size: int = 0) -> np.ndarray:
    """A scale or zero point broadcast against ``x`` of ``shape``: a scalar (per tensor), a 1-D
    tensor along ``axis`` (per axis), or ``x``'s shape with ``ceil(D/B)`` along ``axis``, each
    value repeated ``block_size`` times (blocked)."""
    if parameter.ndim == 0:
        return parameter
    axis = axis % len(shape)
    if block_size:
        return np.repeat(parameter, block_size, axis=axis).take(range(shape[axis]), axis=axis)
    sizes = [1] * len(shape)
    sizes[axis] = parameter.shape[0]
    return parameter.reshape(sizes)


def quantization_labels(inputs, outputs):
    """'X->Y' labels: each input type with each output type the spec's dtypes hold."""
    return lambda spec: [f"{a}->{b}" for a in inputs for b in outputs
                         if a in spec.dtypes and b in spec.dtypes]


def _granularity(draw, kit):
    """x's shape, the scale's shape and the attributes (axis, block_size) of one granularity."""
    kind = draw(kit.st.sampled_from(["tensor", "axis", "block"]))
    if kind == "tensor":   # axis is ignored: drawn sometimes all the same
        shape = draw(kit.shape())
        return shape, (), draw(kit.st.sampled_from([{}, {"axis": 0}])) if shape else {}
    # rank >= 2: the axis text says a rank-1 input is quantized per tensor
    shape = draw(kit.shape(min_rank=2))
    axis = draw(kit.st.integers(-len(shape), len(shape) - 1))
    size = shape[axis]
    if kind == "axis":
        return shape, (size,), {"axis": axis}
    block = draw(kit.st.integers(1, size))
    scale_shape = list(shape)
    scale_shape[axis] = -(-size // block)
    return shape, tuple(scale_shape), {"axis": axis, "block_size": block}


def draw_quantize(draw, kit, spec, dtype):
    """dtype is 'X->Y' (x and y_scale of type X, y of type Y)."""
    source, target = dtype.split("->")
    shape, scale_shape, attrs = _granularity(draw, kit)
    absent = kit.absent_inputs(draw, spec)
    if (absent and target != "uint8") or draw(kit.st.booleans()):
        attrs["output_dtype"] = target   # without a zero point the type comes from here
    if is_float8(target):
        attrs.update(draw(kit.st.sampled_from([{}, {"saturate": 0}, {"saturate": 1}])))
    scale = _scale_type(draw, kit, source)
    if scale != source:   # "The type of y_scale determines the precision of the division
        # ... unless the precision attribute is specified": E8M0's is given x's float type
        attrs["precision"] = source if source in FLOAT_FORMATS else "float32"
    types = dict(zip(QUANTIZE_INPUTS, (source, scale, target)))
    shapes = dict(zip(QUANTIZE_INPUTS, (shape, scale_shape, scale_shape)))
    names = [n for n in QUANTIZE_INPUTS if n not in absent]
    return kit.Signature(tuple(types[n] for n in names), tuple(shapes[n] for n in names),
                         kit.with_absent({"new_dtype": target, **attrs}, absent), target)


def _scale_type(draw, kit, usual: str) -> str:
    """The scale's type: ``usual``, or from opset 24 at times float8e8m0 (T2)."""
    if onnx_opset() >= E8M0_SCALE_SINCE and draw(kit.st.booleans()):
        return E8M0
    return usual


def draw_dequantize(draw, kit, spec, dtype):
    """dtype is 'X->Y' (x and x_zero_point of type X, x_scale and y of type Y); int32 has no
    zero point."""
    source, target = dtype.split("->")
    shape, scale_shape, attrs = _granularity(draw, kit)
    absent = ["x_zero_point"] if source == "int32" else kit.absent_inputs(draw, spec)
    scale = _scale_type(draw, kit, target)
    if scale != target:   # y has x_scale's type unless output_dtype says (E8M0: not in T3)
        attrs["output_dtype"] = target
    types = dict(zip(DEQUANTIZE_INPUTS, (source, scale, source)))
    shapes = dict(zip(DEQUANTIZE_INPUTS, (shape, scale_shape, scale_shape)))
    names = [n for n in DEQUANTIZE_INPUTS if n not in absent]
    return kit.Signature(tuple(types[n] for n in names), tuple(shapes[n] for n in names),
                         kit.with_absent({"new_dtype": target, **attrs}, absent), target)


def _scale_values(rng, scale):
    """Positive scales: powers of two in half the cases (exact quotients, so ties x / scale =
    n + 1/2 can be made), else uniform in [0.02, 3] (integers 1 to 8 for int32)."""
    if is_integer(str(scale.dtype)):
        return rng.integers(1, 9, scale.shape).astype(scale.dtype)
    if rng.random() < 0.5:
        return np.ldexp(1.0, rng.integers(-3, 4, scale.shape)).astype(scale.dtype)
    return rng.uniform(0.02, 3, scale.shape).astype(scale.dtype)


def zero_point_values(rng, zero):
    """In the type's range for integers; 0 for float 8 (the text: 'usually not used')."""
    if not is_integer(str(zero.dtype)):
        return np.zeros(zero.shape, zero.dtype)
    info = int_info(str(zero.dtype))
    return rng.integers(int(info.min), int(info.max) + 1, zero.shape).astype(zero.dtype)


def quantize_values(rng, inputs, attrs):
    """Positive scales, zero points in range, and a quarter of x made exact ties of x / y_scale
    where the scale is a power of two."""
    given = by_name(QUANTIZE_INPUTS, inputs, attrs.get("absent_inputs", ()))
    scale = _scale_values(rng, given["y_scale"])
    x = given["x"]
    if str(x.dtype) in FLOAT_FORMATS:
        wide = x.astype(np.float64)
        step = expanded(scale.astype(np.float64), x.shape, attrs.get("axis", 1),
                        attrs.get("block_size", 0))
        tie = (np.floor(wide / step) + 0.5) * step
        with np.errstate(invalid="ignore", over="ignore"):
            x = np.where(rng.random(x.shape) < 0.25, tie, wide).astype(x.dtype)
    made = [x, scale]
    if "y_zero_point" in given:
        made.append(zero_point_values(rng, given["y_zero_point"]))
    return made


def dequantize_values(rng, inputs, attrs):
    """Positive scales and zero points in range (0 for float 8)."""
    given = by_name(DEQUANTIZE_INPUTS, inputs, attrs.get("absent_inputs", ()))
    made = [given["x"], _scale_values(rng, given["x_scale"])]
    if "x_zero_point" in given:
        made.append(zero_point_values(rng, given["x_zero_point"]))
    return made


def _onnx_lowering(names):
    def lower(case, graph):
        attrs = case.attrs
        given = dict(zip(present(names, attrs), graph.inputs))
        extra = {k: attrs[k] for k in ("axis", "block_size", "saturate") if k in attrs}
        for name in ("output_dtype", "precision"):
            if name in attrs:
                extra[name] = graph.onnx_type(attrs[name])
        graph.node(graph.op_type, onnx_operands([given.get(n) for n in names]), **extra)
    return lower


def _quantized(quotient, zero, target, saturate):
    if is_float8(target):   # the saturate attribute's 'two tables' are Cast's, at the run's opset
        return float8_table(quotient + zero, target, bool(saturate), onnx_opset())
    if target in UNREPRESENTABLE_SPECIALS:   # NaN: out of range, or from NaN (no rule: open)
        return round_to_format(quotient + zero, FLOAT_FORMATS[target])
    info = int_info(target)
    return np.clip(np.rint(quotient) + zero, int(info.min), int(info.max))   # rint: half to even


def _open_quotients(x, quotient, zero, target, saturate, result, source):
    """Elements whose result the text leaves open: NaN into an integer type (no rule); and, as
    the text does not say in which precision x / y_scale is computed, quotients within two
    roundings (relative 2u of x's type, float32 for int32) of a rounding boundary that are not
    exact in that type, where the division's own rounding decides, and quotients past that
    type's range whose infinity would give another result."""
    fmt = FLOAT_FORMATS.get(source, FLOAT_FORMATS["float32"])
    delta = 2 * fmt.unit_roundoff
    moved = [_quantized(quotient * (1 + s * delta), zero, target, saturate) for s in (-1, 1)]
    with np.errstate(invalid="ignore"):
        sensitive = (moved[0] != result) | (moved[1] != result)
        inexact = round_to_format(quotient, fmt) != quotient
    both_nan = np.isnan(result) & np.isnan(moved[0]) & np.isnan(moved[1])
    mask = sensitive & inexact & ~both_nan
    # a quotient past x's type's range is infinite when computed there (into the fnuz
    # formats, Cast-19 to 23's table sends infinity to NaN under saturate, a large value to
    # FLT_MAX; Cast-24's sends both to FLT_MAX)
    overflowed = _quantized(np.copysign(np.inf, quotient), zero, target, saturate)
    with np.errstate(invalid="ignore"):
        mask |= (np.abs(quotient) > fmt.max_finite) & ~(
            (overflowed == result) | (np.isnan(overflowed) & np.isnan(result)))
    if not is_float8(target):
        mask |= np.isnan(x)
    if target in UNREPRESENTABLE_SPECIALS:   # beyond the largest after rounding: no saturation
        # range, no infinity, no NaN
        mask = mask | np.isnan(result)
    return np.broadcast_to(mask, result.shape)


def _numpy_parameters(x, names, given, attrs):
    scale, zero = given[names[1]], given.get(names[2])
    axis, block = attrs.get("axis", 1), attrs.get("block_size", 0)
    scale = expanded(scale.astype(np.float32), x.shape, axis, block)
    zero = 0 if zero is None else expanded(zero.astype(np.float32), x.shape, axis, block)
    return scale, zero


def numpy_quantize(*inputs, new_dtype, saturate=1, absent_inputs=(), **attrs):
    """The numpy backend: the quotient in float32, then NumPy's rint, the zero point and clip
    into an integer type; into float 8, the quotient plus zero point converted by NumPy
    (:func:`~conform.ops.onnx_cast.numpy_astype`)."""
    given = by_name(QUANTIZE_INPUTS, inputs, absent_inputs)
    x = given["x"].astype(np.float32)
    scale, zero = _numpy_parameters(x, QUANTIZE_INPUTS, given, attrs)
    quotient = x / scale
    if new_dtype in FLOAT_FORMATS:
        return (numpy_astype(quotient + zero, new_dtype, saturate),)
    info = int_info(new_dtype)
    return (numpy_astype(np.clip(np.rint(quotient) + zero, np.float32(info.min),
                                 np.float32(info.max)), new_dtype),)


def numpy_dequantize(*inputs, new_dtype, absent_inputs=(), **attrs):
    """The numpy backend: subtraction and product in float32, then rounded to y's type."""
    given = by_name(DEQUANTIZE_INPUTS, inputs, absent_inputs)
    x = given["x"].astype(np.float32)
    scale, zero = _numpy_parameters(x, DEQUANTIZE_INPUTS, given, attrs)
    return (((x - zero) * scale).astype(np_dtype(new_dtype)),)


@op("onnx_quantize_linear", version=1, draw=draw_quantize, draw_honours=frozenset({"optional"}),
    dtype_labels=quantization_labels(["float32", "float16", "bfloat16", "int32"],
                                     ["int8", "uint8", "int16", "uint16", "int4", "uint4",
                                      "int2", "uint2", "float8_e4m3fn", "float8_e4m3fnuz",
                                      "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn",
                                      "float6_e2m3fn", "float6_e3m2fn"]),
    values=quantize_values, onnx=_onnx_lowering(QUANTIZE_INPUTS), onnx_shape_dependent=True,
    numpy=numpy_quantize)
def oracle_onnx_quantize_linear(x, y_scale, *zero_point, new_dtype, axis=1, block_size=0,
                                saturate=1, output_dtype=None, precision=None,
                                absent_inputs=(), dtypes=(), open_elements=False):
    """QuantizeLinear: ``saturate(round_half_even(x / y_scale) + y_zero_point)`` (into float 8:
    Cast's table applied to ``x / y_scale + y_zero_point``); with ``open_elements``, the mask of
    the elements the text leaves open."""
    scale = expanded(y_scale, x.shape, axis, block_size)
    zero = expanded(zero_point[0], x.shape, axis, block_size) if zero_point else 0
    quotient = x / scale
    result = _quantized(quotient, zero, new_dtype, saturate)
    if open_elements:
        source = dtypes[0] if dtypes else "float32"
        return (_open_quotients(x, quotient, zero, new_dtype, saturate, result, source),)
    return (result,)


@op("onnx_dequantize_linear", version=1, draw=draw_dequantize, draw_honours=frozenset({"optional"}),
    dtype_labels=quantization_labels(["int8", "uint8", "int16", "uint16", "int32", "int4", "uint4",
                                      "int2", "uint2", "float8_e4m3fn", "float8_e4m3fnuz",
                                      "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn",
                                      "float6_e2m3fn", "float6_e3m2fn"],
                                     ["float32", "float16", "bfloat16"]),
    values=dequantize_values, onnx=_onnx_lowering(DEQUANTIZE_INPUTS), onnx_shape_dependent=True,
    numpy=numpy_dequantize)
def oracle_onnx_dequantize_linear(x, x_scale, *zero_point, new_dtype, axis=1, block_size=0,
                                  output_dtype=None, absent_inputs=()):
    """DequantizeLinear: ``(x - x_zero_point) * x_scale`` (exact here; the judge rounds once)."""
    scale = expanded(x_scale, x.shape, axis, block_size)
    zero = expanded(zero_point[0], x.shape, axis, block_size) if zero_point else 0
    return ((x - zero) * scale,)
