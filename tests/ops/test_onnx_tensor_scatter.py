"""ONNX TensorScatter-24 (ops/onnx_tensor_scatter.py): the text's pseudocode on hand-worked
caches, the onnx package's node test cases, runs on onnxruntime (opset 24) and numpy, and the
judge catching a circular write that does not wrap."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conform.generators._case import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate

sys.path.insert(0, str(Path(__file__).parent))
from backend_runs import judged, numpy_backend, onnxruntime  # noqa: E402,F401 - a fixture
from onnx_node_cases import node_cases  # noqa: E402

OP = "onnx_tensor_scatter"


def _loop(past, update, write, axis, mode):
    """The text's pseudocode, loop for loop (the reference of these tests)."""
    present = past.copy()
    axis %= past.ndim
    for prefix in np.ndindex(past.shape[:axis]):
        for s in range(update.shape[axis]):
            at = write[prefix[0]] + s
            if mode == "circular":
                at %= past.shape[axis]
            present[prefix + (at,)] = update[prefix + (s,)]
    return present


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("axis", [1, 2, -1, -2])
def test_oracle_is_the_texts_pseudocode(mode, axis):
    rng = np.random.default_rng(abs(axis))
    past = rng.uniform(-1, 1, (2, 3, 5, 2))
    update_shape = list(past.shape)
    update_shape[axis] = 3
    update = rng.uniform(-1, 1, update_shape)
    write = np.array([2, 4 if mode == "circular" else 0])
    length = past.shape[axis]
    write = np.minimum(write, length - 3) if mode == "linear" else write
    (got,) = evaluate(OP, [past, update, write], {"axis": axis, "mode": mode})
    assert np.array_equal(got, _loop(past, update, write, axis, mode))


def test_absent_write_indices_write_from_zero_along_minus_2():
    past, update = np.zeros((1, 4, 2)), np.ones((1, 2, 2))
    (got,) = evaluate(OP, [past, update], {"absent_inputs": ["write_indices"]})
    assert got[0, :, 0].tolist() == [1, 1, 0, 0]


def test_oracle_reproduces_the_node_tests():
    cases = node_cases("tensorscatter")
    assert len(cases) == 3
    for name, node, inputs, (want,) in cases:
        attrs = {a.name: (a.s.decode() if a.s else a.i) for a in node.attribute}
        (got,) = evaluate(OP, inputs, attrs)
        assert np.array_equal(got, want), name


@pytest.mark.parametrize("dtype", ["float16", "int8", "bool"])
def test_onnxruntime_passes_at_opset_24(specs, onnxruntime, monkeypatch, dtype):
    monkeypatch.setenv("CONFORM_ONNX_OPSET", "24")
    verdicts = [j.verdict for _, j in judged(specs, onnxruntime, OP, dtype, count=10)]
    assert verdicts and set(verdicts) == {"pass"}


def test_numpy_passes(specs):
    verdicts = [j.verdict for _, j in judged(specs, numpy_backend(), OP, "float32", count=10)]
    assert verdicts and set(verdicts) == {"pass"}


def test_judge_catches_a_circular_write_that_does_not_wrap(specs):
    past, update = np.arange(8.0).reshape(1, 4, 2), -np.ones((1, 3, 2))
    write = np.array([3])
    attrs = {"mode": "circular"}
    case = Case(id=f"{OP}.float32.0", op=OP, dtype="float32",
                input_dtypes=("float32", "float32", "int64"), out_dtype="float32",
                inputs=[past.astype(np.float32), update.astype(np.float32), write], attrs=attrs,
                plan="normal", seed=0)
    clipped = past.copy()
    clipped[0, 3] = -1   # writes past the end dropped instead of wrapped to 0 and 1
    assert judge_outputs(specs[OP], case, [clipped.astype(np.float32)]).verdict == "fail"
    (right,) = evaluate(OP, case.inputs, attrs)
    assert right[0, :, 0].tolist() == [-1, -1, 4, -1]
    assert judge_outputs(specs[OP], case, [right.astype(np.float32)]).verdict == "pass"
