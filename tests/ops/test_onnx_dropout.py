"""ONNX Dropout in inference mode (ops/onnx_dropout.py): the text's copy and all-true mask,
the onnx package's inference node tests (the training ones triaged), runs on onnxruntime and
numpy, and the judge catching a training-mode output scaled by 1 / (1 - ratio)."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate

sys.path.insert(0, str(Path(__file__).parent))
from backend_runs import assert_all_pass, numpy_backend, onnxruntime  # noqa: E402,F401
from onnx_node_cases import node_cases  # noqa: E402


def test_inference_copies_the_data_bit_for_bit_and_the_mask_is_all_true():
    data = np.float32([-0.0, np.nan, np.inf, 1.5])
    output, mask = evaluate("onnx_dropout", [data, np.float32(0.9), np.asarray(False)], {})
    assert np.signbit(output[0]) and np.isnan(output[1]) and output[2] == np.inf
    assert mask.dtype == bool and mask.all() and mask.shape == (4,)


def test_oracle_reproduces_the_inference_node_tests():
    """Opset-12+ tests without training_mode are inference; the '_old' ones (Dropout-7/10,
    ratio as an attribute, no training_mode input) are inference too. Triaged: the
    test_training_* cases set training_mode true, a random mask: not this op's mode."""
    reproduced = 0
    for name, node, inputs, outputs in node_cases("dropout"):
        if name.startswith("test_training"):
            assert len(inputs) == 3 and bool(inputs[2]), name
            continue
        absent = {"absent_inputs": ["ratio", "training_mode"][len(inputs) - 1:]}
        got = evaluate("onnx_dropout", inputs, absent)
        for g, want in zip(got, outputs):
            assert np.array_equal(g, want), name
        reproduced += 1
    assert reproduced == 6


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_onnxruntime_passes(specs, onnxruntime, dtype):
    assert_all_pass(specs, onnxruntime, "onnx_dropout", dtype)


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float64"])
def test_numpy_passes(specs, dtype):
    assert_all_pass(specs, numpy_backend(), "onnx_dropout", dtype)


def test_judge_catches_training_mode_output(specs, onnxruntime):
    """A kernel that scales as in training (output = data / (1 - ratio), nothing dropped),
    injected by feeding onnxruntime data already scaled so: judged against the case."""
    from conform.harness.backends.models import run_case

    spec, caught = specs["onnx_dropout"], 0
    for case in generate_cases(spec, "float32", count=30, seed=6):
        if "ratio" in case.attrs.get("absent_inputs", ()) or \
                not np.any(np.isfinite(case.inputs[0]) & (case.inputs[0] != 0)):
            continue
        data, ratio, *rest = case.inputs
        with np.errstate(over="ignore"):
            scaled = (data / (1 - ratio.astype(np.float32))).astype(np.float32)
        buggy = dataclasses.replace(case, inputs=[scaled, ratio, *rest], expectation=None)
        try:
            outputs = run_case(onnxruntime, spec, buggy)
        except Exception:   # noqa: BLE001 - a ratio type onnxruntime lacks a kernel for
            continue
        assert judge_outputs(spec, case, outputs).verdict == "fail", case.id
        caught += 1
    assert caught
