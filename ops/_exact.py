"""Sums and products in float64 accurate well beyond float64 (error-free transformations), for
oracles whose float64 targets a plain float64 evaluation would not serve: a float64 result judged
within gamma_n needs a reference much closer than gamma_n. Vectorised across the slices: the only
Python loop runs along the reduced positions.

* TwoSum (Knuth, TAOCP vol. 2, 4.2.2, Theorem B): ``a + b = s + e`` exactly.
* TwoProduct (Dekker 1971, with Veltkamp's split by ``2**27 + 1``): ``a * b = p + e`` exactly,
  where no overflow or underflow occurs.
* The compensated sum (Ogita, Rump and Oishi 2005, Sum2) and product (Graillat 2009, CompProd)
  have errors of about ``u + (n u)**2`` relative to the magnitudes, ``u = 2**-53``.
"""
from __future__ import annotations

import numpy as np

_SPLITTER = 134217729.0   # 2**27 + 1


def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``a + b = s + e`` exactly."""
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


def _split(a):
    c = _SPLITTER * a
    high = c - (c - a)
    return high, a - high


def two_product(a, b):
    """``(p, e)`` with ``p = fl(a * b)`` and ``a * b = p + e`` exactly (barring over/underflow)."""
    p = a * b
    a_high, a_low = _split(a)
    b_high, b_low = _split(b)
    error = a_low * b_low - (((p - a_high * b_high) - a_low * b_high) - a_high * b_low)
    # the split overflows for |a| above ~2**996: there the compensation is dropped
    return p, np.where(np.isfinite(error), error, 0.0)


def _positions_last(x: np.ndarray, axes) -> np.ndarray:
    """``x`` with ``axes`` moved to the end and flattened into one."""
    axes = sorted(a % x.ndim for a in axes) if x.ndim else []
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, kept + axes)
    # (the reduced size spelled out: -1 cannot be inferred where a kept dimension is 0)
    return moved.reshape(moved.shape[:len(kept)] + (int(np.prod(moved.shape[len(kept):])),))


def _finish(high, low):
    """``high + low``; ``high`` where it is not finite (an infinity or NaN was met, where the
    compensation would turn it into NaN) or where ``low`` is zero (-0 + 0 would lose the sign
    of a zero result)."""
    return np.where(np.isfinite(high) & (low != 0), high + low, high)


def compensated_sum(x: np.ndarray, axes) -> np.ndarray:
    """The sum of float64 ``x`` over ``axes`` (those dimensions dropped), compensated."""
    flat = _positions_last(np.asarray(x, np.float64), axes)
    high = np.zeros(flat.shape[:-1])
    low = np.zeros(flat.shape[:-1])
    for k in range(flat.shape[-1]):
        high, error = two_sum(high, flat[..., k])
        low = low + error
    return _finish(high, low)


def compensated_cumsum(x: np.ndarray, axis: int) -> np.ndarray:
    """The inclusive prefix sums of float64 ``x`` along ``axis``, compensated."""
    moved = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    out = np.empty(moved.shape)
    high = np.zeros(moved.shape[:-1])
    low = np.zeros(moved.shape[:-1])
    for k in range(moved.shape[-1]):
        high, error = two_sum(high, moved[..., k])
        low = low + error
        out[..., k] = _finish(high, low)
    return np.moveaxis(out, -1, axis)


def compensated_product(x: np.ndarray, axes) -> np.ndarray:
    """The product of float64 ``x`` over ``axes`` (those dimensions dropped), compensated; 1
    over an empty set."""
    flat = _positions_last(np.asarray(x, np.float64), axes)
    high = np.ones(flat.shape[:-1])
    low = np.zeros(flat.shape[:-1])
    for k in range(flat.shape[-1]):
        term = flat[..., k]
        high, error = two_product(high, term)
        low = low * term + error
    return _finish(high, low)
