"""ONNX's broadcasting element-wise operators (ai.onnx, opset 21), judged by ONNX's semantics.

They differ from the XLA ops of the same arithmetic in their signature: every input broadcasts
multidirectionally (NumPy's rule, ONNX Broadcasting.md), where XLA's element-wise ops take equal
shapes. Where the arithmetic itself agrees, the oracle is the XLA op's (NumPy broadcasts it);
the specs (ops/onnx_*.yaml) give ONNX's types, regions and error models. Clip takes optional
0-d ``min`` and ``max`` inputs.
"""
from __future__ import annotations

import numpy as np

from conform.ops._midpoints import (DIFFERENCE_MIDPOINTS, PRODUCT_MIDPOINTS, QUOTIENT_MIDPOINTS,
                                    SUM_MIDPOINTS)
from conform.ops._rounded import exact_add, rounded_elementwise
from conform.ops.optional_inputs import by_name
from conform.ops.regions import RegionContext, floating
from conform.op_registry import op, region
from conform.dtypes import FLOAT_FORMATS, int_info, np_dtype
from conform.ops.elementwise import (oracle_add, oracle_divide, oracle_eq, oracle_lt,
                                     oracle_maximum, oracle_minimum, oracle_multiply,
                                     oracle_remainder, oracle_subtract,
                                     rounded_add, rounded_divide, rounded_multiply,
                                     rounded_subtract, unsigned64)
from conform.ops.logical import (oracle_bitwise_and, oracle_bitwise_or, oracle_bitwise_xor,
                                 oracle_ge, oracle_gt, oracle_le, oracle_shift_left,
                                 oracle_shift_right_logical)
from conform.ops.selection import oracle_select
from conform.ops.unary_math import oracle_sign


@op("onnx_add", version=1, rounded64=rounded_add,
    midpoints=SUM_MIDPOINTS)
def oracle_onnx_add(a, b, *, dtypes=None):
    """a + b (uint64: modulo 2**64, where a sum past the type is the spec's int_overflow)."""
    return oracle_add(*unsigned64((a, b), dtypes))


@op("onnx_sub", version=1, rounded64=rounded_subtract,
    midpoints=DIFFERENCE_MIDPOINTS)
def oracle_onnx_sub(a, b, *, dtypes=None):
    """a - b (uint64: modulo 2**64, where a difference past the type is the spec's
    int_overflow)."""
    return oracle_subtract(*unsigned64((a, b), dtypes))


@op("onnx_mul", version=1, rounded64=rounded_multiply,
    midpoints=PRODUCT_MIDPOINTS)
def oracle_onnx_mul(a, b, *, dtypes=None):
    """a * b (uint64: modulo 2**64, where a product past the type is the spec's
    int_overflow)."""
    return oracle_multiply(*unsigned64((a, b), dtypes))


@op("onnx_div", version=1, rounded64=rounded_divide,
    midpoints=QUOTIENT_MIDPOINTS)
def oracle_onnx_div(a, b, *, dtypes=None):
    """a / b; integers: 'truncating division (rounding toward zero)' (ONNX Div); uint64 as
    the unsigned type's quotient."""
    return oracle_divide(*unsigned64((a, b), dtypes))


@op("onnx_mod_fmod", version=1)
def oracle_onnx_mod_fmod(a, b):
    """Mod with fmod=1: 'follows that of the fmod function in C' (sign of the dividend)."""
    return oracle_remainder(a, b)


@op("onnx_mod_fmod_28", version=1)
def oracle_onnx_mod_fmod_28(a, b):
    """Mod-28 with fmod=1: 'the output is calculated as A - trunc(A / B) * B' (exact, as C's
    fmod), with the text's special cases (the spec's table) and the sign of -0 mod a positive
    divisor left open (region ``negative_zero_by_positive``)."""
    return oracle_remainder(a, b)


@region
def negative_zero_by_positive(ctx: RegionContext) -> np.ndarray:
    """A -0 dividend and a positive divisor: Mod-28 with fmod=1 lets 'either signed zero' be
    the result."""
    a, b = ctx.inputs
    if not floating(a):
        return ctx.none()
    with np.errstate(invalid="ignore"):   # NaN divisors compare False
        return ctx.aligned((a == 0) & np.signbit(a)) & ctx.aligned(b > 0)


@op("onnx_mod", version=1)
def oracle_onnx_mod(a, b, *, dtypes=None):
    """Mod with fmod=0 on integers: 'the output is calculated as A - floor(A / B) * B. The
    result has the same sign as B' (Mod-28; Mod-13: 'the Python %-operator'), exact: NumPy's
    integer ``mod`` is that floored remainder (uint64 as the unsigned type's)."""
    a, b = unsigned64((a, b), dtypes)
    with np.errstate(divide="ignore", invalid="ignore"):   # B = 0: the spec's open region
        return (np.mod(a, b),)


