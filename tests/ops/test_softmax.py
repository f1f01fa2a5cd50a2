"""ONNX Softmax, LogSoftmax and Hardmax (opset 13+): the operators' worked examples, the ONNX
package's converted test data, the text's special values, the derived error bounds, and the judge
catching injected bugs run through the real onnxruntime: a softmax without the max shift (exp
overflows), a float16 accumulator, log(softmax) underflowing, a hardmax taking the last
maximum."""
from __future__ import annotations

import glob
import os

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conform.generators._case import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from tests.ops.ort_graphs import constant, rounded_to_float16, run_graph, run_nnef_document

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


def _case(op, x, axis=-1):
    dtype = str(x.dtype)
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype, input_dtypes=(dtype,), out_dtype=dtype,
                inputs=[x], attrs={"axis": axis}, plan="normal", seed=1)


def _run(nodes, x):
    """Run the ONNX graph ``nodes`` (input ``x``, output ``y`` of x's type and shape)."""
    return run_graph(nodes, {"x": x}, {"y": (x.dtype, x.shape)})[0]


def _judged(specs, op, x, actual, axis=-1):
    return judge_outputs(specs[op], _case(op, x, axis), [actual])


# ------------------------------------------------------------------ the texts' worked examples

def test_softmax_examples_of_the_operator_text():
    (y,) = evaluate("onnx_softmax", [np.float32([[-1, 0, 1]])], {"axis": 1})
    np.testing.assert_allclose(y, [[0.09003058, 0.24472848, 0.66524094]], rtol=1e-7)
    (y,) = evaluate("onnx_softmax", [np.float32([[0, 1, 2, 3], [10000, 10001, 10002, 10003]])],
                    {"axis": -1})
    np.testing.assert_allclose(y, [[0.032058604, 0.08714432, 0.23688284, 0.6439143]] * 2, rtol=1e-7)


def test_log_softmax_examples_of_the_operator_text():
    (y,) = evaluate("onnx_log_softmax", [np.float32([[-1, 0, 1]])], {"axis": 1})
    np.testing.assert_allclose(y, [[-2.4076061, -1.407606, -0.407606]], rtol=1e-6)
    (y,) = evaluate("onnx_log_softmax", [np.float32([[0, 1, 2, 3], [10000, 10001, 10002, 10003]])],
                    {"axis": -1})
    np.testing.assert_allclose(y, [[-3.4401896, -2.4401896, -1.4401896, -0.44018966]] * 2, rtol=1e-7)


def test_hardmax_examples_of_the_operator_text_ties_to_the_first():
    x = np.float32([[3, 0, 1, 2], [2, 5, 1, 0], [0, 1, 3, 2], [0, 1, 2, 3]])
    assert evaluate("onnx_hardmax", [x], {"axis": -1})[0].tolist() == np.eye(4).tolist()
    (y,) = evaluate("onnx_hardmax", [np.float32([[3, 3, 3, 1]])], {"axis": -1})
    assert y.tolist() == [[1, 0, 0, 0]]


def test_along_other_axes_each_slice_is_independent():
    x = np.abs(np.random.default_rng(3).standard_normal((3, 4, 5)))
    for axis in (0, 1, -1):
        (y,) = evaluate("onnx_softmax", [x], {"axis": axis})
        np.testing.assert_allclose(y.sum(axis=axis), 1.0, rtol=1e-14)
        (log_y,) = evaluate("onnx_log_softmax", [x], {"axis": axis})
        np.testing.assert_allclose(np.exp(log_y), y, rtol=1e-14)
        (hard,) = evaluate("onnx_hardmax", [x], {"axis": axis})
        assert (hard.sum(axis=axis) == 1).all() and (np.argmax(hard, axis) == np.argmax(x, axis)).all()


@pytest.mark.parametrize("name, op", [
    ("test_softmax_lastdim", "onnx_softmax"), ("test_softmax_functional_dim3", "onnx_softmax"),
    ("test_Softmax", "onnx_softmax"), ("test_log_softmax_lastdim", "onnx_log_softmax"),
    ("test_log_softmax_dim3", "onnx_log_softmax"), ("test_LogSoftmax", "onnx_log_softmax")])
