"""ONNX Clip and Pad (optional inputs) against the ONNX operator text, and XLA's
broadcast_dimensions against the XLA operation semantics text, hand-computed."""
from __future__ import annotations

import numpy as np
import pytest

from conform.ops.optional_inputs import onnx_operands, present
from conform.ops.elementwise import oracle_add, oracle_divide, xla_operands
from conform.ops.logical import oracle_ge
from conform.ops.onnx_elementwise import oracle_onnx_clip
from conform.ops.onnx_movement import oracle_onnx_pad
from conform.ops.regions import RegionContext, crop_order

DATA = np.array([[1.0, 1.2], [2.3, 3.4], [4.5, 5.7]])   # the ONNX Pad text's examples


def test_clip_defaults_are_the_type_limits():
    # "They default to numeric_limits::lowest() and numeric_limits::max()"
    x = np.array([-np.inf, np.inf, 3.0])
    (out,) = oracle_onnx_clip(x, absent_inputs=("min", "max"), dtypes=("float32",))
    assert out.tolist() == [-3.4028234663852886e38, 3.4028234663852886e38, 3.0]
    (out,) = oracle_onnx_clip(np.array([-200, 5]), absent_inputs=("min", "max"), dtypes=("int8",))
    assert out.tolist() == [-128, 5]   # int8's lowest()


def test_clip_with_one_bound_present():
    x = np.array([-3.0, 0.5, 3.0])
    (out,) = oracle_onnx_clip(x, np.array(0.0), absent_inputs=("max",), dtypes=("float32",))
    assert out.tolist() == [0.0, 0.5, 3.0]
    (out,) = oracle_onnx_clip(x, np.array(1.0), absent_inputs=("min",), dtypes=("float32",))
    assert out.tolist() == [-3.0, 0.5, 1.0]


def test_clip_min_above_max_gives_max_everywhere():
    # "When 'min' is greater than 'max', the clip operator sets all the 'input' values to max"
    (out,) = oracle_onnx_clip(np.array([-5.0, 1.5, 9.0]), np.array(2.0), np.array(1.0),
                              dtypes=("float64", "float64", "float64"))
    assert out.tolist() == [1.0, 1.0, 1.0]


def test_pad_examples_of_the_onnx_text():
    assert oracle_onnx_pad(DATA, np.array(0.0), mode="constant", pads=[0, 2, 0, 0])[0].tolist() == [
        [0.0, 0.0, 1.0, 1.2], [0.0, 0.0, 2.3, 3.4], [0.0, 0.0, 4.5, 5.7]]
    assert oracle_onnx_pad(DATA, mode="reflect", pads=[0, 2, 0, 0])[0].tolist() == [
        [1.0, 1.2, 1.0, 1.2], [2.3, 3.4, 2.3, 3.4], [4.5, 5.7, 4.5, 5.7]]
    assert oracle_onnx_pad(DATA, mode="edge", pads=[0, 2, 0, 0])[0].tolist() == [
        [1.0, 1.0, 1.0, 1.2], [2.3, 2.3, 2.3, 3.4], [4.5, 4.5, 4.5, 5.7]]
    assert oracle_onnx_pad(DATA, mode="wrap", pads=[2, 1, 1, 1])[0].tolist() == [
        [3.4, 2.3, 3.4, 2.3], [5.7, 4.5, 5.7, 4.5], [1.2, 1.0, 1.2, 1.0],
        [3.4, 2.3, 3.4, 2.3], [5.7, 4.5, 5.7, 4.5], [1.2, 1.0, 1.2, 1.0]]


