"""Properties judged beside the per-element bound (harness/judge/properties.py): each kind fails
a case that breaks it and only where the standard defines the element, naming the property,
op, dtype, shape, seed and the offending elements; the loader refuses entries it cannot check."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conform.generators._case import Case
from conform.harness.judge.judging import failure_message, judge_outputs, result_record
from conform.harness.judge.outcome import Outcome
from conform.spec import SpecError, load_spec


def _case(op, inputs, attrs=None, dtype="float32", out_dtype=None):
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype, input_dtypes=(dtype,) * len(inputs),
                out_dtype=out_dtype or dtype, inputs=inputs, attrs=attrs or {}, plan="normal",
                seed=7)


def test_tanh_one_plus_eps_passes_the_bound_and_breaks_the_range(specs):
    x = np.float32([0.5, 10, -10, np.nan])
    good = np.tanh(x)
    assert good[1] == 1
    bad = good.copy()
    bad[1] = np.nextafter(np.float32(1), np.float32(2))     # 2 ULP of tanh(10): within 5
    case = _case("tanh", [x])
    assert judge_outputs(specs["tanh"], case, [good]).verdict == "pass"
    judged = judge_outputs(specs["tanh"], case, [bad])
    assert (judged.verdict, judged.broken, judged.mismatched) == ("fail", "range", 1)
    message = failure_message(case, judged, "b")
    assert message.startswith("tanh [b] dtype=float32 shapes=[[4]] attrs={} plan=normal seed=7")
    assert re.search(re.escape("property range [-1, 1] broken at 1 element(s): out[1]=1.0000001 "
                               "(input 10.0) [source: math: |tanh x| < 1"), message)
    record = result_record(specs["tanh"], case, Outcome("ok", outputs=[bad]), "b")
    assert record["property"] == "range" and record["verdict"] == "fail"


def test_softmax_rows_sum_to_one_within_their_bounds(specs):
    x = np.float32([[0, 1, 2, 3], [4, 4, 4, 4]])
    good = (np.exp(x - 3) / np.exp(x - 3).sum(axis=1, keepdims=True)).astype(np.float32)
    good[1] = np.float32(0.25)
    case = _case("onnx_softmax", [x], {"axis": 1})
    assert judge_outputs(specs["onnx_softmax"], case, [good]).verdict == "pass"
    # every element of row 1 a little high: each may be within its own bound, the sum is not
    drift = good.copy()
    drift[1] = np.float32(0.25) * np.float32(1 + 2 ** -10)
    judged = judge_outputs(specs["onnx_softmax"], case, [drift])
    assert judged.verdict == "fail"   # (the per-element bound, which implies the sum's, sees it)
    from conform.harness.judge.properties import broken_property
    from conform.oracles.expectations import expect

    broken = broken_property(specs["onnx_softmax"], case, [drift], expect(specs["onnx_softmax"], case))
    assert broken.kind == "row_sum" and list(broken.failing) == [4, 5, 6, 7]
    assert "property row_sum 1 broken at 4 element(s): out[1, 0]=0.25024414" in broken.message


def test_relu_is_idempotent_and_monotone_and_its_open_nan_is_left_out(specs):
    x = np.float32([-2, -0.0, 0, 1.5, 3, np.nan])
    case = _case("relu", [x])
    good = np.float32([0, 0, 0, 1.5, 3, 7])   # relu(NaN) is open: any value
    judged = judge_outputs(specs["relu"], case, [good])
    assert (judged.verdict, judged.impl_defined) == ("pass", 1)
    from conform.harness.judge.properties import broken_property
    from conform.oracles.expectations import expect

    answer = expect(specs["relu"], case)
    moved = np.float32([0, 0, 0, 1.5, 1.25, 7])           # relu(3) = 1.25: not a fixed point
    assert broken_property(specs["relu"], case, [moved], answer).kind == "fixed_points"
    backwards = np.float32([0.5, 0, 0, 1.5, 3, 7])         # relu(-2) > relu(-0)
    broken = broken_property(specs["relu"], case, [backwards], answer)
    assert broken.kind == "monotone" and set(broken.failing) == {0, 1}


def test_symmetry_is_checked_only_where_the_case_holds_both_signs(specs):
    from conform.harness.judge.properties import broken_property
    from conform.oracles.expectations import expect

    x = np.float32([2, -2, 5])
    case = _case("abs", [x])
    answer = expect(specs["abs"], case)
    assert broken_property(specs["abs"], case, [np.float32([2, 2, 5])], answer) is None
    broken = broken_property(specs["abs"], case, [np.float32([2, 2.5, 5])], answer)
    assert broken.kind == "symmetry" and set(broken.failing) == {0, 1}


def test_monotone_is_not_checked_under_a_bound_wider_than_half_an_ulp(specs):
    from conform.harness.judge.properties import _monotone

    x = np.float32([1, 2])
    case = _case("tanh", [x])
    found = _monotone("increasing", case=case, actual=np.float64([0.9, 0.8]),
                      defined=np.ones(2, bool), model={"ulp": 5}, subnormals="ieee")
    assert found is None
    found = _monotone("increasing", case=case, actual=np.float64([0.9, 0.8]),
                      defined=np.ones(2, bool), model={"ulp": 0.5}, subnormals="ieee")
    assert list(found) == [0, 1]


TANH_TAIL = "bindings:\n"


@pytest.mark.parametrize("entry, field, fragment", [
    ("{range: [1, -1], source: 'a reversed range'}", "properties.0.range", "is reversed"),
    ("{row_sum: 1, source: 'tanh has no axis at all'}", "properties.0.row_sum", "neither"),
    ("{range: [-1, 1], output: y, source: 'no such output'}", "properties.0.output",
     "'y' names no output"),
    ("{range: [-1, 1], monotone: increasing, source: 'two kinds in one'}", "properties.0",
     "is valid under each of"),
    ("{range: [-1, 1]}", "properties.0", "'source' is a required property"),
])
def test_a_property_the_judge_cannot_check_is_refused_with_its_line(tmp_path, specs, entry,
                                                                   field, fragment):
    text = open(specs["tanh"].path, encoding="utf-8").read().split("\nproperties:")[0]
    path = tmp_path / "tanh.yaml"
    path.write_text(text + f"\nproperties:\n  - {entry}\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.field == field and fragment in str(info.value)
    assert info.value.line == text.count("\n") + 3


def test_unary_properties_need_an_elementwise_op_of_one_input(tmp_path, specs):
    text = open(specs["onnx_softmax"].path, encoding="utf-8").read()
    path = tmp_path / "onnx_softmax.yaml"
    path.write_text(text + "  - {monotone: increasing, source: 'softmax is not element-wise'}\n",
                    encoding="utf-8")
    with pytest.raises(SpecError, match="needs an element-wise op of one input"):
        load_spec(path)
