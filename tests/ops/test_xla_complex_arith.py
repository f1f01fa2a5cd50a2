"""Complex division (ops/xla_complex_arith.py): each part correctly rounded for complex128
(checked against mpmath at 60 digits), the bound of the textbook formula and Smith's
algorithm, a zero divisor open, and the real jax backend judged, with the judge catching a
low-precision answer."""
from __future__ import annotations

import dataclasses
import math

import mpmath
import numpy as np
import pytest

from tests.ops.test_xla_complex import _low_precision
from tests.ops.xla_judging import run

LHS = np.array([1 + 2j, 3 + 4j, 1e300 - 1e-300j, -7.5 + 0.25j, 0.1 + 0.2j])
RHS = np.array([3 - 1j, 1e-3 + 2j, 3 + 1e300j, 2 + 0j, 0.3 - 0.7j])


def test_complex128_parts_are_correctly_rounded():
    got = run("divide", LHS, RHS)
    with mpmath.workdps(60):
        for x, y, q in zip(LHS, RHS, got):
            want = mpmath.mpc(x.real, x.imag) / mpmath.mpc(y.real, y.imag)
            assert q.real == float(want.real) and q.imag == float(want.imag), (x, y, q, want)


def test_bound_is_smiths_and_a_zero_divisor_is_open():
    from conform.ops.error_bounds import gamma
    from conform.ops.xla_complex_arith import complex_quotient_bound
    u = 2.0 ** -24
    lhs, rhs = np.array([1 + 2j, 1 + 1j, 1e30 + 0j]), np.array([3 - 1j, 0j, 1e30 + 1j])
    expected = run("divide", lhs, rhs)
    (bound,) = complex_quotient_bound([lhs, rhs], {}, (expected,), out_dtype="complex64", u=u,
                                      constants={}, dtypes=("complex64",) * 2)
    smith = (1 + (1 + u) * gamma(2, u) + u) * (1 + u) / (1 - gamma(3, u)) - 1
    assert smith > (1 + math.sqrt(5) * u) * (1 + u) / (1 - gamma(2, u)) - 1
    assert bound[0] == pytest.approx(smith * abs(expected[0]), rel=1e-6)
    assert np.isnan(bound[1]) and np.isnan(bound[2])   # zero divisor; |y|**2 overflows


def _judged(spec, jax_backend, lhs, rhs, dtype, change=None):
    from conform.generators._suite import generate_cases
    from conform.harness.backends.models import run_case
    from conform.harness.judge.judging import judge_outputs
    case = generate_cases(spec, dtype, count=1, seed=0)[0]
    case = dataclasses.replace(case, inputs=[np.array(lhs, dtype), np.array(rhs, dtype)],
                               attrs={}, expectation=None)
    outputs = run_case(jax_backend, spec, case)
    return judge_outputs(spec, case, change(outputs, case) if change else outputs, "ftz")


def test_jax_within_the_bound_and_a_low_precision_answer_fails(specs, jax_backend):
    lhs, rhs = [1 + 2j, -3 + 4j, 1e10 - 2e9j, 5e-3j], [3 - 1j, 1e-3 + 2j, 7 + 7j, -0.5 + 1e-4j]
    assert _judged(specs["divide"], jax_backend, lhs, rhs, "complex64").verdict == "pass"
    assert _judged(specs["divide"], jax_backend, lhs, rhs, "complex128").verdict == "pass"
    judged = _judged(specs["divide"], jax_backend, lhs, rhs, "complex64", change=_low_precision)
    assert judged.verdict == "fail"


def test_a_zero_divisor_is_a_complex_exception(specs, jax_backend):
    """StableHLO leaves complex arithmetic's exceptions implementation-defined: x / 0 open."""
    judged = _judged(specs["divide"], jax_backend, [1 + 1j, 2 + 0j], [0j, 1j], "complex64")
    assert (judged.verdict, judged.impl_defined, judged.checked) == ("pass", 1, 1)
