"""Inputs whose exact results are rounding midpoints of a target format: where a wrong tie rule
(ties away from zero, ties toward zero, truncation) gives another answer than IEEE 754's
roundTiesToEven. Op modules build their ``midpoints`` hooks from these (the generic drawer,
:func:`conform.generators._edges.midpoint_case`, calls the hook; it names no op).

A midpoint of a format is a value exactly halfway between two adjacent representable values:
``(2k + 1) * q / 2`` for the spacing ``q`` of its binade (``2**(max(e, emin) - p + 1)``; the
subnormal range shares ``emin``'s spacing), below ``beyond_max`` (the midpoint between the
largest finite value and ``beyond_max`` is the overflow threshold, a tie too). Which of the two
neighbours is even alternates with ``k``, and both signs are drawn.

All arithmetic on candidate values is exact: Python integers and ``fractions.Fraction``.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from conform.dtypes import FLOAT_FORMATS, FloatFormat, int_info, is_integer, np_dtype

#: Elements in a midpoint case: at least 8 (vectorised kernels), and a few of each construction.
MIDPOINT_CASE_SIZE = 64


def spacing(value: Fraction, fmt: FloatFormat) -> Fraction:
    """The spacing of ``fmt``'s representable values in the binade of ``value`` (exact; the
    subnormal range has the smallest normal binade's)."""
    magnitude = abs(Fraction(value))
    if magnitude == 0:
        return Fraction(2) ** (fmt.emin - fmt.precision + 1)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if magnitude < Fraction(2) ** exponent:   # n / d lies in [2**(e-1), 2**(e+1))
        exponent -= 1
    return Fraction(2) ** (max(exponent, fmt.emin) - fmt.precision + 1)


def is_midpoint(value, dtype: str) -> bool:
    """Whether the exact ``value`` (a Fraction, int or float) is a rounding midpoint of ``dtype``.

    >>> is_midpoint(Fraction(2049), "float16"), is_midpoint(Fraction(2050), "float16")
    (True, False)
    """
    fmt = FLOAT_FORMATS[dtype]
    value = Fraction(value)
    if value == 0 or abs(value) > Fraction(fmt.max_finite) + Fraction(fmt.ulp_at_max):
        return False
    ratio = 2 * value / spacing(value, fmt)
    return ratio.denominator == 1 and ratio.numerator % 2 == 1


def _odd(rng, bits: int) -> int:
    """A random odd integer of exactly ``bits`` bits (2 <= bits <= 64)."""
    return (1 << (bits - 1)) | int(rng.integers(0, 1 << (bits - 1), dtype=np.uint64)) | 1


def binade_exponents(rng, count: int, fmt: FloatFormat, *, low=None, high=None) -> np.ndarray:
    """Random exponents ``e`` of normal binades ``[2**e, 2**(e+1))`` of ``fmt`` within
    ``[low, high]`` (default: every normal binade)."""
    low = fmt.emin if low is None else max(low, fmt.emin)
    high = fmt.emax if high is None else min(high, fmt.emax)
    return rng.integers(low, high + 1, size=count)


def representable(values, dtype: str) -> np.ndarray:
    """Which exact ``values`` (Fractions or ints) ``dtype`` holds exactly (finite)."""
    if is_integer(dtype):
        info = int_info(dtype)
        return np.array([Fraction(v).denominator == 1 and info.min <= v <= info.max
                         for v in values], bool)
    fmt = FLOAT_FORMATS[dtype]
    out = []
    for v in values:
        v = Fraction(v)
        out.append(v == 0 or (abs(v) <= Fraction(fmt.max_finite)
                              and (v / spacing(v, fmt)).denominator == 1))
    return np.array(out, bool)


