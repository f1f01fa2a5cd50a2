"""XLA Cholesky and TriangularSolve on complex64 and complex128 (issue 36 item 7; ops/xla_linalg.py):
the references against independent computations (numpy's LAPACK and residuals), Hermitian
positive definite draws, and the real jax backend judged, where a conjugate dropped (A = L L^T,
or TRANSPOSE for ADJOINT) fails."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import Case
from conform.generators._suite import generate_cases
from conform.oracles.expectations import expect
from tests.ops.xla_judging import jax_verdicts, run

HERMITIAN = np.array([[4.0, 1 + 2j, -0.5j], [1 - 2j, 6.0, 1 + 1j], [0.5j, 1 - 1j, 5.0]])


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_of_a_hermitian_matrix(lower):
    a = HERMITIAN.copy()
    a[np.triu_indices(3, 1) if lower else np.tril_indices(3, -1)] = np.nan   # not read
    factor = run("cholesky", a, lower=lower)
    want = np.linalg.cholesky(HERMITIAN, upper=not lower)
    np.testing.assert_allclose(factor, want, rtol=0, atol=4e-16)
    rebuilt = factor @ factor.conj().T if lower else factor.conj().T @ factor
    np.testing.assert_allclose(rebuilt, HERMITIAN, rtol=0, atol=4e-15)


def test_cholesky_whose_diagonal_is_not_real_is_the_open_region(specs):
    a = HERMITIAN.astype(np.complex64)
    a[1, 1] = 6 + 1j
    case = Case(id="cholesky.complex64.t", op="cholesky", dtype="complex64",
                input_dtypes=("complex64",), out_dtype="complex64", inputs=[a],
                attrs={"lower": True}, plan="normal", seed=0)
    (expected,) = expect(specs["cholesky"], case)
    assert expected.impl_mask.all()


def test_drawn_complex_cholesky_inputs_are_hermitian_positive_definite(specs):
    from conform.ops.xla_linalg import _symmetric
    definite = 0
    for case in generate_cases(specs["cholesky"], "complex128", count=8, seed=2):
        s = _symmetric(case.inputs[0], case.attrs["lower"])
        assert not np.imag(np.diagonal(s, axis1=-2, axis2=-1)).any()
        for matrix in s.reshape((-1,) + s.shape[-2:]):
            eigen = np.linalg.eigvalsh(matrix)
            definite += eigen[0] > 0
            assert eigen[0] < 0 or eigen[-1] / eigen[0] < 4 * matrix.shape[0] + 4
    assert definite


@pytest.mark.parametrize("transpose_a", ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])
@pytest.mark.parametrize("left_side", [True, False])
def test_complex_triangular_solve_satisfies_its_system(left_side, transpose_a):
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (4, 4)) + 1j * rng.uniform(-1, 1, (4, 4)) + (4 + 2j) * np.eye(4)
    b = rng.uniform(-1, 1, (4, 3) if left_side else (3, 4)) + 1j
    t = np.tril(a)
    op_a = {"NO_TRANSPOSE": t, "TRANSPOSE": t.T, "ADJOINT": t.conj().T}[transpose_a]
    x = run("triangular_solve", a, b, left_side=left_side, lower=True, unit_diagonal=False,
            transpose_a=transpose_a)
    np.testing.assert_allclose(op_a @ x if left_side else x @ op_a, b, rtol=0, atol=2e-15)
    np.testing.assert_allclose(x, np.linalg.solve(op_a, b) if left_side
                               else np.linalg.solve(op_a.T, b.T).T, rtol=0, atol=2e-15)


def test_jax_complex_cholesky_passes_and_an_unconjugated_factor_fails(specs, jax_backend):
    spec = specs["cholesky"]
    verdicts = jax_verdicts(spec, jax_backend, "complex64", 8)
    assert "fail" not in verdicts and "pass" in verdicts

    def conjugated(outputs, case):   # the factor of conj(A): what a transpose for an adjoint gives
        return [np.conj(outputs[0])]
    assert "fail" in jax_verdicts(spec, jax_backend, "complex64", 8, change=conjugated)


def test_jax_complex_triangular_solve_passes_and_transpose_for_adjoint_fails(specs, jax_backend):
    from conform.harness.backends.models import run_case
    spec = specs["triangular_solve"]
    verdicts = jax_verdicts(spec, jax_backend, "complex128", 8)
    assert "fail" not in verdicts and "pass" in verdicts

    def no_conjugate(outputs, case):
        if case.attrs["transpose_a"] != "ADJOINT":
            return outputs
        plain = Case(**{**case.__dict__, "attrs": {**case.attrs, "transpose_a": "TRANSPOSE"}})
        plain.expectation = None
        return run_case(jax_backend, spec, plain)
    assert "fail" in jax_verdicts(spec, jax_backend, "complex128", 16, change=no_conjugate)
