"""The special functions XLA frontends lower to CHLO, as ``jax.lax`` exposes them (one operand):
exp2, erf_inv, lgamma, digamma, bessel_i0e and bessel_i1e. The two-operand ones (igamma,
igammac, polygamma, zeta, nextafter) are in ops/xla_special_binary.py.

None of them is in the XLA operation semantics text (seeds/004 lists only Erf among the special
functions); each is defined by its ``jax.lax`` function's documentation and the CHLO op it lowers
to, and its values by the function's mathematical definition (DLMF, the NIST Digital Library of
Mathematical Functions, cited per function). The references are evaluated in Arb ball
arithmetic (:func:`conform.ops.multiprecision.refined`, at the precision Ziv's strategy picks
per element: ``ziv=True``) for *every* dtype, not only float64:
these functions have zeros away from the origin (lgamma at 1, 2 and two on each negative unit
interval, digamma at 1.4616... and one per negative unit interval), where a float64 library
value is accurate in absolute, not relative, terms. The float64 fast path supplies only what
Arb does not give as a finite real (poles, overflow, infinite operands), and the spec's
``special_values`` table (from the definitions) overrides it where it speaks.

Where the definition gives no value (digamma's two-sided poles), the oracle marks the elements
open (``open_elements``, the region ``oracle_marked``).
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.multiprecision import refined
from conform.ops.xla_complex_inverse import complex_inverse_bound, refined_on_axes


def _scipy():
    from scipy import special   # imported on first use: scipy.special costs ~0.7 s per process

    return special


def _pole(x):
    """Non-positive integers (zeros included): the poles of Gamma and digamma."""
    return np.isfinite(x) & (x <= 0) & (np.trunc(x) == x)


def _arb_exp2(x):
    from flint import arb

    return arb(2) ** x


@op("exp2", version=1, error_bound=complex_inverse_bound("exp2"))
def oracle_exp2(operand, *, dtypes=None):
    """2**x (jax.lax.exp2); exact at integers, Arb elsewhere; complex x: e**(x ln 2)."""
    if np.iscomplexobj(operand):
        return (refined_on_axes(np.exp2, lambda z: type(z)(2) ** z, operand, dtypes=dtypes),)
    return (refined(np.exp2, _arb_exp2, operand, ziv=True),)


@op("erf_inv", version=1)
def oracle_erf_inv(operand):
    """erf_inv(x): the y with erf(y) = x for -1 < x < 1 (DLMF 7.17.1: inverse error function);
    ±inf at ±1, NaN for |x| > 1 (the spec's table)."""
    return (refined(_scipy().erfinv, lambda x: x.erfinv(), operand, ziv=True),)


def _arb_lgamma(x):
    """ln|Gamma(x)| (DLMF 5.2.1 and 5.5.3's reflection Gamma(x) Gamma(1-x) = pi / sin(pi x) for
    x < 0: ln|Gamma(x)| = ln(pi) - ln|sin(pi x)| - ln Gamma(1 - x)); Arb's lgamma is the
    complex logarithm's real branch only for x > 0."""
    from flint import arb

    if x > 0:
        return x.lgamma()
    return arb.pi().log() - abs(x.sin_pi()).log() - (1 - x).lgamma()


@op("lgamma", version=1)
def oracle_lgamma(operand):
    """lgamma(x) = ln|Gamma(x)| (jax.lax.lgamma; C11 7.12.8.3): +inf at the poles (non-positive
    integers, C11 F.10.5.3) and at ±inf."""
    fast = lambda x: np.where(_pole(x), np.inf, _scipy().gammaln(x))
    return (refined(fast, _arb_lgamma, operand, ziv=True),)


@op("digamma", version=1)
def oracle_digamma(operand, *, open_elements=False):
    """digamma(x) = Gamma'(x) / Gamma(x) (DLMF 5.2.2); its poles at the non-positive integers
    are two-sided (-inf from the right, +inf from the left: DLMF 5.15.6's reflection), so the
    definition gives them no value (open), nor -inf, where digamma has no limit."""
    if open_elements:
        return (_pole(operand) | (operand == -np.inf),)
    fast = lambda x: np.where(_pole(x), np.nan, _scipy().psi(x))
    return (refined(fast, lambda x: x.digamma(), operand, ziv=True),)


def _arb_scaled_bessel(order):
    def exact(x):
        value = abs(x).bessel_i(order, scaled=True)   # Arb's scaled is e**-x I_n(x)
        return -value if (order % 2 and x < 0) else value   # I_1 is odd, I_0 even
    return exact


@op("bessel_i0e", version=1)
def oracle_bessel_i0e(operand):
    """bessel_i0e(x) = e**-|x| I_0(x) (jax.lax.bessel_i0e; I_0 the modified Bessel function of
    the first kind, DLMF 10.25.2), even."""
    return (refined(_scipy().i0e, _arb_scaled_bessel(0), operand, ziv=True),)


@op("bessel_i1e", version=1)
def oracle_bessel_i1e(operand):
    """bessel_i1e(x) = e**-|x| I_1(x) (jax.lax.bessel_i1e; DLMF 10.25.2), odd."""
    return (refined(_scipy().i1e, _arb_scaled_bessel(1), operand, ziv=True),)
