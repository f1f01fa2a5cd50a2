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


# -- complex power ---------------------------------------------------------------------------

def test_complex128_power_is_mpmaths_principal_value():
    x = np.array([1 + 2j, -8 + 0j, 0.5 - 3j, 2 + 0j, -1 - 1e-3j])
    y = np.array([0.5 - 1j, 1 / 3 + 0j, 2 + 0j, 10 + 0j, 0.25 + 2j])
    got = run("power", x, y)
    with mpmath.workdps(60):
        for a, b, g in zip(x, y, got):
            want = mpmath.exp(mpmath.mpc(b.real, b.imag) * mpmath.log(mpmath.mpc(a.real, a.imag)))
            assert abs(g - complex(want)) <= 2.0 ** -53 * abs(complex(want)), (a, b, g, want)
    assert got[1] == pytest.approx(1 + math.sqrt(3) * 1j, rel=1e-15)   # the principal root


def test_power_bound_grows_with_the_exponent_and_exceptions_are_open():
    from conform.ops.xla_complex_arith import complex_power_bound
    u = 2.0 ** -24
    constants = {"hypot_ulp": 4, "log_ulp": 3, "atan2_ulp": 6, "exp_ulp": 3, "trig_ulp": 4}
    x, y = np.array([2 + 1j, 2 + 1j, 0j, 10 + 0j]), np.array([0.5 + 0j, 50 + 0j, 1 + 0j, -60 + 0j])
    expected = run("power", x, y)
    (bound,) = complex_power_bound([x, y], {}, (expected,), out_dtype="complex64", u=u,
                                   constants=constants, dtypes=("complex64",) * 2)
    relative = bound[:2] / np.abs(expected[:2])
    assert 20 * u < relative[0] < 60 * u and relative[1] > 20 * relative[0]
    assert np.isnan(bound[2]) and np.isnan(bound[3])   # log 0; 10**-60 underflows float32


def test_jax_power_within_the_bound_and_a_low_precision_answer_fails(specs, jax_backend):
    x, y = [1 + 2j, -3 + 0.5j, 0.25 - 4j, 7 + 7j], [0.5 - 1j, 2 + 0.25j, -1.5 + 0j, 0.1 + 3j]
    assert _judged(specs["power"], jax_backend, x, y, "complex64").verdict == "pass"
    assert _judged(specs["power"], jax_backend, x, y, "complex128").verdict == "pass"
    judged = _judged(specs["power"], jax_backend, x, y, "complex64", change=_low_precision)
    assert judged.verdict == "fail"


def test_jax_power_of_an_operand_past_the_largest_modulus_is_nan(specs, jax_backend):
    """A real XLA:CPU deviation (jax 0.10.2), pinned: a complex power whose base's modulus
    exceeds the type's largest finite value is NaN, though log x is finite (jax's own complex
    log gives it) and so is e**(y log x). Repro: python3 -c "import jax;
    jax.config.update('jax_enable_x64', True); import numpy as np; x = np.complex128(complex(
    1.7976931348623157e308, 1.7976931348623157e308)); print(jax.lax.log(x),
    jax.lax.pow(x, np.complex128(0.5)))" gives (710.13+0.785j) (nan+nanj); the power is
    1.46e154 + 6.06e153j."""
    big = 1.7976931348623157e308
    judged = _judged(specs["power"], jax_backend, [complex(big, big), 1e300 + 1e300j],
                     [0.5 + 0j, 0.5j], "complex128")
    assert judged.verdict == "fail" and list(judged.failing) == [0]


def test_complex_remainder_is_drawn_and_every_element_open(specs, jax_backend):
    """StableHLO: remainder "For complex numbers: TBD (#997)": the region covers every element
    of a complex remainder and none of a real one; jax refuses complex rem (unsupported)."""
    from conform.op_registry import regions
    from conform.ops.regions import RegionContext
    region = regions()["complex_remainder"]
    for lhs, rhs, opened in ((np.array([1 + 2j, 3j]), np.array([1 + 0j, 2 + 0j]), [True, True]),
                             (np.array([7.0, -7.0]), np.array([2.0, 2.0]), [False, False])):
        expected = run("remainder", lhs, rhs)
        ctx = RegionContext(inputs=[lhs, rhs], expected=expected, out_dtype=str(lhs.dtype),
                            float_oracle=lambda xs: run("remainder", *xs))
        assert region(ctx).tolist() == opened
    from conform.generators._suite import generate_cases
    from conform.harness.backends.models import run_case
    case = generate_cases(specs["remainder"], "complex64", count=1, seed=0)[0]
    with pytest.raises(Exception, match="rem does not accept dtype complex64"):
        run_case(jax_backend, specs["remainder"], case)
