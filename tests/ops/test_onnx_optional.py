"""ONNX Optional, OptionalHasElement and OptionalGetElement (ops/onnx_optional.py): the texts'
answers per form, the onnx package's node test cases, runs on onnxruntime and numpy, and the
judge catching a has-element that ignores emptiness."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.ops.sequence_values import pack
from conform.ops.onnx_optional import EMPTY_FORMS
from conform.oracles import evaluate

sys.path.insert(0, str(Path(__file__).parent))
from backend_runs import assert_all_pass, numpy_backend, onnxruntime  # noqa: E402,F401
from onnx_node_cases import node_cases  # noqa: E402

OPS = ("onnx_optional", "onnx_optional_has_element", "onnx_optional_get_element",
       "onnx_optional_get_element_sequence")


@pytest.mark.parametrize("form, inputs, want", [
    ("tensor", [np.float64([1])], True), ("optional", [np.float64([1])], True),
    ("sequence", [np.float64([1]), np.float64([2])], True),
    ("optional_sequence", [np.float64([1])], True), ("empty_optional", [], False),
    ("empty_optional_sequence", [], False), ("no_input", [], False),
    ("no_input_name", [], False)])
def test_has_element_is_true_for_values_and_false_for_empty_or_missing(form, inputs, want):
    assert evaluate("onnx_optional_has_element", inputs, {"form": form})[0].tolist() is want


def test_get_element_returns_the_tensor_or_the_sequence():
    x = np.float64([-0.0, np.nan])
    (got,) = evaluate("onnx_optional_get_element", [x], {"form": "optional"})
    assert np.signbit(got[0]) and np.isnan(got[1])
    values, shapes = evaluate("onnx_optional_get_element_sequence",
                              [np.float64([1, 2]), np.float64([3])], {"form": "sequence"})
    assert values.tolist() == [1, 2, 3] and shapes.tolist() == [[2], [1]]


def _form(name: str, node, inputs) -> str:
    """The conform form of a node test: its input's declared kind from the test's name."""
    if not node.input:
        return "no_input"
    if node.input == [""]:
        return "no_input_name"
    if inputs[0] is None:
        return "empty_optional"
    kind = "sequence" if isinstance(inputs[0], list) else "tensor"
    return ("optional" if kind == "tensor" else "optional_sequence") \
        if "optional_" + kind in name or name.endswith("optional_input") else kind


def test_oracle_reproduces_the_node_tests():
    has = node_cases("optionalhaselement")
    get = node_cases("optionalgetelement")
    assert len(has) == 7 and len(get) == 4
    for name, node, inputs, (want,) in has:
        form = _form(name, node, inputs)
        elements = [] if form in EMPTY_FORMS else inputs
        (got,) = evaluate("onnx_optional_has_element", elements, {"form": form})
        assert got.tolist() == want.tolist(), name
    for name, node, inputs, (want,) in get:
        form = _form(name, node, inputs)
        if isinstance(want, list):
            got = evaluate("onnx_optional_get_element_sequence", inputs[0], {"form": form})
            assert [g.tolist() for g in got] == [w.tolist() for w in pack(want)], name
        else:
            (got,) = evaluate("onnx_optional_get_element", inputs, {"form": form})
            assert got.tolist() == want.tolist(), name


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", ["float32", "int16", "bool", "string"])
def test_onnxruntime_passes(specs, onnxruntime, name, dtype):
    assert_all_pass(specs, onnxruntime, name, dtype)


@pytest.mark.parametrize("name", OPS)
def test_numpy_passes(specs, name):
    assert_all_pass(specs, numpy_backend(), name, "float16")


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", ["string", "float8_e4m3fnuz", "int2"])
def test_the_other_types_are_moved_bit_for_bit(specs, name, dtype):
    """string (opset 15 and 18) and opset 28's narrow types: values moved as they are."""
    assert_all_pass(specs, numpy_backend(), name, dtype, count=4)


def test_judge_catches_a_has_element_true_for_an_empty_optional(specs, onnxruntime):
    """A kernel answering true for every optional: onnxruntime run on the case with an element
    put in, judged against the empty case's answer."""
    from conform.harness.backends.models import run_case

    spec, caught = specs["onnx_optional_has_element"], 0
    for case in generate_cases(spec, "float32", count=40, seed=2):
        if case.attrs["form"] != "empty_optional":
            continue
        filled = dataclasses.replace(case, inputs=[np.float32([1])], input_dtypes=("float32",),
                                     attrs={"form": "optional"}, expectation=None)
        outputs = run_case(onnxruntime, spec, filled)
        assert judge_outputs(spec, case, outputs).verdict == "fail", case.id
        caught += 1
    assert caught


def test_identity_of_a_sequence_or_an_optional_one(specs, onnxruntime, monkeypatch):
    """Identity-16's V: the sequence comes back (the node tests' sequence and optional ones);
    Identity-14 has no optional, so that form is refused at opset 14."""
    from conform.harness.backends.models import run_case
    from conform.model_formats import Unsupported

    for name, _, inputs, (want,) in node_cases("identity"):
        if isinstance(want, list):
            got = evaluate("onnx_identity_sequence", inputs[0], {"form": "sequence"})
            assert [g.tolist() for g in got] == [w.tolist() for w in pack(want)], name
    assert_all_pass(specs, onnxruntime, "onnx_identity_sequence", "float32", count=8)
    assert_all_pass(specs, numpy_backend(), "onnx_identity_sequence", "string", count=4)
    spec = specs["onnx_identity_sequence"]
    case = next(c for c in generate_cases(spec, "int8", count=12, seed=1)
                if c.attrs["form"] == "optional_sequence")
    monkeypatch.setenv("CONFORM_ONNX_OPSET", "14")
    with pytest.raises(Unsupported, match="optional values from opset 16"):
        run_case(onnxruntime, spec, case)