def test_the_onnx_packages_converted_test_data_is_within_the_bound(specs, name, op):
    """The ONNX package ships no node test data for these ops here; its pytorch-converted cases
    (opset 6, always over the last axis, where the coerced-2-D semantics agree with opset 13's)
    are float32 results that the derived bound must accept."""
    folder = os.path.join(DATA, "pytorch-converted", name)
    if not os.path.isdir(folder):
        pytest.skip(f"{name} is not shipped with this onnx")
    model = onnx.load(os.path.join(folder, "model.onnx"))
    axis = helper.get_attribute_value(model.graph.node[0].attribute[0])
    x, y = (numpy_helper.to_array(onnx.load_tensor(path)) for path in
            sorted(glob.glob(os.path.join(folder, "test_data_set_0", "*.pb"))))
    assert axis % x.ndim == x.ndim - 1
    judgement = _judged(specs, op, x, y, axis)
    assert judgement.verdict == "pass", judgement.worst


# ------------------------------------------------------------------ special values

def test_special_values_follow_the_function_body():
    inf, nan = np.inf, np.nan
    x = np.array([[1.0, inf, 0.0], [1.0, nan, 0.0], [-inf, 0.0, 1.0], [-inf, -inf, -inf]])
    (y,) = evaluate("onnx_softmax", [x], {"axis": -1})
    assert np.isnan(y[:2]).all() and np.isnan(y[3]).all()   # inf - inf, NaN, -inf - -inf
    assert y[2, 0] == 0 and np.isclose(y[2].sum(), 1)
    (log_y,) = evaluate("onnx_log_softmax", [x], {"axis": -1})
    assert np.isnan(log_y[:2]).all() and log_y[2, 0] == -inf
    (hard,) = evaluate("onnx_hardmax", [x], {"axis": -1})
    assert hard[0].tolist() == [0, 1, 0] and hard[3].tolist() == [1, 0, 0]


def test_a_slice_holding_inf_and_no_nan_is_a_region_of_log_softmax(specs):
    from conform.oracles.expectations import expect

    x = np.float64([[1, np.inf, -np.inf], [1, np.inf, np.nan], [1, 2, 3]])
    (part,) = expect(specs["onnx_log_softmax"], _case("onnx_log_softmax", x))
    assert part.impl_mask.tolist() == [[True, False, True], [False] * 3, [False] * 3]


def test_regions_of_hardmax(specs):
    from conform.oracles.expectations import expect

    x = np.float32([[1, np.nan, 0], [-0.0, 0.0, -1], [0.0, -0.0, 2]])
    (part,) = expect(specs["onnx_hardmax"], _case("onnx_hardmax", x))
    assert part.impl_mask.tolist() == [[True] * 3, [True] * 3, [False] * 3]


# ------------------------------------------------------------------ the derived bounds

def test_the_bound_grows_with_the_spread_and_the_length(specs):
    from conform.oracles.expectations import expect

    x = np.float32([0, -1, -30, -80])
    (part,) = expect(specs["onnx_softmax"], _case("onnx_softmax", x))
    bound, _ = part.accumulation
    relative = bound / part.expected
    assert relative[3] > relative[2] > relative[0]      # |x_i - max| passes through exp
    assert relative[0] < 20 * 2.0 ** -24                  # a few roundings for the largest term
    longer = np.zeros(200, np.float32)
    (wide,) = expect(specs["onnx_softmax"], _case("onnx_softmax", longer))
    assert wide.accumulation[0][0] / wide.expected[0] > 150 * 2.0 ** -24   # n - 1 additions


def test_a_correct_onnxruntime_softmax_passes(specs):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 64)) * 8).astype(np.float32)
    for op, op_type in (("onnx_softmax", "Softmax"), ("onnx_log_softmax", "LogSoftmax")):
        actual = _run([helper.make_node(op_type, ["x"], ["y"], axis=-1)], x)
        assert _judged(specs, op, x, actual).verdict == "pass"


# ------------------------------------------------------------------ injected bugs

def _softmax_without_max_shift():
    return [_axes_constant(), helper.make_node("Exp", ["x"], ["e"]),
            helper.make_node("ReduceSum", ["e", "axes"], ["s"], keepdims=1),
            helper.make_node("Div", ["e", "s"], ["y"])]


