"""ONNX Cast and CastLike (opsets 21 to 25), with ONNX's own semantics: the conversion rules and
the float 8 tables of the operator's text (``onnx.defs.get_schema("Cast", N).doc``), saturate
included; from opset 23 float4e2m1, from 24 float8e8m0 (its table and ``round_mode``), from 25
int2 and uint2, each at the opsets whose schema allows it. The oracle follows the text in force
at the run's opset (``conform.model_formats.onnx_opset``): Cast-24's saturate table gives
+/-FLT_MAX for +/-Inf into E4M3FNUZ and E5M2FNUZ, where Cast-19 to 23's gives NaN.

XLA's ConvertElementType (ops/selection.py) truncates floats into integers and never saturates;
ONNX's Cast saturates into float 8 by default, leaves the rounding of a float into a fixed-point
type unsaid, and wraps integers ("discard higher bits and reinterpret").
"""
from __future__ import annotations

import numpy as np

from conform.ops._lowering import onnx_element_type, unsupported
from conform.ops._midpoints import conversion_hook
from conform.model_formats import onnx_opset
from conform.op_registry import op, region
from conform.ops._rounded import converted64
from conform.dtypes import (FLOAT_FORMATS, int_info, is_integer, np_dtype, round_to_format,
                            round_to_scale)

#: The Cast text's two float 8 tables, row "Inf" under saturate=1, at Cast-19 to 23: E4M3FN
#: and E5M2 give FLT_MAX, E4M3FNUZ and E5M2FNUZ give NaN (under saturate=0 every format gives
#: its overflow value: Inf in E5M2, NaN elsewhere, as ``round_to_format`` does).
SATURATED_INFINITY_IS_MAX = {"float8_e4m3fn": True, "float8_e5m2": True,
                             "float8_e4m3fnuz": False, "float8_e5m2fnuz": False}
#: From Cast-24 (and CastLike-24) the row reads "Inf | FLT_MAX | FLT_MAX | FLT_MAX | FLT_MAX":
#: every float 8 format saturates an infinity to its largest finite value.
INFINITY_IS_MAX_SINCE = 24


#: The scale format of Cast-24+ (OCP MX E8M0): its own table, ``round_mode`` and ``saturate``
E8M0 = "float8_e8m0fnu"
#: FP4 E2M1 (Cast-23+): no float 8 table names it, and it has neither infinity nor NaN
FLOAT4 = "float4_e2m1fn"
#: The float targets no table of the text names that have neither infinity nor NaN (OCP MX
#: v1.0): FP4 E2M1 (Cast-23+) and FP6 E2M3 and E3M2 (Cast-28+, "float6e2m3", "float6e3m2")
UNREPRESENTABLE_SPECIALS = (FLOAT4, "float6_e2m3fn", "float6_e3m2fn")


def is_float8(dtype: str) -> bool:
    """Whether ``dtype`` is one of the four float 8 types of the Cast text's two tables."""
    return dtype in SATURATED_INFINITY_IS_MAX


def e8m0_table(values: np.ndarray, saturate: bool, round_mode: str = "up") -> np.ndarray:
    """Cast-24+'s conversion into FLOAT8E8M0: NaN gives NaN; ``round_mode`` rounds a value
    within ``[E8M0_MIN, E8M0_MAX]`` (``up`` away from zero, ``down`` towards it, ``nearest``
    with ties up); a value outside, infinity and 0 included, gives the nearer bound under
    ``saturate`` ("x > E8M0_MAX", "x < E8M0_MIN", "Inf" rows: E8M0_MAX, E8M0_MIN) and NaN
    without it (the 'non-saturate' column; saturate "defines how the conversion behaves if an
    input value is out of range"). Negative values and -0 are "Unspecified" (a region, as is
    0 under saturate: see :func:`cast_into_e8m0_unspecified`)."""
    return round_to_scale(values, FLOAT_FORMATS[E8M0], mode=round_mode, saturate=saturate)


def float8_table(values: np.ndarray, target: str, saturate: bool,
                 opset: int = INFINITY_IS_MAX_SINCE - 1) -> np.ndarray:
    """The Cast text's float 8 table at ``opset`` (Cast-19 to 23's by default; QuantizeLinear's
    saturation reads the one at the run's opset): ``[x]`` is x rounded to the target's mantissa width (to
    nearest even, exponent unbounded); ``[x] > FLT_MAX`` gives FLT_MAX under saturate, else
    the overflow value (Inf in E5M2, NaN in the others); infinities as the "Inf" rows say
    (:data:`SATURATED_INFINITY_IS_MAX`, all FLT_MAX from :data:`INFINITY_IS_MAX_SINCE`);
    -0 gives 0 in the fnuz formats; NaN gives NaN."""
    fmt = FLOAT_FORMATS[target]
    rounded = round_to_format(values, fmt, saturate=saturate)
    if saturate and not SATURATED_INFINITY_IS_MAX[target] and opset < INFINITY_IS_MAX_SINCE:
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


