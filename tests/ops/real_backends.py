"""The real numpy and onnxruntime backends for op tests, and a check that a backend passes an
op's drawn cases (cases it cannot express are skipped: a missing kernel, a type or mode the
run's opset rules out)."""
from __future__ import annotations

import pytest
from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs


@pytest.fixture(scope="module")
def backends():
    """The numpy and onnxruntime backends, by name."""
    from conform.harness.backends.numpy_backend import NumpyBackend
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    return {"numpy": NumpyBackend(), "onnxruntime": OnnxRuntimeBackend()}


def assert_drawn_cases_pass(spec, backend, dtype: str, *, count: int = 12, seed: int = 11) -> int:
    """Run ``count`` drawn cases of ``spec`` in ``dtype`` on ``backend`` and assert each one it
    can express passes; returns how many were judged."""
    __tracebackhide__ = True
    from conform.harness.backends.models import run_case

    from conform.model_formats import Unsupported

    judged_count = 0
    for case in generate_cases(spec, dtype, count=count, seed=seed):
        if case.plan == "must_reject":   # no answer to judge: a refusal is expected
            continue
        try:
            outputs = run_case(backend, spec, case)
        except Unsupported:
            continue
        judged = judge_outputs(spec, case, outputs)
        assert judged.verdict in ("pass", "impl_defined"), (case.id, judged.reason)
        judged_count += 1
    return judged_count


def verdict(spec, case, backend, *, run=None) -> tuple[str, str]:
    """``(verdict, reason)`` of ``backend``'s outputs for ``run`` (default: ``case`` itself; a
    changed case injects a wrong answer) judged against ``case``."""
    from conform.harness.backends.models import run_case

    judged = judge_outputs(spec, case, run_case(backend, spec, run or case))
    return judged.verdict, judged.reason


def assert_drawn_cases_pass_everywhere(spec, backends: dict, dtype: str, *, count: int = 8) -> None:
    """:func:`assert_drawn_cases_pass` on every backend of ``backends`` (the fixture), each
    judging at least one case."""
    __tracebackhide__ = True
    for name, backend in backends.items():
        assert assert_drawn_cases_pass(spec, backend, dtype, count=count) > 0, name
