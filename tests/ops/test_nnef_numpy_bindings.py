"""The numpy backend on NNEF's standard-library fragments (ops/nnef_activation.py,
nnef_axis_normalization.py, nnef_local_normalization.py, nnef_quantization.py): every drawn case
comes back in its own dtype and passes, or lies in a region its spec declares."""
from __future__ import annotations

import pytest

from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs

FLOAT_OPS = {   # op -> the seed its cases are drawn with
    "nnef_gelu": 7, "nnef_silu": 7, "nnef_selu": 7, "nnef_softabs": 7, "nnef_prelu": 7,
    "nnef_l1_normalization": 5, "nnef_l2_normalization": 5, "nnef_moments": 5,
    "nnef_local_mean_normalization": 3, "nnef_local_variance_normalization": 3,
    "nnef_local_response_normalization": 3, "nnef_local_contrast_normalization": 3,
    "nnef_linear_quantize": 6, "nnef_min_max_linear_quantize": 6,
    "nnef_zero_point_linear_quantize": 6, "nnef_logarithmic_quantize": 6,
}


def numpy_verdicts(spec, dtype, *, count=10, seed=7) -> list:
    """The verdicts of the numpy backend on ``count`` drawn cases of ``spec`` in ``dtype``,
    every output checked to come back in ``dtype``."""
    from conform.harness.backends.models import run_case
    from conform.harness.backends.numpy_backend import NumpyBackend

    backend, verdicts = NumpyBackend(), []
    for case in generate_cases(spec, dtype, count=count, seed=seed):
        outputs = run_case(backend, spec, case)
        assert all(out.dtype.name == dtype for out in outputs)
        verdicts.append(judge_outputs(spec, case, outputs).verdict)
    return verdicts


@pytest.mark.parametrize("op", sorted(FLOAT_OPS))
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_numpy_passes(specs, op, dtype):
    verdicts = numpy_verdicts(specs[op], dtype, seed=FLOAT_OPS[op])
    assert set(verdicts) <= {"pass", "impl_defined"} and "pass" in verdicts, verdicts
