"""Element-wise logical, bitwise, shift and comparison oracles: exact, on bool and integer inputs.

Comparisons follow IEEE 754-2019 §5.11 (NaN is unordered: every comparison but ``ne`` is false;
-0 == +0). The bit-level oracles (bitwise, shifts, population count, leading zeros) work on the
two's-complement bit pattern *in the width of the array they are given*: called on int32 they are
32-bit operations. The registry widens integer inputs to int64 before calling an oracle, so a spec
may list only the dtypes whose 64-bit result, cast back, is the same (see each function).
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.elementwise import xla_binary, xla_operands
from conform.ops.xla_complex_order import lexicographic
from conform.dtypes import int_info


@xla_binary("ne")
def oracle_ne(lhs, rhs):
    """lhs != rhs under IEEE 754 comparison (true if either is NaN; -0 == +0)."""
    return (np.not_equal(lhs, rhs),)


@xla_binary("gt")
def oracle_gt(lhs, rhs):
    """lhs > rhs under IEEE 754 comparison (false if either is NaN); complex
    operands: lexicographic (:func:`conform.ops.xla_complex_order.lexicographic`)."""
    if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):
        return (lexicographic("gt", lhs, rhs),)
    return (np.greater(lhs, rhs),)


@xla_binary("ge")
def oracle_ge(lhs, rhs):
    """lhs >= rhs under IEEE 754 comparison (false if either is NaN; -0 >= +0); complex
    operands: lexicographic (:func:`conform.ops.xla_complex_order.lexicographic`)."""
    if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):
        return (lexicographic("ge", lhs, rhs),)
    return (np.greater_equal(lhs, rhs),)


@xla_binary("le")
def oracle_le(lhs, rhs):
    """lhs <= rhs under IEEE 754 comparison (false if either is NaN; +0 <= -0); complex
    operands: lexicographic (:func:`conform.ops.xla_complex_order.lexicographic`)."""
    if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):
        return (lexicographic("le", lhs, rhs),)
    return (np.less_equal(lhs, rhs),)


@xla_binary("bitwise_and")
def oracle_bitwise_and(lhs, rhs):
    """XLA And: logical AND on PRED, bitwise AND on integers (width-independent)."""
    return (np.bitwise_and(lhs, rhs),)


@xla_binary("bitwise_or")
def oracle_bitwise_or(lhs, rhs):
    """XLA Or: logical OR on PRED, bitwise OR on integers (width-independent)."""
    return (np.bitwise_or(lhs, rhs),)


@xla_binary("bitwise_xor")
def oracle_bitwise_xor(lhs, rhs):
    """XLA Xor: logical XOR on PRED, bitwise XOR on integers (width-independent)."""
    return (np.bitwise_xor(lhs, rhs),)


@op("bitwise_not", version=1)
def oracle_bitwise_not(operand):
    """XLA Not: logical NOT on PRED, bitwise complement ~x on integers (width-independent)."""
    return (np.invert(operand),)


def _shift_operands(lhs, rhs, dtypes):
    """``(pattern, amount, bits, unsigned, in_range)``: ``lhs``'s bit pattern in its own type's
    width (uint64), the amount clipped into [0, bits - 1] (uint64), the width, whether the type
    is unsigned, and where the amount is in range (elsewhere the region
    ``shift_out_of_range``; the value there is unjudged)."""
    pattern, bits = _pattern(lhs, dtypes)
    amount = np.clip(rhs.astype(np.int64), 0, bits - 1).astype(np.uint64)
    unsigned = (dtypes[0] if dtypes else lhs.dtype.name).startswith("uint")
    return pattern, amount, bits, unsigned, (rhs >= 0) & (rhs < bits)


def _value(pattern: np.ndarray, bits: int, unsigned: bool) -> np.ndarray:
    """The value whose ``bits``-bit pattern is ``pattern`` (uint64): the pattern itself for an
    unsigned type (uint64), its two's-complement reading otherwise (int64)."""
    pattern = pattern & np.uint64((1 << bits) - 1)
    if unsigned:
        return pattern
    signed = pattern.astype(np.int64)
    return np.where(signed >= 1 << (bits - 1), signed - (1 << bits), signed) if bits < 64 else \
        pattern.view(np.int64)


