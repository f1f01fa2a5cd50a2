"""Running an op's drawn cases on a real backend and judging them: shared by op tests."""
from __future__ import annotations

import pytest

from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs


def judged(specs, backend, name: str, dtype: str, *, count: int = 20, seed: int = 9):
    """(case, judgement) of each of ``count`` drawn cases of op ``name`` at ``dtype``, run on
    ``backend``; a case the backend reports unsupported is left out."""
    from conform.harness.backends.models import run_case
    from conform.model_formats import Unsupported

    spec = specs[name]
    for case in generate_cases(spec, dtype, count=count, seed=seed):
        if case.plan == "must_reject":   # no answer to judge: a refusal is expected
            continue
        try:
            outputs = run_case(backend, spec, case)
        except Unsupported:
            continue
        yield case, judge_outputs(spec, case, outputs)


@pytest.fixture(scope="module")
def onnxruntime():
    """The onnxruntime backend (import this fixture into a test module to use it)."""
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    return OnnxRuntimeBackend()


def assert_all_pass(specs, backend, name: str, dtype: str, *, count: int = 16,
                    allowed=("pass",)) -> None:
    """Every drawn case of op ``name`` at ``dtype`` run on ``backend`` gets a verdict in
    ``allowed``."""
    __tracebackhide__ = True
    for case, judgement in judged(specs, backend, name, dtype, count=count):
        assert judgement.verdict in allowed, (case.id, judgement.reason)


def numpy_backend():
    """The numpy backend."""
    from conform.harness.backends.numpy_backend import NumpyBackend

    return NumpyBackend()


def boundary_verdicts(specs, backend, name: str, dtype: str) -> dict:
    """The verdict of each ``boundary`` case of op ``name`` at ``dtype`` run on ``backend``, by
    case id (``unsupported`` where the backend cannot express it)."""
    from conform.generators._shape_edges import boundary_cases
    from conform.harness.backends.models import run_case
    from conform.model_formats import Unsupported

    spec, verdicts = specs[name], {}
    for case in boundary_cases(spec, dtype, seed=0):
        try:
            verdicts[case.id] = judge_outputs(spec, case, run_case(backend, spec, case)).verdict
        except Unsupported:
            verdicts[case.id] = "unsupported"
    return verdicts
