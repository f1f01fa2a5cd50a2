"""Sums and sums of products beyond float64, vectorised and the same on every platform: the
accumulating oracles' replacement for C's ``long double`` (80-bit on x86-64 Linux, plain double on
aarch64 macOS and MSVC).

Each product is exact as a double-double (Dekker's TwoProduct, with Veltkamp's split), each
addition error-free (Knuth's TwoSum), and a sum of ``n`` terms is a pairwise tree of
double-double additions (``log2 n`` vectorised steps): its relative error is about
``log2(n) * 2**-104`` of the sum of the magnitudes (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., §4.4 and §1.18; Ogita, Rump and Oishi, *Accurate sum and dot product*,
SIAM J. Sci. Comput. 26, 2005), against ``n * 2**-64`` for a long double accumulation. Each
factor is split into its mantissa in [1/2, 1) and its exponent (``frexp``): the products of
mantissas are formed exactly, and each output element's terms are brought to the scale of its
largest term before they are summed, so that no product or partial sum overflows or underflows
where the exact result does not (long double's wider exponent range gave that too).
An infinite or NaN term decides its sum as IEEE addition does (finite terms cannot change it); a
zero sum is +0, as in a sum started from +0 (XLA Reduce's init value 0, a dot product's
accumulator: NumPy's sums do the same).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from conform.dtypes import complex_array
from conform.ops._exact import two_product as _two_product
from conform.ops._exact import two_sum as _two_sum


def _pairwise(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The double-double sum along the last axis (non-empty, finite terms of magnitude <= 1: no
    partial sum can overflow), as a tree of pairs."""
    count = hi.shape[-1]
    width = 1 << (count - 1).bit_length()     # zeros up to a power of two: no padding later
    if width != count:
        wide = np.zeros((2,) + hi.shape[:-1] + (width,))
        wide[0, ..., :count], wide[1, ..., :count] = hi, lo
        hi, lo = wide
    while hi.shape[-1] > 1:
        half = hi.shape[-1] // 2
        s, e = _two_sum(hi[..., :half], hi[..., half:])
        e += lo[..., :half] + lo[..., half:]
        hi = s + e                      # renormalised: hi = fl(s + e), lo the rest
        lo = e - (hi - s)
    return hi[..., 0], lo[..., 0]


def sum_of_products(factors: Sequence[np.ndarray], axes: Sequence[int], *,
                    divisor=1) -> np.ndarray:
    """``sum over axes of prod(factors)`` (the factors broadcast together), divided by
    ``divisor`` (a mean's count: a positive integer, or an array of them shaped like the
    result), in float64 from a double-double evaluation (see the module docstring).

    >>> float(sum_of_products([np.array([1e16, 1.0, -1e16])], [0]))
    1.0
    >>> float(sum_of_products([np.array([3.0, 1e300]), np.array([1 / 3, 1e300])], [0]))
    inf
    """
    with np.errstate(all="ignore"):
        return _sum_of_products([np.asarray(f, np.float64) for f in factors], axes, divisor)


def _sum_of_products(factors, axes, divisor):
    # each term as (hi + lo) * 2**exponent, hi + lo the exact product of the factors' mantissas
    hi, exponent = np.frexp(factors[0])   # |hi| in [1/2, 1) (zeros, inf and NaN: themselves, 0)
    lo = np.zeros(())
    for factor in factors[1:]:
        mantissa, e = np.frexp(factor)
        p, err = _two_product(hi, mantissa)
        hi, lo, exponent = p, err + lo * mantissa, exponent + e
    hi, lo, exponent = np.broadcast_arrays(hi, lo, exponent)
    axes = [a % hi.ndim for a in axes]
    kept = [a for a in range(hi.ndim) if a not in axes]
    shape = [hi.shape[a] for a in kept]
    count = int(np.prod([hi.shape[a] for a in axes], dtype=np.int64))
    if count == 0:
        return np.zeros(shape)
    hi, lo, exponent = (np.transpose(x, kept + axes).reshape(shape + [count])
                        for x in (hi, lo, exponent))
    finite = np.isfinite(hi)
    # a term that is inf or NaN decides its sum as IEEE addition does (finite terms cannot)
    special = np.sum(np.where(finite, 0.0, hi), axis=-1)
    # per output element, the finite terms brought to its largest term's scale (a term more than
    # 2**1074 below it underflows: far below the sum's own rounding)
    live = finite & (hi != 0)
    top = np.max(np.where(live, exponent, -(1 << 40)), axis=-1, keepdims=True)
    top = np.where(top == -(1 << 40), 0, top)
    shift = np.maximum(exponent - top, -2200)
    hi, lo = _pairwise(np.ldexp(np.where(finite, hi, 0.0), shift),
                       np.ldexp(np.where(finite, lo, 0.0), shift))
    top = top[..., 0]
    if np.any(np.asarray(divisor) != 1):   # q = hi / d; hi - q * d exactly (TwoProduct)
        divisor = np.asarray(divisor, np.float64)
        q = hi / divisor                   # (|q| <= count: the split cannot overflow)
        p, e = _two_product(q, divisor)
        hi, lo = q, np.where(np.isfinite(q), ((hi - p) - e + lo) / divisor, 0.0)
    total = np.ldexp(hi + lo, top) + 0.0   # + 0.0: a zero sum is +0
    return np.where(np.isfinite(special), total, special + total)


