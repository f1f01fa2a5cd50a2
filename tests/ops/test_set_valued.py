"""ONNX Unique and NonZero (conform/ops/onnx_set_valued.py): the Unique text's four examples,
the onnx package's node test cases, NonZero's row-major order and its 0-d rule, the readings of
NaN and zeros of both signs the text leaves open (each accepted exactly, nothing else), and the
judge catching injected bugs run through onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from conform.generators._case import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from tests.ops.ort_graphs import node_test_cases, run_mutated

ONNX_OPS = {"Unique": "onnx_unique", "NonZero": "onnx_non_zero"}


def _case(op, x, attrs, dtype=None):
    x = np.asarray(x)
    dtype = dtype or str(x.dtype)
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype, input_dtypes=(dtype,), out_dtype=dtype,
                inputs=[x.astype(dtype)], attrs=attrs, plan="normal", seed=3)


def _unique(x, **attrs):
    return [o.tolist() for o in evaluate("onnx_unique", [np.asarray(x)], attrs)]


def test_unique_operator_examples():
    """The Unique doc string's Examples 1 to 4."""
    assert _unique([2, 1, 1, 3, 4, 3], sorted=0) == \
        [[2, 1, 3, 4], [0, 1, 3, 4], [0, 1, 1, 2, 3, 2], [1, 2, 2, 1]]
    assert _unique([[1, 3], [2, 3]], sorted=1) == [[1, 2, 3], [0, 2, 1], [0, 2, 1, 2], [1, 1, 2]]
    assert _unique([[1, 0, 0], [1, 0, 0], [2, 3, 4]], sorted=1, axis=0) == \
        [[[1, 0, 0], [2, 3, 4]], [0, 2], [0, 0, 1], [2, 1]]
    x = [[[1., 1.], [0., 1.], [2., 1.], [0., 1.]], [[1., 1.], [0., 1.], [2., 1.], [0., 1.]]]
    assert _unique(x, sorted=1, axis=1) == \
        [[[[0, 1], [1, 1], [2, 1]], [[0, 1], [1, 1], [2, 1]]], [1, 0, 2], [1, 0, 2, 0], [2, 1, 1]]


def test_unique_sorted_0_keeps_first_occurrence_order_along_a_negative_axis():
    x = [[3, 1, 3, 2], [0, 5, 0, 5]]
    assert _unique(x, sorted=0, axis=-1) == \
        [[[3, 1, 2], [0, 5, 5]], [0, 1, 3], [0, 1, 0, 2], [2, 1, 1]]
    assert _unique(x, sorted=1, axis=-1) == \
        [[[1, 2, 3], [5, 5, 0]], [1, 3, 0], [2, 0, 2, 1], [1, 1, 2]]


def test_unique_of_empty_and_0_d_inputs():
    assert _unique(np.zeros((0, 3)), sorted=1) == [[], [], [], []]
    assert _unique(np.zeros((2, 0)), sorted=1, axis=0) == [[[]], [0], [0, 0], [2]]
    assert _unique(np.float64(4.5), sorted=0) == [[4.5], [0], [0], [1]]


def test_unique_orders_uint64_above_2_to_the_63_as_unsigned():
    x = np.array([2**64 - 1, 5, 2**63, 5], np.uint64)
    y, indices, inverse, counts = evaluate("onnx_unique", [x], {"sorted": 1})
    assert y.tolist() == [5, 2**63, 2**64 - 1] and indices.tolist() == [1, 2, 0]
    assert inverse.tolist() == [2, 0, 1, 0] and counts.tolist() == [2, 1, 1]


