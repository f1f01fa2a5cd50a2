"""NNEF's split, stack, unstack and gather (ops/nnef_movement.py): hand-worked values from the
declarations' reading, the judge catching misplaced copies, the document spelling an array
result ``[out0, out1, out2]``, and the real backends (numpy, nnef)."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import Case, generate_cases
from conform.harness.backends.nnef_models import build_document
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from tests.ops.test_nnef_numpy_bindings import numpy_verdicts

OPS = ["nnef_split", "nnef_stack", "nnef_unstack", "nnef_gather"]
X = np.arange(12, dtype=np.float32).reshape(2, 6)


def test_split_by_ratios():
    parts = evaluate("nnef_split", [X], {"axis": 1, "ratios": [1, 2, 3]})
    assert [p.tolist() for p in parts] == [[[0], [6]], [[1, 2], [7, 8]], [[3, 4, 5], [9, 10, 11]]]
    parts = evaluate("nnef_split", [X.T], {"axis": 0, "ratios": [1, 1, 1]})
    assert [p.shape for p in parts] == [(2, 2)] * 3


def test_stack_and_unstack_are_inverse():
    a, b = X, X + 100
    (stacked,) = evaluate("nnef_stack", [a, b], {"axis": 1})
    assert stacked.shape == (2, 2, 6) and stacked[:, 1].tolist() == b.tolist()
    parts = evaluate("nnef_unstack", [np.stack([a, b, a], axis=2)], {"axis": 2})
    assert [p.tolist() for p in parts] == [a.tolist(), b.tolist(), a.tolist()]
    (scalar_stack,) = evaluate("nnef_stack", [np.float32(1), np.float32(2)], {"axis": 0})
    assert scalar_stack.tolist() == [1.0, 2.0]


def test_gather_arranges_slices_in_the_indices_shape():
    indices = np.array([[5, 0], [1, 1]], np.int32)
    (out,) = evaluate("nnef_gather", [X, indices], {"axis": 1})
    assert out.shape == (2, 2, 2) and out[0].tolist() == [[5, 0], [1, 1]]
    (rows,) = evaluate("nnef_gather", [X, np.int32(1)], {"axis": 0})
    assert rows.tolist() == X[1].tolist()


def _case(op, inputs, attrs):
    dtypes = tuple(str(x.dtype) for x in inputs)
    return Case(id=f"{op}.float32.hand", op=op, dtype="float32", input_dtypes=dtypes,
                out_dtype="float32", inputs=inputs, attrs=attrs, plan="hand", seed=0)


def test_the_judge_catches_equal_parts_and_a_wrong_stack_axis(specs):
    case = _case("nnef_split", [X], {"axis": 1, "ratios": [1, 2, 3]})
    equal = np.split(X, 3, axis=1)
    assert judge_outputs(specs["nnef_split"], case, equal).verdict == "fail"
    right = evaluate("nnef_split", [X], case.attrs)
    assert judge_outputs(specs["nnef_split"], case,
                         [p.astype(np.float32) for p in right]).verdict == "pass"
    case = _case("nnef_stack", [X, X + 1], {"axis": 0})
    wrong = np.stack([X, X + 1], axis=2).reshape(2, 2, 6)
    assert judge_outputs(specs["nnef_stack"], case, [wrong]).verdict == "fail"


def test_an_array_result_is_assigned_as_an_array(specs):
    case = _case("nnef_split", [X], {"axis": 1, "ratios": [1, 2, 3]})
    text = build_document(specs["nnef_split"], case).text
    assert "[ out0, out1, out2 ] = split(in0, axis = 1, ratios = [1, 2, 3]);" in text


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float16", "int32", "bool"])
def test_numpy_passes(specs, op, dtype):
    assert set(numpy_verdicts(specs[op], dtype, count=8, seed=2)) == {"pass"}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_the_nnef_executor_passes(specs, op, dtype):
    from conform.harness.backends.models import run_case
    from conform.harness.backends.nnef_backend import NnefBackend

    backend, spec = NnefBackend(), specs[op]
    for case in generate_cases(spec, dtype, count=8, seed=4):
        assert judge_outputs(spec, case, run_case(backend, spec, case)).verdict == "pass"
