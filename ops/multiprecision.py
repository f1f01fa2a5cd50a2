"""References beyond float64, the same on every platform: an element-wise function evaluated in
ball arithmetic and returned as a double-double ``hi + lo``.

Why python-flint (Arb ball arithmetic, pinned in pyproject.toml):

* every result is a rigorous enclosure (a midpoint and an error radius), so the precision is
  raised until the ball is narrower than 2**-110 relative: ``hi`` is then the float64 nearest
  the exact value (correctly rounded but for results within 2**-110 of a rounding midpoint, none
  of which is known for these functions in float64) and ``lo`` the float64 nearest
  ``exact - hi``; the pair carries ~106 bits;
* it is a compiled library (FLINT), maintained, with binary wheels for Linux, macOS (x86-64,
  arm64) and Windows: no dependence on the width of C's ``long double`` (80-bit on x86-64 Linux,
  plain double on aarch64 macOS and MSVC), which the oracles used before;
* an evaluation costs ~1-10 us, against ~30-100 us for mpmath, which the tests use as the
  independent second opinion (tests/oracles/test_multiprecision.py).

The conversion of a ball's midpoint to ``hi`` and ``lo`` is python-flint's round-to-nearest
conversion to float64 (subnormal and overflowing results included) and one exact subtraction.

An oracle calls :func:`refined` with the function's NumPy float64 counterpart (the fast path:
it also supplies the value where the exact result is not a finite real number, such as a pole,
a domain error or an overflow) and the Arb function; the result is an array of ``hi`` carrying
``lo`` as its ``residual`` (:class:`Refined`). Only float64 operands take the multiprecision
path (a reference for a 16- or 32-bit target needs no more than float64: NumPy's float64 libm
is within a few float64 ULPs, 2**-28 of a float32 ULP). Special values are not decided here:
the spec's ``special_values`` table overrides every element it covers
(:mod:`conform.ops.special_values`).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

START_PRECISION = 128      # bits of the first evaluation
MAX_PRECISION = 1 << 14    # a ball still wider than wanted here is taken as it is
WANTED_BITS = 110          # relative accuracy of the enclosure
ZIV_START = 106            # Ziv's strategy: twice float64's 53 bits first,
ZIV_MAX = 1 << 12          # doubled up to here,
ZIV_GUARD_BITS = 20        # until the ball rounds to one float64, 2**-20 of its ULP wide


class Refined(np.ndarray):
    """A float64 array of ``hi`` values that carries ``residual``, the float64 array of ``lo``
    values (``hi + lo`` is the reference). Anything computed from it is a plain ``Refined`` with
    no residual (``residual`` is None), so an oracle's result used as an array is just ``hi``.

    >>> r = with_residual(np.array([1.0]), np.array([2.0 ** -60]))
    >>> float(r[0]), float(r.residual[0])
    (1.0, 8.673617379884035e-19)
    """

    residual: np.ndarray | None

    def __array_finalize__(self, obj):
        self.residual = None


def with_residual(hi: np.ndarray, lo: np.ndarray) -> Refined:
    """``hi`` as a :class:`Refined` array carrying ``lo`` (same shape)."""
    out = np.asarray(hi, np.float64).view(Refined)
    out.residual = np.broadcast_to(np.asarray(lo, np.float64), out.shape).copy()
    return out


def residual_of(output) -> np.ndarray | None:
    """The ``lo`` an oracle output carries, or None."""
    return getattr(output, "residual", None)


def _pair(value, arb) -> tuple[float, float]:
    """A finite Arb ball as ``(hi, lo)``: the float64 nearest its midpoint, and the float64 nearest
    the rest (the midpoint of ``value - hi`` is ``mid - hi`` exactly at the ball's precision: both
    are multiples of the midpoint's last bit, and the rest is below half an ULP of ``hi``)."""
    hi = float(value)                     # python-flint rounds the midpoint to nearest
    if not math.isfinite(hi):
        return hi, 0.0
    return hi, float(value - arb(hi))


def _evaluate(fn: Callable, args: Sequence[float], arb, ctx) -> tuple[float, float] | None:
    """``fn`` on ``args`` at the current precision, raised (by 4x, up to MAX_PRECISION) until
    the ball is narrower than 2**-WANTED_BITS relative, as ``(hi, lo)``; None where the result
    is not a finite real number (a pole, a domain error, an Arb overflow). (``arb`` and ``ctx``:
    python-flint's, passed in: an import per element would cost more than the evaluation.)"""
    value = fn(*map(arb, args))
    if not value.is_finite():
        return None
    if value.is_exact() or value.rel_accuracy_bits() >= WANTED_BITS:
        return _pair(value, arb)
    saved = ctx.prec
    try:
        while ctx.prec < MAX_PRECISION:
            ctx.prec *= 4
            value = fn(*map(arb, args))
            if value.is_exact() or value.rel_accuracy_bits() >= WANTED_BITS:
                break
        return _pair(value, arb)
    finally:
        ctx.prec = saved


def _decided(value) -> bool:
    """Ziv's test: every point of the ball rounds to one float64 (a zero's sign aside: a ball
    holding 0 that rounds to zero leaves the sign to the caller, as an exact zero does), and
    the ball is at most 2**-ZIV_GUARD_BITS of that float64's ULP wide, so that ``lo`` is known
    too (the judge reads ``hi + lo`` for a float64 result)."""
    if value.is_exact():
        return True
    low, high = float(value.lower()), float(value.upper())
    if low != high:
        return False
    unit = math.ulp(low) if math.isfinite(low) and abs(low) >= 2.0 ** -1022 else 2.0 ** -1074
    return not math.isfinite(low) or float(value.rad()) <= unit * 2.0 ** -ZIV_GUARD_BITS


def _evaluate_ziv(fn: Callable, args: Sequence[float], arb, ctx) -> tuple[float, float] | None:
    """``fn`` on ``args`` from ZIV_START bits, the precision doubled (up to ZIV_MAX) until
    :func:`_decided` (a ball that is not finite at one precision, as a huge exponent's, may be
    at the next), as ``(hi, lo)``; None where no precision gives a finite ball within a few
    float64 ULPs (a hard-to-round value is taken at ZIV_MAX as it is). A zero is signed as
    the ball lies, or, for a ball holding 0 (an exact zero too), ``(0.0, nan)``: the sign is
    the caller's."""
    saved = ctx.prec
    try:
        ctx.prec = ZIV_START
        while True:
            value = fn(*map(arb, args))
            if (value.is_finite() and _decided(value)) or ctx.prec >= ZIV_MAX:
                break
            ctx.prec *= 2
        if not value.is_finite() or not (_decided(value) or value.rel_accuracy_bits() >= 50):
            return None   # no float64 (a ball still wider than a few ULPs at ZIV_MAX too)
        hi = float(value)
        if hi == 0:   # a sign Arb decides, or none (lo NaN: the caller's)
            return (-0.0, 0.0) if value < 0 else (0.0, 0.0) if value > 0 else (0.0, math.nan)
        return hi, (float(value - arb(hi)) if math.isfinite(hi) else 0.0)
    finally:
        ctx.prec = saved


def evaluate_pairs(fn: Callable, rows, *, ziv: bool = False) -> list:
    """:func:`evaluate_pair` for each row of arguments (one precision setting for them all);
    with ``ziv``, each row by Ziv's strategy (:func:`_evaluate_ziv`)."""
    from flint import arb, ctx   # imported on first use: only float64 references need it

    saved = ctx.prec
    ctx.prec = START_PRECISION
    evaluate = _evaluate_ziv if ziv else _evaluate
    try:
        return [evaluate(fn, row, arb, ctx) for row in rows]
    finally:
        ctx.prec = saved


def evaluate_pair(fn: Callable, args: Sequence[float]) -> tuple[float, float] | None:
    """``fn`` (a function of Arb balls) on float64 ``args`` as ``(hi, lo)``; None where the
    exact result is not a finite real number.

    >>> evaluate_pair(lambda x: x.exp(), [1.0])
    (2.718281828459045, 1.4456468917292502e-16)
    """
    return evaluate_pairs(fn, [args])[0]


def _distinct(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a (n, k) float64 array (k = 1 or 2: as reals or complex numbers, a
    tenth of the time of ``np.unique(axis=0)``) and each row's index among them."""
    rows = np.ascontiguousarray(rows)
    if rows.shape[1] > 2:
        return np.unique(rows, axis=0, return_inverse=True)
    keys = rows[:, 0] if rows.shape[1] == 1 else rows.view(np.complex128)[:, 0]
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return rows[first], inverse.ravel()


def refined(fast: Callable, exact: Callable, *operands, dtypes=None,
            ziv: bool = False) -> np.ndarray:
    """The element-wise function on float64 ``operands`` (broadcast together): ``fast`` (NumPy,
    float64) where ``dtypes`` (the inputs' original dtype names) holds a narrower type, else a
    :class:`Refined` ``hi + lo`` from ``exact`` (the same function on Arb balls) at every element
    whose operands are finite and nonzero (Arb has no signed zero) and whose exact value is a
    finite real number, and ``fast``'s value (with ``lo = 0``) elsewhere. With ``ziv`` the
    precision is Ziv's (:func:`_evaluate_ziv`: raised only until ``hi`` is the correctly
    rounded float64 and ``lo`` is known to 2**-20 of its ULP), and a zero whose sign Arb decides
    keeps it.

    >>> r = refined(np.exp, lambda x: x.exp(), np.array([0.0, 1.0, np.inf]))
    >>> r.tolist(), r.residual.tolist()
    ([1.0, 2.718281828459045, inf], [0.0, 1.4456468917292502e-16, 0.0])
    """
    with np.errstate(all="ignore"):
        hi = np.asarray(fast(*operands), np.float64)
    if dtypes is not None and any(d != "float64" for d in dtypes):
        return hi
    arrays = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in operands))
    hi, lo = hi.copy(), np.zeros(hi.shape)
    if hi.size:
        stacked = np.stack([a.ravel() for a in arrays], axis=1)
        # Arb has no signed zero: elements with a zero operand keep the fast path's value
        finite = np.flatnonzero((np.isfinite(stacked) & (stacked != 0)).all(axis=1))
        unique, inverse = _distinct(stacked[finite])
        pairs = evaluate_pairs(exact, unique.tolist(), ziv=ziv)
        known = np.array([p is not None for p in pairs], bool)
        values = np.array([p if p is not None else (0.0, 0.0) for p in pairs], np.float64)
        values = values.reshape(len(pairs), 2)
        take = known[inverse.ravel()]
        at = finite[take]
        found = values[inverse.ravel()[take]]
        # an exact zero has no sign in Arb: the fast path's (the special-value table decides)
        signless = np.isnan(found[:, 1]) if ziv else found[:, 0] == 0
        hi.flat[at] = np.where(signless, np.copysign(0.0, hi.flat[at]), found[:, 0])
        lo.flat[at] = np.where(signless, 0.0, found[:, 1]) if ziv else found[:, 1]
    return with_residual(hi, lo)


__all__ = ["Refined", "evaluate_pair", "evaluate_pairs", "refined", "residual_of", "with_residual"]
