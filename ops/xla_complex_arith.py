"""Complex division (StableHLO divide: "For complex numbers: complex division"): its reference,
each part correctly rounded for complex128, and its error bound, which admits the textbook
formula and Smith's algorithm. StableHLO leaves the exceptions of complex arithmetic
implementation-defined (docs/spec.md, "Errors": "Exceptions for nonstandard operations (e.g.
complex arithmetic and certain transcendental functions) are implementation-defined"), so a
zero divisor, and the operands where either evaluation overflows or underflows, are the region
``unbounded_evaluation``.
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import component_dtype
from conform.ops.error_bounds import gamma, judged_bound, reaches_max_finite, underflow_term
from conform.op_registry import region
from conform.ops.regions import RegionContext, broadcast_aligned
from conform.ops.xla_complex import COMPLEX_CELLS


def exact_complex_quotient(lhs, rhs, dtypes=None):
    """``lhs / rhs`` (complex, broadcast together): NumPy's complex128 quotient where ``dtypes``
    holds no complex128; for complex128 operands each part of every finite quotient by a
    nonzero divisor correctly rounded into float64 from the exact ``(ac + bd) / (c**2 + d**2)``
    and ``(bc - ad) / (c**2 + d**2)`` (rationals). Elsewhere NumPy's value (the regions
    ``complex_nonfinite_operand`` and ``unbounded_evaluation``)."""
    from fractions import Fraction

    lhs, rhs = np.broadcast_arrays(np.asarray(lhs, np.complex128), np.asarray(rhs, np.complex128))
    with np.errstate(all="ignore"):
        out = (lhs / rhs).copy()
    if dtypes is not None and "complex128" not in dtypes:
        return out
    flat = out.reshape(-1)
    for k, (x, y) in enumerate(zip(lhs.reshape(-1).tolist(), rhs.reshape(-1).tolist())):
        parts = (x.real, x.imag, y.real, y.imag)
        if not all(map(math.isfinite, parts)) or y == 0:
            continue
        a, b, c, d = map(Fraction, parts)
        square = c * c + d * d
        flat[k] = complex(_rounded((a * c + b * d) / square), _rounded((b * c - a * d) / square))
    return out


def _rounded(value) -> float:
    """``float(value)`` of a rational, correctly rounded, overflowing to an infinity of its sign
    (a zero part is +0: the sign of a zero part is left open, ``signed_zero: any``)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def complex_quotient_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                           subnormals="ieee"):
    """The ``derived`` bound of a complex quotient ``x / y``, the larger of two evaluations'
    normwise relative errors, times ``|x / y|``:

    - the textbook ``x conj(y) / (c**2 + d**2)``: the product within ``sqrt(5) u |x||y|``
      (Brent, Percival and Zimmermann 2007), the sum of two squares within ``gamma_2``, each
      part's division one rounding: ``(1 + sqrt(5) u)(1 + u) / (1 - gamma_2) - 1``;
    - Smith's (``|c| >= |d|``: ``r = d / c``, ``t = c + d r``, ``((a + b r) + (b - a r) i) /
      t``; the other case alike): ``t`` a sum of two terms of one sign, within ``gamma_3``;
      the numerators' products ``b r``, ``a r`` within ``gamma_2`` of ``|x||r|``, which over
      ``|t| = |y|**2 / |c|`` is at most ``|x / y|``, then a rounding of each sum: ``(1 + (1 +
      u) gamma_2 + u)(1 + u) / (1 - gamma_3) - 1``.

    Plus a part below the normal range (``underflow_term``). NaN (``unbounded_evaluation``)
    where the textbook formula leaves the normal range (``|x||y|`` or ``|y|**2`` reaches the
    largest finite value, or ``|y|**2`` is below the smallest normal, a zero divisor too): a
    complex exception, implementation-defined."""
    shape = np.shape(outputs[0])
    lhs, rhs = (broadcast_aligned(np.asarray(x, np.complex128), shape, "xla_broadcast", attrs)
                for x in inputs)
    part = component_dtype(out_dtype)
    expected = np.asarray(outputs[0])
    textbook = (1 + math.sqrt(5) * u) * (1 + u) / (1 - gamma(2, u)) - 1
    smith = (1 + (1 + u) * gamma(2, u) + u) * (1 + u) / (1 - gamma(3, u)) - 1
    bound = max(textbook, smith) * np.abs(expected) \
        + 2 * underflow_term(3, part, subnormals=subnormals)
    with np.errstate(all="ignore"):
        square = np.abs(rhs) ** 2
        unbounded = np.isfinite(lhs) & np.isfinite(rhs) & (
            reaches_max_finite(np.abs(lhs) * np.abs(rhs), part)
            | reaches_max_finite(square, part) | (square < np.finfo(part).tiny))
    return (judged_bound(bound, expected, unbounded=unbounded),)


