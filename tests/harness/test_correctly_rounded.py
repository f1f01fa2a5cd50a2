"""The correctly_rounded error model on hand-worked cases: a tie rounded away from zero fails
where the 0.5-ULP bound let it pass, the even neighbour passes, and the NaN, signed-zero,
overflow and ftz rules hold as for the other models."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conform.harness.judge.compare import compare, describe_model

ROUNDED = {"correctly_rounded": True, "why": "IEEE 754-2019 §5.4.1: correctly rounded"}
ULP_HALF = {"ulp": 0.5, "why": "IEEE 754 correctly rounded"}


def judge(actual, expected, dtype, model=ROUNDED, **kw):
    return compare(np.array(actual, dtype=ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype),
                   np.array(expected, np.float64), out_dtype=dtype, model=model, **kw)


@pytest.mark.parametrize("dtype, midpoint, even, away", [
    ("float16", 2049.0, 2048.0, 2050.0),                  # between 2048 and 2050 (spacing 2)
    ("float16", -2051.0, -2052.0, -2052.0),               # here the even one is away: both agree
    ("bfloat16", 1.0 + 2.0 ** -8, 1.0, 1.0 + 2.0 ** -7),
    ("float32", 1.0 + 2.0 ** -24, 1.0, 1.0 + 2.0 ** -23),
    ("float32", 3 * 2.0 ** -150, 2.0 ** -148, 2.0 ** -148),   # subnormal tie: 1.5 * min -> 2 * min
    ("float32", 2.0 ** -150, 0.0, 2.0 ** -149),           # half the smallest subnormal -> +0
])
def test_a_tie_rounded_away_fails_and_the_even_neighbour_passes(dtype, midpoint, even, away):
    assert judge([even], [midpoint], dtype).verdict == "pass"
    wrong = judge([away], [midpoint], dtype)
    if away == even:
        assert wrong.verdict == "pass"
        return
    assert wrong.verdict == "fail" and wrong.mismatched == 1
    assert wrong.max_error == 1.0 and wrong.bound == 0.0     # one ULP off the correct rounding
    assert judge([away], [midpoint], dtype, model=ULP_HALF).verdict == "pass"   # what it replaces


def test_off_the_tie_only_the_nearest_passes():
    assert judge([2050.0], [2049.0 + 2.0 ** -20], "float16").verdict == "pass"
    assert judge([2048.0], [2049.0 + 2.0 ** -20], "float16").verdict == "fail"


@pytest.mark.parametrize("actual, expected, verdict", [
    (np.nan, np.nan, "pass"),
    (-np.nan, np.nan, "pass"),            # any NaN matches a NaN
    (1.0, np.nan, "fail"),
    (np.nan, 1.0, "fail"),
    (-0.0, -0.0, "pass"),
    (0.0, -0.0, "fail"),                  # signed zeros strict
    (-0.0, 0.0, "fail"),
    (-0.0, -(2.0 ** -160), "pass"),       # a negative result that rounds to zero is -0
    (0.0, -(2.0 ** -160), "fail"),
    (np.inf, np.inf, "pass"),
    (-np.inf, np.inf, "fail"),
])
def test_special_values_and_zero_signs(actual, expected, verdict):
    judged = judge([actual], [expected], "float32")
    assert judged.verdict == verdict
    if verdict == "fail":
        assert "special value" in judged.reason


@pytest.mark.parametrize("expected, actual, verdict", [
    (65520.0, np.inf, "pass"),        # max + half a ULP is a tie: to even (the infinity)
    (65520.0, 65504.0, "fail"),
    (65519.99, 65504.0, "pass"),
    (65519.99, np.inf, "fail"),
    (1e6, np.inf, "pass"),
])
def test_overflow_is_what_the_rounding_gives(expected, actual, verdict):
    assert judge([actual], [expected], "float16").verdict == verdict


def test_saturate_makes_the_largest_finite_value_the_answer():
    model = {**ROUNDED, "saturate": True}
    assert judge([448.0], [1e9], "float8_e4m3fn", model).verdict == "pass"
    assert judge([np.nan], [1e9], "float8_e4m3fn", model).verdict == "fail"


def test_ftz_accepts_a_flushed_result_and_a_flushed_input_only_under_ftz():
    tiny = 3 * 2.0 ** -149
    assert judge([0.0], [tiny], "float32").verdict == "fail"
    flushed = judge([0.0], [tiny], "float32", subnormals="ftz")
    assert flushed.verdict == "pass" and flushed.subnormal_excused == 1
    assert judge([-0.0], [tiny], "float32", subnormals="ftz").verdict == "pass"   # either sign
    # an input read as zero: 1 + tiny is 1 either way, but tiny * 2**30 is not
    read_as_zero = dict(subnormals="ftz", flushed=(np.array([0.0]), None))
    assert judge([0.0], [tiny * 2.0 ** 30], "float32", **read_as_zero).verdict == "pass"
    assert judge([0.0], [tiny * 2.0 ** 30], "float32").verdict == "fail"
    # a normal result that comes out as zero is not excused
    assert judge([0.0], [1.0], "float32", subnormals="ftz").verdict == "fail"


def test_the_model_is_named_and_its_unit_is_ulp():
    assert describe_model(ROUNDED) == "correctly_rounded"
    judged = judge([2050.0, 1.0], [2049.0, 1.0], "float16")
    assert judged.model == "correctly_rounded" and judged.unit == "ulp"
    # the worst element shows the correctly rounded value (2049 ties to the even 2048), the one
    # the backend had to return, not the exact result
    assert judged.worst["index"] == [0] and judged.worst["expected"] == 2048.0
    assert judged.histogram[-1] == 1 and judged.histogram[0] == 1
