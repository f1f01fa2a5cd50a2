"""XLA Call (ops/xla_call.py): the oracle runs the called computation (catalog ops, each
rounded once), the jax binding lowers to a call of a computation of its own, and the real jax
backend passes."""
from __future__ import annotations

import numpy as np

from conform.generators._suite import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate

BODY = [{"op": "add", "lax": "add", "arity": 2}, {"op": "negate", "lax": "neg", "arity": 1}]


def test_the_computation_rounds_each_op_to_the_element_type():
    a, b = np.array([1.0, 3.0]), np.array([2.0 ** -11, 0.5])   # 1 + 2**-11: a tie in float16
    (out,) = evaluate("call", [a.astype(np.float16), b.astype(np.float16)], {"body": BODY})
    np.testing.assert_array_equal(out, [-1.0, -3.5])
    (wide,) = evaluate("call", [a.astype(np.float32), b.astype(np.float32)], {"body": BODY})
    np.testing.assert_array_equal(wide, [-(1 + 2.0 ** -11), -3.5])


def test_the_lax_hook_lowers_to_a_call():
    import jax
    from jax import lax
    from conform.ops.control_flow import lax_control
    fn = lax_control(lax, {"call": True, "body": BODY})
    x = np.ones(3, np.float32)
    text = jax.jit(lambda a, b: fn(a, b)).lower(x, x).as_text()
    assert "call @" in text and "stablehlo.negate" in text


def test_jax_passes(specs):
    from conform.harness.backends.jax_backend import JaxBackend
    from conform.harness.backends.models import run_case
    spec, backend = specs["call"], JaxBackend()
    for dtype in ("float32", "int32"):
        verdicts = [judge_outputs(spec, case, run_case(backend, spec, case), "ftz").verdict
                    for case in generate_cases(spec, dtype, count=6, seed=0)]
        assert "fail" not in verdicts and "pass" in verdicts, dtype
