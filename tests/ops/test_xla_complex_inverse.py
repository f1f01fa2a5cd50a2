"""The complex forms of acos, acosh, asin, asinh, atan, atanh, log1p, exp2 and cbrt
(ops/xla_complex_inverse.py): the principal values against mpmath, the cut's side left open, the
mixed forward-backward bound, and the real jax backend judged, with the judge catching a
low-precision answer."""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from conform.dtypes import complex_array
from tests.ops.test_xla_complex import _judged_on_jax, _low_precision
from tests.ops.xla_judging import run

#: the op, mpmath's function (the principal branch, DLMF 4.23(iv) and 4.37(iv))
MPMATH = {"acos": mpmath.acos, "asin": mpmath.asin, "atan": mpmath.atan,
          "acosh": mpmath.acosh, "asinh": mpmath.asinh, "atanh": mpmath.atanh,
          "log1p": lambda z: mpmath.log(1 + z), "exp2": lambda z: mpmath.power(2, z),
          "cbrt": lambda z: mpmath.exp(mpmath.log(z) / 3)}

#: off the cuts: moderate, near a branch point, tiny, large, on an axis away from a cut
POINTS = [0.5 + 2j, -3 - 0.25j, 1.0000001 + 1e-7j, 1e-9 - 3e-9j, 40 + 1e3j, 0.3 + 0j,
          1e-8 + 0j, -0.7j]


@pytest.mark.parametrize("op", sorted(MPMATH))
def test_complex128_values_are_mpmath_principal_values(op):
    values = run(op, np.array(POINTS, np.complex128))
    with mpmath.workdps(60):
        for z, got in zip(POINTS, values):
            want = complex(MPMATH[op](mpmath.mpc(z.real, z.imag)))
            assert abs(got - want) <= 2.0 ** -52 * abs(want), (op, z, got, want)


def test_text_examples_and_the_cut_values():
    """StableHLO's cbrt of a complex number is the complex cube root: the principal one, so
    cbrt(-8 + 0i) is 1 + sqrt(3) i, not the real root -2; log1p of a small real number keeps
    its relative accuracy (NumPy's complex log1p of 1e-8 + 0i errs by 6e-9)."""
    assert run("cbrt", np.array([-8 + 0j]))[0] == pytest.approx(1 + math.sqrt(3) * 1j, rel=1e-15)
    assert run("log1p", np.array([1e-8 + 0j]))[0].real == math.log1p(1e-8)
    assert run("exp2", np.array([3 + 0j]))[0] == 8


def test_complex64_log1p_of_a_tiny_number_keeps_its_real_part():
    """complex64 values come from a complex128 evaluation, not Arb: NumPy's complex log1p of
    8.2e-19 - 4e-42i gives real part 0 (the log of 1 + z), which failed jax's right answer."""
    z = np.array([8.207394605206538e-19 - 4.0483512634343965e-42j, -1e-30 + 1e-3j], np.complex64)
    got = run("log1p", z)
    with mpmath.workdps(60):
        for w, value in zip(z.tolist(), got):
            want = complex(mpmath.log(1 + mpmath.mpc(w.real, w.imag)))
            assert abs(value - want) <= 2.0 ** -50 * abs(want), (w, value, want)


def _region(op, values, dtype="complex128"):
    from conform.op_registry import regions
    from conform.ops.regions import RegionContext
    z = np.array(values, dtype)
    ctx = RegionContext(inputs=[z], expected=run(op, z), out_dtype=dtype,
                        float_oracle=lambda xs: run(op, *xs))
    return regions()["zero_part_on_branch_cut"](ctx).tolist()