def as_array(values, dtype: str) -> np.ndarray:
    """Exactly representable ``values`` (Fractions or ints) as an array of ``dtype``."""
    if is_integer(dtype):
        return np.array([int(v) for v in values], dtype=np_dtype(dtype))
    # Fraction -> float is correctly rounded, and exact for these values (float64 holds every
    # value of the narrower formats; float64 values themselves are exact)
    return np.array([float(Fraction(v)) for v in values], np.float64).astype(np_dtype(dtype))


def midpoints_of(rng, dtype: str, count: int, *, subnormal_share: float = 0.25,
                 low=None, high=None, max_bits: int = 64) -> np.ndarray:
    """``count`` midpoints of float ``dtype`` (narrower than float64, so that float64 holds
    them exactly), as float64: ``(m + 1/2) q`` for a random significand ``m`` of a random normal
    binade (or, a ``subnormal_share`` of them, of the subnormal range, 0 included), both signs,
    so that the even neighbour is below or above at random; the first is the overflow
    threshold ``max_finite + q / 2``. ``low`` and ``high`` bound the normal binades' exponents
    (e.g. to those a source type holds); ``max_bits`` the bits of ``2m + 1`` (a source
    narrower than ``p + 1`` bits holds only subnormal midpoints, of few bits)."""
    fmt = FLOAT_FORMATS[dtype]
    p = fmt.precision
    if max_bits <= p:
        subnormal_share = 1.0
    subnormal = rng.random(count) < subnormal_share
    exponent = np.where(subnormal, fmt.emin, binade_exponents(rng, count, fmt, low=low, high=high))
    m = np.where(subnormal, rng.integers(0, 1 << (min(p, max_bits) - 1), count),
                 rng.integers(1 << (p - 1), 1 << p, count))
    values = np.ldexp(2.0 * m + 1, exponent - p)   # exact: 2m + 1 has at most p + 1 bits
    values[0] = fmt.max_finite + fmt.ulp_at_max / 2
    return values * rng.choice([-1.0, 1.0], count)


def _step(value: Fraction, fmt: FloatFormat, up: bool) -> Fraction:
    """The value of ``fmt`` next to the representable ``value``, toward +inf (``up``) or -inf:
    toward zero from a power of two, the finer spacing of the binade below."""
    q = spacing(value, fmt)
    toward_zero = value != 0 and (value > 0) != up
    if toward_zero and abs(value) == q * 2 ** (fmt.precision - 1) and q > spacing(0, fmt):
        q /= 2
    return value + q if up else value - q


def neighbours(values, dtype: str) -> list:
    """The values of ``dtype`` (a float or integer type) just below and just above each exact
    ``value`` that ``dtype`` holds: one ULP of ``dtype`` (or 1) either side."""
    if is_integer(dtype):
        return [Fraction(v) + d for v in values for d in (-1, 1)]
    fmt = FLOAT_FORMATS[dtype]
    return [_step(Fraction(v), fmt, up) for v in values for up in (False, True)]


def conversion_midpoints(rng, source: str, target: str, count: int = MIDPOINT_CASE_SIZE):
    """Values of ``source`` (a float or integer type) that are midpoints of float ``target``,
    with their ``source`` neighbours (one ULP or 1 either side), as a ``source`` array of at
    most ``count`` elements; None if ``source`` holds no midpoint of ``target``. Positive
    values only for a target without sign (E8M0)."""
    values = _conversion_midpoints(rng, source, target, count)
    if values is None or FLOAT_FORMATS[target].signed:
        return values
    values = values[values.astype(np.float64) > 0]
    return values if len(values) else None


