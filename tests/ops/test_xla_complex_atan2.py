"""Complex atan2 (ops/xla_complex_atan2.py): the interpreter's formula ``-i log((x + iy) /
sqrt(x**2 + y**2))`` against mpmath, its cuts left open, the mixed forward-backward bound, and
the real jax backend judged, with the judge catching a low-precision answer and jax's loss of
relative accuracy where the result is small."""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from tests.ops.test_xla_complex import _low_precision
from tests.ops.test_xla_complex_arith import _judged
from tests.ops.xla_judging import run

#: (lhs y, rhs x) off the cuts: moderate, a small imaginary part, a tiny result (needs Arb
#: beyond 256 bits: q is within 1e-73 of 1), real operands, the left half-plane, large
POINTS = [(1 + 2j, 0.5 - 1j), (3 + 1e-4j, 2 - 1e-4j),
          (-1.997245671876568e-211 + 9.954073670726527e-101j,
           1.4332454796277914e-41 + 1.1828145870199644e-27j),
          (1 + 0j, 1 + 0j), (1 + 0j, -1 + 0j), (-7.5 + 0.25j, -2 + 3j), (0.1 - 4j, 1e3 + 1e3j)]


def _mpmath_formula(y, x):
    y, x = mpmath.mpc(y.real, y.imag), mpmath.mpc(x.real, x.imag)
    return complex(-1j * mpmath.log((x + 1j * y) / mpmath.sqrt(x * x + y * y)))


def test_complex128_values_are_the_interpreters_formula_by_mpmath():
    lhs, rhs = (np.array(v, np.complex128) for v in zip(*POINTS))
    values = run("atan2", lhs, rhs)
    with mpmath.workdps(400):
        for y, x, got in zip(lhs, rhs, values):
            want = _mpmath_formula(y, x)
            assert abs(got - want) <= 2.0 ** -52 * abs(want), (y, x, got, want)
    assert values[3] == math.pi / 4 and values[4] == 3 * math.pi / 4   # the real atan2's
    assert np.tan(values[0]) == pytest.approx(lhs[0] / rhs[0], rel=1e-14)


def test_a_zero_lhs_gives_zero_or_pi_exactly():
    values = run("atan2", np.zeros(3, np.complex128), np.array([1 - 1j, 2j, -3 + 0j]))
    assert values.tolist() == [0, 0, math.pi]


def _region(lhs, rhs, dtype="complex128"):
    from conform.op_registry import regions
    from conform.ops.regions import RegionContext
    y, x = np.array(lhs, dtype), np.array(rhs, dtype)
    ctx = RegionContext(inputs=[y, x], expected=run("atan2", y, x), out_dtype=dtype,
                        float_oracle=lambda xs: run("atan2", *xs), shapes="xla_broadcast")
    return regions()["atan2_operands_on_branch_cut"](ctx).tolist()


def test_operands_on_a_cut_are_open_and_elsewhere_judged():
    """The log's cut (y / x imaginary, |y| < |x|, x in the left half-plane: the real atan2's
    (±0, -3)), the sqrt's (x**2 + y**2 negative: (0.5, 2i)), a subnormal part a flushing
    backend reads as zero; off them: a real positive x, |y| > |x|, a normal small part."""
    lhs = [0j, complex(-0.0, 0), 0.5j + 1, 0.5 + 0j, 5e-324j, 2 + 0j, 1e-300j, 1 + 2j]
    rhs = [-3 + 0j, -3 + 0j, -2 + 4j, 2j, -1 + 1j, -1 + 0j, -1 + 1j, 0.5 - 1j]
    assert _region(lhs, rhs) == [True, True, True, True, True, False, False, False]


def _bound(lhs, rhs, dtype="complex64", u=2.0 ** -24, subnormals="ieee"):
    from conform.ops.xla_complex_atan2 import complex_atan2_bound
    y, x = np.array(lhs, np.complex128), np.array(rhs, np.complex128)
    expected = run("atan2", y, x)
    (bound,) = complex_atan2_bound([y, x], {}, (expected,), out_dtype=dtype, u=u,
                                   constants={"operand_ulp": 6, "result_ulp": 6},
                                   dtypes=(dtype,) * 2, subnormals=subnormals)
    return bound, expected


def test_bound_is_the_moved_operands_and_the_result_ulps():
    u = 2.0 ** -24
    bound, expected = _bound([1 + 2j, 0j, 1 + 1j, 1e30 + 0j, 2 + 1e-9j],
                             [0.5 - 1j, 1 - 1j, 1 - 1j, 1 + 0j, 2j], u=u)
    y, x = 1 + 2j, 0.5 - 1j
    rho_y, rho_x = 12 * u * abs(y), 12 * u * abs(x)
    gaps = (abs(x + 1j * y) - rho_x - rho_y) * (abs(x - 1j * y) - rho_x - rho_y)
    moved = ((abs(x) + rho_x) * rho_y + (abs(y) + rho_y) * rho_x) / gaps
    assert bound[0] == pytest.approx(moved + 12 * u * (abs(expected[0]) + moved), rel=1e-6)
    assert bound[1] < 1e-40          # atan2(0, x) = 0 for every x near 1 - i
    assert np.isnan(bound[2])        # a branch point, x = iy: x**2 + y**2 = 0
    assert np.isnan(bound[3])        # |y|**2 overflows float32
    assert bound[4] > math.pi        # x**2 + y**2 = -3.99... + 4e-9i: the sqrt's cut in reach
    flushing, _ = _bound([0j], [1 - 1j], subnormals="ftz")   # y's parts may have been subnormal
    assert 0 < flushing[0] < 1e-36


def test_a_value_off_by_more_than_the_bound_fails(specs, jax_backend):
    lhs, rhs = [1 + 2j, -3 + 4j, 2.5 - 0.5j], [0.5 - 1j, 1e-3 + 2j, -7 + 7j]
    assert _judged(specs["atan2"], jax_backend, lhs, rhs, "complex64").verdict == "pass"
    assert _judged(specs["atan2"], jax_backend, lhs, rhs, "complex128").verdict == "pass"
    judged = _judged(specs["atan2"], jax_backend, lhs, rhs, "complex64", change=_low_precision)
    assert judged.verdict == "fail"
    bound, expected = _bound(lhs, rhs)

    def off_by(factor):
        return lambda outputs, case: [(expected + factor * bound).astype(np.complex64)]
    # the complex64 rounding of the moved value adds up to 2**-24 of it: beyond it, the bound's
    assert _judged(specs["atan2"], jax_backend, lhs, rhs, "complex64",
                   change=off_by(0.5)).verdict == "pass"
    assert _judged(specs["atan2"], jax_backend, lhs, rhs, "complex64",
                   change=off_by(1.5)).verdict == "fail"


def test_jax_loses_relative_accuracy_where_the_result_is_small(specs, jax_backend):
    """jax 0.10's complex atan2 errs by about u |x| where |atan2(y, x)| is far below 1 and x is
    not real (atan2(0, 1 - i) is 1.1e-16 (-1 + i), not 0): past the bound, which demands each
    part within 6 ULPs of the value at operands within 6 ULPs of each part (0 for y = 0)."""
    judged = _judged(specs["atan2"], jax_backend, [0j, 1e-10 + 0j], [1 - 1j, 1 + 1j],
                     "complex128")
    assert judged.verdict == "fail"
