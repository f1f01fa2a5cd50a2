"""Consistency in open regions (harness/judge/consistency.py, generators/_consistency.py): the
same values answered differently at different positions are ``inconsistent``, a failure; either
answer alone stays ``impl_defined``. The suite draws the cases that put the same values in
several places, and onnxruntime's ArgMax is run on them."""
from __future__ import annotations

import numpy as np
import pytest

from conform import verdicts
from conform.generators import generate_cases
from conform.generators._case import Case
from conform.harness.judge.judging import judge_outputs, result_record
from conform.harness.judge.outcome import Outcome


def _case(op, inputs, attrs=None, dtype="float32", out_dtype=None):
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype, input_dtypes=(dtype,) * len(inputs),
                out_dtype=out_dtype or dtype, inputs=inputs, attrs=attrs or {}, plan="normal",
                seed=3)


def test_inconsistent_is_a_problem_verdict():
    assert "inconsistent" in verdicts.CORE and "inconsistent" in verdicts.PROBLEMS
    assert "inconsistent" in verdicts.JUDGED


def test_relu_of_nan_must_not_depend_on_the_position(specs):
    x = np.float32([np.nan, 1, np.nan, -1, np.nan])
    case = _case("relu", [x])
    either = [np.float32([np.nan, 1, np.nan, 0, np.nan]), np.float32([0, 1, 0, 0, 0])]
    for actual in either:   # judged on 1 and -1, the three NaNs open
        judged = judge_outputs(specs["relu"], case, [actual])
        assert (judged.verdict, judged.checked, judged.impl_defined) == ("pass", 2, 3)
    mixed = np.float32([np.nan, 1, 0, 0, np.nan])
    judged = judge_outputs(specs["relu"], case, [mixed])
    assert judged.verdict == "inconsistent" and list(judged.failing) == [0, 2, 4]
    record = result_record(specs["relu"], case, Outcome("ok", outputs=[mixed]), "b")
    assert record["verdict"] == "inconsistent"
    assert record["message"].startswith(
        "relu [b] dtype=float32 shapes=[[5]] attrs={} plan=normal seed=3 (case relu.float32.0): "
        "inconsistent in an implementation-defined region: the same inputs get different "
        "answers at different positions (aligned): out[0]=nan (inputs nan), out[2]=0.0 (inputs "
        "nan), out[4]=nan (inputs nan)")


def test_argmax_compares_the_values_it_selects_not_the_indices(specs):
    rows = np.float32([[np.nan, 1, 2], [1, np.nan, 2], [2, 1, np.nan]])
    case = _case("onnx_arg_max", [rows], {"axis": 1, "keepdims": 0, "select_last_index": 0},
                 out_dtype="int64")
    nan_wins = np.int64([0, 1, 2])      # the NaN every time: consistent
    number_wins = np.int64([2, 2, 0])   # the 2 every time: consistent
    for actual in (nan_wins, number_wins):
        assert judge_outputs(specs["onnx_arg_max"], case, [actual]).verdict == "impl_defined"
    leading_nan_wins = np.int64([0, 2, 0])   # a loop whose first element is its initial best
    judged = judge_outputs(specs["onnx_arg_max"], case, [leading_nan_wins])
    assert judged.verdict == "inconsistent"
    assert "indices[0]=0 (selects nan)" in judged.reason and "(selects 2.0)" in judged.reason


def test_the_suite_draws_the_same_values_in_permuted_positions(specs):
    relu = [c for c in generate_cases(specs["relu"], "float32", count=3, seed=0)
            if c.plan == "consistency"]
    (case,) = relu
    x = case.inputs[0]
    third = x.size // 3
    assert np.array_equal(np.sort(x[:third]), np.sort(x[third:2 * third]), equal_nan=True)
    assert np.array_equal(x[:third], x[2 * third:][::-1], equal_nan=True)
    argmax = {c.id.rsplit(".", 1)[1]: c for c in generate_cases(specs["onnx_arg_max"], "float32",
                                                                 count=20, seed=0)
              if c.plan == "consistency"}
    assert set(argmax) == {"consistency", "consistency_leading"}
    for name, case in argmax.items():
        data, axis = case.inputs[0], case.attrs["axis"]
        slices = np.moveaxis(data, axis, -1).reshape(-1, data.shape[axis])
        nan_at = np.flatnonzero(np.isnan(slices)) % data.shape[axis]
        assert len({np.sort(row).tobytes() for row in slices}) == 1   # one multiset
        assert (0 in nan_at) == (name == "consistency_leading")
        assert set(nan_at) >= set(range(1, data.shape[axis]))


@pytest.mark.parametrize("leading, verdict", [(False, "impl_defined"), (True, "inconsistent")])
def test_onnxruntime_argmax_answers_a_leading_nan_differently(specs, leading, verdict):
    """A finding: onnxruntime's ArgMax returns a NaN's index where the NaN leads its slice and a
    number's index elsewhere (the same multiset, another answer)."""
    pytest.importorskip("onnxruntime")
    from conform.harness.backends.models import run_case
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    spec = specs["onnx_arg_max"]
    name = "consistency_leading" if leading else "consistency"
    case = next(c for c in generate_cases(spec, "float32", count=20, seed=0)
                if c.id.endswith("." + name))
    outputs = run_case(OnnxRuntimeBackend(), spec, case)
    assert judge_outputs(spec, case, outputs).verdict == verdict


def test_a_drawn_tensor_without_elements_gives_no_slice_case(specs):
    from conform.generators._consistency import consistency_cases

    empty = _case("onnx_arg_max", [np.zeros((0, 3), np.float32)],
                  {"axis": 1, "keepdims": 1, "select_last_index": 0}, out_dtype="int64")
    assert consistency_cases(specs["onnx_arg_max"], "float32", [empty], seed=0) == []


def test_an_element_wise_result_must_not_depend_on_its_position(specs):
    """Defined elements too: the same input at element 2 and at element 9 (a vectorised body
    and its remainder) gets one result, or the case fails, naming the ``position`` property,
    even where both results are within the bound."""
    x = np.float32([0.5, 1, 2, 3, 4, 5, 6, 7, 8, 2, 0.5])
    case = _case("erf", [x])
    exact = np.float32([0.5204999, 0.8427008, 0.9953223, 0.9999779, 1, 1, 1, 1, 1, 0.9953223,
                        0.5204999])
    assert judge_outputs(specs["erf"], case, [exact]).verdict == "pass"
    tail_worse = exact.copy()
    tail_worse[8:] = np.nextafter(tail_worse[8:], np.float32(0))   # 1 ULP: within the bound
    judged = judge_outputs(specs["erf"], case, [tail_worse])
    assert judged.verdict == "fail" and judged.broken == "position"
    assert sorted(judged.failing) == [0, 2, 9, 10]
    assert judged.reason.startswith("property position broken at 4 element(s): position "
                                    "dependent: the same inputs get different results "
                                    "at different positions of an element-wise op's tensor: "
                                    "out[0]=0.5204999 (inputs 0.5), out[10]=0.5204998 "
                                    "(inputs 0.5)")


def test_the_critical_case_repeats_its_head_at_its_tail(specs):
    from conform.generators._critical import TWINS, critical_cases

    (case,) = critical_cases(specs["erf"], "float32", seed=0)
    x = case.inputs[0]
    assert np.array_equal(x[-TWINS:], x[:TWINS][::-1]) and x.size > 16 * TWINS
