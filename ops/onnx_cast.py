"""ONNX Cast and CastLike (opset 21), with ONNX's own semantics: the conversion rules and the
float 8 tables of the operator's text (``onnx.defs.get_schema("Cast").doc``), saturate included.

XLA's ConvertElementType (ops/selection.py) truncates floats into integers and never saturates;
ONNX's Cast saturates into float 8 by default, leaves the rounding of a float into a fixed-point
type unsaid, and wraps integers ("discard higher bits and reinterpret").
"""
from __future__ import annotations

import numpy as np

from conform.ops._midpoints import conversion_hook
from conform.op_registry import op
from conform.ops._rounded import converted64
from conform.dtypes import FLOAT_FORMATS, int_info, is_integer, np_dtype, round_to_format

#: The Cast text's two float 8 tables, row "Inf" under saturate=1: E4M3FN and E5M2 give
#: FLT_MAX, E4M3FNUZ and E5M2FNUZ give NaN (under saturate=0 every format gives its overflow
#: value: Inf in E5M2, NaN elsewhere, as ``round_to_format`` does).
SATURATED_INFINITY_IS_MAX = {"float8_e4m3fn": True, "float8_e5m2": True,
                             "float8_e4m3fnuz": False, "float8_e5m2fnuz": False}


def is_float8(dtype: str) -> bool:
    return dtype in SATURATED_INFINITY_IS_MAX


def float8_table(values: np.ndarray, target: str, saturate: bool) -> np.ndarray:
    """The Cast text's float 8 table: ``[x]`` is x rounded to the target's mantissa width (to
    nearest even, exponent unbounded); ``[x] > FLT_MAX`` gives FLT_MAX under saturate, else
    the overflow value (Inf in E5M2, NaN in the others); infinities as the "Inf" rows say;
    -0 gives 0 in the fnuz formats; NaN gives NaN."""
    fmt = FLOAT_FORMATS[target]
    rounded = round_to_format(values, fmt, saturate=saturate)
    if saturate and not SATURATED_INFINITY_IS_MAX[target]:
        rounded = np.where(np.isinf(values), np.nan, rounded)
    return rounded


def exact_float(x: np.ndarray, source: str, target_precision: int) -> np.ndarray:
    """Integer ``x`` (widened int64; uint64 by its bits) as float64, rounded to odd where it
    is inexact when the target is narrower than float64, so that the one later rounding to
    nearest even into the target (at most 51 bits) is the correct rounding of the integer
    (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
    rounding to odd", IEEE TC 2008)."""
    bits = x.view(np.uint64) if source == "uint64" else x
    high = (bits >> 32).astype(np.float64) * 2.0 ** 32   # both halves exact in float64
    low = (bits & 0xFFFFFFFF).astype(np.float64)
    total = high + low
    if target_precision >= 53:
        return total
    # Knuth's TwoSum: the exact error of the addition
    high_part = total - low
    error = (high - high_part) + (low - (total - high_part))
    even = (total.view(np.int64) & 1) == 0
    nudge = (error != 0) & even
    toward = np.where(error > 0, np.inf, -np.inf)
    return np.where(nudge, np.nextafter(total, toward), total)


def cast_value(x: np.ndarray, source: str, target: str, saturate: int = 1) -> np.ndarray:
    """ONNX Cast of the widened ``x`` (of dtype name ``source``) to ``target``: the value the
    text defines, before the judge's one rounding into a float target (float 8 targets are
    rounded here, by the text's tables; integer targets give integers)."""
    if target == "bool":
        return x != 0    # floats: +/-0 false, all else (NaN too) true; fixed point: nonzero
    if source == "bool":
        x = x.astype(np.int64)
        source = "int64"
    if is_integer(target):
        if source in FLOAT_FORMATS:
            return np.trunc(x)   # integral values are exact; the rest is a region (no rule)
        bits = int_info(target).bits
        if bits == 64:
            return x
        wrapped = x & ((1 << bits) - 1)   # "discard higher bits and reinterpret"
        if int_info(target).min < 0:
            wrapped = np.where(wrapped >= 1 << (bits - 1), wrapped - (1 << bits), wrapped)
        return wrapped
    if source not in FLOAT_FORMATS:
        x = exact_float(x, source, FLOAT_FORMATS[target].precision)
    if is_float8(target):
        return float8_table(x, target, bool(saturate))
    return x   # the judge rounds once to nearest even; out of range gives +/- infinity


def conversion_pairs(spec):
    """'SRC->DST' for every ordered pair of the spec's dtypes, a cast to the same type included."""
    return [f"{a}->{b}" for a in spec.dtypes for b in spec.dtypes]


def _saturate(draw, kit, target):
    """Cast-19+'s ``saturate``: absent (its default, 1), 0 or 1; drawn for every target (the
    text applies it to float 8 targets only), given less often where it should change nothing."""
    given = [{"saturate": 0}, {"saturate": 1}]
    return draw(kit.st.sampled_from([{}] + given if is_float8(target) else [{}] * 4 + given))


