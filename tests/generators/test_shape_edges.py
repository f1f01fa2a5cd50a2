"""The ``boundary`` and ``must_reject`` plans (generators/_shape_edges.py): cases at the edges of
an op's shape arithmetic, judged as any case, and inputs the op's text forbids, whose expected
answer is a refusal (a value returned is ``accepts_invalid``)."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import case_digest
from conform.generators._shape_edges import boundary_cases, must_reject_cases
from conform.generators._suite import _answered
from conform.harness.backends.models import run_case
from conform.harness.judge.judging import result_records
from conform.harness.judge.outcome import Outcome
from conform.model_formats import Unsupported
from conform.oracles.expectations import expect
from conform.ops._pooling_shapes import BOUNDARIES


def _planned(spec, dtype, plan, answer=None):
    """The suite's cases of one of the two plans, answered as ``generate_cases`` answers them."""
    cases = (boundary_cases if plan == "boundary" else must_reject_cases)(spec, dtype, seed=0)
    return _answered(spec, cases, answer)


@pytest.mark.parametrize("op", ["onnx_max_pool", "onnx_average_pool", "onnx_lp_pool"])
def test_pooling_boundaries_meet_the_texts_output_sizes(specs, op):
    cases = _planned(specs[op], "float32", "boundary")
    rows = [row for k, row in enumerate(BOUNDARIES) if not (op == "onnx_lp_pool" and k == 7)]
    assert [c.id.rsplit(".", 1)[1] for c in cases] == [f"boundary{k}" for k in range(len(rows))]
    for case, row in zip(cases, rows):
        (y, *_) = _answered(specs[op], [case], expect)[0].expectation
        assert y.expected.shape == (1, 2, row[-1]), case.id   # the formula's 0 or 1
    again = _planned(specs[op], "float32", "boundary")
    assert [case_digest(c) for c in again] == [case_digest(c) for c in cases]


def test_must_reject_cases_name_their_sentence_and_get_no_answer(specs):
    cases = _planned(specs["onnx_gather"], "int32", "must_reject", answer=expect)
    assert [c.id for c in cases] == ["onnx_gather.int32.invalid0", "onnx_gather.int32.invalid1"]
    for case, wrong in zip(cases, (3, -4)):
        assert case.expectation is None
        assert "It is an error if any of the index values are out of bounds" in \
            case.extra["must_reject"]
        indices = case.inputs[1]
        assert ((indices < -3) | (indices > 2)).sum() == 1 and wrong in indices
        assert case.for_backend().output_shapes == ((2, 4),)


def test_the_judge_passes_a_refusal_and_reports_a_value_as_accepts_invalid(specs):
    spec = specs["onnx_matmul"]
    (case,) = _planned(spec, "float32", "must_reject")
    outcomes = [Outcome("ok", outputs=[np.zeros((2, 5), np.float32)]),
                Outcome("error", message="ValueError: mismatch"), Outcome("crash", message="died")]
    records = result_records([(spec, case, o) for o in outcomes], "numpy")
    assert [r["verdict"] for r in records] == ["accepts_invalid", "pass", "crash"]
    assert all("numpy.matmul" in r["forbidden_by"] for r in records)
    assert records[0]["message"].startswith("onnx_matmul.float32.invalid0: returned a value for an "
                                            "input the text forbids: ONNX MatMul")
    assert records[1]["message"].startswith("refused, as the text requires")


@pytest.mark.parametrize("op", ["onnx_gather", "onnx_gather_elements", "onnx_scatter_elements",
                                "onnx_matmul", "onnx_gemm", "onnx_concat", "reshape",
                                "onnx_max_pool", "onnx_pad"])
def test_real_backends_refuse_what_the_text_forbids(specs, backends, op):
    refused = 0
    for name, backend in backends.items():
        for case in _planned(specs[op], "float32", "must_reject"):
            try:
                run_case(backend, specs[op], case)
            except Unsupported:
                continue
            except Exception:   # the refusal: at load or at run time
                refused += 1
                continue
            pytest.fail(f"{name} returned a value for {case.id}: {case.extra['must_reject']}")
    assert refused


def test_a_profile_may_count_accepts_invalid():
    from conform.harness.assurance.certify import tally

    records = [{"schema_version": 2, "id": f"x.float32.{k}", "op": "x", "dtype": "float32",
                "verdict": verdict, "plan": "must_reject"}
               for k, verdict in enumerate(("accepts_invalid", "pass"))]
    settings = {"min_pass_rate": 1.0, "min_coverage": 0.0}
    assert tally(records, settings)["verdict"] == "certified"   # apart from the pass rate
    counted = tally(records, {**settings, "max_accepts_invalid": 0})
    assert counted["verdict"] == "not certified"
    assert "accepts_invalid 1 > 0 (max_accepts_invalid)" in counted["reasons"]


@pytest.fixture(scope="module")
def backends():
    """The numpy and onnxruntime backends, by name."""
    from conform.harness.backends.numpy_backend import NumpyBackend
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    return {"numpy": NumpyBackend(), "onnxruntime": OnnxRuntimeBackend()}
