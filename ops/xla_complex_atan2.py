"""Complex atan2 (StableHLO atan2: "For complex numbers: complex atan2"): its reference, its error
bound and the operands on its branch cuts, whose side the text leaves open.

The spec names the function and gives no formula; StableHLO's reference interpreter
(stablehlo/reference/Element.cpp) states it as ``atan2(y, x) = -i * log((x + i * y) /
sqrt(x**2+y**2))`` (``y`` the lhs, ``x`` the rhs), with the principal sqrt and log: for real
operands the angle of ``(x, y)``, and ``tan(atan2(y, x)) = y / x``. Its derivative is that of the
real atan2, ``(x dy - y dx) / (x**2 + y**2)``; it is singular at the branch points ``x**2 + y**2 =
0`` (``x = ±iy``) and jumps across two cuts: by ``π`` where ``x**2 + y**2`` crosses the negative
real axis (the sqrt changes sign), and by ``2π`` where the quotient ``q = (x + iy) / sqrt(x**2 +
y**2)`` does (the log's cut). ``q**2 = (x + iy) / (x - iy)``, so ``q`` is real exactly where ``y /
x`` is imaginary (``Re(y conj x) = 0``), and negative there where also ``|y| < |x|`` and ``x`` lies
in the left half-plane (``sqrt(x**2) = -x``): e.g. every real ``x < 0`` with ``y = 0``, the real
atan2's ``±π``.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from conform.dtypes import component_dtype
from conform.op_registry import region
from conform.ops.error_bounds import judged_bound, reaches_max_finite, underflow_term
from conform.ops.regions import RegionContext, broadcast_aligned
from conform.ops.xla_complex import COMPLEX_CELLS

#: Arb's working precisions, tried in turn (float64 operands' ratio reaches 2**-2150), and the
#: radius (relative to the value's modulus) below which a ball is read as its midpoint
_PRECISIONS, _NARROW = (256, 1024, 4096), 2.0 ** -110


def _formula(y, x):
    """The interpreter's formula on NumPy complex128 arrays."""
    return -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))


def _parts(y: complex, x: complex):
    """``x``'s and ``y``'s parts ``a, b, c, d`` as rationals (exact arithmetic)."""
    return map(Fraction, (x.real, x.imag, y.real, y.imag))


def _branch_point(y: complex, x: complex) -> bool:
    """Whether ``x**2 + y**2 = 0`` exactly (``x = ±iy``)."""
    a, b, c, d = _parts(y, x)
    return a * b + c * d == 0 and a * a - b * b + c * c - d * d == 0


def complex_atan2_reference(lhs, rhs):
    """``atan2(lhs, rhs) = -i log((rhs + i lhs) / sqrt(rhs**2 + lhs**2))`` (complex, broadcast
    together): for finite operands Arb's value (:func:`_arb_parts`), each part rounded to the nearest
    float64 where the ball is narrower than ``2**-110`` of its modulus (a part whose ball holds 0
    is 0, of NumPy's sign: ``signed_zero: any``); NumPy's complex128 formula elsewhere (non-finite
    operands, branch points and operands on or very near a cut: the regions)."""
    y, x = np.broadcast_arrays(np.asarray(lhs, np.complex128), np.asarray(rhs, np.complex128))
    with np.errstate(all="ignore"):
        out = _formula(y, x).astype(np.complex128)
    flat = out.reshape(-1)
    for k, (b, a) in enumerate(zip(y.reshape(-1).tolist(), x.reshape(-1).tolist())):
        if all(map(math.isfinite, (a.real, a.imag, b.real, b.imag))):
            parts = _arb_parts(b, a)
            if parts is not None:
                flat[k] = complex(*(p if p else math.copysign(0.0, f)
                                    for p, f in zip(parts, (flat[k].real, flat[k].imag))))
    return out


