"""Conditioning-aware value plans (generators/_values.py ``offset``): a large common offset with
a small spread, drawn for the specs whose ``conditioning`` names it; where the text fixes two
passes (NNEF moments), a one-pass variance fails there."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators._values import offset_values
from conform.harness.judge.judging import judge_outputs


@pytest.mark.parametrize("dtype, least", [("float32", 2.0 ** 12), ("float64", 2.0 ** 12),
                                          ("float16", 2.0 ** 7)])
def test_the_offset_plan_has_a_large_offset_and_a_small_spread(dtype, least):
    values = offset_values(np.random.default_rng(1), (64,), dtype).astype(dtype)
    assert abs(values.astype(np.float64).mean()) / values.astype(np.float64).std() >= least
    assert np.unique(values).size > 8   # the spread survives the rounding into the dtype


def test_a_one_pass_variance_fails_where_the_text_fixes_two_passes(specs):
    from conform.generators import draw_plans, materialize
    from conform.ops.nnef_axis_normalization import numpy_moments

    spec = specs["nnef_moments"]
    assert spec.conditioning["one_pass"] == "forbidden"
    cases = [materialize(spec, "float32", i, plan) for i, plan in
             enumerate(draw_plans(spec, "float32", count=20, seed=0)) if plan[1] == "offset"]
    assert len(cases) >= 3
    verdicts = []
    for case in cases:
        (x,), axes = case.inputs, tuple(sorted(case.attrs["axes"]))
        mean, variance = numpy_moments(x, axes=axes)
        assert judge_outputs(spec, case, [mean, variance]).verdict == "pass"
        one_pass = np.mean(x * x, axis=axes, keepdims=True) - np.square(mean)
        verdicts.append(judge_outputs(spec, case, [mean, one_pass]).verdict)
    assert "fail" in verdicts, verdicts


def test_only_specs_naming_the_plan_draw_it(specs):
    from conform.generators import draw_plans

    assert not any(p[1] == "offset" for p in draw_plans(specs["exp"], "float32", count=20, seed=0))
    named = {name for name, spec in specs.items() if "offset" in spec.conditioning.get("plans", ())}
    assert {"nnef_moments", "onnx_layer_normalization", "onnx_softmax"} <= named


def test_the_cancel_plan_makes_sums_that_nearly_cancel(specs):
    from conform.generators._values import cancelling_values

    x = cancelling_values(np.random.default_rng(2), (64,), "float32", -10, 10).astype(np.float32)
    wide = x.astype(np.float64)
    assert np.abs(wide).sum() / abs(wide.sum()) >= 2.0 ** 16   # the sum's condition number
    assert "cancel" in specs["onnx_reduce_sum"].conditioning["plans"]
