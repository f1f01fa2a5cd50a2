"""The complex forms of the inverse and root functions XLA frontends lower to CHLO and StableHLO
(acos, acosh, asin, asinh, atan, atanh, log1p, exp2, cbrt): their error bound, and the region
of operands on a branch cut, whose side the text leaves open.

CHLO (stablehlo/dialect/ChloOps.td) gives each function as a formula of real numbers
(``acos(x) = 2 atan(sqrt(1 - x**2) / (1 + x))``, ``asinh(x) = log(x + sqrt(x**2 + 1))``, ...)
and StableHLO's cbrt "complex cubic root"; none gives an accuracy, an evaluation or the
treatment of a signed zero on a cut. The reference is the principal value (Arb complex balls,
:func:`conform.ops.xla_complex.complex_refined`); the cuts are the principal branches' (DLMF
4.23(iv), 4.37(iv): acos, asin on the real axis beyond ±1; atanh there too; acosh on it left of
1; asinh, atan on the imaginary axis beyond ±i; log1p left of -1; cbrt on the negative real
axis; exp2 has none).
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import component_dtype
from conform.op_registry import region
from conform.ops.error_bounds import judged_bound, reaches_max_finite, underflow_term
from conform.ops.regions import RegionContext
from conform.ops.xla_complex import COMPLEX_CELLS, complex_refined

#: a jump across an axis at a zero part: at least this much of the value's modulus ...
_JUMP_RELATIVE = 1e-3
#: ... and this many times the part's smallest normal (a continuous function moves by about
#: ``|f'| 2 tiny`` between ``a ± i tiny``, which stays below it but within an ULP or so of a
#: branch point)
_JUMP_TINIES = 1e6


#: NumPy's value on an axis is kept where Arb's differs from it by more than this (relative):
#: the two sides of a cut (Arb takes a zero part as the number 0), not NumPy's few ULPs
_SAME_SIDE = 2.0 ** -20


def refined_on_axes(fast, exact, z, dtypes=None):
    """:func:`complex_refined`, and for complex128 operands with a zero part (which it leaves
    to NumPy: Arb has no signed zero) Arb's value too where it is NumPy's to within
    ``2**-20`` (the same side of any cut; NumPy's complex log1p of ``1e-8 + 0i`` errs by
    ``6e-9`` relative), each zero part of the result keeping NumPy's sign."""
    out = complex_refined(fast, exact, z, dtypes=dtypes)
    if dtypes is not None and any(d != "complex128" for d in dtypes):
        return out
    import flint

    flat, values = out.reshape(-1), np.asarray(z, np.complex128).reshape(-1)
    axes = np.flatnonzero(np.isfinite(values) & ((values.real == 0) | (values.imag == 0)))
    saved, flint.ctx.prec = flint.ctx.prec, 256
    try:
        for k in axes:
            ball = exact(flint.acb(values[k].real, values[k].imag))
            if not (ball.real.is_finite() and ball.imag.is_finite()):
                continue
            # a part whose ball holds 0 (an exact zero, whose sign Arb lacks): NumPy's
            near = complex(*[f if p.rad() >= abs(p.mid()) else float(p.mid())
                             for p, f in ((ball.real, flat[k].real), (ball.imag, flat[k].imag))])
            if abs(near - flat[k]) <= _SAME_SIDE * abs(near):
                flat[k] = near
    finally:
        flint.ctx.prec = saved
    return out


@region
def zero_part_on_branch_cut(ctx: RegionContext) -> np.ndarray:
    """Results of a complex function whose operand lies on one of its branch cuts: a part
    that is zero (either sign) or subnormal (a flushing backend, the ``ftz`` policy, reads it
    as zero) where the function jumps across that axis (the op's oracle at the part set to
    ``+tiny`` and to ``-tiny``, the smallest normal, differ by a jump). The text gives the
    function as a formula of numbers, which takes one side of the cut for a point on it,
    while C11 Annex G lets the zero's sign choose the side (G.6 ¶2, ``cacos(conj z) =
    conj(cacos z)``): acos(2 + 0i) is +1.317i by CHLO's ``2 atan(sqrt(1 - x**2) / (1 + x))``,
    -1.317i by C11's cacos."""
    mask = ctx.none()
    for k, operand in enumerate(ctx.inputs):
        if not np.iscomplexobj(operand):
            continue
        z = np.asarray(operand, np.complex128)
        tiny = float(np.finfo(component_dtype(str(operand.dtype))).tiny)
        for unit in (1j, 1):   # the imaginary part small: the real axis; then the real part
            part = z.imag if unit == 1j else z.real
            near = np.isfinite(z) & (np.abs(part) < tiny)
            if not near.any():
                continue
            onto_axis = z[near] - part[near] * unit
            sides = []
            for side in (tiny, -tiny):
                inputs = [np.asarray(x, np.complex128) if i == k else x
                          for i, x in enumerate(ctx.inputs)]
                shifted = inputs[k].copy()
                shifted[near] = onto_axis + side * unit
                inputs[k] = shifted
                with np.errstate(all="ignore"):
                    sides.append(np.asarray(ctx.float_oracle(inputs), np.complex128)[near])
            with np.errstate(invalid="ignore"):   # infinite sides: inf - inf, no jump
                jump = np.abs(sides[0] - sides[1])
                scale = np.maximum(np.abs(sides[0]), np.abs(sides[1]))
                jumps = (jump > _JUMP_RELATIVE * scale) & (jump > _JUMP_TINIES * tiny)
            hit = np.zeros(z.shape, bool)
            hit[near] = jumps
            mask = mask | ctx.aligned(hit)
    return mask