def _arb_parts(y: complex, x: complex):
    """The formula's parts at finite ``(y, x)`` on Arb balls, each rounded to the nearest float64
    (a part whose ball holds 0 is 0), at the first of :data:`_PRECISIONS` where the ball is
    narrower than ``2**-110`` of its modulus (``q`` is within ``|f|`` of ``±1``, so a small
    ``f`` cancels about ``log2(1/|f|)`` bits); None where none is (a branch point, a cut). A
    zero ``y`` gives ``q = x / sqrt(x**2) = ±1`` exactly: ``f`` is 0, or ``π`` on the log's cut."""
    import flint

    if y == 0 and x != 0:
        return [0.0 if x.real > 0 or (x.real == 0 and x.imag > 0) else math.pi, 0.0]

    saved = flint.ctx.prec
    try:
        for flint.ctx.prec in _PRECISIONS:
            yb, xb = flint.acb(y.real, y.imag), flint.acb(x.real, x.imag)
            square = xb * xb + yb * yb
            if square == 0:
                return None
            ball = -flint.acb(0, 1) * ((xb + flint.acb(0, 1) * yb) / square.sqrt()).log()
            if not (ball.real.is_finite() and ball.imag.is_finite()):
                continue
            if max(ball.real.rad(), ball.imag.rad()) <= abs(ball).mid() * _NARROW:
                return [0.0 if p.contains(0) else float(p.mid()) for p in (ball.real, ball.imag)]
    finally:
        flint.ctx.prec = saved
    return None


def _on_cut(y: complex, x: complex) -> bool:
    """Whether ``(y, x)`` lies exactly on a cut or at a branch point: ``x**2 + y**2`` real and
    ``<= 0``, or ``Re(y conj x) = 0``, ``|y| < |x|`` and ``x`` in the left half-plane (rationals:
    exact)."""
    a, b, c, d = _parts(y, x)
    if a * b + c * d == 0 and a * a - b * b + c * c - d * d <= 0:
        return True
    left = a < 0 or (a == 0 and b < 0)
    return a * c + b * d == 0 and c * c + d * d < a * a + b * b and left


@region
def atan2_operands_on_branch_cut(ctx: RegionContext) -> np.ndarray:
    """Results of a complex atan2 whose operands lie on a cut of the interpreter's formula
    ``-i log((x + iy) / sqrt(x**2 + y**2))`` (see the module's docstring), as given or with
    their subnormal parts read as zero (a flushing backend, the ``ftz`` policy): the formula is
    one of numbers, which takes one side there, and the text does not say whether a zero part's
    sign selects the side as C11 Annex G's functions let it (the real atan2 of ``(±0, -3)`` is
    ``±π``; the formula gives ``π`` for both)."""
    if not all(np.iscomplexobj(v) for v in ctx.inputs):
        return ctx.none()
    shape = ctx.expected.shape
    y, x = (broadcast_aligned(np.asarray(v, np.complex128), shape, ctx.shapes, ctx.attrs)
            for v in ctx.inputs)
    tiny = float(np.finfo(component_dtype(str(ctx.inputs[0].dtype))).tiny)

    def flushed(v):
        return complex(*(p if abs(p) >= tiny else 0.0 for p in (v.real, v.imag)))

    mask = np.zeros(shape, bool)
    flat = mask.reshape(-1)
    for k, (b, a) in enumerate(zip(y.reshape(-1).tolist(), x.reshape(-1).tolist())):
        if all(map(math.isfinite, (a.real, a.imag, b.real, b.imag))):
            flat[k] = _on_cut(b, a) or _on_cut(flushed(b), flushed(a))
    return mask


atan2_operands_on_branch_cut.only_dtypes = COMPLEX_CELLS


