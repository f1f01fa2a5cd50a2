"""XLA ReducePrecision and BitcastConvertType, and ONNX BitCast: a value rounded into a narrower
float format and back, and a tensor's bits read as another element type. All are judged
exactly.

ONNX BitCast (opset 26): 'Reinterprets the binary representation of a tensor as a different
data type ... Unlike Cast, BitCast preserves the exact bit pattern'; the target 'must have the
same bit-width as the input data type', the shape is kept, 'Implementations must treat the
underlying bytes as little endian'.

ReducePrecision (XLA operation semantics, "ReducePrecision"): 'the input value is rounded to the
nearest value representable with the given number of mantissa bits (using round to nearest
even semantics), and any values that exceed the range specified by the number of exponent bits
are clamped to positive or negative infinity. NaN values are retained'; a number of bits at or
above the type's own makes that part of the conversion a no-op. The text says nothing of values
below the narrow format's smallest normal number: a region.

BitcastConvertType: 'a bitwise conversion ... implemented as a low-level cast': the operand's
bytes in memory read as the new type; between widths B > B' each element becomes B/B' elements
along a new minor-most dimension, and for B < B' the operand's last dimension (of size B'/B) is
consumed. The pieces' order is the machine's byte order (the text: 'machines with different
floating-point representations will give different results'); conform judges it on the host's.
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op, region
from conform.ops.regions import RegionContext
from conform.ops._lowering import from_onnx_element_types
from conform.dtypes import FLOAT_FORMATS, is_complex, np_dtype
from conform.ops.onnx_shape import bit_width, from_bits


# --- ReducePrecision ----------------------------------------------------------------------------

def _own_bits(dtype: str) -> tuple[int, int]:
    """(exponent bits, explicit mantissa bits) of a float type (E8M0 has no sign bit: all 8
    are its exponent's)."""
    fmt = FLOAT_FORMATS[dtype]
    return fmt.bits - fmt.precision + (not fmt.signed), fmt.precision - 1


def draw_reduce_precision(draw, kit, spec, dtype):
    """Any exponent_bits >= 1 and mantissa_bits >= 0 up to two past the type's own (where
    that part of the conversion is a no-op)."""
    exponent, mantissa = _own_bits(dtype)
    shape = draw(kit.shape(min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))
    attrs = {"exponent_bits": draw(kit.st.integers(1, exponent + 2)),
             "mantissa_bits": draw(kit.st.integers(0, mantissa + 2))}
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def _narrow_range(exponent_bits: int) -> tuple[int, int]:
    """(emin, emax) of an IEEE-style format with ``exponent_bits`` (bias 2**(e-1) - 1)."""
    emax = (1 << (exponent_bits - 1)) - 1
    return 1 - emax, emax


@region
def reduce_precision_without_infinity(ctx: RegionContext) -> np.ndarray:
    """ReducePrecision results in a type without infinities (the fn and fnuz float8 formats,
    float4_e2m1fn, the 6-bit floats, float8_e8m0fnu) that the text sends to infinity or past
    the type's range. The text (and StableHLO's reduce_precision) clamps a value past the
    ``exponent_bits`` format's range 'to positive or negative infinity', which these types lack;
    and that format is IEEE-style (its top exponent for infinity and NaN: 'at least one
    exponent bit, to tell zero from infinity'), while these types spend their top exponent on
    numbers, so whether ``exponent_bits`` equal to the type's own is the type's range (the
    text's no-op is for widths that 'exceed' the type's) or the IEEE-style one is open too
    (XLA clamps float4's 4 and 6, past an e2 format's 3). Open: where the exponent_bits
    format, at or below the type's own width, cannot hold the rounded value, and where the
    rounded value passes the type's largest finite value. Empty for types with infinities."""
    fmt = FLOAT_FORMATS.get(ctx.out_dtype)
    if fmt is None or fmt.has_inf:
        return ctx.none()
    exponent_bits = ctx.attrs["exponent_bits"]
    _, emax = _narrow_range(exponent_bits)
    magnitude = np.abs(np.asarray(ctx.expected, np.float64))
    with np.errstate(invalid="ignore"):
        narrow = (exponent_bits <= _own_bits(ctx.out_dtype)[0]) & (magnitude >= 2.0 ** (emax + 1))
        return narrow | (magnitude > fmt.max_finite)


reduce_precision_without_infinity.only_dtypes = frozenset(
    name for name, fmt in FLOAT_FORMATS.items() if not fmt.has_inf)


@region
def reduce_precision_tie_without_mantissa(ctx: RegionContext) -> np.ndarray:
    """ReducePrecision to ``mantissa_bits`` 0 of a value halfway between two powers of two
    (``1.5 * 2**k``). The text rounds 'to nearest even'; IEEE 754's roundTiesToEven delivers
    the neighbour whose significand has an even least significant digit, and without fraction
    bits both neighbours' significand is the one digit 1, so the text does not choose between
    them (XLA takes the neighbour whose exponent field is even: 3 -> 2, 6 -> 8; the oracle the
    larger). Empty for a type without fraction bits of its own (float8_e8m0fnu: no rounding)."""
    if ctx.attrs["mantissa_bits"] != 0 or _own_bits(ctx.out_dtype)[1] == 0:
        return ctx.none()
    x = np.asarray(ctx.inputs[0], np.float64)
    with np.errstate(invalid="ignore"):
        significand, _ = np.frexp(np.where(np.isfinite(x), x, 0.0))
    return ctx.aligned(np.abs(significand) == 0.75)


@op("reduce_precision", version=1, draw=draw_reduce_precision)
def oracle_reduce_precision(operand, *, exponent_bits, mantissa_bits, dtypes=()):
    """``operand`` rounded to ``mantissa_bits + 1`` significant bits, ties to even, then
    overflowing to +-inf past the largest finite value of the ``exponent_bits`` format (each
    part a no-op where its width reaches the type's own). NaN and infinities are kept."""
    own_exponent, own_mantissa = _own_bits(dtypes[0]) if dtypes else (11, 52)
    x = np.asarray(operand, np.float64)
    if mantissa_bits < own_mantissa:
        significand, exponent = np.frexp(x)   # x = significand * 2**exponent, 0.5 <= |s| < 1
        x = np.ldexp(np.rint(np.ldexp(significand, mantissa_bits + 1)), exponent - mantissa_bits - 1)
        x = np.where(np.isfinite(operand), x, operand)
    if exponent_bits < own_exponent:
        _, emax = _narrow_range(exponent_bits)
        x = np.where(np.abs(x) >= 2.0 ** (emax + 1), np.copysign(np.inf, x), x)
    return (x,)


# --- BitcastConvertType -------------------------------------------------------------------------

def bitcast_labels(spec):
    """'SRC->DST' for every ordered pair of distinct dtypes of the spec, but the 8-bit floats:
    each is read as uint8 and from it and into uint16 (two per element) only, the bits the
    text copies being all there is to judge of it; every pair of them would add some twenty
    labels each, a compilation apiece on XLA, to copy the same bytes."""
    eight = [d for d in spec.dtypes if d in FLOAT_FORMATS and FLOAT_FORMATS[d].bits == 8]
    others = [d for d in spec.dtypes if d not in eight]
    return [f"{a}->{b}" for a in others for b in others if a != b] + \
        [label for d in eight for label in (f"{d}->uint8", f"uint8->{d}", f"{d}->uint16")]


def _width(dtype: str) -> int:
    return np.dtype(np_dtype(dtype)).itemsize


def draw_bitcast(draw, kit, spec, dtype):
    """dtype is 'SRC->DST'. Into a narrower type any shape (0-d too); into a wider one the
    operand's last dimension is the ratio of the widths."""
    src, dst = dtype.split("->")
    ratio = _width(dst) // _width(src)
    shape = draw(kit.shape(max_rank=3, min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))
    if ratio > 1:
        shape = (*shape, ratio)
    return kit.Signature((src,), (shape,), {"new_dtype": dst}, dst)


def feed_bitcast(inputs, attrs, index):
    """The operand element whose bytes out[index] holds (or part of)."""
    (operand,) = inputs
    ratio = operand.dtype.itemsize / np.dtype(np_dtype(attrs["new_dtype"])).itemsize
    index = tuple(index)
    at = index[:-1] if ratio > 1 else index
    return [np.ravel(operand[at])]


def lax_bitcast(lax, attrs):
    return lambda x: lax.bitcast_convert_type(x, np.dtype(attrs["new_dtype"]))


def numpy_bitcast(operand, *, new_dtype):
    """The numpy backend: ``ndarray.view`` of a C-ordered copy, a last dimension split off or
    folded in where the sizes differ."""
    source, target = operand.copy(order="C"), np_dtype(new_dtype)
    ratio = source.dtype.itemsize / np.dtype(target).itemsize
    if ratio >= 1:
        out = source.reshape(source.shape + (1,)).view(target)
        return out.reshape(source.shape + ((int(ratio),) if ratio > 1 else ()))
    return source.view(target).reshape(source.shape[:-1])


@op("bitcast_convert_type", numpy=numpy_bitcast, version=1, draw=draw_bitcast, dtype_labels=bitcast_labels,
    feeding=feed_bitcast, lax=lax_bitcast)
def oracle_bitcast_convert_type(operand, *, new_dtype, dtypes=()):
    """The operand's bytes (in its original type, restored exactly from the widened values;
    NaNs are quiet ones) read as ``new_dtype`` in the host's byte order."""
    # a fresh C-ordered copy (np.ascontiguousarray would make a 0-d operand 1-d)
    source = np.asarray(operand).astype(np_dtype(dtypes[0]) if dtypes else operand.dtype, order="C")
    target = np_dtype(new_dtype)
    ratio = source.dtype.itemsize / np.dtype(target).itemsize
    if ratio >= 1:
        out = source.reshape(source.shape + (1,)).view(target)
        out = out.reshape(source.shape + ((int(ratio),) if ratio > 1 else ()))
    else:
        out = source.view(target).reshape(source.shape[:-1])
    wide = np.float64 if out.dtype.kind == "f" or new_dtype in FLOAT_FORMATS else np.int64
    return (out.astype(wide),)


# --- ONNX BitCast -----------------------------------------------------------------------------

def onnx_bitcast_labels(spec):
    """'SRC->DST' for every ordered pair of distinct dtypes of the spec of one bit width (the
    text: 'The target data type must have the same bit-width as the input data type'; bool is
    one byte, as ONNX stores it)."""
    return [f"{a}->{b}" for a in spec.dtypes for b in spec.dtypes
            if _bits(a) == _bits(b) and (a != b or _alone(spec, a))]


def _alone(spec, dtype: str) -> bool:
    """Whether no other type of the spec has ``dtype``'s width (complex128, 128 bits): its one
    pair is the cast to itself, which the text allows (the same bit width)."""
    return not any(_bits(other) == _bits(dtype) for other in spec.dtypes if other != dtype)


def _bits(dtype: str) -> int:
    return 8 if dtype == "bool" else bit_width(dtype)


def to_bits(array: np.ndarray, dtype: str) -> np.ndarray:
    """Each element's bit pattern (``dtype``'s width; bool one byte) as unsigned integers; a
    complex64 element's is its real part's bits below its imaginary part's (the parts 'two
    consecutive FLOAT values, real component first' in ONNX's TensorProto, little endian)."""
    width = _bits(dtype)
    raw = np.asarray(array).astype(np_dtype(dtype), order="C")   # (0-d stays 0-d)
    if is_complex(dtype):   # complex64 (complex128 has no integer of its width)
        parts = raw.reshape(raw.shape + (1,)).view(np.uint32).astype(np.uint64)
        return parts[..., 0] | (parts[..., 1] << np.uint64(32))
    bits = raw.view(f"uint{max(8, width)}")
    return bits & ((1 << width) - 1) if width < 8 else bits


def draw_onnx_bitcast(draw, kit, spec, dtype):
    """dtype is 'SRC->DST'; any shape (0-d and empty too)."""
    src, dst = dtype.split("->")
    shape = draw(kit.shape(max_rank=3, min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))
    return kit.Signature((src,), (shape,), {"to": dst}, dst)


def values_onnx_bitcast(rng, inputs, attrs):
    """Into bool, sources whose bits are 0 or 1 (a bool's two representations; the text gives
    no value to another byte); otherwise the value plan's."""
    (x,) = inputs
    if attrs["to"] != "bool":
        return [x]
    return [from_bits(rng.integers(0, 2, size=x.shape), str(x.dtype) if x.dtype != bool
                      else "bool", x.shape)]


def onnx_bitcast(case, graph):
    """One BitCast node, ``to`` the target's ONNX element type."""
    graph.node(graph.op_type, graph.inputs, to=graph.onnx_type(case.attrs["to"]))


def numpy_onnx_bitcast(x, *, to):
    """The numpy backend: ``ndarray.view`` of the elements' bytes as the target type (the 2-
    and 4-bit types, one element a byte in ml_dtypes, through their low bits)."""
    source = x.copy(order="C")
    if _bits(to) >= 8:
        return source.view(np_dtype(to))
    return (source.view(np.uint8) & ((1 << _bits(to)) - 1)).view(np_dtype(to))


@op("onnx_bitcast", version=1, draw=draw_onnx_bitcast, dtype_labels=onnx_bitcast_labels,
    values=values_onnx_bitcast, feeding="aligned", onnx=onnx_bitcast, numpy=numpy_onnx_bitcast,
    from_onnx=from_onnx_element_types("to"))
def oracle_onnx_bitcast(x, *, to, dtypes=()):
    """ONNX BitCast: each element's bits read as ``to`` ('preserves the exact bit pattern
    without any value conversion'; 'little endian': each element's own bits, whatever the
    host); the source restored in its own type from the widened values (NaNs: quiet ones)."""
    if dtypes[0] == to:   # complex128 to itself
        return (np.asarray(x),)
    bits = to_bits(x, dtypes[0])
    if is_complex(to):   # complex64: the two parts' patterns, real (the low half) first
        bits = np.stack([bits & np.uint64(0xFFFFFFFF), bits >> np.uint64(32)], axis=-1)
    target = from_bits(bits, to, np.shape(x))
    return (target.astype(np.complex128 if is_complex(to) else np.float64 if to in FLOAT_FORMATS
                          else bool if to == "bool" else np.uint64 if to == "uint64"
                          else np.int64),)