zero_part_on_branch_cut.only_dtypes = COMPLEX_CELLS


def _distance_bound(points, exponents, scale):
    """``|f'(w)| <= scale * prod |w - p|**-e`` (``points`` ``p``, ``exponents`` ``e``): over
    the disc of radius ``rho`` about ``z``, at most ``scale * prod (|z - p| - rho)**-e``,
    infinite where the disc reaches a singular point."""
    def largest(z, rho):
        out = np.full(np.shape(z), float(scale))
        for p, e in zip(points, exponents):
            gap = np.abs(z - p) - rho
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                out = np.where(gap > 0, out * gap ** -e, np.inf)
        return out
    return largest


def _exp2_derivative(z, rho):
    """``|d/dz 2**z| = ln 2 * 2**Re z``, largest over the disc at ``Re z + rho``."""
    with np.errstate(over="ignore"):
        return math.log(2) * np.exp2(np.real(z) + rho)


#: the modulus of each function's derivative, bounded over a disc about the operand
DERIVATIVES = {
    "acos": _distance_bound((1, -1), (0.5, 0.5), 1),      # -1 / sqrt(1 - z**2)
    "asin": _distance_bound((1, -1), (0.5, 0.5), 1),      # 1 / sqrt(1 - z**2)
    "acosh": _distance_bound((1, -1), (0.5, 0.5), 1),     # 1 / (sqrt(z - 1) sqrt(z + 1))
    "asinh": _distance_bound((1j, -1j), (0.5, 0.5), 1),   # 1 / sqrt(1 + z**2)
    "atan": _distance_bound((1j, -1j), (1, 1), 1),        # 1 / (1 + z**2)
    "atanh": _distance_bound((1, -1), (1, 1), 1),         # 1 / (1 - z**2)
    "log1p": _distance_bound((-1,), (1,), 1),             # 1 / (1 + z)
    "cbrt": _distance_bound((0,), (2 / 3,), 1 / 3),       # z**(-2/3) / 3
    "exp2": _exp2_derivative,                             # ln 2 * 2**z
}


#: what the text's evaluation computes on the way that can overflow though the result is
#: finite: ``x**2`` (CHLO's ``sqrt(1 - x**2)``, ``sqrt(x**2 + 1)``, ``1 + x**2`` in atan2's
#: complex form), and exp2's ``2**Re z`` (``2**a cos(b ln 2)``, a part below 1 times it)
_EVALUATION_GROWS = {
    **{name: lambda z: np.abs(z) ** 2
       for name in ("acos", "asin", "acosh", "asinh", "atan", "atanh")},
    "exp2": lambda z: np.exp2(np.real(z)),
}


def complex_inverse_bound(name: str):
    """The ``derived`` bound hook of the complex ``name`` (a key of :data:`DERIVATIVES`) for
    an evaluation that is exact at an operand within ``operand_ulp`` ULPs of each part of
    ``z`` (each ULP at most ``2u`` of the part, so the operand moves by ``rho <= 2 operand_ulp
    u |z|``; a relative change never moves a part across an axis, so never across a cut), and
    within ``result_ulp`` ULPs of that value in each part (a mixed forward-backward error,
    Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., §1.5): ``|err| <= rho
    M + 2 result_ulp u (|f(z)| + rho M)``, ``M`` the largest ``|f'|`` over the disc of radius
    ``rho`` about ``z`` (infinite, any number, where it holds a branch point), plus a result
    below the normal range (``underflow_term``, each part). NaN (``unbounded_evaluation``)
    where the text's evaluation overflows though the result may be finite
    (:data:`_EVALUATION_GROWS`; cbrt and log1p have no such step)."""
    derivative = DERIVATIVES[name]
    grows = _EVALUATION_GROWS.get(name)

    def bound_hook(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                   subnormals="ieee"):
        """The bound per element (see :func:`complex_inverse_bound`)."""
        (z,) = inputs
        z = np.asarray(z, np.complex128)
        part = component_dtype(out_dtype)
        expected = np.asarray(outputs[0])
        with np.errstate(all="ignore"):
            rho = 2 * constants["operand_ulp"] * u * np.abs(z)
            moved = rho * derivative(z, rho)
            moved = np.where(rho == 0, 0.0, moved)   # z = 0: the operand is exact
            bound = moved + 2 * constants["result_ulp"] * u * (np.abs(expected) + moved) \
                + 2 * underflow_term(1, part, ulps=constants["result_ulp"],
                                     subnormals=subnormals)
            unbounded = np.isfinite(z) & reaches_max_finite(grows(z), part) if grows \
                else np.zeros(z.shape, bool)
        return (judged_bound(bound, expected, unbounded=unbounded),)
    return bound_hook
