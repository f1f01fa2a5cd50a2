"""The error-bound toolkit (``conform.ops.error_bounds``): gamma_n at its edges, the underflow
term under each subnormal policy, overflow detection, the judged bound, and the policy reaching a
bound hook that declares it (and not one that does not)."""
from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from conform.generators._case import Case
from conform.harness.judge.judging import flushed_expectation, judge_outputs
from conform.ops.error_bounds import (
    exceeds_max_finite,
    gamma,
    grown,
    judged_bound,
    reaches_max_finite,
    underflow_term,
)
from conform.ops.onnx_softmax import softmax_bound
from conform.oracles.expectations import expect

U16, U32 = 2.0 ** -11, 2.0 ** -24


# ------------------------------------------------------------------ gamma_n and grown

def test_gamma_is_highams_formula_below_one():
    assert gamma(0, U32) == 0.0
    assert gamma(1, U32) == U32 / (1 - U32)
    assert gamma(100, U16) == 100 * U16 / (1 - 100 * U16)
    assert gamma(2047, U16) == 2047 * U16 / (1 - 2047 * U16) > 2000   # just below n u = 1


@pytest.mark.parametrize("n", [2048, 2049, 10 ** 6])
def test_gamma_is_infinite_where_n_u_reaches_one(n):
    assert gamma(n, U16) == math.inf


def test_the_judge_bounds_an_accumulation_by_n_u_where_n_u_reaches_one():
    """Where gamma_n is infinite, Jeannerod & Rump's n u S still bounds a sum of n terms."""
    from conform.dtypes import np_dtype
    from conform.harness.judge.compare import compare

    model = {"accumulation": {"final_ulp": 0.5}, "why": "test"}
    expected, magnitudes = np.array([1.0, 3.0]), np.array([1.0, 3.0])
    verdicts = {(a, n): compare(np.array([a, 3.0]).astype(np_dtype("bfloat16")), expected,
                                out_dtype="bfloat16", model=model,
                                accumulation=(magnitudes, n)).verdict
                for a in (40.0, 1.5) for n in (128, 256, 300)}
    # bfloat16: u = 2**-8; n u S = 1 at n = 256, so 1.5 (0.5 off) passes and 40 fails
    assert verdicts == {(40.0, 128): "fail", (40.0, 256): "fail", (40.0, 300): "fail",
                        (1.5, 128): "pass", (1.5, 256): "pass", (1.5, 300): "pass"}


def test_gamma_of_an_array_of_lengths_matches_the_scalar_one_element_by_element():
    lengths = np.array([0, 1, 5, 2047, 2048, 4000])
    got = gamma(lengths, U16)
    assert got.tolist() == [gamma(int(n), U16) for n in lengths]
    assert np.isinf(got[-2:]).all() and np.isfinite(got[:-2]).all()


def test_grown_lies_between_k_u_and_gamma():
    for k in (1, 3, 50, 1000):
        assert k * U32 < grown(k, U32) <= gamma(k, U32)
    assert grown(0.5, U32) < grown(1, U32)        # non-integral k: an error through exp
    assert grown(np.array([1, 2]), U32).shape == (2,)


# ------------------------------------------------------------------ the underflow term

def test_the_ieee_underflow_term_is_eta_per_correctly_rounded_result():
    eta16 = 2.0 ** (-14 - 11)                        # 2**(emin - p): half the smallest subnormal
    assert underflow_term(1, "float16") == eta16
    assert underflow_term(6, "float16") == 6 * eta16
    assert underflow_term(4, "float32", ulps=3) == 12 * 2.0 ** -149   # a function within 3 ULPs
    counts = np.array([0.0, 2.0, 1e300])
    # eta multiplied last: 2**-1075 alone is 0 in float64, 1e300 of them are not
    assert underflow_term(counts, "float64").tolist() == [0.0, 2.0 ** -1074, 5e299 * 2.0 ** -1074]
    assert 1e300 * 2.0 ** -1075 == 0.0


def test_the_ftz_underflow_term_allows_a_flushed_result_per_rounding():
    ftz = underflow_term(5, "float32", subnormals="ftz")
    assert ftz == 5 * (2.0 ** -126 + 0.5 * 2.0 ** -149)
    assert ftz > 5 * 2.0 ** -126 > underflow_term(5, "float32")


def test_an_unknown_subnormal_policy_is_refused_by_name():
    with pytest.raises(ValueError, match=re.escape("subnormals='daz' is not one of ('ieee', 'ftz')")):
        underflow_term(1, "float32", subnormals="daz")


# ------------------------------------------------------------------ overflow