def _axes_constant():
    return constant("axes", [-1])


def test_a_softmax_without_the_max_shift_fails_where_exp_overflows(specs):
    x = np.float32([[1, 2, 3, 4], [90, 91, 92, 93]])
    actual = _run(_softmax_without_max_shift(), x)
    assert np.isnan(actual[1]).all()   # inf / inf
    judgement = _judged(specs, "onnx_softmax", x, actual)
    assert judgement.verdict == "fail" and judgement.mismatched == 4
    assert "special value" in judgement.reason


def _softmax_with_a_float16_accumulator(rows, n):
    """Softmax over the last axis of a (rows, n) float32 tensor, n a power of two, whose terms
    and partial sums are held in float16 (a pairwise sum, each level rounded to float16):
    ONNX Runtime's float16 ReduceSum accumulates in float32, so the bug is spelled out."""
    nodes = [_axes_constant(), helper.make_node("ReduceMax", ["x", "axes"], ["m"], keepdims=1),
             helper.make_node("Sub", ["x", "m"], ["d"]), helper.make_node("Exp", ["d"], ["e"])]
    nodes += rounded_to_float16("e", "s0")
    level, width = 0, n
    while width > 1:
        width //= 2
        nodes += [constant(f"shape{level}", [rows, 2, width]), constant(f"one{level}", [1]),
                  helper.make_node("Reshape", [f"s{level}", f"shape{level}"], [f"p{level}"]),
                  helper.make_node("ReduceSum", [f"p{level}", f"one{level}"], [f"q{level}"],
                                   keepdims=0)]
        nodes += rounded_to_float16(f"q{level}", f"s{level + 1}")
        level += 1
    return nodes + [helper.make_node("Div", ["e", f"s{level}"], ["y"])]


def test_a_float16_accumulator_fails_in_float32(specs):
    x = np.float32(np.random.default_rng(1).standard_normal((2, 256)))
    judgement = _judged(specs, "onnx_softmax", x, _run(_softmax_with_a_float16_accumulator(2, 256), x))
    assert judgement.verdict == "fail", (judgement.max_error, judgement.bound)


def test_log_of_softmax_fails_where_it_underflows(specs):
    x = np.float32([[0, -50, -120, -200]])
    nodes = [helper.make_node("Softmax", ["x"], ["p"], axis=-1), helper.make_node("Log", ["p"], ["y"])]
    actual = _run(nodes, x)
    assert actual[0, 3] == -np.inf
    judgement = _judged(specs, "onnx_log_softmax", x, actual)
    assert judgement.verdict == "fail" and judgement.mismatched == 2   # exp(-120), exp(-200)
    correct = _run([helper.make_node("LogSoftmax", ["x"], ["y"], axis=-1)], x)
    assert _judged(specs, "onnx_log_softmax", x, correct).verdict == "pass"


def test_a_hardmax_taking_the_last_maximum_fails(specs):
    x = np.float32([[3, 1, 3, 2], [0, 5, 5, 5]])
    node = [helper.make_node("Hardmax", ["x"], ["y"], axis=-1)]
    assert _judged(specs, "onnx_hardmax", x, _run(node, x)).verdict == "pass"
    last = _run(node, np.ascontiguousarray(x[:, ::-1]))[:, ::-1]   # the first of the reversed
    judgement = _judged(specs, "onnx_hardmax", x, np.ascontiguousarray(last))
    assert judgement.verdict == "fail" and judgement.mismatched == 4


# ------------------------------------------------------------------ NNEF softmax

def test_nnef_softmax_normalises_several_axes_together():
    x = np.random.default_rng(4).standard_normal((2, 3, 4))
    (y,) = evaluate("nnef_softmax", [x], {"axes": [1, 2]})
    (flat,) = evaluate("onnx_softmax", [x.reshape(2, 12)], {"axis": 1})
    np.testing.assert_allclose(y, flat.reshape(2, 3, 4), rtol=1e-15)


def _nnef_softmax_case(x, axes):
    return Case(id="nnef_softmax.float32.0", op="nnef_softmax", dtype="float32",
                input_dtypes=("float32",), out_dtype="float32", inputs=[x], attrs={"axes": axes},
                plan="normal", seed=1)


