"""The error-bound toolkit for op authors: the terms every ``error_bound`` hook (the ``derived``
model, ``docs/error-models.md``) and every overflow region is made of, written once.

* :func:`gamma` -- Higham's ``gamma_n = n u / (1 - n u)``: the relative error of ``n`` roundings
  of unit roundoff ``u`` (a sum of ``n + 1`` terms in any order, a product of ``n + 1`` factors).
* :func:`grown` -- ``(1 - u)**-k - 1``: the same for ``k`` roundings, sharper, for a
  non-integral ``k`` too (an error of ``k u`` passed through an exponential).
* :func:`underflow_term` -- the absolute error that results rounded below the normal range add,
  where a relative model of rounding no longer holds; it depends on the subnormal policy.
* :func:`reaches_max_finite` and :func:`exceeds_max_finite` -- where some evaluation order
  overflows, or where a value the text's evaluation holds is past the type's range.
* :func:`parts_magnitude` -- ``|x|``, and for a complex ``x`` ``|real| + |imag|``: the
  magnitudes a bound of a computation linear in the values with real coefficients takes, so
  that it holds for the modulus of a complex error (each part within its own real bound).
* :func:`judged_bound` -- a hook's bound as the judge reads it: the figure where the exact result
  is finite, a stand-in where it is a special value (settled before any bound is read), NaN
  where the evaluation bounds nothing (the region ``unbounded_evaluation``).

A hook that declares a ``subnormals`` keyword is told the subnormal policy of the reference it
bounds (:data:`SUBNORMAL_POLICIES`): ``"ieee"`` for the case's own reference (the one stored in
the corpus), ``"ftz"`` for the flushed reference the judge adds under the ``ftz`` policy; pass
it on to :func:`underflow_term`.

Every function takes a dtype name of :data:`conform.dtypes.FLOAT_FORMATS` and float64 figures
(arrays or numbers), and computes in float64.
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import FLOAT_FORMATS

__all__ = ["SUBNORMAL_POLICIES", "exceeds_max_finite", "gamma", "grown", "judged_bound",
           "parts_magnitude", "reaches_max_finite", "underflow_term"]

#: The subnormal policies a run applies (``conform run --subnormals``): ``ieee`` honours
#: subnormal inputs and results (gradual underflow); ``ftz`` may read a subnormal input as a
#: zero of its sign and flush a subnormal result to zero.
SUBNORMAL_POLICIES = ("ieee", "ftz")


def gamma(n, u: float):
    """Higham's ``gamma_n = n u / (1 - n u)`` (*Accuracy and Stability of Numerical Algorithms*,
    2nd ed., Lemma 3.1): ``|prod (1 + d_i)**(+-1) - 1| <= gamma_n`` for ``n`` roundings, each
    ``|d_i| <= u``. It holds for ``n u < 1`` only; where ``n u >= 1`` the roundings bound nothing
    and ``gamma`` is ``inf`` (a hook's bound built on it is then ``inf``: any number passes).

    ``n``: a count (an int, or an array of them); ``u``: the unit roundoff.

    >>> gamma(2, 2.0 ** -11) == 2 * 2.0 ** -11 / (1 - 2 * 2.0 ** -11)
    True
    >>> gamma(2048, 2.0 ** -11)
    inf
    """
    if np.ndim(n) == 0:
        nu = n * u
        return nu / (1 - nu) if nu < 1 else math.inf
    nu = np.asarray(n) * u
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(nu < 1, nu / (1 - nu), np.inf)


def sum_gamma(n, u: float):
    """The factor bounding a sum or dot product of ``n`` terms, ``|err| <= sum_gamma(n, u) * S``
    with ``S`` the sum of the terms' magnitudes, in any order: :func:`gamma` where ``n u < 1``
    (Higham, Lemma 3.1), else ``n u``, which Jeannerod and Rump (*Improved error bounds for inner
    products in floating-point arithmetic*, SIAM J. Matrix Anal. Appl. 34(2), 2013) prove for
    every ``n`` (no underflow or overflow). ``n`` may be an array.

    >>> sum_gamma(256, 2.0 ** -8), sum_gamma(2, 2.0 ** -11) == gamma(2, 2.0 ** -11)
    (1.0, True)
    """
    nu = np.asarray(n) * u
    bound = np.where(nu < 1, gamma(n, u), nu)
    return float(bound) if np.ndim(n) == 0 else bound


def grown(k, u: float):
    """``(1 - u)**-k - 1``: the largest relative error of ``k`` rounded operations, each a factor
    ``1 + d`` or ``1 / (1 + d)``, ``|d| <= u`` (at most :func:`gamma`; ``k`` may be an array,
    or non-integral: an error of ``k u`` through an exponential, ``exp(k u) - 1``, is smaller).

    >>> bool(np.isclose(grown(1, 2.0 ** -24), 2.0 ** -24 / (1 - 2.0 ** -24), rtol=1e-15, atol=0))
    True
    """
    return np.expm1(-np.asarray(k, np.float64) * np.log1p(-u))


def underflow_term(roundings, dtype: str, *, ulps: float = 0.5, subnormals: str = "ieee"):
    """The absolute error that ``roundings`` results below the normal range of ``dtype`` can
    add, beyond the relative error :func:`gamma` counts (which holds for normal results only).

    Under ``ieee`` (gradual underflow) a result in the subnormal range is off by at most
    ``ulps`` of its ULP, the smallest subnormal: ``eta = 2**(emin - p)``, half of it, for a
    correctly rounded operation (``ulps=0.5``; Higham §2.1, eq. 2.8: ``fl(x op y) = (x op
    y)(1 + d) + h``, ``|h| <= eta``), ``b`` for a function within ``b`` ULPs. A sum or
    difference whose result is subnormal is exact: count products, quotients and functions.
    Under ``ftz`` a result below the smallest normal ``lambda`` may come out as zero, so each
    such result is off by up to ``lambda`` more, and additions count too.

    ``roundings`` may be an array (a count per element, or a count already multiplied by the
    factors applied after the rounding). The smallest subnormal is multiplied last:
    ``2**-1075`` alone underflows to 0 in float64.

    >>> underflow_term(3, "float16") == 3 * 2.0 ** -25
    True
    >>> underflow_term(1, "float16", subnormals="ftz") == 2.0 ** -14 + 2.0 ** -25
    True
    """
    fmt = FLOAT_FORMATS[dtype]
    if subnormals == "ieee":
        return fmt.min_subnormal * (ulps * roundings)
    if subnormals == "ftz":
        return (fmt.min_normal + fmt.min_subnormal * ulps) * roundings
    raise ValueError(f"subnormals={subnormals!r} is not one of {SUBNORMAL_POLICIES}")


def reaches_max_finite(magnitude, dtype: str, *, gamma_n=0.0):
    """Where ``(1 + gamma_n) * magnitude`` reaches the largest finite value of ``dtype``: with
    ``magnitude`` the sum of the magnitudes of the terms (or the largest partial result) and
    ``gamma_n`` the relative error of its evaluation, some evaluation order may overflow there
    while another does not, so no bound holds for every order (mark it ``unbounded`` in
    :func:`judged_bound`, or make it an implementation-defined region).

    >>> bool(reaches_max_finite(65504.0, "float16")), bool(reaches_max_finite(65000.0, "float16"))
    (True, False)
    """
    with np.errstate(over="ignore"):   # an infinite magnitude reaches it too
        return (1 + gamma_n) * magnitude >= FLOAT_FORMATS[dtype].max_finite


def exceeds_max_finite(value, dtype: str):
    """Where a finite ``value`` (an exact intermediate result of the evaluation the text
    defines) lies beyond the largest finite value of ``dtype``: evaluated in ``dtype`` it
    overflows, though the final result may be finite. Infinite values are left out (the
    operand was infinite; the result is a special value).

    >>> exceeds_max_finite(np.array([7e4, 6e4, np.inf]), "float16").tolist()
    [True, False, False]
    """
    return np.isfinite(value) & (np.abs(value) > FLOAT_FORMATS[dtype].max_finite)


def parts_magnitude(x):
    """``|x|`` (float64) of the finite elements of ``x``, 0 elsewhere; of a complex element
    ``|real| + |imag|``, each part's where it is finite. A computation linear in the values
    with real coefficients (an interpolation, a sum) treats a complex value's two parts alike,
    each within the real bound built on its own magnitudes, so the modulus of the error (of
    the finite parts: the judge settles special parts first), at most the sum of the parts'
    errors, is within the bound built on these (twice any absolute term).

    >>> parts_magnitude(np.array([3 - 4j, np.nan, complex(2, np.inf)])).tolist()
    [7.0, 0.0, 2.0]
    """
    return sum(np.where(np.isfinite(part), np.abs(part), 0.0).astype(np.float64)
               for part in (np.real(x), np.imag(x)))


def judged_bound(bound, expected=None, *, unbounded=None, special=np.inf):
    """A hook's bound per element as the judge reads it: ``bound`` where the exact result
    ``expected`` is finite; ``special`` where it is NaN or infinite (the judge settles special
    values first and reads no bound there: ``inf`` or 0 are both safe); NaN where ``unbounded``
    (the evaluation the text defines fails there, e.g. overflows though the exact result is
    finite: the region ``unbounded_evaluation``). ``expected=None`` leaves ``bound`` as it is
    before the NaNs; the result is shaped as ``expected`` where it is given (``unbounded``
    broadcasting to it).

    >>> judged_bound(np.array([1e-3, 1e-3, 1e-3]), np.array([1.0, np.inf, 2.0]),
    ...              unbounded=np.array([False, False, True])).tolist()
    [0.001, inf, nan]
    """
    if expected is not None:
        shape = np.shape(expected)
        bound = np.where(np.isfinite(expected), np.broadcast_to(bound, shape), special)
    if unbounded is not None:
        bound = np.where(unbounded, np.nan, bound)
    return bound