def test_non_zero_row_major_and_the_0_d_rule():
    (out,) = evaluate("onnx_non_zero", [np.array([[1, 0], [1, 1]])], {})
    assert out.tolist() == [[0, 1, 1], [0, 0, 1]] and out.dtype == np.int64
    (out,) = evaluate("onnx_non_zero", [np.array([np.nan, -0.0, 0.0, 2.0])], {})
    assert out.tolist() == [[0, 3]]   # NaN is not zero; -0 is
    assert evaluate("onnx_non_zero", [np.float64(2.0)], {})[0].shape == (0, 1)
    assert evaluate("onnx_non_zero", [np.float64(0.0)], {})[0].shape == (0, 0)


def test_the_onnx_node_test_cases_are_reproduced(specs, onnx_node_cases):
    """Every Unique and NonZero node test case of the onnx package (built in memory: this
    install ships no test data files) is judged pass against the oracle."""
    seen = set()
    for name, op, node, data_sets in node_test_cases(onnx_node_cases, ONNX_OPS):
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if op == "onnx_unique":
            attrs.setdefault("sorted", 1)
        for inputs, outputs in data_sets:
            dtype = str(inputs[0].dtype)
            case = Case(id=name, op=op, dtype=dtype, input_dtypes=(dtype,), out_dtype=dtype,
                        inputs=list(inputs), attrs=attrs, plan="normal", seed=0)
            judgement = judge_outputs(specs[op], case, list(outputs))
            assert judgement.verdict == "pass", (name, judgement.reason, judgement.worst)
            seen.add(op)
    assert seen == set(ONNX_OPS.values())


def _judge_unique(specs, x, attrs, outputs):
    case = _case("onnx_unique", np.float32(x), attrs)
    dtypes = [np.float32, np.int64, np.int64, np.int64]
    return judge_outputs(specs["onnx_unique"], case, [np.asarray(o, d) for o, d in zip(outputs, dtypes)])


@pytest.mark.parametrize("outputs", [
    [[1, np.nan, np.nan], [2, 0, 1], [1, 2, 0], [1, 1, 1]],   # NaNs distinct, last (the oracle)
    [[1, np.nan], [2, 0], [1, 1, 0], [1, 2]],                  # NaN one value, last (NumPy)
    [[np.nan, 1], [0, 2], [0, 0, 1], [2, 1]],                  # NaN one value, first
    [[np.nan, np.nan, 1], [0, 1, 2], [0, 1, 2], [1, 1, 1]],    # NaNs distinct, first
])
def test_any_reading_of_nan_passes(specs, outputs):
    assert _judge_unique(specs, [np.nan, np.nan, 1], {"sorted": 1}, outputs).verdict == "pass"


@pytest.mark.parametrize("outputs", [
    [[np.nan], [0], [0, 0, 0], [3]],            # 1 grouped with the NaNs: onnxruntime 1.32's answer
    [[1, np.nan], [2, 0], [1, 1, 0], [1, 1]],   # a wrong count in an otherwise valid reading
    [[np.nan, 1], [0, 2], [0, 0, 1], [1, 2]],   # counts of another order
])
def test_an_answer_no_reading_gives_fails(specs, outputs):
    assert _judge_unique(specs, [np.nan, np.nan, 1], {"sorted": 1}, outputs).verdict == "fail"


def test_zeros_one_value_of_either_sign_or_two_values_pass_and_a_lost_zero_fails(specs):
    x, attrs = [-0.0, 1.0, 0.0], {"sorted": 1}
    for outputs in ([[-0.0, 1], [0, 1], [0, 1, 0], [2, 1]], [[0.0, 1], [0, 1], [0, 1, 0], [2, 1]],
                    [[-0.0, 0.0, 1], [0, 2, 1], [0, 2, 1], [1, 1, 1]]):
        assert _judge_unique(specs, x, attrs, outputs).verdict == "pass", outputs
    assert _judge_unique(specs, x, attrs, [[0.0, 1], [2, 1], [0, 1, 0], [2, 1]]).verdict == "fail"
    assert _judge_unique(specs, x, attrs, [[0.0, -0.0, 1], [2, 0, 1], [1, 2, 0], [1, 1, 1]]) \
        .verdict == "fail"   # two values, but +0 ranked below -0
    # one sign only: the zero's sign is not open
    assert _judge_unique(specs, [-0.0, -0.0, np.nan], attrs,
                         [[0.0, np.nan], [0, 2], [0, 0, 1], [2, 1]]).verdict == "fail"