def test_an_nnef_softmax_without_the_max_shift_fails_on_the_nnef_executor(specs, tmp_path):
    x = np.float32([[1, 2, 3, 95], [0.5, -1, 2, 0]])
    shape = list(x.shape)
    good = ("version 1.0;\ngraph g( x ) -> ( y )\n{\n"
            f"    x = external<scalar>(shape = {shape});\n    y = softmax(x, axes = [1]);\n}}\n")
    bad = ("version 1.0;\ngraph g( x ) -> ( y )\n{\n"
           f"    x = external<scalar>(shape = {shape});\n    e = exp(x);\n"
           "    s = sum_reduce(e, axes = [1]);\n    y = div(e, s);\n}\n")
    spec, case = specs["nnef_softmax"], _nnef_softmax_case(x, [1])
    assert judge_outputs(spec, case, run_nnef_document(good, [x], tmp_path)).verdict == "pass"
    judged = judge_outputs(spec, case, run_nnef_document(bad, [x], tmp_path))
    assert judged.verdict == "fail" and judged.mismatched == 4   # exp(95) overflows float32


# ------------------------------------------------------------------ opsets 11 and 12

def test_opset_11_coerces_to_2d_at_axis_and_opset_13_does_not():
    x = np.random.default_rng(6).standard_normal((2, 3, 4))
    (coerced,) = evaluate("onnx_softmax_opset11", [x], {"axis": 1})
    (rows,) = evaluate("onnx_softmax", [x.reshape(2, 12)], {"axis": 1})
    np.testing.assert_allclose(coerced, rows.reshape(2, 3, 4), rtol=1e-15)
    (one_axis,) = evaluate("onnx_softmax", [x], {"axis": 1})
    assert not np.allclose(coerced, one_axis)
    (log_coerced,) = evaluate("onnx_log_softmax_opset11", [x], {"axis": -2})
    np.testing.assert_allclose(np.exp(log_coerced), coerced, rtol=1e-14)


def test_opset_11_bindings_hold_at_opsets_11_and_12_only(specs):
    for op in ("onnx_softmax_opset11", "onnx_log_softmax_opset11"):
        assert specs[op].bindings["onnx"]["opsets"] == [11, 12]
    for op in ("onnx_softmax", "onnx_log_softmax", "onnx_hardmax"):
        assert specs[op].bindings["onnx"]["opsets"] == [13, 28]


def test_opset_11_hardmax_takes_the_first_maximum_of_the_coerced_row(specs):
    from conform.oracles.expectations import expect

    x = np.array([[[1.0, 3.0], [3.0, 0.0]], [[2.0, 2.0], [-1.0, 2.0]]])
    (y,) = evaluate("onnx_hardmax_opset11", [x], {"axis": 1})
    assert y.tolist() == [[[0, 1], [0, 0]], [[1, 0], [0, 0]]]
    (z,) = evaluate("onnx_hardmax_opset11", [x], {"axis": 0})
    assert z.sum() == 1 and z[0, 0, 1] == 1
    spec = specs["onnx_hardmax_opset11"]
    nan = x.copy()
    nan[1, 1, 0] = np.nan
    case = Case(id="h.float64.0", op=spec.op, dtype="float64", input_dtypes=("float64",),
                out_dtype="float64", inputs=[nan], attrs={"axis": 1}, plan="normal", seed=1)
    (part,) = expect(spec, case)
    assert part.impl_mask[1].all() and not part.impl_mask[0].any()


def test_opset_13_semantics_fail_the_opset_11_specs(specs):
    """One axis (opset 13, onnxruntime at opset 21) where opsets 11-12 normalise every
    dimension from axis on: the judge tells them apart."""
    x = np.float32(np.random.default_rng(8).standard_normal((2, 3, 4)))
    for op, op_type in (("onnx_softmax_opset11", "Softmax"), ("onnx_hardmax_opset11", "Hardmax")):
        actual = _run([helper.make_node(op_type, ["x"], ["y"], axis=1)], x)
        assert _judged(specs, op, x, actual, axis=1).verdict == "fail"
