"""StableHLO's order of complex numbers (docs/spec.md, compare: "For complex element types,
lexicographic comparison of (real, imag) pairs is performed using the provided
comparison_direction and compare_type"; maximum and minimum: "For complex numbers:
lexicographic maximum [minimum] for the (real, imaginary) pair"), and the region of a NaN
part, where a lexicographic order of IEEE comparisons has two readings.

Each part is compared by IEEE 754-2019 §5.11 (the ``FLOAT`` compare_type): ``(a, b) > (c, d)``
is ``a > c``, or ``a == c`` and ``b > d`` (as StableHLO's reference interpreter,
stablehlo/reference/Element.cpp, orders maximum and minimum). ``-0 == +0``, so pairs differing
in a zero's sign are equal.
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import region
from conform.ops.regions import RegionContext
from conform.ops.xla_complex import COMPLEX_CELLS

#: the comparison of the first part where the first parts differ, per direction
_STRICT = {"ge": np.greater, "gt": np.greater, "le": np.less, "lt": np.less}
_OF_SECOND = {"ge": np.greater_equal, "gt": np.greater, "le": np.less_equal, "lt": np.less}


def lexicographic(direction: str, lhs, rhs) -> np.ndarray:
    """``lhs`` ``direction`` (ge, gt, le or lt) ``rhs`` on complex operands: the real parts by
    the strict comparison where they differ, the imaginary parts by ``direction`` where they
    are equal."""
    lhs, rhs = np.asarray(lhs, np.complex128), np.asarray(rhs, np.complex128)
    with np.errstate(invalid="ignore"):
        return np.where(lhs.real == rhs.real, _OF_SECOND[direction](lhs.imag, rhs.imag),
                        _STRICT[direction](lhs.real, rhs.real))


def lexicographic_pick(larger: bool, lhs, rhs) -> np.ndarray:
    """The lexicographic maximum (``larger``) or minimum of complex ``lhs`` and ``rhs``:
    ``lhs`` where it is strictly beyond ``rhs``, else ``rhs`` (equal pairs: ``rhs``, the same
    number up to a zero's sign, which the maximum's ``signed_zero: any`` leaves open)."""
    lhs, rhs = np.broadcast_arrays(np.asarray(lhs, np.complex128), np.asarray(rhs, np.complex128))
    return np.where(lexicographic("gt" if larger else "lt", lhs, rhs), lhs, rhs)


@region
def complex_nan_part(ctx: RegionContext) -> np.ndarray:
    """Results of a lexicographic comparison, maximum or minimum of complex operands one of
    which has a NaN part: the text orders the (real, imag) pairs lexicographically and does not
    say how an unordered part orders a pair (``(a > c) or (a == c and b >= d)`` is false there,
    its complement ``not ((a < c) or (a == c and b < d))`` true; IEEE 754-2019 §9.6's maximum
    would propagate the NaN, StableHLO's reference interpreter returns the other operand)."""
    mask = ctx.none()
    for operand in ctx.inputs:
        if np.iscomplexobj(operand):
            mask = mask | ctx.aligned(np.isnan(operand.real) | np.isnan(np.imag(operand)))
    return mask


complex_nan_part.only_dtypes = COMPLEX_CELLS
