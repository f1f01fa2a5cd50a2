"""Types the ONNX schemas allow that conform now draws (issue 30 item 2). The integer types of
Pow, Erf-9 and ReduceMean/L2/LogSum/LogSumExp: the oracle gives the text's value where it is an
integer of T, marks the rest open, and the judge fails a wrong value where the text fixes it
(ops/onnx_power.py, ops/onnx_erf_integer.py, ops/onnx_reduction.py). Range-27's float16 and
bfloat16 (the stash type), OneHot's index types."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conform.oracles import evaluate
from tests.ops.onnx_schema_checks import verdict

REDUCE = {"keepdims": 0, "noop_with_empty_axes": 0}


def _pow(x, y, **kw):
    return evaluate("onnx_pow", [x, y], kw)[0]


def test_integer_powers_are_exact_where_the_text_gives_an_integer():
    """f(x) = x^exponent: 2**3, (-3)**3, 1**-5, (-1)**-3 are integers of T; 2**-1 (a
    fraction), 0**-1 (no value) and int32's max squared (past T) are open."""
    x = np.array([2, -3, 1, -1, 2, 0, 2 ** 31 - 1, 7], np.int32)
    y = np.array([3, 3, -5, -3, -1, -1, 2, 0], np.int32)
    assert _pow(x, y).tolist() == [8, -27, 1, -1, 0, 0, 0, 1]
    assert _pow(x, y, open_elements=True).tolist() == [False] * 4 + [True] * 3 + [False]
    node = helper.make_node("Pow", ["x", "y"], ["z"])   # a second opinion, never the oracle
    model = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, 6, [8]) for n in "xy"],
        [helper.make_tensor_value_info("z", 6, [8])]), opset_imports=[helper.make_opsetid("", 15)])
    natural = np.maximum(y, 0)   # onnx.reference refuses negative integer exponents
    (reference,) = ReferenceEvaluator(model).run(None, {"x": x, "y": natural})
    judged = ~_pow(x, natural, open_elements=True)
    assert judged.sum() == 7 and (reference[judged] == _pow(x, natural)[judged]).all()


def test_a_huge_odd_integer_exponent_keeps_a_negative_base_negative(specs):
    """y = 2**53 + 1 (int64) is odd, so (-1.5)**y is -inf and (-0.5)**y is -0; a backend that
    rounds the exponent to float64 (2**53, even) first gets +inf and +0, and fails."""
    x = np.array([-1.5, -0.5], np.float32)
    y = np.array([2 ** 53 + 1] * 2, np.int64)
    (out,) = evaluate("onnx_pow_mixed", [x, y], {})
    assert out[0] == -np.inf and out[1] == 0 and np.signbit(out[1])
    spec = specs["onnx_pow_mixed"]
    assert verdict(spec, [x, y], {}, [np.array([-np.inf, -0.0], np.float32)]) == "pass"
    assert verdict(spec, [x, y], {}, [np.array([np.inf, 0.0], np.float32)]) == "fail"


def test_integer_erf_is_judged_at_zero_alone(specs):
    """erf(0) = 0 is an integer; erf(x) of any other integer lies in (-1, 1) and Erf-9 gives no
    rounding: open."""
    spec = specs["onnx_erf_integer"]
    x = np.array([0, 3, -2], np.int16)
    assert evaluate("onnx_erf_integer", [x], {"open_elements": True})[0].tolist() == \
        [False, True, True]
    assert verdict(spec, [x], {}, [np.array([0, 1, 0], np.int16)]) == "pass"   # (the rest open)
    assert verdict(spec, [x], {}, [np.array([1, 0, 0], np.int16)]) == "fail"


