"""Coverage figures and the reasons unsupported cases carry, as the tally gathers them."""
from __future__ import annotations

import pytest

from conform.reports import Tally
from conform.reports._coverage import coverage, coverage_text, judged, unsupported_reason


@pytest.mark.parametrize("message, reason", [
    ("op round has no nnef binding in its spec", "binding"),
    ("jax.lax has no function 'foo'", "binding"),
    ("openvino does not claim op conv", "op"),
    ("openvino does not claim dtype float64 (it claims bool, float32)", "dtype"),
    ("ONNX Pad has no interior padding", "standard"),
    ("NNEF type system: argument 'x' of operation 'add' must be scalar", "standard"),
    ("onnxruntime has no kernel: NOT_IMPLEMENTED", "runtime"),
    ("the NNEF executor: not implemented", "runtime"),
    (None, "runtime"),
])
def test_unsupported_reasons_from_messages(message, reason):
    assert unsupported_reason(message) == reason


def test_judged_and_coverage_text():
    counts = {"pass": 5, "xpass": 1, "fail": 1, "error": 1, "crash": 1, "timeout": 1, "impl_defined": 2,
              "unsupported": 3, "skip": 1, "xfail": 1, "waived": 1}
    assert judged(counts) == 10 and coverage(counts) == 10 / 18
    assert coverage_text(counts) == "judged 10 of 18 cases (coverage 55.55%)"   # never rounded up
    assert coverage({}) is None and coverage_text({}) == "judged 0 of 0 cases (coverage n/a)"


def test_reasons_survive_merging_worker_tallies(record):
    part = [record("exp", "float16", "unsupported", i, message="x does not claim dtype float16")
            for i in range(3)]
    other = [record("exp", "float16", "unsupported", 9, message="op exp has no onnx binding in its spec"),
             record("exp", "float16", "unsupported", 8, message="x does not claim dtype float16")]
    merged = Tally.of(part)
    worker = Tally.of(other)
    merged.merge(worker.cells, lambda ref: ref)
    reasons = merged.summary({}, "0")["by_op"]["exp"]["float16"]["unsupported_reasons"]
    assert reasons == {"dtype": {"cases": 4, "example": "x does not claim dtype float16"},
                       "binding": {"cases": 1, "example": "op exp has no onnx binding in its spec"}}
