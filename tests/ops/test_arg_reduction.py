"""ONNX ArgMax/ArgMin and NNEF argmax_reduce/argmin_reduce (conform/ops/arg_reduction.py): the
oracle on the operator texts' rules (first or last of equal extremes, negative axes, keepdims,
uint64 order), onnx.reference as a second opinion, the regions (NaN, zeros of both signs), the
NNEF tie canonicalisation, and the judge catching an ignored select_last_index through the real
onnxruntime."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conform.generators._case import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate
from conform.oracles.expectations import expect


def _arg(op, x, **attrs):
    (out,) = evaluate(op, [np.asarray(x)], attrs)
    return out


# The examples of the ONNX operator's test cases (onnx/backend/test/case/node/argmax.py and
# argmin.py: data [[2, 1], [3, 10]], and [[2, 2], [3, 10]] for select_last_index), worked by hand
# from the operator text.
@pytest.mark.parametrize("op, data, axis, keepdims, last, expected", [
    ("onnx_arg_max", [[2, 1], [3, 10]], 0, 1, 0, [[1, 1]]),
    ("onnx_arg_max", [[2, 1], [3, 10]], 1, 1, 0, [[0], [1]]),
    ("onnx_arg_max", [[2, 1], [3, 10]], 1, 0, 0, [0, 1]),
    ("onnx_arg_max", [[2, 1], [3, 10]], -1, 1, 0, [[0], [1]]),
    ("onnx_arg_max", [[2, 2], [3, 10]], 1, 1, 0, [[0], [1]]),
    ("onnx_arg_max", [[2, 2], [3, 10]], 1, 1, 1, [[1], [1]]),
    ("onnx_arg_min", [[2, 1], [3, 10]], 0, 1, 0, [[0, 0]]),
    ("onnx_arg_min", [[2, 1], [3, 10]], 1, 0, 0, [1, 0]),
    ("onnx_arg_min", [[2, 2], [3, 10]], 1, 1, 1, [[1], [0]]),
    ("onnx_arg_min", [[2, 2], [3, 10]], -1, 0, 0, [0, 0]),
])
def test_operator_examples(op, data, axis, keepdims, last, expected):
    out = _arg(op, np.float32(data), axis=axis, keepdims=keepdims, select_last_index=last)
    assert out.dtype == np.int64 and out.tolist() == expected


def test_ties_pick_the_first_or_the_last_of_several():
    x = np.int32([4, 1, 4, 0, 4, 0])
    assert _arg("onnx_arg_max", x, axis=0, keepdims=0, select_last_index=0) == 0
    assert _arg("onnx_arg_max", x, axis=0, keepdims=0, select_last_index=1) == 4
    assert _arg("onnx_arg_min", x, axis=0, keepdims=0, select_last_index=0) == 3
    assert _arg("onnx_arg_min", x, axis=0, keepdims=0, select_last_index=1) == 5


def test_uint64_above_2_63_keeps_its_order():
    x = np.array([5, 2**64 - 1, 2**63], np.uint64)
    assert _arg("onnx_arg_max", x, axis=0, keepdims=0, select_last_index=0) == 1
    assert _arg("onnx_arg_min", x, axis=0, keepdims=0, select_last_index=0) == 0


def test_infinities_rank_at_the_ends():
    x = np.float32([1, np.inf, -np.inf, 3])
    assert _arg("onnx_arg_max", x, axis=0, keepdims=0, select_last_index=0) == 1
    assert _arg("onnx_arg_min", x, axis=0, keepdims=0, select_last_index=0) == 2


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
def test_onnx_reference_agrees_on_random_integer_slices(op_type):
    """A second opinion, never the oracle: onnx.reference on tie-rich integer data."""
    import onnx
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(3)
    op = "onnx_arg_max" if op_type == "ArgMax" else "onnx_arg_min"
    for _ in range(40):
        shape = tuple(int(s) for s in rng.integers(1, 5, size=rng.integers(1, 4)))
        x = rng.integers(-2, 3, size=shape).astype(np.int32)
        attrs = {"axis": int(rng.integers(-len(shape), len(shape))),
                 "keepdims": int(rng.integers(0, 2)), "select_last_index": int(rng.integers(0, 2))}
        node = helper.make_node(op_type, ["x"], ["y"], **attrs)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT32, shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        (reference,) = ReferenceEvaluator(model).run(None, {"x": x})
        np.testing.assert_array_equal(_arg(op, x, **attrs), reference)


def _case(op, x, attrs, dtype="float32"):
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype, input_dtypes=(dtype,), out_dtype=dtype,
                inputs=[np.asarray(x, dtype)], attrs=attrs, plan="normal", seed=1)


def test_a_nan_opens_its_slice_only_with_the_axis_dropped(specs):
    x = np.float32([[1, np.nan, 2], [3, 4, 5]])
    attrs = {"axis": 1, "keepdims": 0, "select_last_index": 0}
    (answer,) = expect(specs["onnx_arg_max"], _case("onnx_arg_max", x, attrs))
    assert answer.impl_mask.tolist() == [True, False]


def test_zeros_of_both_signs_open_the_index_only_where_zero_is_the_extreme(specs):
    x = np.float32([[-0.0, 0.0, -1], [-0.0, 0.0, 1], [0.0, 0.0, -1]])
    attrs = {"axis": -1, "keepdims": 1, "select_last_index": 0}
    (answer,) = expect(specs["onnx_arg_max"], _case("onnx_arg_max", x, attrs))
    assert answer.impl_mask.ravel().tolist() == [True, False, False]
    (answer,) = expect(specs["onnx_arg_min"], _case("onnx_arg_min", x, attrs))
    assert answer.impl_mask.ravel().tolist() == [False, True, False]


def test_nnef_accepts_any_extreme_index_and_no_other(specs):
    spec = specs["nnef_argmax_reduce"]
    case = _case("nnef_argmax_reduce", [[3, 1, 3], [0, 2, 2]], {"axis": 1})
    judge = lambda index: judge_outputs(spec, case, [np.int32(index)]).verdict
    assert judge([[0], [1]]) == "pass" and judge([[2], [2]]) == "pass"
    assert judge([[1], [1]]) == "fail" and judge([[3], [1]]) == "fail"
    assert judge([[-1], [1]]) == "fail"


def test_nnef_keeps_the_reduced_axis(specs):
    out = _arg("nnef_argmin_reduce", np.float32([[3, 1, 3], [0, 2, -2]]), axis=0)
    assert out.tolist() == [[1, 0, 1]]


def test_an_ignored_select_last_index_fails_on_onnxruntime(tmp_path, conform_cli):
    """onnxruntime running ArgMax with select_last_index forced to 0 (the injected bug) fails
    exactly the cases that ask for the last of tied maxima."""
    out = tmp_path / "run"
    conform_cli("run", "--backend", "tests.harness.ignored_attribute_backend:FirstIndexBackend",
                "--ops", "onnx_arg_max", "--dtypes", "int32", "--max-examples", "30",
                "--out", out, "--quiet")
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    failing = [r for r in records if r["verdict"] == "fail"]
    assert failing, "the judge let an ignored select_last_index pass"
    assert all(r["attrs"]["select_last_index"] == 1 for r in failing)
    assert "worst out[" in failing[0]["message"]