@pytest.mark.parametrize("op, data, value, opened", [
    ("onnx_reduce_mean", [[1, 3], [2, 5], [-4, 2]], [2, 0, -1], [False, True, False]),
    ("onnx_reduce_l2", [[3, 4], [1, 1], [0, 0]], [5, 0, 0], [False, True, False]),
    ("onnx_reduce_log_sum", [[0, 1], [1, 1], [3, -2]], [0, 0, 0], [False, True, False]),
    ("onnx_reduce_log_sum_exp", [[0, 0], [1, 1], [0, 5]], [0, 0, 0], [True, True, True]),
])
def test_integer_reductions_are_judged_where_the_value_is_an_integer(op, data, value, opened):
    """mean (1 + 3) / 2 = 2, (-4 + 2) / 2 = -1; sqrt(9 + 16) = 5, sqrt(0) = 0; log 1 = 0:
    integers; a fraction, an irrational or a log of 2 is open. LogSumExp of two elements
    is never an integer (e is transcendental)."""
    data = np.array(data, np.int32)
    attrs = {"axes": [1], "keepdims": 0} if op == "onnx_reduce_mean" else {"axes": [1], **REDUCE}
    got = evaluate(op, [data], attrs)[0]
    mask = evaluate(op, [data], {**attrs, "open_elements": True})[0]
    assert mask.tolist() == opened
    assert got[~mask].tolist() == np.array(value)[~mask].tolist()


def test_a_float64_accumulated_int64_mean_fails(specs):
    """The mean of 16 and 1076433223314229570 is 538216611657114793, an int64; a mean taken in
    float64 (the sum rounded to 53 bits) is 538216611657114816: the judge fails it."""
    data = np.array([[16, 1076433223314229570]], np.int64)
    attrs = {"axes": [1], "keepdims": 0}
    spec = specs["onnx_reduce_mean"]
    exact = np.array([538216611657114793], np.int64)
    rounded = np.mean(data, axis=1).astype(np.int64)
    assert verdict(spec, [data], attrs, [exact]) == "pass"
    assert verdict(spec, [data], attrs, [rounded]) == "fail"


def test_float16_range_is_evaluated_in_the_float32_stash_type(specs):
    """Range-27, stash_type 1 (the default): start, limit and delta 'cast to 32-bit float
    before the loop, with the output cast back'. 8.73 + 3 * 2.807 in float32 is 17.1484...,
    17.140625 in float16; evaluated in float16 it is 17.15625, which fails."""
    start, limit, delta = (np.array(v, np.float16) for v in (8.73, 19.95, 2.807))
    (out,) = evaluate("onnx_range", [start, limit, delta], {})
    assert out.tolist() == [8.7265625, 11.53125, 14.34375, 17.140625]
    in_float16 = start + np.arange(4).astype(np.float16) * delta
    spec = specs["onnx_range"]
    assert verdict(spec, [start, limit, delta], {}, [out.astype(np.float16)]) == "pass"
    assert verdict(spec, [start, limit, delta], {}, [in_float16]) == "fail"


def test_a_uint64_one_hot_index_past_int64_is_outside_the_depth():
    """2**64 - 1 as a uint64 index is far outside [-depth, depth - 1]: all off_value (read as
    the int64 it widens to, -1, it would set the last position)."""
    indices = np.array([1, 2 ** 64 - 1], np.uint64)
    (out,) = evaluate("onnx_one_hot", [indices, np.array(3, np.uint8),
                                       np.array([0, 5], np.int32)], {"axis": -1})
    assert out.tolist() == [[0, 5, 0], [0, 0, 0]]


def test_an_integer_grid_sample_copies_under_nearest_and_is_open_interpolated(specs):
    """GridSample's T1 holds the integer types: nearest copies an element of X (0 outside under
    zeros padding), exactly, even past 2**53; linear weights it by floats and the text gives no
    rounding to T1: open."""
    x = np.array([[[[2 ** 60 + 1, 7], [-3, 4]]]], np.int64)
    grid = np.array([[[[-0.5, -0.5], [0.5, 0.5], [3.0, 3.0]]]], np.float32)
    attrs = {"mode": "nearest", "padding_mode": "zeros", "align_corners": 0}
    (out,) = evaluate("onnx_grid_sample", [x, grid], attrs)
    assert out.tolist() == [[[[2 ** 60 + 1, 4, 0]]]]
    spec = specs["onnx_grid_sample"]
    assert verdict(spec, [x, grid], attrs, [out]) == "pass"
    assert verdict(spec, [x, grid], attrs, [out + 1]) == "fail"
    linear = {**attrs, "mode": "linear"}
    assert evaluate("onnx_grid_sample", [x, grid], {**linear, "open_elements": True})[0].all()

