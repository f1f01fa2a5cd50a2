"""The failure profile: what a failing case's failing elements have in common, read from the
inputs feeding each one (broadcast, or a reduced slice) and the expected values."""
from __future__ import annotations

import dataclasses

import numpy as np

from conform.generators import generate_cases
from conform.harness.judge.judging import expectation, result_record
from conform.harness.judge.outcome import Outcome


def _case(specs, op, dtype, inputs, attrs=None):
    case = generate_cases(specs[op], dtype, count=1, seed=1)[0]
    case = dataclasses.replace(case, inputs=inputs, attrs=attrs if attrs is not None else case.attrs,
                               expectation=None)
    return case


def _record(spec, case, wrong_at):
    out = np.array(expectation(spec, case)[0].expected, dtype=np.float32)
    for index, value in wrong_at.items():
        out[index] = value
    return result_record(spec, case, Outcome("ok", [out]), "test")


def test_broadcast_inputs_of_each_failing_element_are_found(specs):
    spec = specs["onnx_add"]
    a = np.array([[1, 2, 3], [4, 5, np.nan]], np.float32)
    b = np.array([10, -20, 30], np.float32)
    case = _case(specs, "onnx_add", "float32", [a, b])
    record = _record(spec, case, {(0, 1): 7.0})
    assert record["verdict"] == "fail"
    failing = record["failing"]
    assert failing["elements"] == failing["profiled"] == 1
    assert failing["inputs_max_abs"] == 20.0 and failing["inputs_nan"] == 0
    assert failing["expected_min_abs"] == failing["expected_max_abs"] == 18.0
    record = _record(spec, case, {(0, 1): 7.0, (1, 2): 1.0})   # the NaN element fails too
    assert record["failing"]["elements"] == 2 and record["failing"]["inputs_nan"] == 1
    assert record["failing"]["inputs_max_abs"] == "inf" and record["failing"]["expected_nan"] == 1


def test_the_slice_feeding_a_reduced_element_is_found(specs):
    spec = specs["reduce_sum"]
    x = np.array([[1, 2, 3], [0.5, -64, 0.25]], np.float32)
    case = _case(specs, "reduce_sum", "float32", [x], {"dimensions": [1]})
    record = _record(spec, case, {(1,): 3.0})
    failing = record["failing"]
    assert failing["elements"] == failing["profiled"] == 1
    assert failing["inputs_max_abs"] == 64.0 and failing["inputs_min_of_max_abs"] == 64.0
    assert failing["expected_zero"] == 0 and failing["expected_min_abs"] == 63.25


def test_a_0d_input_feeds_every_failing_element(specs):
    spec = specs["onnx_add"]
    a = np.array([[1, 2], [3, 4]], np.float32)
    case = _case(specs, "onnx_add", "float32", [a, np.array(-50, np.float32)])
    failing = _record(spec, case, {(0, 0): 7.0, (1, 1): 7.0})["failing"]
    assert failing["elements"] == failing["profiled"] == 2
    assert failing["inputs_max_abs"] == 50.0 and failing["inputs_min_of_max_abs"] == 50.0


def test_a_complex_input_is_read_part_by_part(specs):
    """A NaN or infinite imaginary part counts (a cast to float64 would drop it), and a complex
    expected value is read as its modulus."""
    spec = specs["add"]
    a = np.array([complex(3, np.nan), complex(1, 2), complex(-5, np.inf)], np.complex64)
    b = np.array([1 + 0j, 2 - 6j, 1 + 1j], np.complex64)
    case = _case(specs, "add", "complex64", [a, b])
    out = np.array(expectation(spec, case)[0].expected, dtype=np.complex64)
    out[0], out[1], out[2] = 4 + 0j, 3 - 3j, 0j
    failing = result_record(spec, case, Outcome("ok", [out]), "test")["failing"]
    assert failing["elements"] == 3 and failing["inputs_nan"] == 1 and failing["inputs_inf"] == 1
    assert failing["expected_nan"] == failing["expected_inf"] == 1
    assert failing["expected_min_abs"] == 5.0 and failing["expected_max_abs"] == "inf"