def test_pad_axes_negative_pads_and_default_constant():
    (out,) = oracle_onnx_pad(DATA, mode="constant", pads=[1, 2], axes=[-1],
                             absent_inputs=("constant_value",))
    assert out.tolist() == [[0, 1.0, 1.2, 0, 0], [0, 2.3, 3.4, 0, 0], [0, 4.5, 5.7, 0, 0]]
    (out,) = oracle_onnx_pad(DATA, np.array(7.0), mode="constant", pads=[-1, 0, 0, 1])
    assert out.tolist() == [[2.3, 3.4, 7.0], [4.5, 5.7, 7.0]]
    (out,) = oracle_onnx_pad(np.array([5.0]), np.array(7.0), mode="constant", pads=[2, -2])
    assert out.tolist() == [7.0]   # the crop reaches into the other side's padding
    (out,) = oracle_onnx_pad(np.array([True, False]), mode="edge", pads=[1, 1])
    assert out.tolist() == [True, True, False, False]


def test_crop_order_region_marks_where_the_readings_differ():
    data = np.array([1.0, 1.2])
    assert oracle_onnx_pad(data, mode="wrap", pads=[1, -1])[0].tolist() == [1.0, 1.0]
    assert oracle_onnx_pad(data, mode="wrap", pads=[1, -1], crop="after")[0].tolist() == [1.2, 1.0]
    attrs = {"mode": "wrap", "pads": [1, -1], "absent_inputs": ["constant_value"]}
    (expected,) = oracle_onnx_pad(data, **attrs)
    ctx = RegionContext(inputs=[data], expected=expected, out_dtype="float64",
                        float_oracle=None, attrs=attrs,
                        oracle_with=lambda xs, **more: oracle_onnx_pad(*xs, **{**attrs, **more})[0])
    assert crop_order(ctx).tolist() == [True, False]
    edge = {**attrs, "mode": "edge"}
    ctx.oracle_with = lambda xs, **more: oracle_onnx_pad(*xs, **{**edge, **more})[0]
    assert not crop_order(ctx).any()   # edge padding does not depend on the order


def test_xla_broadcast_dimensions_map_the_lower_rank():
    # the text's example: a matrix and a vector, the vector mapped to dimension 0 or 1
    matrix, vector = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), np.array([10.0, 20.0])
    assert oracle_add(matrix, vector, broadcast_dimensions=[0])[0].tolist() == [
        [11.0, 12.0, 13.0], [24.0, 25.0, 26.0]]
    row = np.array([100.0, 200.0, 300.0])
    assert oracle_add(row, matrix, broadcast_dimensions=[1])[0].tolist() == [
        [101.0, 202.0, 303.0], [104.0, 205.0, 306.0]]
    # degenerate dimensions broadcast on either side after the mapping
    lhs, rhs = np.arange(3.0).reshape(3, 1), np.array([1.0, 2.0])
    assert xla_operands(lhs, rhs, [1])[0].shape == (3, 2)
    assert oracle_ge(lhs, rhs, broadcast_dimensions=[1])[0].tolist() == [
        [False, False], [True, False], [True, True]]
    assert oracle_divide(np.array([7, -7]), np.array(2), broadcast_dimensions=[])[0].tolist() == [3, -3]


def test_onnx_operands_and_present_inputs():
    assert onnx_operands(["in0", "pads", None, "axes"]) == ["in0", "pads", "", "axes"]
    assert onnx_operands(["in0", None, None]) == ["in0"]
    assert present(("input", "min", "max"), {"absent_inputs": ["min"]}) == ("input", "max")
    assert present(("input", "min"), {}) == ("input", "min")


@pytest.mark.parametrize("relation_index", [([2, 3], [0], (2, 3), (1, 1)), ([2, 3], [1], (2, 3), (0, 2))])
def test_judge_reads_the_lower_rank_operand_through_broadcast_dimensions(relation_index):
    from conform.generators import Case
    from conform.harness.judge.judging import _inputs_at

    shape, dims, out_shape, index = relation_index
    high = np.arange(6.0).reshape(shape)
    low = np.array([10.0, 20.0, 30.0][:shape[dims[0]]])
    case = Case(id="x", op="add", dtype="float64", input_dtypes=("float64",) * 2,
                out_dtype="float64", inputs=[high, low], attrs={"broadcast_dimensions": dims},
                plan="normal", seed=0)
    values = _inputs_at(case, out_shape, index, "xla_broadcast")
    assert values == [float(high[index]), float(low[index[dims[0]]])]