def cast_value(x: np.ndarray, source: str, target: str, saturate: int = 1,
               round_mode: str = "up", opset: int | None = None) -> np.ndarray:
    """ONNX Cast of the widened ``x`` (of dtype name ``source``) to ``target``: the value the
    text in force at ``opset`` (default: the run's) defines, before the judge's one rounding into a float target (float 8 targets are
    rounded here, by the text's tables; integer targets give integers). Into float4e2m1 the
    rules for floating point targets apply (rounded once by the judge); its out-of-range
    values, infinities and NaN are a region (:func:`cast_into_float4_unrepresentable`)."""
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
        return float8_table(x, target, bool(saturate), onnx_opset() if opset is None else opset)
    if target == E8M0:
        return e8m0_table(x, bool(saturate), round_mode)
    return x   # the judge rounds once to nearest even; out of range gives +/- infinity


def conversion_pairs(spec):
    """'SRC->DST' for every ordered pair of the spec's dtypes, a cast to the same type included."""
    return [f"{a}->{b}" for a in spec.dtypes for b in spec.dtypes]


def _saturate(draw, kit, target):
    """Cast-19+'s ``saturate``: absent (its default, 1), 0 or 1; drawn for every target (the
    text applies it to float 8 targets only), given less often where it should change nothing;
    into float8e8m0 Cast-24+'s ``round_mode`` too: absent (``up``), up, down or nearest."""
    given = [{"saturate": 0}, {"saturate": 1}]
    if target != E8M0:
        return draw(kit.st.sampled_from([{}] + given if is_float8(target) else [{}] * 4 + given))
    modes = [{}] + [{"round_mode": mode} for mode in ("up", "down", "nearest")]
    return {**draw(kit.st.sampled_from([{}] + given)), **draw(kit.st.sampled_from(modes))}


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
    return {name: case.attrs[name] for name in ("saturate", "round_mode") if name in case.attrs}


def onnx_cast_node(case, graph):
    graph.node("Cast", [graph.inputs[0]], to=graph.onnx_type(case.attrs["new_dtype"]),
               **_onnx_attrs(case, graph))


def onnx_cast_like_node(case, graph):
    graph.node("CastLike", list(graph.inputs), **_onnx_attrs(case, graph))


def from_onnx_cast(inputs, attrs, opset):
    """A Cast node as a case: its ``to`` (an ONNX element type) the case's ``new_dtype``, its
    ``saturate`` and ``round_mode`` (the schema's defaults where absent) as given."""
    given = {name: attrs[name] for name in ("saturate", "round_mode") if name in attrs}
    return inputs[:1], {"new_dtype": onnx_element_type(attrs["to"]), **given}


def numpy_astype(values, new_dtype, saturate=1):
    """What NumPy and ml_dtypes give for a conversion: ``astype`` (ml_dtypes casts none of its
    2- and 4-bit integers into another: through int64; its 8- and 4-bit floats through
    float32). ml_dtypes never saturates, so for saturate=1 into a float 8
    type a float source is first clipped to the target's finite range, as a NumPy user writes
    it (which also sends infinities to +-max, as Cast-24's table does: Cast-19 to 23's fnuz
    rows say NaN), a float 8 source through float32 (exact); a source of a narrower range needs
    no clip."""
    target = np_dtype(new_dtype)
    top = float(FLOAT_FORMATS[new_dtype].max_finite) if is_float8(new_dtype) else 0.0
    source = FLOAT_FORMATS.get(values.dtype.name)
    if new_dtype == E8M0 and saturate:   # into [2**-127, 2**127] (infinities and 0 too)
        scale = FLOAT_FORMATS[E8M0]
        values = np.clip(values.astype(np.float64), scale.min_normal, scale.max_finite)
    elif saturate and source is not None and source.max_finite >= top > 0:
        if source.bits <= 8:   # the bound may fall between two values of the source
            values = values.astype(np.float32)
        values = np.clip(values, values.dtype.type(-top), values.dtype.type(top))
    elif saturate and top and values.dtype.kind in "iu":
        info = np.iinfo(values.dtype)
        values = np.clip(values, values.dtype.type(max(-int(top), int(info.min))),
                         values.dtype.type(min(int(top), int(info.max))))
    if {values.dtype.name, target.name} & set(_NARROW_INTS) and values.dtype.name != target.name:
        values = values.astype(np.int64)
    elif source is not None and source.bits <= 8 and values.dtype != target:
        values = values.astype(np.float32)   # exact; ml_dtypes casts no E8M0 to FNUZ, say
    return values.astype(target)


