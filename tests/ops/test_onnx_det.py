"""ONNX Det (ops/onnx_det.py): exact determinants, the onnx package's node test cases, the
derived bound's two evaluations, the open matrices, and the judge catching a float16
evaluation through the real onnxruntime."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.linalg
from conform.generators import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate
from conform.oracles.expectations import expect

from tests.ops import real_backends
from tests.ops.onnx_node_cases import node_cases

backends = real_backends.backends   # the fixture


def _case(x):
    dtype = str(x.dtype)
    return Case(id=f"onnx_det.{dtype}.0", op="onnx_det", dtype=dtype, input_dtypes=(dtype,),
                out_dtype=dtype, inputs=[x], attrs={}, plan="normal", seed=0)


def test_the_onnx_node_test_cases_are_reproduced(specs):
    cases = node_cases("det")
    assert cases
    for case_name, _, (x,), (want,) in cases:
        (got,) = evaluate("onnx_det", [x], {})
        assert got.shape == want.shape, case_name
        assert np.array_equal(got.astype(np.float32), want), case_name   # integral matrices
        assert judge_outputs(specs["onnx_det"], _case(x), [want]).verdict == "pass", case_name


def test_determinants_are_exact_then_rounded_once():
    (d,) = evaluate("onnx_det", [np.float64([[2, 1, 0], [1, 3, 1], [0, 1, 4]])], {})
    assert d == 2 * 11 - 1 * 4
    # 1 + 2**-60 - 1 cancels in float64 arithmetic; the exact determinant does not
    x = np.float64([[1 + 2 ** -30, 1], [1, 1 - 2 ** -30]])
    (d,) = evaluate("onnx_det", [x], {})
    assert d == -(2.0 ** -60)
    (batch,) = evaluate("onnx_det", [np.stack([np.eye(4), 2 * np.eye(4)])], {})
    assert batch.tolist() == [1, 16]


def test_matrices_with_an_infinity_or_nan_are_open(specs):
    x = np.float32([[[1, math.inf], [0, 1]], [[1, 2], [3, 4]]])
    (answer,) = expect(specs["onnx_det"], _case(x))
    assert answer.impl_mask.tolist() == [True, False]


@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")   # an exactly singular draw
def test_the_bound_admits_lu_with_partial_pivoting(specs):
    """A float32 LU with partial pivoting (NumPy's float32 LAPACK factorisation, the pivots'
    product taken in float32) of a nearly singular matrix passes."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.uniform(-2, 2, (4, 4)).astype(np.float32)
        x[3] = x[0] + x[1] + np.float32(1e-3) * x[2]
        lu, pivots = scipy.linalg.lu_factor(x)
        sign = (-1) ** int(np.sum(pivots != np.arange(4)))
        actual = np.float32(sign) * np.prod(np.diag(lu), dtype=np.float32)
        judged = judge_outputs(specs["onnx_det"], _case(x), [np.float32(actual)])
        assert judged.verdict == "pass", judged.reason


def test_judge_catches_float16_inputs_on_onnxruntime(specs, backends):
    """onnxruntime's float32 Det passes; run on the inputs rounded to float16 (as a kernel
    reading them in half precision would) it fails."""
    spec = specs["onnx_det"]
    x = np.float32([[1.1, 0.3, 0.2], [0.1, 1.7, 0.4], [0.3, 0.2, 1.3]])
    case = _case(x)
    assert real_backends.verdict(spec, case, backends["onnxruntime"])[0] == "pass"
    rounded = dataclasses.replace(case, inputs=[x.astype(np.float16).astype(np.float32)])
    assert real_backends.verdict(spec, case, backends["onnxruntime"], run=rounded)[0] == "fail"
