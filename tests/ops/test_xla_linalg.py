"""XLA Dot, Cholesky and TriangularSolve (ops/xla_linalg.py): the oracles on the text's
definitions (seeds/004_c11ff90b720ca9d5.txt), the drawn inputs, and the real jax backend judged,
with the judge catching wrong answers (a float16 accumulator, a low-precision factor, a solve with
the wrong transpose)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from conform.generators import Case
from conform.generators._suite import generate_cases
from conform.oracles.expectations import expect
from tests.ops.xla_judging import jax_verdicts, run


# -- Dot -------------------------------------------------------------------------------------

@pytest.mark.parametrize("lhs, rhs, shape", [((5,), (5,), ()), ((3, 5), (5,), (3,)),
                                             ((5,), (5, 2), (2,)), ((3, 5), (5, 2), (3, 2))])
def test_dot_forms(lhs, rhs, shape):
    rng = np.random.default_rng(0)
    a, b = rng.integers(-9, 9, lhs).astype(np.float64), rng.integers(-9, 9, rhs).astype(np.float64)
    out = run("dot", a, b)
    assert out.shape == shape
    np.testing.assert_array_equal(out, np.dot(a, b))


def test_dot_sums_beyond_float64():
    assert run("dot", np.array([1e16, 1.0, -1e16]), np.array([1.0, 1.0, 1.0])) == 1.0


def test_jax_dot_passes_and_a_float16_accumulator_fails(specs, jax_backend):
    spec = specs["dot"]
    assert "fail" not in jax_verdicts(spec, jax_backend, "float16", 10)
    assert "fail" not in jax_verdicts(spec, jax_backend, "float32", 10)

    def sixteen_bit_terms(outputs, case):   # every partial sum rounded to float16
        lhs, rhs = case.inputs
        a, b = lhs.reshape(-1, lhs.shape[-1]), rhs.reshape(rhs.shape[0], -1)
        total = np.zeros((a.shape[0], b.shape[1]), np.float16)
        with np.errstate(all="ignore"):
            for k in range(a.shape[1]):
                total = total + (a[:, k:k + 1].astype(np.float32) * b[k:k + 1]).astype(np.float16)
        return [total.reshape(outputs[0].shape)]
    assert "fail" in jax_verdicts(spec, jax_backend, "float16", 10, change=sixteen_bit_terms)


# -- Cholesky --------------------------------------------------------------------------------

SPD = np.array([[4.0, 2.0, -1.0], [2.0, 5.0, 1.0], [-1.0, 1.0, 6.0]])


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_factors_and_reads_one_triangle(lower):
    junk = SPD.copy()
    junk[np.triu_indices(3, 1) if lower else np.tril_indices(3, -1)] = np.nan
    factor = run("cholesky", junk, lower=lower)
    if lower:
        np.testing.assert_allclose(factor @ factor.T, SPD, rtol=1e-15)
        assert (np.triu(factor, 1) == 0).all()
    else:
        np.testing.assert_allclose(factor.T @ factor, SPD, rtol=1e-15)
        assert (np.tril(factor, -1) == 0).all()


def test_cholesky_of_an_indefinite_matrix_is_the_open_region():
    from conform.op_registry import regions
    from conform.ops.regions import RegionContext
    batch = np.stack([SPD, -SPD])
    out = run("cholesky", batch, lower=True)
    assert np.isfinite(out[0]).all() and np.isnan(out[1]).all()
    ctx = RegionContext(inputs=[batch], expected=out, out_dtype="float32", float_oracle=None)
    mask = regions()["not_positive_definite"](ctx)
    assert not mask[0].any() and mask[1].all()


def test_cholesky_canonical_clears_only_the_open_triangle(specs):
    from conform.ops.xla_linalg import canonical_cholesky
    factor = np.arange(9.0).reshape(3, 3)
    case = Case(id="c", op="cholesky", dtype="float64", input_dtypes=("float64",),
                out_dtype="float64", inputs=[factor], attrs={"lower": True}, plan="normal", seed=0)
    np.testing.assert_array_equal(canonical_cholesky([factor], case)[0], np.tril(factor))


def test_jax_cholesky_passes_and_a_half_precision_factor_fails(specs, jax_backend):
    spec = specs["cholesky"]
    verdicts = jax_verdicts(spec, jax_backend, "float32", 16)
    assert "fail" not in verdicts and "pass" in verdicts

    def half(outputs, case):
        return [outputs[0].astype(np.float16).astype(np.float32)]
    assert "fail" in jax_verdicts(spec, jax_backend, "float32", 16, change=half)


def test_drawn_cholesky_inputs_are_well_conditioned(specs):
    from conform.ops.xla_linalg import _symmetric
    for case in generate_cases(specs["cholesky"], "float64", count=16, seed=2, answer=expect):
        s = _symmetric(case.inputs[0].astype(np.float64), case.attrs["lower"])
        for matrix in s.reshape((-1,) + s.shape[-2:]):
            eigen = np.linalg.eigvalsh(matrix)
            assert eigen[0] < 0 or eigen[-1] / eigen[0] < 4 * matrix.shape[0] + 4


# -- TriangularSolve ------------------------------------------------------------------------

@pytest.mark.parametrize("left_side, lower, unit_diagonal, transpose_a", itertools.product(
    [True, False], [True, False], [True, False], ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"]))
def test_triangular_solve_satisfies_its_system(left_side, lower, unit_diagonal, transpose_a):
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (2, 4, 4)) + 4 * np.eye(4)
    b = rng.uniform(-1, 1, (2, 4, 3) if left_side else (2, 3, 4))
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        np.einsum("...ii->...i", t)[...] = 1.0
        a[..., range(4), range(4)] = np.nan     # not read
    a[..., *(np.triu_indices(4, 1) if lower else np.tril_indices(4, -1))] = np.nan   # not read
    op_a = t if transpose_a == "NO_TRANSPOSE" else np.swapaxes(t, -1, -2)
    x = run("triangular_solve", a, b, left_side=left_side, lower=lower,
            unit_diagonal=unit_diagonal, transpose_a=transpose_a)
    np.testing.assert_allclose(op_a @ x if left_side else x @ op_a, b, atol=1e-15)


def test_jax_triangular_solve_passes_and_an_untransposed_solve_fails(specs, jax_backend):
    spec = specs["triangular_solve"]
    verdicts = jax_verdicts(spec, jax_backend, "float32", 16)
    assert "fail" not in verdicts and "pass" in verdicts

    def ignore_transpose(outputs, case):
        from conform.harness.backends.models import run_case
        attrs = {**case.attrs, "transpose_a": "NO_TRANSPOSE"}
        plain = Case(**{**case.__dict__, "attrs": attrs})
        plain.expectation = None
        return run_case(jax_backend, spec, plain)
    assert "fail" in jax_verdicts(spec, jax_backend, "float32", 16, change=ignore_transpose)


def test_triangular_solve_bound_is_nan_outside_the_normal_range(specs):
    from conform.ops.xla_linalg import triangular_solve_bound
    a, b = np.array([[2.0, 0.0], [1.0, 2.0]]), np.array([[1.0, 1e-40], [1.0, 1.0]])
    attrs = dict(left_side=True, lower=True, unit_diagonal=False, transpose_a="NO_TRANSPOSE")
    x = run("triangular_solve", a, b, **attrs)
    (bound,) = triangular_solve_bound([a, b], attrs, [x], out_dtype="float32", u=2.0 ** -24,
                                      constants={}, dtypes=["float32", "float32"])
    assert np.isfinite(bound[:, 0]).all() and np.isnan(bound[:, 1]).all()


def test_16_bit_cholesky_is_refused_on_jax_before_tracing(specs, jax_backend):
    """float16 and bfloat16 are drawn (the text allows them); jax's CPU Cholesky has no such
    kernel, and the refusal comes from the lowering's lax_refuses hook, not from tracing."""
    from conform.generators._suite import generate_cases
    from conform.harness.backends.base import Unsupported
    from conform.harness.backends.models import run_case
    from conform.ops.xla_linalg import lax_cholesky_refuses
    spec = specs["cholesky"]
    assert {"float16", "bfloat16"} <= set(spec.dtypes)
    case = next(iter(generate_cases(spec, "float16", count=1, seed=0)))
    assert "LAPACK potrf" in lax_cholesky_refuses(case.inputs, case.attrs)
    assert lax_cholesky_refuses([case.inputs[0].astype(np.float32)], case.attrs) is None
    with pytest.raises(Unsupported, match="no float16 kernel"):
        run_case(jax_backend, spec, case)
