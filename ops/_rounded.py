"""Correctly rounded float64 results of IEEE 754 basic operations, computed in exact integer
arithmetic, never by the hardware's float64 operation: the references of the
``correctly_rounded`` error model for float64 outputs (an op module's ``rounded64`` hook).

Every finite float64 is ``n / d`` exactly (``float.as_integer_ratio``, ``d`` a power of two), so
a sum, difference, product or quotient of finite operands is an exact ratio of Python integers,
and CPython's integer true division rounds that ratio correctly, to nearest with ties to even,
subnormal results and the overflow threshold included (``long_true_divide``: it raises
OverflowError where the rounded value exceeds the largest finite one, which here becomes the
infinity IEEE 754 §7.4 prescribes). A square root is rounded from ``math.isqrt`` of a scaled
integer with a sticky bit. Operands that are not finite, and exact zeros, follow IEEE 754's exact
rules (§6.1, §6.3, §7.2), written out here. The loop over elements is in Python (~1-2 us each):
float64 cases only, once per case when the corpus is generated.

Narrower outputs need none of this: for float16, bfloat16 and float32 operands of +, -, *, / and
sqrt, the float64 result rounded once more to the operands' format is the correctly rounded
result (S. A. Figueroa, "When is double rounding innocuous?", ACM SIGNUM Newsletter 30(3),
1995: it is whenever the wider format has at least 2p + 2 significand bits; float64's 53 >= 2 *
24 + 2; a subnormal target has fewer significant bits, which widens the margin).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np


def _rounded(numerator: int, denominator: int, negative_zero: bool) -> float:
    """``numerator / denominator`` rounded to nearest even into float64; an exact zero is -0
    where ``negative_zero`` (IEEE 754 §6.3's sign rules), an overflow the signed infinity."""
    if numerator == 0:
        return -0.0 if negative_zero else 0.0
    try:
        return numerator / denominator
    except OverflowError:
        return math.inf if (numerator < 0) == (denominator < 0) else -math.inf


def exact_add(a: float, b: float) -> float:
    """``a + b`` correctly rounded (an exact zero is +0 unless both operands are -0)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return a + b   # an infinity or NaN decides (inf - inf is NaN): exact rules, no rounding
    (n1, d1), (n2, d2) = a.as_integer_ratio(), b.as_integer_ratio()
    d = max(d1, d2)
    both_negative_zero = math.copysign(1.0, a) < 0 and math.copysign(1.0, b) < 0
    return _rounded(n1 * (d // d1) + n2 * (d // d2), d, both_negative_zero)


def exact_subtract(a: float, b: float) -> float:
    """``a - b`` correctly rounded: ``a + (-b)`` (negation is exact)."""
    return exact_add(a, -b)


def _sign_negative(a: float, b: float) -> bool:
    """Whether a product or quotient of ``a`` and ``b`` is negative (IEEE 754 §6.3)."""
    return (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)


def exact_multiply(a: float, b: float) -> float:
    """``a * b`` correctly rounded; 0 * inf is NaN, otherwise an infinity gives an infinity."""
    negative = _sign_negative(a, b)
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if math.isinf(a) or math.isinf(b):
        return math.nan if a == 0 or b == 0 else (-math.inf if negative else math.inf)
    (n1, d1), (n2, d2) = a.as_integer_ratio(), b.as_integer_ratio()
    return _rounded(abs(n1 * n2) * (-1 if negative else 1), d1 * d2, negative)


def exact_divide(a: float, b: float) -> float:
    """``a / b`` correctly rounded; x/0 is a signed infinity, 0/0 and inf/inf NaN, x/inf 0."""
    negative = _sign_negative(a, b)
    if math.isnan(a) or math.isnan(b) or (math.isinf(a) and math.isinf(b)) or a == b == 0:
        return math.nan
    if math.isinf(a) or b == 0:
        return -math.inf if negative else math.inf
    if math.isinf(b):
        return -0.0 if negative else 0.0
    (n1, d1), (n2, d2) = a.as_integer_ratio(), b.as_integer_ratio()
    return _rounded(abs(n1 * d2) * (-1 if negative else 1), abs(d1 * n2), negative)


def exact_sqrt(x: float) -> float:
    """``sqrt(x)`` correctly rounded; sqrt(-0) = -0, sqrt(x < 0) = NaN, sqrt(inf) = inf.

    ``x * 4**s`` is an integer ``N >= 2**110`` for a large enough ``s``; ``q = isqrt(N)`` has at
    least 55 bits, so ``q + 1/2`` (where ``q * q != N``) lies strictly between the same two
    float64 midpoints as ``sqrt(N)``, and rounding ``(2q + sticky) / 2**(s + 1)`` once is the
    correct rounding of ``sqrt(x)`` (no square root of a float64 is a midpoint or subnormal)."""
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0 or math.isinf(x):
        return x
    n, d = x.as_integer_ratio()
    s = max(0, (d.bit_length() + 1) // 2, (112 - n.bit_length() + d.bit_length()) // 2 + 1)
    scaled = n * 4 ** s // d   # exact: d divides 4**s
    q = math.isqrt(scaled)
    return (2 * q + (q * q != scaled)) / 2 ** (s + 1)


def rounded_elementwise(function: Callable[..., float], *operands) -> np.ndarray:
    """``function`` (one of the ``exact_*`` above) on each element of the broadcast float64
    ``operands``, as a float64 array."""
    arrays = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in operands))
    flat = [x.ravel().tolist() for x in arrays]
    out = np.array([function(*values) for values in zip(*flat)], np.float64)
    return out.reshape(arrays[0].shape)


def converted64(values: np.ndarray, source: str) -> np.ndarray:
    """The widened ``values`` of dtype name ``source`` converted to float64 and correctly
    rounded (IEEE 754 §5.4.1 convertFromInt; §5.4.2 convertFormat): a float is its own value
    (widening is exact), an integer is rounded by CPython's ``float(int)`` (to nearest even, in
    integer arithmetic), uint64 read back from the int64 it was widened to, a bool 0 or 1."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return values.astype(np.float64)
    if values.dtype.kind == "b":
        return values.astype(np.float64)
    integers = values.astype(np.int64).view(np.uint64) if source == "uint64" else values
    return np.array([float(v) for v in integers.ravel().tolist()],
                    np.float64).reshape(values.shape)
