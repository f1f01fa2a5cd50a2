"""XLA Dot, DotGeneral and Conv in the integer, PRED and narrow float types (issue 36 item 7):
PRED sums of products are ORs of ANDs, narrow integer operands are drawn so that their sums fit
the type (judged exactly, not left in int_overflow), and the real jax backend passes on drawn
cases while a wrong result fails."""
from __future__ import annotations

import numpy as np
import pytest

from conform.dtypes import int_info
from conform.generators._suite import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate

CONV = {"window_strides": [1, 1], "padding": [[0, 0], [0, 0]], "rhs_dilation": [1, 1]}


def test_pred_products_are_ors_of_ands():
    """Two true products give true (a sum taken modulo 2 would give false), none false."""
    lhs = np.array([[True, True, False], [False, False, True]])
    rhs = np.array([[True], [True], [False]])
    for op in ("dot", "dot_general"):
        (out,) = evaluate(op, [lhs, rhs], {})
        assert out.dtype == np.bool_ and out.ravel().tolist() == [True, False], op
    (out,) = evaluate("conv", [lhs[None, None], rhs.T[None, None]], CONV)
    assert out.dtype == np.bool_ and out.ravel().tolist() == [True, False]


@pytest.mark.parametrize("op, dtype", [("dot_general", "int8"), ("conv", "uint8"),
                                       ("dot", "int4"), ("conv_shorthand", "int16")])
def test_narrow_integer_sums_fit_the_type(specs, op, dtype):
    """Every drawn case's exact sums lie in the type: judged, none in the int_overflow region."""
    info = int_info(dtype)
    for case in generate_cases(specs[op], dtype, count=3, seed=1):
        (out,) = evaluate(op, case.inputs, case.attrs)
        assert info.min <= out.min(initial=0) and out.max(initial=0) <= info.max, case.id


@pytest.mark.parametrize("op, dtype", [("dot_general", "int8"), ("conv", "bool")])
def test_jax_passes_and_a_wrong_result_fails(specs, op, dtype):
    from conform.harness.backends.jax_backend import JaxBackend
    from conform.harness.backends.models import run_case
    spec, backend = specs[op], JaxBackend()
    passed = 0
    for case in generate_cases(spec, dtype, count=2, seed=0):
        outputs = run_case(backend, spec, case)
        verdict = judge_outputs(spec, case, outputs).verdict
        assert verdict in ("pass", "impl_defined"), case.id
        (out,) = outputs
        if verdict == "pass" and out.size:
            passed += 1
            wrong = ~out if out.dtype == np.bool_ else out * 2 + 1
            assert judge_outputs(spec, case, [wrong]).verdict == "fail", case.id
    assert passed
