"""Element-wise oracles (XLA operation semantics: element-wise unary, binary, comparison ops).

Each function takes float64 (or int64 / bool) arrays and returns the exact or float64 result.
"""
from __future__ import annotations

import numpy as np

from conform.ops._registry import op


def _int_trunc_div(lhs, rhs):
    """Integer division rounding toward zero, exact in int64; division by zero gives 0.

    ``lhs - fmod(lhs, rhs)`` is an exact multiple of ``rhs`` (fmod on integers is C's ``%``), so the
    floor division below is exact and no ``abs(INT_MIN)`` overflow can occur.
    """
    safe = np.where(rhs == 0, 1, rhs)
    return np.where(rhs == 0, 0, (lhs - np.fmod(lhs, safe)) // safe)


@op("add", version=1)
def oracle_add(lhs, rhs):
    """lhs + rhs."""
    return (lhs + rhs,)


@op("subtract", version=1)
def oracle_subtract(lhs, rhs):
    """lhs - rhs."""
    return (lhs - rhs,)


@op("multiply", version=1)
def oracle_multiply(lhs, rhs):
    """lhs * rhs."""
    return (lhs * rhs,)


@op("divide", version=1)
def oracle_divide(lhs, rhs):
    """lhs / rhs; integers truncate toward zero (XLA Div, C semantics)."""
    if lhs.dtype.kind in "iu":
        return (_int_trunc_div(lhs, rhs),)
    return (lhs / rhs,)


@op("remainder", version=1)
def oracle_remainder(lhs, rhs):
    """XLA Rem: lhs - rhs * trunc(lhs / rhs); the sign follows the dividend, |result| < |rhs|."""
    return (np.fmod(lhs, rhs),)  # C's % on integers; exact in binary floating point


@op("maximum", version=1)
def oracle_maximum(lhs, rhs):
    """max(lhs, rhs); a NaN operand gives NaN (as IEEE 754-2019 maximum); -0 vs +0 is left open."""
    return (np.maximum(lhs, rhs),)


@op("minimum", version=1)
def oracle_minimum(lhs, rhs):
    """min(lhs, rhs); a NaN operand gives NaN (as IEEE 754-2019 minimum); -0 vs +0 is left open."""
    return (np.minimum(lhs, rhs),)


@op("power", version=1)
def oracle_power(lhs, rhs):
    """lhs ** rhs with the C99/IEEE 754 pow special cases (pow(x, 0) = 1, pow(1, y) = 1, ...)."""
    return (np.power(lhs, rhs),)


@op("abs", version=1)
def oracle_abs(operand):
    """|x|."""
    return (np.abs(operand),)


@op("negate", version=1)
def oracle_negate(operand):
    """-x."""
    return (np.negative(operand),)


@op("exp", version=1)
def oracle_exp(operand):
    """e ** x."""
    return (np.exp(operand),)


@op("log", version=1)
def oracle_log(operand):
    """ln(x); ln(0) = -inf, ln(x < 0) = NaN."""
    return (np.log(operand),)


@op("tanh", version=1)
def oracle_tanh(operand):
    """tanh(x)."""
    return (np.tanh(operand),)


@op("sqrt", version=1)
def oracle_sqrt(operand):
    """sqrt(x); sqrt(-0) = -0, sqrt(x < 0) = NaN."""
    return (np.sqrt(operand),)


@op("floor", version=1)
def oracle_floor(operand):
    """floor(x), the largest integer <= x."""
    return (np.floor(operand),)


@op("round", version=1)
def oracle_round(operand):
    """XLA Round: to nearest integer, ties away from zero.

    ``x - trunc(x)`` is exact, so the tie test is exact even where ``floor(|x| + 0.5)`` would round.
    """
    truncated = np.trunc(operand)
    away = np.abs(operand - truncated) >= 0.5
    return (np.where(away, truncated + np.sign(operand), truncated),)


@op("lt", version=1)
def oracle_lt(lhs, rhs):
    """lhs < rhs under IEEE 754 comparison (false if either is NaN)."""
    return (np.less(lhs, rhs),)


@op("eq", version=1)
def oracle_eq(lhs, rhs):
    """lhs == rhs under IEEE 754 comparison (-0 == +0; NaN != NaN)."""
    return (np.equal(lhs, rhs),)


@op("atan2", version=1)
def oracle_atan2(lhs, rhs):
    """atan2(lhs, rhs): the angle of (rhs, lhs), with the C99/IEEE 754 signed-zero and infinity
    cases (atan2(±0, -0) = ±pi, atan2(±0, +0) = ±0, atan2(±inf, -inf) = ±3pi/4, ...)."""
    return (np.arctan2(lhs, rhs),)