def test_a_zero_part_on_a_cut_is_open_and_elsewhere_judged():
    on_real_cut = [2 + 0j, complex(2, -0.0), complex(-5, 5e-324), 0.5 + 0j, 2 + 1e-300j]
    assert _region("acos", on_real_cut) == [True, True, True, False, False]
    assert _region("atanh", on_real_cut) == [True, True, True, False, False]
    assert _region("acosh", [0.5 + 0j, 3 + 0j, complex(-2, -0.0)]) == [True, False, True]
    on_imaginary_cut = [2j, complex(-0.0, -3), complex(1e-40, 5), 0.5j, 2 + 0j]
    assert _region("asinh", on_imaginary_cut, "complex64") == [True, True, True, False, False]
    assert _region("atan", on_imaginary_cut, "complex64") == [True, True, True, False, False]
    assert _region("log1p", [-3 + 0j, -0.5 + 0j, 2j]) == [True, False, False]
    assert _region("cbrt", [-8 + 0j, 8 + 0j]) == [True, False]
    assert _region("exp2", [-8 + 0j, 8j]) == [False, False]


def test_bound_is_the_moved_operand_and_the_result_ulps():
    from conform.ops.xla_complex_inverse import complex_inverse_bound
    u, z = 2.0 ** -24, np.array([0.5 + 2j, 1 + 1e-9j, 1e20 + 1e20j])
    expected = np.arccos(z)
    (bound,) = complex_inverse_bound("acos")([z], {}, (expected,), out_dtype="complex64", u=u,
                                             constants={"operand_ulp": 4, "result_ulp": 4},
                                             dtypes=("complex64",))
    rho = 8 * u * abs(z[0])
    moved = rho / math.sqrt((abs(z[0] - 1) - rho) * (abs(z[0] + 1) - rho))
    assert bound[0] == pytest.approx(moved + 8 * u * (abs(expected[0]) + moved), rel=1e-6)
    assert bound[1] == np.inf    # the disc about z holds the branch point 1
    assert np.isnan(bound[2])    # unbounded_evaluation: |z|**2 overflows float32


#: operands jax keeps within the bound: moderate, near a branch point, small, large
OPERANDS = [0.5 + 2j, -3 - 0.25j, 1.001 + 1e-3j, 1e-4 - 3e-4j, 40 + 1e3j, -0.7 + 0.1j]


@pytest.mark.parametrize("op", ["acos", "asin", "atan", "acosh", "asinh", "atanh", "log1p",
                                "exp2"])
def test_jax_within_the_bound_and_a_low_precision_answer_fails(specs, jax_backend, op):
    operands = [z / 100 for z in OPERANDS] if op == "exp2" else OPERANDS
    assert _judged_on_jax(specs[op], jax_backend, operands, "complex64").verdict == "pass"
    judged = _judged_on_jax(specs[op], jax_backend, operands, "complex64", change=_low_precision)
    assert judged.verdict == "fail"


def test_jax_acos_takes_the_principal_side_for_either_zero(specs, jax_backend):
    """jax gives acos(-2 - 0i) = pi - 1.317i, the principal value (-0 read as 0), where C11
    Annex G gives pi + 1.317i: the element is the region zero_part_on_branch_cut, the rest
    judged."""
    judged = _judged_on_jax(specs["acos"], jax_backend, [complex(-2, -0.0), 0.5 + 2j],
                            "complex64")
    assert (judged.verdict, judged.impl_defined, judged.checked) == ("pass", 1, 1)


def test_jax_has_no_complex_cbrt(specs, jax_backend):
    from conform.generators._suite import generate_cases
    from conform.harness.backends.models import run_case
    case = generate_cases(specs["cbrt"], "complex64", count=1, seed=0)[0]
    with pytest.raises(Exception, match="cbrt does not accept dtype complex64"):
        run_case(jax_backend, specs["cbrt"], case)


def test_a_wrong_branch_fails(specs, jax_backend):
    """An answer on the other branch (the conjugate of acos, -acos) fails off the cut."""
    def conjugate(outputs, case):
        out = np.asarray(outputs[0]).astype(np.complex128)
        return [complex_array(out.real, -out.imag, "complex64")]
    judged = _judged_on_jax(specs["acos"], jax_backend, [0.5 + 2j], "complex64",
                            change=conjugate)
    assert judged.verdict == "fail"