def test_slices_with_zeros_of_both_signs_read_either_way(specs):
    x, attrs = [[-0.0, 0.0], [1.0, 1.0]], {"sorted": 0, "axis": 1}
    one = [[[-0.0], [1.0]], [0], [0, 0], [2]]
    two = [[[-0.0, 0.0], [1.0, 1.0]], [0, 1], [0, 1], [1, 1]]
    assert _judge_unique(specs, x, attrs, one).verdict == "pass"
    assert _judge_unique(specs, x, attrs, two).verdict == "pass"


def test_onnxruntime_unique_passes_and_a_sorted_answer_to_sorted_0_fails(specs):
    spec = specs["onnx_unique"]
    case = _case("onnx_unique", np.float32([[3, 1], [3, 1], [0, 2]]), {"sorted": 0, "axis": 0})
    assert judge_outputs(spec, case, run_mutated(spec, case)).verdict == "pass"
    judgement = judge_outputs(spec, case, run_mutated(spec, case, sorted=1))
    assert judgement.verdict == "fail"
    assert {name for name, part in judgement.outputs if part.verdict == "fail"} == \
        {"y", "indices", "inverse_indices", "counts"}


def test_onnxruntime_non_zero_passes_and_numpy_s_0_d_shape_fails(specs):
    spec = specs["onnx_non_zero"]
    case = _case("onnx_non_zero", np.float32([[0, 2, np.nan], [-0.0, 0, 1]]), {})
    assert judge_outputs(spec, case, run_mutated(spec, case)).verdict == "pass"
    transposed = [run_mutated(spec, case)[0].T.copy()]   # numpy.argwhere's layout
    assert judge_outputs(spec, case, transposed).verdict == "fail"
    scalar = _case("onnx_non_zero", np.float32(5), {})
    judgement = judge_outputs(spec, scalar, [np.zeros((1, 1), np.int64)])   # numpy's (1, N)
    assert judgement.verdict == "fail" and "expected int64[0, 1]" in judgement.reason


def test_unique_of_text_ascends_by_code_point_and_accepts_another_order_consistently():
    """Strings are equal when their texts are; 'ascending order' names no order of text: an
    answer in another order (items, indices and counts permuted alike, inverse renumbered) is
    put in the oracle's order, and a wrong count still fails."""
    from conform.ops.onnx_set_valued import canonical_onnx_unique

    x = np.array(["b", "ß", "a", "b", "A"], object)
    y, first, inverse, counts = evaluate("onnx_unique", [x], {"sorted": 1})
    assert y.tolist() == ["A", "a", "b", "ß"] and counts.tolist() == [1, 1, 2, 1]
    assert first.tolist() == [4, 2, 0, 1] and inverse.tolist() == [2, 3, 1, 2, 0]
    flipped = [y[::-1], first[::-1], 3 - inverse, counts[::-1]]
    case = Case(id="t", op="onnx_unique", dtype="string", input_dtypes=("string",),
                out_dtype="string", inputs=[x], attrs={"sorted": 1}, seed=0, plan="normal")
    back = canonical_onnx_unique(flipped, case)
    assert [np.asarray(b).tolist() for b in back] == [v.tolist() for v in (y, first, inverse,
                                                                            counts)]
    wrong = [flipped[0], flipped[1], flipped[2], flipped[3] + 1]
    assert np.asarray(canonical_onnx_unique(wrong, case)[3]).tolist() != counts.tolist()
    (y0, *_) = evaluate("onnx_unique", [x], {"sorted": 0})
    assert y0.tolist() == ["b", "ß", "a", "A"]