def draw_cast(draw, kit, spec, dtype):
    """dtype is 'SRC->DST'; the operand is SRC and the result DST."""
    source, target = dtype.split("->")
    shape = draw(kit.shape())
    return kit.Signature((source,), (shape,), {"new_dtype": target, **_saturate(draw, kit, target)}, target)


def draw_cast_like(draw, kit, spec, dtype):
    """input (SRC) and target_type (DST, whose values are unused: a scalar or any shape)."""
    source, target = dtype.split("->")
    shape = draw(kit.shape())
    like_shape = draw(kit.st.sampled_from([(), shape, (1,)]))
    attrs = {"new_dtype": target, **_saturate(draw, kit, target)}
    return kit.Signature((source, target), (shape, like_shape), attrs, target)


def integral_half(rng, inputs, attrs):
    """Float -> integer cases: half the finite elements made integral (the text gives no
    rounding for the rest, a region), so that in-range conversions are judged."""
    operand = inputs[0]
    if str(operand.dtype) not in FLOAT_FORMATS or not is_integer(attrs["new_dtype"]):
        return inputs
    wide = operand.astype(np.float64)
    pick = rng.random(wide.shape) < 0.5
    with np.errstate(invalid="ignore"):
        made = np.where(pick, np.trunc(wide), wide).astype(operand.dtype)
    return [made, *inputs[1:]]


def _onnx_attrs(case, graph):
    saturate = {"saturate": case.attrs["saturate"]} if "saturate" in case.attrs else {}
    return saturate


def onnx_cast_node(case, graph):
    graph.node("Cast", [graph.inputs[0]], to=graph.onnx_type(case.attrs["new_dtype"]),
               **_onnx_attrs(case, graph))


def onnx_cast_like_node(case, graph):
    graph.node("CastLike", list(graph.inputs), **_onnx_attrs(case, graph))


def numpy_astype(values, new_dtype, saturate=1):
    """What NumPy and ml_dtypes give for a conversion: ``astype`` (ml_dtypes casts no int4 to
    uint4 or back: through int64). ml_dtypes never saturates, so for saturate=1 into a float 8
    type a float source is first clipped to the target's finite range, as a NumPy user writes
    it (which also sends infinities to +-max: the fnuz rows of the text say NaN), a float 8
    source through float32 (exact); a source of a narrower range needs no clip."""
    target = np_dtype(new_dtype)
    top = float(FLOAT_FORMATS[new_dtype].max_finite) if is_float8(new_dtype) else 0.0
    source = FLOAT_FORMATS.get(values.dtype.name)
    if saturate and source is not None and source.max_finite >= top > 0:
        if is_float8(values.dtype.name):   # the bound may fall between two float 8 values
            values = values.astype(np.float32)
        values = np.clip(values, values.dtype.type(-top), values.dtype.type(top))
    elif saturate and top and values.dtype.kind in "iu":
        info = np.iinfo(values.dtype)
        values = np.clip(values, values.dtype.type(max(-int(top), int(info.min))),
                         values.dtype.type(min(int(top), int(info.max))))
    if {values.dtype.name, target.name} & {"int4", "uint4"} and values.dtype.name != target.name:
        values = values.astype(np.int64)
    return values.astype(target)


def numpy_cast(operand, *like, new_dtype, saturate=1):
    """The numpy backend: :func:`numpy_astype`."""
    return (numpy_astype(operand, new_dtype, saturate),)


def rounded_cast(input, *like, new_dtype, saturate=1, dtypes):  # noqa: A002 - ONNX's name
    """Cast into float64, correctly rounded (saturate applies to float 8 targets only)."""
    return (converted64(input, dtypes[0]),)


@op("onnx_cast", version=1, draw=draw_cast, dtype_labels=conversion_pairs, values=integral_half,
    onnx=onnx_cast_node, numpy=numpy_cast, rounded64=rounded_cast, midpoints=conversion_hook())
def oracle_onnx_cast(input, *, new_dtype, saturate=1, dtypes):  # noqa: A002 - ONNX's name
    """ONNX Cast (see :func:`cast_value`)."""
    return (cast_value(input, dtypes[0], new_dtype, saturate),)


@op("onnx_cast_like", version=1, draw=draw_cast_like, dtype_labels=conversion_pairs,
    values=integral_half, onnx=onnx_cast_like_node, numpy=numpy_cast, rounded64=rounded_cast,
    midpoints=conversion_hook(like=True))
def oracle_onnx_cast_like(input, target_type, *, new_dtype, saturate=1, dtypes):  # noqa: A002
    """ONNX CastLike: Cast to the element type of ``target_type`` (its values unused)."""
    return (cast_value(input, dtypes[0], new_dtype, saturate),)