def accurate_sum(x: np.ndarray, axis=None, *, keepdims: bool = False, divisor=1) -> np.ndarray:
    """``np.sum(x, axis, keepdims=keepdims) / divisor`` of float64 ``x``, from a double-double
    sum (``divisor``: a mean's count, or 1).

    >>> float(accurate_sum(np.array([1.0, 1e-20, -1.0])))
    1e-20
    """
    x = np.asarray(x, np.float64)
    axes = list(range(x.ndim)) if axis is None else \
        [a % x.ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    total = sum_of_products([x], axes, divisor=divisor)
    if keepdims:
        total = np.expand_dims(total, tuple(sorted(axes)))
    return total


def accurate_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.matmul(a, b)`` of float64 (or complex128) operands (batch dimensions broadcast, a 1-D
    operand promoted and its dimension removed), each dot product from a double-double sum of
    exact products (of a complex one, each part's: :func:`complex_sum_of_products`).

    >>> accurate_matmul(np.array([[1e16, 1.0, -1e16]]), np.array([[1.0], [1.0], [1.0]])).tolist()
    [[1.0]]
    >>> accurate_matmul(np.array([1e16j, 1.0, -1e16j]), np.array([1j, 1.0, 1j])).tolist()
    (1+0j)
    """
    complex_ = np.iscomplexobj(a) or np.iscomplexobj(b)
    kind = np.complex128 if complex_ else np.float64
    a, b = np.asarray(a, kind), np.asarray(b, kind)
    squeeze = []
    if a.ndim == 1:
        a, squeeze = a[None, :], squeeze + [-2]
    if b.ndim == 1:
        b, squeeze = b[:, None], squeeze + [-1]
    if complex_:
        out = complex_sum_of_products(a[..., :, :, None], b[..., None, :, :], [-2])
    else:
        out = sum_of_products([a[..., :, :, None], b[..., None, :, :]], [-2])
    return np.squeeze(out, axis=tuple(squeeze)) if squeeze else out


def complex_sum_of_products(lhs: np.ndarray, rhs: np.ndarray, axes) -> np.ndarray:
    """``sum over axes of lhs * rhs`` (broadcast together) of complex operands by complex
    multiplication and addition: each part a real sum of ``2n`` products, ``sum(re a re b -
    im a im b)`` and ``sum(re a im b + im a re b)``, taken as :func:`sum_of_products` takes one.

    >>> complex_sum_of_products(np.array([1e16j, 1j, -1e16j]), np.array([1j, 1 + 1j, 1j]),
    ...                         [0]).tolist()
    (-1+1j)
    """
    lhs, rhs = np.broadcast_arrays(np.asarray(lhs, np.complex128), np.asarray(rhs, np.complex128))
    # a new axis 0 holds each part's two kinds of products, summed with the others
    summed = [a if a < 0 else a + 1 for a in axes] + [0]
    real = sum_of_products([np.stack([lhs.real, -lhs.imag]), np.stack([rhs.real, rhs.imag])],
                           summed)
    imag = sum_of_products([np.stack([lhs.real, lhs.imag]), np.stack([rhs.imag, rhs.real])],
                           summed)
    return complex_array(real, imag)


__all__ = ["accurate_matmul", "accurate_sum", "complex_sum_of_products", "sum_of_products"]