def _floored_remainder(a, b, add=np.add):
    """A - floor(A / B) * B exactly (the truncated remainder, exact, plus B where its sign is
    not B's, by ``add``), a zero with B's sign: Mod-28's fmod 0 and its special cases (x or
    a zero result: 'the sign of y'; x infinite or y zero: NaN; y infinite: x of y's sign,
    else y; NaN: NaN)."""
    with np.errstate(invalid="ignore"):
        r = np.fmod(a, b)
        flip = (r != 0) & ~np.isnan(r) & (np.signbit(r) != np.signbit(b))
        r = np.where(flip, add(r, b), r)
    return np.where(r == 0, np.copysign(0.0, b), r)


def rounded_mod_floor(a, b):
    """:func:`_floored_remainder` correctly rounded into float64 (the one addition exactly)."""
    return (_floored_remainder(a, b, lambda r, y: rounded_elementwise(exact_add, r, y)),)


@op("onnx_mod_floor", version=1, rounded64=rounded_mod_floor)
def oracle_onnx_mod_floor(a, b):
    """Mod-28 with fmod=0 on floats: 'the output is calculated as A - floor(A / B) * B. The
    result has the same sign as B' (read as the exact value, rounded once: the truncated
    remainder is exact, and adding B rounds), with the text's special cases."""
    return (_floored_remainder(a, b),)


def from_onnx_extreme(inputs, attrs, opset):
    """A Max or Min node as a case of two inputs: of one tensor, the case whose two inputs are
    both it (the max or min of x and x is x, its zero's sign and NaN included: the text's
    value of 'each of the input tensors' when there is one). A node of three or more inputs
    raises: the spec draws two."""
    if len(inputs) == 1:
        inputs = [inputs[0], inputs[0]]
    if len(inputs) != 2:
        raise ValueError(f"the node gives {len(inputs)} inputs 'data_0'; the spec draws 2")
    return inputs, {}


@op("onnx_max", version=1, from_onnx=from_onnx_extreme)
def oracle_onnx_max(data_0, data_1, *, dtypes=None):
    """The larger of the two (NaN operands: an implementation-defined region of the spec)."""
    return oracle_maximum(*unsigned64((data_0, data_1), dtypes))


@op("onnx_min", version=1, from_onnx=from_onnx_extreme)
def oracle_onnx_min(data_0, data_1, *, dtypes=None):
    """The smaller of the two (NaN operands: an implementation-defined region of the spec)."""
    return oracle_minimum(*unsigned64((data_0, data_1), dtypes))


@op("onnx_equal", version=1)
def oracle_onnx_equal(a, b, *, dtypes=None):
    """a == b under IEEE 754 comparison."""
    return oracle_eq(*unsigned64((a, b), dtypes))


@op("onnx_greater", version=1)
def oracle_onnx_greater(a, b, *, dtypes=None):
    """a > b under IEEE 754 comparison."""
    return oracle_gt(*unsigned64((a, b), dtypes))


@op("onnx_greater_or_equal", version=1)
def oracle_onnx_greater_or_equal(a, b, *, dtypes=None):
    """a >= b under IEEE 754 comparison."""
    return oracle_ge(*unsigned64((a, b), dtypes))


@op("onnx_less", version=1)
def oracle_onnx_less(a, b, *, dtypes=None):
    """a < b under IEEE 754 comparison."""
    return oracle_lt(*unsigned64((a, b), dtypes))


@op("onnx_less_or_equal", version=1)
def oracle_onnx_less_or_equal(a, b, *, dtypes=None):
    """a <= b under IEEE 754 comparison."""
    return oracle_le(*unsigned64((a, b), dtypes))


@op("onnx_bitwise_and", version=1)
def oracle_onnx_bitwise_and(a, b):
    """a & b."""
    return oracle_bitwise_and(a, b)


@op("onnx_bitwise_or", version=1)
def oracle_onnx_bitwise_or(a, b):
    """a | b."""
    return oracle_bitwise_or(a, b)


@op("onnx_bitwise_xor", version=1)
def oracle_onnx_bitwise_xor(a, b):
    """a ^ b."""
    return oracle_bitwise_xor(a, b)


@op("onnx_bit_shift_left", version=1)
def oracle_onnx_bit_shift_left(x, y):
    """x shifted left by y bits, modulo 2**bits (unsigned types only)."""
    return oracle_shift_left(x, y)


@op("onnx_bit_shift_right", version=1)
def oracle_onnx_bit_shift_right(x, y):
    """x shifted right by y bits, zeros coming in (unsigned types only)."""
    return oracle_shift_right_logical(x, y)