def complex_power_reference(lhs, rhs, dtypes=None):
    """``lhs ** rhs`` = ``e**(rhs log lhs)`` (the principal logarithm), complex, broadcast
    together: NumPy's complex128 power where ``dtypes`` holds no complex128; for complex128
    operands Arb's at 256 bits, each part rounded to the nearest float64, for a finite nonzero
    ``lhs`` and a finite ``rhs`` (NumPy's elsewhere, the regions; and where ``lhs`` has a zero
    part on the cut and NumPy took the other side: the region ``zero_part_on_branch_cut``), a
    part whose ball holds 0 keeping NumPy's sign."""
    lhs, rhs = np.broadcast_arrays(np.asarray(lhs, np.complex128), np.asarray(rhs, np.complex128))
    with np.errstate(all="ignore"):
        out = np.power(lhs, rhs).copy()
    if dtypes is not None and "complex128" not in dtypes:
        return out
    import flint

    saved, flint.ctx.prec = flint.ctx.prec, 256
    try:
        flat = out.reshape(-1)
        for k, (x, y) in enumerate(zip(lhs.reshape(-1).tolist(), rhs.reshape(-1).tolist())):
            if not all(map(math.isfinite, (x.real, x.imag, y.real, y.imag))) or x == 0:
                continue
            ball = (flint.acb(y.real, y.imag) * flint.acb(x.real, x.imag).log()).exp()
            if not (ball.real.is_finite() and ball.imag.is_finite()):
                continue
            near = complex(*[f if p.rad() >= abs(p.mid()) else float(p.mid())
                             for p, f in ((ball.real, flat[k].real), (ball.imag, flat[k].imag))])
            if (x.real and x.imag) or abs(near - flat[k]) <= 2.0 ** -20 * abs(near):
                flat[k] = near
    finally:
        flint.ctx.prec = saved
    return out


def complex_power_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                        subnormals="ieee"):
    """The ``derived`` bound of ``x ** y = e**(y log x)`` evaluated as written: ``L = log x``
    within ``e_L`` (:func:`conform.ops.xla_complex.complex_log_bound`'s absolute error: ``d /
    (1 - d) (1 + 2 log_ulp u) + 2 log_ulp u |log|x|| + 2 atan2_ulp u |arg x|``, ``d = 2
    hypot_ulp u``), the product ``w = y L`` within ``|y| e_L + sqrt(5) u |y| (|L| + e_L)``
    (Brent, Percival and Zimmermann 2007), then exp within its relative ``p = (1 + 2 exp_ulp
    u)(1 + 2 trig_ulp u)(1 + u) - 1`` (:func:`conform.ops.xla_complex.complex_exp_bound`), an
    error ``dw`` in its argument moving it by ``e**|dw| - 1`` of itself: ``((e**|dw| - 1) + p
    e**|dw|) |x ** y|`` plus a part below the normal range. NaN (``unbounded_evaluation``)
    where the evaluation meets an exception, which StableHLO leaves implementation-defined for
    complex arithmetic: ``x`` is 0 (log 0 is infinite), ``|y||log x|`` (the product) or
    ``e**Re(w)`` reaches the type's largest finite value, or ``e**Re(w)`` underflows below
    the smallest normal."""
    shape = np.shape(outputs[0])
    x, y = (broadcast_aligned(np.asarray(v, np.complex128), shape, "xla_broadcast", attrs)
            for v in inputs)
    part = component_dtype(out_dtype)
    expected = np.asarray(outputs[0])
    d = 2 * constants["hypot_ulp"] * u
    log_rel, atan2_rel = 2 * constants["log_ulp"] * u, 2 * constants["atan2_ulp"] * u
    p = (1 + 2 * constants["exp_ulp"] * u) * (1 + 2 * constants["trig_ulp"] * u) * (1 + u) - 1
    with np.errstate(all="ignore"):
        log_x = np.log(x)
        e_log = d / (1 - d) * (1 + log_rel) + log_rel * np.abs(log_x.real) \
            + atan2_rel * np.abs(log_x.imag)
        dw = np.abs(y) * e_log + math.sqrt(5) * u * np.abs(y) * (np.abs(log_x) + e_log)
        moved = np.expm1(dw)
        bound = (moved + p * (1 + moved)) * np.abs(expected) \
            + 2 * underflow_term(1, part, ulps=constants["exp_ulp"] + constants["trig_ulp"] + 1,
                                 subnormals=subnormals)
        grows = np.exp((y * log_x).real)
        unbounded = np.isfinite(x) & np.isfinite(y) & (
            (x == 0) | reaches_max_finite(grows, part) | (grows < np.finfo(part).tiny)
            | reaches_max_finite(np.abs(y) * np.abs(log_x), part))
    return (judged_bound(bound, expected, unbounded=unbounded),)


@region
def complex_remainder(ctx: RegionContext) -> np.ndarray:
    """Every result of a remainder of complex operands: StableHLO's remainder, which allows
    complex types, defines its ``d`` "For complex numbers: TBD (#997)", and XLA's text only
    for a dividend's sign, which a complex number has not: no value to judge."""
    if not any(np.iscomplexobj(x) for x in ctx.inputs):
        return ctx.none()
    return np.ones(ctx.expected.shape, bool)


complex_remainder.only_dtypes = COMPLEX_CELLS
