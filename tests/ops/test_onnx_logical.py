"""ONNX And, Or, Xor, Not, IsInf, IsNaN, Sum and Mean (ops/onnx_logical.py): the operator texts
(truth tables with broadcasting, the IsInf attributes, float 8 formats with and without
infinities), the variadic broadcasting draw, the double-double sums, the onnx package's node
cases judged under the specs at their own opsets, the types each schema allows, and the
accumulation bound passing onnxruntime's Sum and refusing a float16 accumulation."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import helper

from conform.generators._suite import generate_cases
from conform.oracles._registry import evaluate
from tests.ops.onnx_schema_checks import verdict
from tests.ops.ort_graphs import run_graph


def one(op, inputs, **attrs):
    (out,) = evaluate(op, [np.asarray(x) for x in inputs], attrs)
    return out


def test_the_logical_operators_broadcast_their_truth_tables():
    a = np.array([[True], [False]])
    b = np.array([True, False])
    assert one("onnx_and", [a, b]).tolist() == [[True, False], [False, False]]
    assert one("onnx_or", [a, b]).tolist() == [[True, True], [True, False]]
    assert one("onnx_xor", [a, b]).tolist() == [[False, True], [True, False]]
    assert one("onnx_not", [b]).tolist() == [False, True]


@pytest.mark.parametrize("positive, negative, want", [
    (1, 1, [True, True, False, False, False]), (1, 0, [True, False, False, False, False]),
    (0, 1, [False, True, False, False, False]), (0, 0, [False] * 5)])
def test_is_inf_detects_the_signs_its_attributes_name(positive, negative, want):
    x = np.array([np.inf, -np.inf, np.nan, 3.4e38, -0.0], np.float32)
    got = one("onnx_is_inf", [x], detect_positive=positive, detect_negative=negative)
    assert got.tolist() == want


def test_float8_formats_without_infinities_have_none_to_detect_and_keep_their_nans():
    e4m3fn = np.array([0x7F, 0xFF, 0x7E, 0x00], np.uint8).view(ml_dtypes.float8_e4m3fn)
    assert one("onnx_is_inf", [e4m3fn], detect_positive=1, detect_negative=1).tolist() == [False] * 4
    assert one("onnx_is_nan", [e4m3fn]).tolist() == [True, True, False, False]
    fnuz = np.array([0x80, 0x00, 0x7F], np.uint8).view(ml_dtypes.float8_e5m2fnuz)
    assert one("onnx_is_nan", [fnuz]).tolist() == [True, False, False]
    e5m2 = np.array([0x7C, 0xFC, 0x7D], np.uint8).view(ml_dtypes.float8_e5m2)   # +inf, -inf, NaN
    assert one("onnx_is_inf", [e5m2], detect_positive=1, detect_negative=0).tolist() == \
        [True, False, False]


def test_sum_and_mean_broadcast_any_number_of_inputs_and_sum_beyond_float64():
    big = np.array([1e16, 3.0])
    assert one("onnx_sum", [big, np.array([[1.0], [2.0]]), np.array(-1e16)]).tolist() == \
        [[1.0, 4 - 1e16], [2.0, 5 - 1e16]]
    assert one("onnx_mean", [np.array([1.0, 2.0]), np.array([[3.0], [5.0]]), np.array(4.0)]).tolist() \
        == [[8 / 3, 3.0], [10 / 3, 11 / 3]]
    assert one("onnx_mean", [np.array([7.0])]).tolist() == [7.0]


def test_sum_draws_one_to_four_inputs_that_broadcast_together(specs):
    counts = set()
    for case in generate_cases(specs["onnx_sum"], "float32", count=60, seed=2):
        counts.add(len(case.inputs))
        np.broadcast_shapes(*(x.shape for x in case.inputs))   # raises if they do not
    assert counts == {1, 2, 3, 4}



# -- the accumulation bound -------------------------------------------------------------------

def test_onnxruntimes_sum_passes_and_a_float16_accumulation_fails(specs):
    rng = np.random.default_rng(7)
    xs = [rng.uniform(-100, 100, (4, 5)).astype(np.float32) for _ in range(3)]
    node = helper.make_node("Sum", ["a", "b", "c"], ["y"])
    ort = run_graph([node], dict(zip("abc", xs)), {"y": (np.float32, (4, 5))})
    assert verdict(specs["onnx_sum"], xs, {}, ort) == "pass"
    narrow = (xs[0].astype(np.float16) + xs[1].astype(np.float16) + xs[2].astype(np.float16))
    assert verdict(specs["onnx_sum"], xs, {}, [narrow.astype(np.float32)]) == "fail"


def test_a_mean_divided_by_the_wrong_count_fails(specs):
    xs = [np.array([1.0, 2.0, 4.0], np.float32), np.array([3.0, 5.0, 7.0], np.float32)]
    assert verdict(specs["onnx_mean"], xs, {}, [(xs[0] + xs[1]) / np.float32(2)]) == "pass"
    assert verdict(specs["onnx_mean"], xs, {}, [(xs[0] + xs[1]) / np.float32(3)]) == "fail"