def _numpy_right_shift(kind: str):
    """The numpy backend of a right shift: NumPy's right_shift is arithmetic on signed types
    and logical on unsigned ones, so the pattern is shifted as its view of ``kind`` ('i' or
    'u', as a NumPy user writes it) and viewed back. ml_dtypes' 2- and 4-bit integers (kind
    'V', a byte each) have no such view: NumPy's own right_shift runs on them."""
    def shift(lhs, rhs, *, broadcast_dimensions=None):
        lhs, rhs = xla_operands(lhs, rhs, broadcast_dimensions)
        if lhs.dtype.kind not in "iu":
            return np.right_shift(lhs, rhs)
        viewed = np.dtype(f"{kind}{lhs.dtype.itemsize}")
        return np.right_shift(lhs.view(viewed), rhs.astype(viewed)).view(lhs.dtype)
    return shift


numpy_shift_right_logical = _numpy_right_shift("u")


@xla_binary("shift_left")
def oracle_shift_left(lhs, rhs, *, dtypes=None):
    """lhs * 2**rhs modulo 2**bits, for 0 <= rhs < bits, bits the width of lhs's type (4 for
    int4). Other amounts are the region ``shift_out_of_range``; 0 is returned there, unjudged.
    """
    pattern, amount, bits, unsigned, in_range = _shift_operands(lhs, rhs, dtypes)
    return (_value(np.where(in_range, pattern << amount, 0), bits, unsigned),)


@xla_binary("shift_right_arithmetic", numpy=_numpy_right_shift("i"))
def oracle_shift_right_arithmetic(lhs, rhs, *, dtypes=None):
    """floor(v / 2**rhs), v the bit pattern of lhs read as a signed number of its type's width
    (vacated bits copy the top bit, for an unsigned type too); 0 <= rhs < bits. Other amounts:
    region ``shift_out_of_range`` (the sign fill is returned there, unjudged)."""
    pattern, amount, bits, unsigned, _ = _shift_operands(lhs, rhs, dtypes)
    signed = _value(pattern, bits, unsigned=False)   # the pattern read as two's complement
    return (_value((signed >> amount.astype(np.int64)).view(np.uint64), bits, unsigned),)



@xla_binary("shift_right_logical", numpy=numpy_shift_right_logical)
def oracle_shift_right_logical(lhs, rhs, *, dtypes=None):
    """The bit pattern of lhs in its type's width divided by 2**rhs: vacated bits are zero;
    0 <= rhs < bits. Other amounts: region ``shift_out_of_range``; 0 is returned there,
    unjudged."""
    pattern, amount, bits, unsigned, in_range = _shift_operands(lhs, rhs, dtypes)
    return (_value(np.where(in_range, pattern >> amount, 0), bits, unsigned),)


def _pattern(operand: np.ndarray, dtypes) -> tuple[np.ndarray, int]:
    """``(pattern, bits)``: the two's-complement bit pattern of ``operand`` in the width of its
    original dtype (the registry widens integers to int64, which keeps the low bits), as
    uint64, and that width (4 for int4 and uint4)."""
    bits = int_info(dtypes[0] if dtypes else operand.dtype.name).bits
    pattern = operand.astype(np.int64).view(np.uint64)
    return pattern & np.uint64((1 << bits) - 1), bits


def numpy_population_count(operand):
    """The numpy backend: ``np.bitwise_count`` (which counts the bits of ``|x|``), its uint8
    count given the operand's type."""
    return np.bitwise_count(operand).astype(operand.dtype)


@op("population_count", version=1, numpy=numpy_population_count)
def oracle_population_count(operand, *, dtypes=()):
    """The number of set bits in the two's-complement pattern of ``operand`` in its original
    width (a negative int8 has at most 8 set bits)."""
    pattern, _ = _pattern(operand, dtypes)
    return (np.bitwise_count(pattern).astype(np.int64),)


@op("count_leading_zeros", version=1)
def oracle_count_leading_zeros(operand, *, dtypes=()):
    """bits - bit_length(pattern): leading zero bits of the pattern in ``operand``'s original
    width (clz of a 32-bit 1 is 31, of a 64-bit 1 is 63, of a 4-bit 1 is 3).

    Smearing the highest set bit down to bit 0 makes popcount(pattern) the bit length.
    """
    pattern, bits = _pattern(operand, dtypes)
    for step in (1, 2, 4, 8, 16, 32):
        pattern = pattern | (pattern >> np.uint64(step))
    return (bits - np.bitwise_count(pattern).astype(np.int64),)