def _conversion_midpoints(rng, source: str, target: str, count: int):
    if source == "bool" or source not in FLOAT_FORMATS and not is_integer(source) \
            or target == "float64" and not is_integer(source):
        return None   # 0 and 1 convert exactly (complex parts: not drawn); a float source holds no float64 midpoint
    if is_integer(source):
        return _integer_midpoints(rng, source, target, count)
    held = FLOAT_FORMATS[source]   # the target's binades the source reaches
    candidates = midpoints_of(rng, target, 2 * count, low=held.emin - held.precision + 1,
                              high=held.emax, max_bits=held.precision)
    kind = np_dtype(source)
    with np.errstate(all="ignore"):
        chosen = candidates[candidates.astype(kind).astype(np.float64) == candidates][:count // 2]
    if not len(chosen):
        return None
    chosen = chosen.astype(kind)
    top = np.full(chosen.shape, float(held.max_finite)).astype(kind)
    bottom = -top if held.signed else np.full(chosen.shape, held.min_normal).astype(kind)  # E8M0
    values = np.concatenate([chosen, np.nextafter(chosen, bottom), np.nextafter(chosen, top)])
    return values[rng.permutation(len(values))][:count]


def _integer_midpoints(rng, source: str, target: str, count: int):
    """:func:`conversion_midpoints` from an integer type: ``odd * 2**(shift - 1)`` with ``odd`` of
    ``p + 1`` bits (the integers halfway between two neighbours of the target), and each +-1."""
    fmt = FLOAT_FORMATS[target]
    info = int_info(source)
    bits = min(info.bits - (info.min < 0), fmt.emax + 1)   # magnitudes below 2**bits
    if bits <= fmt.precision:   # every integer converts exactly (or overflows)
        return None
    candidates = []
    for _ in range(count // 2):
        shift = int(rng.integers(1, bits - fmt.precision + 1))
        odd = _odd(rng, fmt.precision + 1)
        value = odd << (shift - 1)
        candidates.append(value if info.min == 0 or rng.random() < 0.5 else -value)
    values = candidates + neighbours(candidates, source)
    values = [v for v, ok in zip(values, representable(values, source)) if ok][:count]
    order = rng.permutation(len(values))
    return as_array([values[i] for i in order], source)


def _pick(rng, items):
    return items[int(rng.integers(0, len(items)))]


def _signed(rng, value: Fraction) -> Fraction:
    return value if rng.random() < 0.5 else -value


def _tuples_held(candidates, dtype: str) -> list:
    """The candidate tuples of exact operands that ``dtype`` holds, every operand."""
    flat = [v for c in candidates for v in c]
    ok = representable(flat, dtype).reshape(len(candidates), -1).all(axis=1) if flat else []
    return [c for c, good in zip(candidates, ok) if good]


def _arrays(pairs, dtype: str, count: int, rng) -> list:
    """At most ``count`` operand tuples as one ``dtype`` array per operand, shuffled."""
    pairs = [pairs[i] for i in rng.permutation(len(pairs))][:count]
    return [as_array([p[k] for p in pairs], dtype) for k in range(len(pairs[0]))] if pairs else None


def _near(rng, pairs, dtype: str, operand: int = 0) -> list:
    """Each tuple again with operand ``operand`` moved one ULP up or down: results next to
    the midpoint, where a rounding that tests for a tie on too few bits goes wrong."""
    fmt = FLOAT_FORMATS[dtype]
    return [tuple(_step(v, fmt, bool(rng.random() < 0.5)) if k == operand else v
                  for k, v in enumerate(p)) for p in pairs]


def sum_midpoints(rng, dtype: str, count: int = MIDPOINT_CASE_SIZE):
    """Operand pairs ``(a, b)`` of float ``dtype`` whose exact sum is a midpoint of ``dtype``
    (``b = ±(2j + 1) q / 2``, ``q`` the spacing at ``a``), half of them, and pairs one ULP of
    ``a`` away; as two ``dtype`` arrays."""
    fmt = FLOAT_FORMATS[dtype]
    p = fmt.precision
    pairs = []
    for _ in range(2 * count):
        exponent = int(binade_exponents(rng, 1, fmt, low=fmt.emin + 1)[0])
        m = int(rng.integers(1 << (p - 1), 1 << p, dtype=np.uint64))
        q = Fraction(2) ** (exponent - p + 1)
        a = _signed(rng, m * q)
        b = _signed(rng, (2 * int(rng.integers(0, 4)) + 1) * q / 2)
        if is_midpoint(a + b, dtype):
            pairs.append((a, b))
    pairs = _tuples_held(pairs, dtype)[: count // 2]
    return _arrays(pairs + _tuples_held(_near(rng, pairs, dtype, 1), dtype), dtype, count, rng)


def product_midpoints(rng, dtype: str, count: int = MIDPOINT_CASE_SIZE, *, factor=None):
    """Operand pairs ``(x, y)`` of float ``dtype`` whose exact product is a midpoint of
    ``dtype``: ``y = B 2**s`` (``B`` a small odd integer, or the fixed ``factor``'s), ``x = X
    2**t`` with ``X`` odd and ``B X`` of ``p + 1`` bits (normal results: the (1 + 2**-(p-1)) *
    1.5 construction, generalised) or ``X B < 2**p`` scaled to ``emin - p`` (subnormal results);
    half of them, and pairs one ULP of ``x`` away."""
    fmt = FLOAT_FORMATS[dtype]
    p = fmt.precision
    pairs = []
    for _ in range(2 * count):
        if factor is None:
            big_b, s = _pick(rng, (3, 5, 7, 9, 11, 13, 15)), int(rng.integers(-8, 8))
            y = big_b * Fraction(2) ** s
        else:
            y = abs(Fraction(factor))
            big_b, s = y.numerator, -(y.denominator.bit_length() - 1)
        if big_b % 2 == 0 or big_b == 1:   # a power of two times x never rounds
            return None
        subnormal = rng.random() < 0.25
        low, high = (0, (1 << p) // big_b // 2) if subnormal else \
            (-(-(1 << p) // big_b), (1 << (p + 1)) // big_b)
        if high <= low:   # a precision too small for B: no such x (float8, float4)
            continue
        if subnormal:
            big_x = int(rng.integers(low, high)) * 2 + 1
            total = fmt.emin - p
        else:
            big_x = int(rng.integers(low, high)) | 1
            total = int(binade_exponents(rng, 1, fmt)[0]) - p
        x = big_x * Fraction(2) ** (total - s)
        if is_midpoint(x * y, dtype):
            pairs.append((_signed(rng, x), y if factor is not None else _signed(rng, y)))
    pairs = _tuples_held(pairs, dtype)[: count // 2]
    return _arrays(pairs + _tuples_held(_near(rng, pairs, dtype), dtype), dtype, count, rng)


def square_midpoints(rng, dtype: str, count: int = MIDPOINT_CASE_SIZE):
    """Values ``x = X 2**t`` of float ``dtype`` whose exact square is a midpoint of ``dtype``:
    ``X`` odd in ``[2**(p/2), 2**((p+1)/2))``, so ``X**2`` is odd of ``p + 1`` bits (and, where
    ``emin - p`` is even, ``X**2 < 2**p`` at ``2t = emin - p``: subnormal squares); half of
    them, and values one ULP away; as one array."""
    fmt = FLOAT_FORMATS[dtype]
    p = fmt.precision
    low, high = math.isqrt((1 << p) - 1) + 1, math.isqrt((1 << (p + 1)) - 1)
    values = []
    for _ in range(2 * count):
        if (fmt.emin - p) % 2 == 0 and rng.random() < 0.25:
            big_x, t = int(rng.integers(0, math.isqrt(1 << p) // 2)) * 2 + 1, (fmt.emin - p) // 2
        else:
            big_x = int(rng.integers(low, high + 1)) | 1
            t = int(rng.integers(fmt.emin - p, fmt.emax - p)) // 2
        x = _signed(rng, big_x * Fraction(2) ** t)
        if is_midpoint(x * x, dtype):
            values.append((x,))
    values = _tuples_held(values, dtype)[: count // 2]
    return _arrays(values + _tuples_held(_near(rng, values, dtype), dtype), dtype, count, rng)


def quotient_midpoints(rng, dtype: str, count: int = MIDPOINT_CASE_SIZE):
    """Operand pairs ``(a, b)`` of float ``dtype`` whose exact quotient is a midpoint: only in
    the subnormal range can it be one (a quotient of p-bit numbers ``M 2**k``, ``M`` odd of
    ``p + 1`` bits, would need ``a = M B 2**j`` with ``M B`` odd of more than ``p`` bits), so
    ``a / b = M 2**(emin - p)`` with ``M`` odd, ``M B < 2**p``; half of them, and pairs one ULP
    of ``a`` away."""
    fmt = FLOAT_FORMATS[dtype]
    p = fmt.precision
    pairs = []
    for _ in range(2 * count):
        big_b = _pick(rng, (1, 3, 5, 7))
        if (1 << p) // big_b // 2 <= 0:   # a precision too small for B: no such M (float4)
            continue
        big_m = int(rng.integers(0, (1 << p) // big_b // 2)) * 2 + 1
        s = int(rng.integers(-p, fmt.emax - p))
        b = big_b * Fraction(2) ** s
        a = big_m * big_b * Fraction(2) ** (fmt.emin - p + s)
        if is_midpoint(a / b, dtype):
            pairs.append((_signed(rng, a), _signed(rng, b)))
    pairs = _tuples_held(pairs, dtype)[: count // 2]
    return _arrays(pairs + _tuples_held(_near(rng, pairs, dtype), dtype), dtype, count, rng)


def elementwise_hook(construct):
    """A ``midpoints`` hook for an element-wise op whose inputs and output share one float
    dtype: ``construct(rng, dtype)`` gives the input arrays (or None)."""
    def midpoints(rng, spec, dtype):
        if dtype not in FLOAT_FORMATS or not FLOAT_FORMATS[dtype].has_zero:
            return None   # (float8_e8m0fnu: its ties are open, region scale_format_tie)
        arrays = construct(rng, dtype)
        return None if arrays is None else (arrays, {}, dtype)
    return midpoints


def _difference_midpoints(rng, dtype: str):
    made = sum_midpoints(rng, dtype)
    return None if made is None else [made[0], -made[1]]


#: Hooks of the basic operations (and their ONNX and NNEF twins): a - b = a + (-b).
SUM_MIDPOINTS = elementwise_hook(sum_midpoints)
DIFFERENCE_MIDPOINTS = elementwise_hook(_difference_midpoints)
PRODUCT_MIDPOINTS = elementwise_hook(product_midpoints)
QUOTIENT_MIDPOINTS = elementwise_hook(quotient_midpoints)
SQUARE_MIDPOINTS = elementwise_hook(square_midpoints)


def conversion_hook(*, like: bool = False):
    """A ``midpoints`` hook for a conversion op whose dtype labels are ``'SRC->DST'`` and whose
    attribute ``new_dtype`` names the target: source values on the target's midpoints
    (:func:`conversion_midpoints`); with ``like``, a second input of the target type (ONNX
    CastLike's ``target_type``: a 0-d 1, which every type holds, E8M0 too, which has no 0)."""
    def midpoints(rng, spec, dtype):
        source, target = dtype.split("->")
        if target not in FLOAT_FORMATS:
            return None
        values = conversion_midpoints(rng, source, target)
        if values is None:
            return None
        inputs = [values] + ([np.ones((), np_dtype(target))] if like else [])
        return inputs, {"new_dtype": target}, target
    return midpoints


def negative_product_midpoints(rng, spec, dtype):
    """A ``midpoints`` hook for a product taken where the first operand is negative (PReLU's
    ``slope * x`` for ``x < 0``): negative ``x`` and factors whose exact product is a rounding
    midpoint of ``dtype`` (and pairs one ULP beside them); None for a non-float ``dtype``."""
    if dtype not in FLOAT_FORMATS:
        return None
    made = product_midpoints(rng, dtype)
    return None if made is None else ([-np.abs(made[0]), made[1]], {}, dtype)
