"""Top-k (XLA TopK, ONNX TopK): two named outputs, each judged under its own error model, ties
broken by index, the open order of ONNX's sorted=0 canonicalised, and the regions the texts leave
open. The judge must catch a wrong tie order, a wrong index and a missing output."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators._case import Case
from conform.harness.judge.judging import failure_message, judge_outputs
from conform.oracles._registry import evaluate
from conform.oracles.expectations import expect


def _case(op, x, attrs, dtype="float32"):
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype, input_dtypes=(dtype,), out_dtype=dtype,
                inputs=[x], attrs=attrs, plan="normal", seed=7)


def test_ties_go_to_the_lower_index_largest_or_smallest():
    x = np.array([3.0, 1.0, 3.0, 2.0, 1.0])
    values, indices = evaluate("onnx_top_k", [x], {"k": 3, "axis": 0, "largest": 1, "sorted": 1})
    assert values.tolist() == [3, 3, 2] and indices.tolist() == [0, 2, 3]
    values, indices = evaluate("onnx_top_k", [x], {"k": 3, "axis": -1, "largest": 0, "sorted": 1})
    assert values.tolist() == [1, 1, 2] and indices.tolist() == [1, 4, 3]


def test_integer_extremes_rank_without_overflow():
    x = np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max, np.iinfo(np.int64).min])
    _, indices = evaluate("top_k", [x], {"k": 4, "largest": True})
    assert indices.tolist() == [2, 1, 0, 3]


def test_uint64_above_2_63_ranks_above_the_rest():
    """uint64 reaches the oracle as uint64 (issue 36): as int64, 2**63 and above read negative."""
    x = np.uint64([3, 2**64 - 1, 0, 2**63])
    values, indices = evaluate("top_k", [x], {"k": 2, "largest": True})
    assert values.tolist() == [2**64 - 1, 2**63] and indices.tolist() == [1, 3]
    (ordered,) = evaluate("sort", [x], {"dimension": 0, "num_keys": 1, "is_stable": True})
    assert ordered.tolist() == [0, 3, 2**63, 2**64 - 1]


def test_along_a_negative_axis_of_a_matrix():
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    values, indices = evaluate("onnx_top_k", [x], {"k": 2, "axis": -2, "largest": 1, "sorted": 1})
    assert values.tolist() == [[7, 5, 7], [1, 0, 2]] and indices.tolist() == [[1, 0, 1], [0, 1, 0]]


def test_each_output_has_its_own_dtype_and_error_model(specs):
    spec = specs["onnx_top_k"]
    case = _case("onnx_top_k", np.float32([1, 2]), {"k": 1, "axis": 0, "largest": 1, "sorted": 1})
    assert spec.outputs == ("values", "indices") and spec.out_dtypes(case) == ("float32", "int64")
    assert spec.model_for("float32", 0)["exact"] and "index" in spec.model_for("int64", 1)["why"]


def _judged(spec, x, attrs, values, indices, dtype="float32", index_dtype=np.int64):
    case = _case(spec.op, x, attrs, dtype)
    return case, judge_outputs(spec, case, [np.asarray(values, dtype), np.asarray(indices, index_dtype)])


def test_a_correct_answer_passes_and_a_wrong_tie_order_fails(specs):
    spec = specs["onnx_top_k"]
    x = np.float32([3, 1, 3, 2])
    attrs = {"k": 2, "axis": 0, "largest": 1, "sorted": 1}
    _, good = _judged(spec, x, attrs, [3, 3], [0, 2])
    assert good.verdict == "pass" and [name for name, _ in good.outputs] == ["values", "indices"]
    case, swapped = _judged(spec, x, attrs, [3, 3], [2, 0])
    assert swapped.verdict == "fail" and swapped.worst["output"] == "indices"
    assert dict(swapped.outputs)["values"].verdict == "pass"
    message = failure_message(case, swapped, "b")
    assert "worst indices[0]: actual=2, expected=0" in message and "seed=7" in message


def test_sorted_0_accepts_any_order_of_the_right_pairs_and_nothing_else(specs):
    spec = specs["onnx_top_k"]
    x = np.float32([5, 1, 4, 2, 3])
    attrs = {"k": 3, "axis": 0, "largest": 1, "sorted": 0}
    assert _judged(spec, x, attrs, [3, 5, 4], [4, 0, 2])[1].verdict == "pass"
    # the pairs are reordered together, never repaired: a wrong index still fails
    assert _judged(spec, x, attrs, [3, 5, 4], [4, 0, 1])[1].verdict == "fail"
    assert _judged(spec, x, attrs, [2, 5, 4], [3, 0, 2])[1].verdict == "fail"
    sorted_attrs = {**attrs, "sorted": 1}
    assert _judged(spec, x, sorted_attrs, [3, 5, 4], [4, 0, 2])[1].verdict == "fail"


def test_a_backend_returning_one_output_fails_naming_both(specs):
    spec = specs["top_k"]
    case = _case("top_k", np.float32([1, 2]), {"k": 1, "largest": True})
    judgement = judge_outputs(spec, case, [np.float32([2])])
    assert judgement.verdict == "fail" and "expected 2 (values, indices)" in judgement.reason


def test_xla_indices_are_int32(specs):
    spec = specs["top_k"]
    x = np.float32([1, 2])
    attrs = {"k": 1, "largest": True}
    assert _judged(spec, x, attrs, [2], [1], index_dtype=np.int32)[1].verdict == "pass"
    assert _judged(spec, x, attrs, [2], [1], index_dtype=np.int64)[1].verdict == "fail"


@pytest.mark.parametrize("largest, open_ranks", [(1, [2, 3]), (0, [1, 2])])
def test_zeros_of_both_signs_open_only_the_ranks_they_take(specs, largest, open_ranks):
    x = np.float32([-0.0, 2, 0.0, -1, 3])
    case = _case("onnx_top_k", x, {"k": 4, "axis": 0, "largest": largest, "sorted": 1})
    values, indices = expect(specs["onnx_top_k"], case)
    assert np.flatnonzero(values.impl_mask).tolist() == open_ranks
    assert np.flatnonzero(indices.impl_mask).tolist() == open_ranks


def test_a_nan_opens_its_slice_only(specs):
    x = np.float32([[1, np.nan, 2], [3, 4, 5]])
    case = _case("top_k", x, {"k": 2, "largest": True})
    values, _ = expect(specs["top_k"], case)
    assert values.impl_mask.tolist() == [[True, True], [False, False]]


def test_sorted_0_orders_uint64_above_2_63_as_stored(specs):
    """The reordering of a sorted-0 answer keeps uint64 as uint64: as int64, 2**64 - 1 read -1
    and numpy's right answer failed (issue 36)."""
    spec = specs["onnx_top_k"]
    x = np.uint64([1, 0, 2**64 - 1, 3])
    attrs = {"k": 2, "axis": 0, "largest": 1, "sorted": 0}
    assert _judged(spec, x, attrs, [3, 2**64 - 1], [3, 2], "uint64")[1].verdict == "pass"
    assert _judged(spec, x, attrs, [3, 1], [3, 0], "uint64")[1].verdict == "fail"


def test_xla_top_k_of_bool_and_complex():
    """bool ranks false < true; complex entries rank by (real, imag), StableHLO's order, and a
    row holding a NaN part is marked open."""
    from conform.ops.sorting import oracle_top_k

    values, indices = evaluate("top_k", [np.array([False, True, False, True])],
                               {"k": 3, "largest": False})
    assert values.tolist() == [False, False, True] and indices.tolist() == [0, 2, 1]
    x = np.array([[1 + 5j, 2 - 3j, 2 - 1j], [complex(np.nan, 1), 0j, 1j]])
    values, indices = evaluate("top_k", [x[:1]], {"k": 2, "largest": True})
    assert values.tolist() == [[2 - 1j, 2 - 3j]] and indices.tolist() == [[2, 1]]
    held, _ = oracle_top_k(x, k=2, largest=True, open_elements=True)
    assert held.tolist() == [[False, False], [True, True]]
