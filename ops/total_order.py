"""XLA's total-order comparisons (EqTotalOrder, NeTotalOrder, GeTotalOrder, GtTotalOrder,
LeTotalOrder, LtTotalOrder): exact, on float inputs.

The XLA operation semantics text ("元素级比较运算", element-wise comparison): these ops "provide
the same function [as Eq, Ne, ...] but also support a total order over floating-point numbers by
enforcing -NaN < -Inf < -Finite < -0 < +0 < +Finite < +Inf < +NaN". The oracle ranks each value
by those eight classes and orders finite values of one class by value. The text does not order
NaNs of one sign among themselves: where both operands are NaNs of one sign with different bit
patterns the answer is the region ``nan_payload_order`` (one NaN is equal to itself).

jax exposes EQ, LE and LT with ``comparison_type=TOTALORDER`` as the primitives
``lax.eq_to_p``, ``lax.le_to_p`` and ``lax.lt_to_p`` (each lowered to ``stablehlo.compare ...,
TOTALORDER``); it has no GT, GE or NE total-order primitive, and ``lax.gt`` lowers with
``FLOAT`` (IEEE) comparison, so those three have no xla binding (not rewritten from others).
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import region
from conform.ops.elementwise import xla_binary, xla_operands

_CLASS_NAN_NEG, _CLASS_INF_NEG, _CLASS_FINITE_NEG, _CLASS_ZERO_NEG = 0, 1, 2, 3
_CLASS_ZERO_POS, _CLASS_FINITE_POS, _CLASS_INF_POS, _CLASS_NAN_POS = 4, 5, 6, 7


def total_order_key(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(class, value)`` per element: the text's eight classes -NaN < -Inf < -Finite < -0 < +0
    < +Finite < +Inf < +NaN, and within a class of finite nonzero values the value itself (0
    elsewhere). Ordering pairs lexicographically is the text's total order.

    >>> [int(c) for c in total_order_key(np.array([-np.nan, -0.0, 0.0, 2.0]))[0]]
    [0, 3, 4, 5]
    """
    negative = np.signbit(x)
    cls = np.select(
        [np.isnan(x), np.isinf(x), x == 0],
        [np.where(negative, _CLASS_NAN_NEG, _CLASS_NAN_POS),
         np.where(negative, _CLASS_INF_NEG, _CLASS_INF_POS),
         np.where(negative, _CLASS_ZERO_NEG, _CLASS_ZERO_POS)],
        np.where(negative, _CLASS_FINITE_NEG, _CLASS_FINITE_POS))
    value = np.where(np.isfinite(x), x, 0.0)
    return cls, value


def _order(lhs, rhs):
    """-1, 0 or 1 per element: lhs before, equal to, or after rhs in the total order."""
    (cl, vl), (cr, vr) = total_order_key(lhs), total_order_key(rhs)
    return np.where(cl != cr, np.sign(cl - cr), np.sign(vl - vr)).astype(np.int64)


def _sign_magnitude_key(x: np.ndarray) -> np.ndarray:
    """The numpy backend's key: the float's bit pattern as a signed integer of its width, the
    magnitude bits of a negative pattern flipped, so that integer order is the total order (the
    classic sign-magnitude to two's-complement mapping). A type of at most 8 bits is first
    converted to float32 (exact): float4 and float6 fill a byte's low bits only, so a byte's
    top bit is not their sign."""
    if x.dtype.itemsize == 1:
        x = x.astype(np.float32)
    bits = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    magnitude = np.array(np.iinfo(bits.dtype).max, bits.dtype)
    return np.where(bits < 0, bits ^ magnitude, bits)


def numpy_total_order(lhs, rhs, *, broadcast_dimensions=None, bound):
    """The numpy backend: the binding's NumPy comparison (``bound``) on the operands'
    sign-magnitude keys (NumPy has no total-order comparison of its own)."""
    lhs, rhs = xla_operands(lhs, rhs, broadcast_dimensions)
    return bound(_sign_magnitude_key(lhs), _sign_magnitude_key(rhs))


_HOOKS = dict(numpy=numpy_total_order)


@xla_binary("eq_total_order", **_HOOKS)
def oracle_eq_total_order(lhs, rhs):
    """EqTotalOrder: lhs and rhs hold the same place in the total order (-0 != +0, NaN == NaN)."""
    return (_order(lhs, rhs) == 0,)


@xla_binary("ne_total_order", **_HOOKS)
def oracle_ne_total_order(lhs, rhs):
    """NeTotalOrder: not EqTotalOrder."""
    return (_order(lhs, rhs) != 0,)


@xla_binary("lt_total_order", **_HOOKS)
def oracle_lt_total_order(lhs, rhs):
    """LtTotalOrder: lhs before rhs in -NaN < -Inf < -Finite < -0 < +0 < +Finite < +Inf < +NaN."""
    return (_order(lhs, rhs) < 0,)


@xla_binary("le_total_order", **_HOOKS)
def oracle_le_total_order(lhs, rhs):
    """LeTotalOrder: lhs before or equal to rhs in the total order."""
    return (_order(lhs, rhs) <= 0,)


@xla_binary("gt_total_order", **_HOOKS)
def oracle_gt_total_order(lhs, rhs):
    """GtTotalOrder: lhs after rhs in the total order."""
    return (_order(lhs, rhs) > 0,)


@xla_binary("ge_total_order", **_HOOKS)
def oracle_ge_total_order(lhs, rhs):
    """GeTotalOrder: lhs after or equal to rhs in the total order."""
    return (_order(lhs, rhs) >= 0,)


@region
def nan_payload_order(ctx) -> np.ndarray:
    """Both operands NaN of one sign with different bit patterns: the text's total order ranks
    -NaN and +NaN only, not NaN payloads among themselves."""
    if len(ctx.inputs) != 2 or ctx.inputs[0].dtype.kind not in "fV":
        return ctx.none()
    lhs, rhs = (ctx.aligned(x) for x in ctx.inputs)
    width = np.dtype(f"u{lhs.dtype.itemsize}")
    both = np.isnan(lhs.astype(np.float64)) & np.isnan(rhs.astype(np.float64))
    differ = lhs.copy().view(width) != rhs.copy().view(width)
    return both & (np.signbit(lhs.astype(np.float64)) == np.signbit(rhs.astype(np.float64))) & differ


@region
def signless_nan_order(ctx) -> np.ndarray:
    """Pairs of which exactly one operand is NaN, in a type whose NaN has no sign: the fnuz
    types' one NaN is the code of negative zero (0x80), float8_e8m0fnu's (0xFF) is in a type
    without a sign bit. The text's order places -NaN first and +NaN last; such a NaN is
    neither, so whether it comes before or after every number is open (equality is not: a NaN
    equals no number either way)."""
    fmt = FLOAT_FORMATS.get(str(ctx.inputs[0].dtype)) if len(ctx.inputs) == 2 else None
    if fmt is None or not (fmt.nan_encoding == "negative_zero" or not fmt.signed):
        return ctx.none()
    lhs, rhs = (np.isnan(ctx.aligned(x).astype(np.float64)) for x in ctx.inputs)
    return lhs != rhs