def complex_atan2_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                        subnormals="ieee"):
    """The ``derived`` bound of complex ``atan2(y, x)``: an evaluation exact at operands within
    ``operand_ulp`` ULPs of each part (each moving by ``rho <= 2 operand_ulp u |v|``) and within
    ``result_ulp`` ULPs of that value (a mixed forward-backward error, Higham, "Accuracy and
    Stability of Numerical Algorithms", 2nd ed., §1.5; under ``ftz`` each operand moves by
    ``sqrt(2)`` times the smallest normal more, its subnormal parts read as 0): ``|err| <= D + 2
    result_ulp u (|f| + D)``.
    ``D`` bounds the move of ``f``: ``|df| <= (|x||dy| + |y||dx|) / (|x + iy||x - iy|)`` over the
    moved operands, infinite (any number) where they may reach a branch point, plus ``π`` where
    they may reach the sqrt's cut (``x**2 + y**2`` moves by up to ``rho_x (2|x| + rho_x) + rho_y
    (2|y| + rho_y)``) and ``2π`` where the log's (``Re(y conj x)`` moves by up to ``(|x| +
    rho_x)(|y| + rho_y) - |x||y|``, with ``Re x <= rho_x`` and ``|y| - rho_y < |x| + rho_x``).
    Plus parts below the normal range: the result's, and the squares' (eight products, each
    ``eta`` off, moving ``f`` by ``eta / |x**2 + y**2|``). NaN (``unbounded_evaluation``) where
    the formula meets an exception, which StableHLO leaves implementation-defined for complex
    arithmetic: a branch point (it divides by ``sqrt(0)``), or ``|x|**2 + |y|**2`` past the
    type's largest finite value or below its smallest normal."""
    shape = np.shape(outputs[0])
    y, x = (broadcast_aligned(np.asarray(v, np.complex128), shape, "xla_broadcast", attrs)
            for v in inputs)
    part = component_dtype(out_dtype)
    expected = np.asarray(outputs[0])
    with np.errstate(all="ignore"):
        ax, ay = np.abs(x), np.abs(y)
        # a flushing backend reads a subnormal part as 0: the operand moves by up to sqrt(2) tiny
        flushed = math.sqrt(2) * float(np.finfo(part).tiny) if subnormals == "ftz" else 0.0
        rho_x, rho_y = (2 * constants["operand_ulp"] * u * v + flushed for v in (ax, ay))
        rho = rho_x + rho_y
        gaps = (np.abs(x + 1j * y) - rho) * (np.abs(x - 1j * y) - rho)
        reach = (ax + rho_x) * rho_y + (ay + rho_y) * rho_x
        moved = np.where(gaps > 0, reach / gaps, np.inf)
        moved = np.where(rho == 0, 0.0, moved)
        square = x * x + y * y
        to_sqrt_cut = np.where(square.real >= 0, np.abs(square), np.abs(square.imag))
        sqrt_cut = to_sqrt_cut <= rho_x * (2 * ax + rho_x) + rho_y * (2 * ay + rho_y)
        log_cut = (np.abs((y * np.conj(x)).real) <= (ax + rho_x) * (ay + rho_y) - ax * ay) \
            & (x.real <= rho_x) & (ay - rho_y < ax + rho_x)
        moved = moved + np.pi * sqrt_cut + 2 * np.pi * log_cut
        squares_underflow = underflow_term(8, part, subnormals=subnormals) / np.abs(square)
        bound = moved + 2 * constants["result_ulp"] * u * (np.abs(expected) + moved) \
            + squares_underflow \
            + 2 * underflow_term(1, part, ulps=constants["result_ulp"], subnormals=subnormals)
        sizes = ax ** 2 + ay ** 2
        finite = np.isfinite(x) & np.isfinite(y)
        branch_point = np.zeros(shape, bool)
        branch_point.reshape(-1)[:] = [f and _branch_point(b, a) for f, b, a in zip(
            finite.reshape(-1).tolist(), y.reshape(-1).tolist(), x.reshape(-1).tolist())]
        unbounded = finite & (branch_point | reaches_max_finite(sizes, part)
                              | (sizes < np.finfo(part).tiny))
    return (judged_bound(bound, expected, unbounded=unbounded),)