def test_reaches_max_finite_counts_the_evaluations_relative_error():
    top = 65504.0
    assert reaches_max_finite(np.array([top, 65503.0, np.inf, 0.0]), "float16").tolist() == \
        [True, False, True, False]
    g = gamma(10, U16)
    edge = top / (1 + g)
    assert bool(reaches_max_finite(edge * (1 + 2.0 ** -50), "float16", gamma_n=g))
    assert not reaches_max_finite(edge * (1 - 2.0 ** -40), "float16", gamma_n=g)
    assert bool(reaches_max_finite(1.0, "float16", gamma_n=gamma(4096, U16)))   # n u >= 1


def test_exceeds_max_finite_marks_finite_values_past_the_type_only():
    big = float(np.finfo(np.float32).max)
    values = np.array([big, big * 1.0000001, -1e39, np.inf, -np.inf, np.nan, 0.0])
    assert exceeds_max_finite(values, "float32").tolist() == \
        [False, True, True, False, False, False, False]


def test_judged_bound_settles_special_values_and_marks_unbounded_elements():
    expected = np.array([[1.0, np.nan], [np.inf, 4.0]])
    got = judged_bound(1e-3, expected, unbounded=np.array([False, True]))
    assert got.shape == (2, 2)
    assert got[0, 0] == 1e-3 and np.isinf(got[1, 0]) and np.isnan(got[:, 1]).all()
    assert judged_bound(np.ones(2), np.array([np.nan, 1.0]), special=0.0).tolist() == [0.0, 1.0]
    assert judged_bound(np.ones(2), unbounded=np.array([True, False])).tolist()[1] == 1.0


# ------------------------------------------------------------------ the policy in a bound hook

def _softmax_case(x):
    dtype = str(x.dtype)
    return Case(id=f"onnx_softmax.{dtype}.0", op="onnx_softmax", dtype=dtype,
                input_dtypes=(dtype,), out_dtype=dtype, inputs=[x], attrs={"axis": -1},
                plan="normal", seed=1)


def _with_hook(spec, hook):
    """``spec`` whose op definition has ``hook`` as its ``error_bound``."""
    changed = dataclasses.replace(spec)
    changed.__dict__["definition"] = dataclasses.replace(spec.definition, error_bound=hook)
    return changed


def _policy_aware(seen):
    """Softmax's bound plus, per element, the underflow term of 8 roundings under the policy."""
    def hook(inputs, attrs, outputs, *, subnormals, **kw):
        seen.append(subnormals)
        (bound,) = softmax_bound(inputs, attrs, outputs, **kw)
        return (bound + underflow_term(8, kw["out_dtype"], ulps=1, subnormals=subnormals),)
    return hook


def test_a_hook_declaring_subnormals_is_told_the_policy_of_the_reference_it_bounds(specs):
    seen = []
    spec = _with_hook(specs["onnx_softmax"], _policy_aware(seen))
    case = _softmax_case(np.float16([0.0, -9.25, -1.0]))   # no subnormal input
    (ieee,) = expect(spec, case)
    assert seen == ["ieee"]
    (flushed,) = flushed_expectation(spec, case)          # computed though no input is subnormal
    assert seen == ["ieee", "ftz"]
    assert (flushed[1][0] - ieee.accumulation[0] > 8 * 2.0 ** -14 * 0.99).all()


def test_a_hook_without_the_keyword_is_called_as_before(specs):
    spec = specs["onnx_softmax"]
    assert not spec.definition.error_bound_takes_subnormals
    case = _softmax_case(np.float16([0.0, -9.25, -1.0]))
    assert flushed_expectation(spec, case) is None        # nothing to flush, nothing told
    (part,) = expect(spec, case, subnormals="ftz")        # (softmax_bound takes no subnormals)
    assert np.isfinite(part.accumulation[0]).all()


def test_the_ftz_bound_passes_what_only_a_flushing_evaluation_explains(specs):
    spec = _with_hook(specs["onnx_softmax"], _policy_aware([]))
    x = np.float16([0.0, -9.25, -1.0])
    case = _softmax_case(x)
    (part,) = expect(spec, case)
    actual = part.expected.copy()
    actual[1] += 2.0 ** -15            # ~256 ULPs of y[1] ~ 9.6e-5: past the ieee bound
    actual = actual.astype(np.float16)
    assert judge_outputs(spec, case, [actual], subnormals="ieee").verdict == "fail"
    judged = judge_outputs(spec, case, [actual], subnormals="ftz")
    assert judged.verdict == "pass" and judged.subnormal_excused == 1