#: ml_dtypes' integers narrower than a byte, which it casts to no other of them
_NARROW_INTS = ("int2", "uint2", "int4", "uint4")


def numpy_cast(operand, *like, new_dtype, saturate=1, round_mode="up"):
    """The numpy backend: :func:`numpy_astype`; into float8e8m0 with ``round_mode`` nearest
    only (ml_dtypes rounds to nearest, and has no other mode: other modes are unsupported)."""
    if new_dtype == E8M0 and round_mode != "nearest":
        raise unsupported(f"ml_dtypes rounds into {E8M0} to nearest, not {round_mode}")
    return (numpy_astype(operand, new_dtype, saturate),)


def rounded_cast(input, *like, new_dtype, saturate=1, round_mode="up", dtypes):  # noqa: A002
    """Cast into float64, correctly rounded (saturate applies to float 8 targets only)."""
    return (converted64(input, dtypes[0]),)


@op("onnx_cast", version=1, draw=draw_cast, dtype_labels=conversion_pairs, values=integral_half,
    onnx=onnx_cast_node, numpy=numpy_cast, rounded64=rounded_cast, midpoints=conversion_hook(),
    from_onnx=from_onnx_cast)
def oracle_onnx_cast(input, *, new_dtype, saturate=1, round_mode="up", dtypes):  # noqa: A002
    """ONNX Cast at the run's opset (see :func:`cast_value`)."""
    return (cast_value(input, dtypes[0], new_dtype, saturate, round_mode),)


@op("onnx_cast_like", version=1, draw=draw_cast_like, dtype_labels=conversion_pairs,
    values=integral_half, onnx=onnx_cast_like_node, numpy=numpy_cast, rounded64=rounded_cast,
    midpoints=conversion_hook(like=True))
def oracle_onnx_cast_like(input, target_type, *, new_dtype, saturate=1,  # noqa: A002
                          round_mode="up", dtypes):
    """ONNX CastLike at the run's opset: Cast to the element type of ``target_type`` (its
    values unused)."""
    return (cast_value(input, dtypes[0], new_dtype, saturate, round_mode),)


@region
def cast_into_float4_unrepresentable(ctx) -> np.ndarray:
    """Cast into float4e2m1 (or, from Cast-28, float6e2m3 or float6e3m2) of NaN, an infinity,
    or a value whose rounding exceeds the type's largest finite value (6, 7.5, 28): the text's
    rules give +/- infinity out of range and NaN for NaN, which FP4 and FP6 lack (OCP MX
    v1.0), and no table names these types (the operand: input 0)."""
    if ctx.out_dtype not in UNREPRESENTABLE_SPECIALS:
        return ctx.none()
    with np.errstate(all="ignore"):
        rounded = round_to_format(ctx.inputs[0].astype(np.float64), FLOAT_FORMATS[ctx.out_dtype])
    return ctx.aligned(np.isnan(rounded))


@region
def cast_into_e8m0_unspecified(ctx) -> np.ndarray:
    """Cast into float8e8m0 of a negative value or -0 ("Unspecified" in the text's table:
    "Casting negative values to FLOAT8E8M0 gives undefined behavior"), and of 0 under saturate,
    for which the table gives "0", a value E8M0 lacks (the encoding 0x00, 2**-127, as the row
    "x < E8M0_MIN" gives, or another reading)."""
    if ctx.out_dtype != E8M0:
        return ctx.none()
    x = ctx.inputs[0].astype(np.float64)
    negative = (x < 0) | ((x == 0) & np.signbit(x))
    return ctx.aligned(negative | ((x == 0) & bool(ctx.attrs.get("saturate", 1))))



@region
def cast_like_round_mode_dropped(ctx) -> np.ndarray:
    """CastLike-24+ into float8e8m0 with ``round_mode`` other than up, where the two readings
    differ: the schema gives CastLike ``round_mode``, but its function body (the schema's
    context-dependent function) builds ``Cast(to, saturate)`` without it, so Cast's default up."""
    if ctx.out_dtype != E8M0 or ctx.attrs.get("round_mode", "up") == "up":
        return ctx.none()
    up = ctx.oracle_with(list(ctx.inputs), round_mode="up")
    return ~((up == ctx.expected) | (np.isnan(up) & np.isnan(ctx.expected)))
