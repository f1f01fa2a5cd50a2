"""Cholesky, TriangularSolve and the batch normalisations on the float types of at most 8 bits
(issue 36 item 7): the bound admits an evaluation in the type and one in float16 rounded once
into it (ops/narrow_floats.py admitting_wider_evaluation), fails a result past it, leaves
float8_e8m0fnu open (no zero, no sign), and jax refuses what XLA:CPU cannot compile before
tracing while it passes the float8 solves it runs."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conform.generators import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles.expectations import expect
from tests.ops.xla_judging import jax_verdicts

ATTRS = {"epsilon": 0.5, "feature_index": 1}


def _inference_case(dtype):
    rng = np.random.default_rng(4)
    t = getattr(ml_dtypes, dtype)
    x = rng.uniform(-4, 4, (6, 3)).astype(t)
    per = [rng.uniform(-2, 2, 3).astype(t), rng.uniform(-2, 2, 3).astype(t),
           rng.uniform(-1, 1, 3).astype(t), rng.uniform(0, 3, 3).astype(t)]
    return Case(id=f"batch_norm_inference.{dtype}.t", op="batch_norm_inference", dtype=dtype,
                input_dtypes=(dtype,) * 5, out_dtype=dtype, inputs=[x] + per, attrs=ATTRS,
                plan="normal", seed=0)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"])
def test_float16_evaluation_rounded_once_passes_and_past_the_bound_fails(specs, dtype):
    from conform.ops.xla_batch_norm import numpy_batch_norm_inference
    spec, case = specs["batch_norm_inference"], _inference_case(dtype)
    wide = numpy_batch_norm_inference(*(x.astype(np.float16) for x in case.inputs), **ATTRS)
    ours = wide.astype(case.inputs[0].dtype)
    judged = judge_outputs(spec, case, [ours])
    assert judged.verdict == "pass", judged.reason
    (expected,) = expect(spec, case)
    bound = expected.accumulation[0]
    assert np.isfinite(bound).any()
    at = np.unravel_index(np.nanargmax(np.where(np.isfinite(bound), np.abs(expected.expected), -1)),
                          bound.shape)
    wrong = ours.astype(np.float64)
    wrong[at] = expected.expected[at] + 2 * bound[at] + 1.0   # (an ULP here is at most 1)
    assert judge_outputs(spec, case, [wrong.astype(ours.dtype)]).verdict == "fail"


def test_e8m0_batch_norm_is_open_everywhere(specs):
    case = _inference_case("float8_e8m0fnu")
    (expected,) = expect(specs["batch_norm_inference"], case)
    assert expected.impl_mask is not None and expected.impl_mask.all()


@pytest.mark.parametrize("op, dtype", [("batch_norm_training", "float6_e2m3fn"),
                                       ("triangular_solve", "float6_e3m2fn"),
                                       ("cholesky", "float8_e4m3fn")])
def test_jax_refuses_before_tracing(specs, op, dtype):
    from conform.ops import definition
    one = np.ones((2, 2), getattr(ml_dtypes, dtype))
    reason = definition(op).lax_refuses([one, one, one], {"lower": True})
    assert reason and dtype in reason


def test_jax_float8_triangular_solve_passes(specs, jax_backend):
    verdicts = jax_verdicts(specs["triangular_solve"], jax_backend, "float8_e4m3fn", count=8)
    assert "fail" not in verdicts and "pass" in verdicts