def _shifted_28(x, y, direction: str, dtype: str) -> np.ndarray:
    """BitShift-28 on the values as stored (Python integers: exact at every width)."""
    info = int_info(dtype)
    bits, signed, top = info.bits, info.min < 0, int(info.max)
    x, y = np.broadcast_arrays(x, y)
    shape, x, y = x.shape, x.astype(object).ravel(), y.astype(object).ravel()   # (1-D: no 0-d)
    inside = (y >= 0) & (y < bits)
    amount = np.where(inside, y, 0)
    if direction == "RIGHT":   # Python's >> on an int is arithmetic: the sign fills in
        out = np.where(inside, x >> amount, np.where(x < 0, -1, 0))
    else:
        pattern = (x << amount) % (1 << bits)
        if signed:   # 'bits shifted past the sign bit are discarded': the two's complement
            pattern = np.where(pattern > top, pattern - (1 << bits), pattern)
        out = np.where(inside, pattern, 0)
    return out.reshape(shape)


def _bit_shift_28(x, y, dtypes, direction: str):
    """BitShift-28: x moved left or right by y bits; 'For a signed T the right shift is an
    arithmetic shift (sign-extending)', a left shift discards the bits 'shifted past the sign
    bit'; 'If Y is negative, or is greater than or equal to the number of bits of T, then the
    result is ... -1 for a right shift on a negative X ... and 0 in every other case'."""
    dtype = dtypes[0] if dtypes else np.asarray(x).dtype.name
    x, y = unsigned64((x, y), dtypes)
    out = _shifted_28(x, y, direction, dtype)
    return (out.astype(np.uint64 if dtype == "uint64" else np.int64),)


@op("onnx_bit_shift_left_28", version=1)
def oracle_onnx_bit_shift_left_28(x, y, *, dtypes=None):
    """BitShift-28, direction LEFT (:func:`_bit_shift_28`)."""
    return _bit_shift_28(x, y, dtypes, "LEFT")


@op("onnx_bit_shift_right_28", version=1)
def oracle_onnx_bit_shift_right_28(x, y, *, dtypes=None):
    """BitShift-28, direction RIGHT (:func:`_bit_shift_28`)."""
    return _bit_shift_28(x, y, dtypes, "RIGHT")


@op("onnx_where", version=1)
def oracle_onnx_where(condition, x, y):
    """x where condition else y."""
    return oracle_select(condition, x, y)


@op("onnx_sign", version=1)
def oracle_onnx_sign(input, *, dtypes=None):  # noqa: A002 - ONNX's input name
    """1 for input > 0, -1 for input < 0, 0 for a zero (its sign left open by the spec)."""
    return oracle_sign(*unsigned64((input,), dtypes))


def _limits(dtype: str) -> tuple:
    """numeric_limits<T>::lowest() and ::max() of ``dtype`` (ONNX Clip's defaults)."""
    if dtype in FLOAT_FORMATS:
        return -FLOAT_FORMATS[dtype].max_finite, FLOAT_FORMATS[dtype].max_finite
    info = np.iinfo(np_dtype(dtype))
    return int(info.min), int(info.max)


def numpy_onnx_clip(input, *bounds, absent_inputs=()):  # noqa: A002 - ONNX's input name
    """The numpy backend: ``np.clip(input, min, max)``, an absent bound None (no bound)."""
    given = by_name(("min", "max"), bounds, absent_inputs)
    return np.clip(input, given.get("min"), given.get("max"))


@op("onnx_clip", version=1, numpy=numpy_onnx_clip)
def oracle_onnx_clip(input, *bounds, absent_inputs=(), dtypes):  # noqa: A002 - ONNX's input name
    """ONNX Clip-13: Min(max, Max(input, min)); an absent min is numeric_limits<T>::lowest() and
    an absent max numeric_limits<T>::max() (so an infinite input becomes finite), and where
    min > max every element is max."""
    input, *bounds = unsigned64((input, *bounds), dtypes)  # noqa: A001 - ONNX's input name
    given = by_name(("min", "max"), bounds, absent_inputs)
    lowest, highest = _limits(dtypes[0])
    return (np.minimum(given.get("max", highest), np.maximum(input, given.get("min", lowest))),)


@op("onnx_abs_unsigned", version=1)
def oracle_onnx_abs_unsigned(x, *, dtypes=None):
    """ONNX Abs of an unsigned type: 'y = abs(x)', which is x (no value is negative); uint64
    as stored (:func:`unsigned64`)."""
    (x,) = unsigned64((np.asarray(x),), dtypes)
    return (x.copy(),)
