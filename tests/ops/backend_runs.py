"""Running an op's drawn cases on a real backend and judging them: shared by op tests."""
from __future__ import annotations

import pytest

from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs


def judged(specs, backend, name: str, dtype: str, *, count: int = 20, seed: int = 9):
    """(case, judgement) of each of ``count`` drawn cases of op ``name`` at ``dtype``, run on
    ``backend``."""
    from conform.harness.backends.models import run_case

    spec = specs[name]
    for case in generate_cases(spec, dtype, count=count, seed=seed):
        yield case, judge_outputs(spec, case, run_case(backend, spec, case))


@pytest.fixture(scope="module")
def onnxruntime():
    """The onnxruntime backend (import this fixture into a test module to use it)."""
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    return OnnxRuntimeBackend()