def test_non_zero_of_text_reads_the_empty_string_as_zero_as_numpy_nonzero(specs):
    """'NonZero behaves similar to numpy.nonzero': a string is zero where NumPy's truth value
    makes it so, the empty string ("0" and " " are not)."""
    x = np.empty((2, 2), object)
    x[:] = [["", "0"], [" ", ""]]
    (out,) = evaluate("onnx_non_zero", [x], {})
    assert out.tolist() == [[0, 1], [1, 0]]
    assert out.tolist() == np.array(np.nonzero(x)).tolist()
    case = Case(id="onnx_non_zero.string.0", op="onnx_non_zero", dtype="string",
                input_dtypes=("string",), out_dtype="string", inputs=[x], attrs={},
                plan="normal", seed=0)
    every = [np.array([[0, 0, 1, 1], [0, 1, 0, 1]], np.int64)]
    assert judge_outputs(specs["onnx_non_zero"], case, every).verdict == "fail"


def _judge_complex_unique(specs, x, attrs, outputs):
    case = _case("onnx_unique", np.complex64(x), attrs)
    dtypes = [np.complex64, np.int64, np.int64, np.int64]
    return judge_outputs(specs["onnx_unique"], case,
                         [np.asarray(o, d) for o, d in zip(outputs, dtypes)])


@pytest.mark.parametrize("sorted_, outputs, verdict", [
    (1, [[1 - 1j, 1 + 2j, 2j], [2, 0, 1], [1, 2, 0, 1], [1, 2, 1]], "pass"),   # the oracle's
    (1, [[1 + 2j, 2j, 1 - 1j], [0, 1, 2], [0, 1, 2, 0], [2, 1, 1]], "pass"),   # another order
    (1, [[1 + 2j, 2j, 1 - 1j], [0, 1, 2], [0, 1, 2, 0], [1, 2, 1]], "fail"),   # counts moved
    (0, [[1 + 2j, 2j, 1 - 1j], [0, 1, 2], [0, 1, 2, 0], [2, 1, 1]], "pass"),
    (0, [[1 - 1j, 1 + 2j, 2j], [2, 0, 1], [1, 2, 0, 1], [1, 2, 1]], "fail"),   # sorted, not first
    (1, [[1 + 2j, 1 - 1j], [0, 2], [0, 0, 1, 0], [3, 1]], "fail"),             # 2j lost
])
def test_complex_unique_any_order_when_sorted_first_occurrence_otherwise(
        specs, sorted_, outputs, verdict):
    """Complex numbers have no ascending order the text could mean: with sorted=1 any order of
    the distinct values (indices, inverse and counts consistent) passes; sorted=0 is defined."""
    x = [1 + 2j, 2j, 1 - 1j, 1 + 2j]
    assert _judge_complex_unique(specs, x, {"sorted": sorted_}, outputs).verdict == verdict


def test_complex_unique_compares_part_by_part_and_onnx_reference_agrees():
    """-0 + 1j equals 0 + 1j (IEEE equality of each part; the other reading is accepted too);
    onnx.reference (numpy.unique) gives the oracle's sorted answer."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    x = np.complex64([complex(-0.0, 1), 3, complex(0, 1), 3, -1j])
    y, first, inverse, counts = _unique(x, sorted=1)
    assert y == [-1j, complex(-0.0, 1), 3] and first == [4, 0, 1] and counts == [1, 2, 2]
    node = helper.make_node("Unique", ["x"], ["y", "i", "v", "c"], sorted=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.COMPLEX64, None)], [helper.make_tensor_value_info(
            n, TensorProto.COMPLEX64 if n == "y" else TensorProto.INT64, None) for n in "yivc"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    ref = ReferenceEvaluator(model).run(None, {"x": x})
    assert [np.asarray(r).tolist() for r in ref] == [y, first, inverse, counts]
