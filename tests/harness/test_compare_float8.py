"""The judge on the float8 formats: overflow to inf or NaN by the format's traits, saturation
where a model declares it, NaN, and signed zeros in formats without -0; and the existing
formats unchanged."""
from __future__ import annotations

import numpy as np
import pytest

from conform.harness.judge.compare import compare, round_to_dtype
from conform.dtypes import np_dtype

EXACT = {"exact": True, "why": "correctly rounded conversion"}
SATURATING = {"exact": True, "saturate": True, "why": "a saturating conversion"}
ULP_HALF = {"ulp": 0.5, "why": "correctly rounded"}


def f8(name, *values):
    return np.array(values, np.float64).astype(np_dtype(name))


def verdict(name, actual, expected, model=EXACT):
    return compare(f8(name, *actual), np.array(expected, np.float64), out_dtype=name,
                   model=model).verdict


@pytest.mark.parametrize("name, expected, right, wrong", [
    # e4m3fn: 464 is the tie between 448 (even) and the missing 480: it rounds to 448;
    # past it the result overflows to NaN (there is no infinity)
    ("float8_e4m3fn", 464.0, 448.0, np.nan),
    ("float8_e4m3fn", 465.0, np.nan, 448.0),
    ("float8_e4m3fn", -1e6, np.nan, -448.0),
    ("float8_e4m3fn", np.inf, np.nan, 448.0),
    # e4m3fnuz: 248 is the tie between 240 (odd) and 256: it overflows, to the one NaN
    ("float8_e4m3fnuz", 248.0, np.nan, 240.0),
    ("float8_e4m3fnuz", 247.0, 240.0, np.nan),
    # e5m2: IEEE-like, overflow is infinity of the sign, and NaN is wrong
    ("float8_e5m2", 61440.0, np.inf, np.nan),
    ("float8_e5m2", -1e6, -np.inf, np.nan),
    ("float8_e5m2", 61439.0, 57344.0, np.inf),
    ("float8_e5m2fnuz", 61440.0, np.nan, 57344.0),
    ("float8_e5m2fnuz", -np.inf, np.nan, -57344.0),
    ("float8_e4m3fn", 1 + 2.0 ** -4 + 2.0 ** -40, 1.125, 1.0),   # ml_dtypes' double rounding
])
def test_exact_overflow_follows_the_format(name, expected, right, wrong):
    assert verdict(name, [right], [expected]) == "pass"
    assert verdict(name, [wrong], [expected]) == "fail"


def test_a_nan_reference_wants_nan_in_every_format():
    for name in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"):
        assert verdict(name, [np.nan], [np.nan]) == "pass"
        assert verdict(name, [0.0], [np.nan]) == "fail"


def test_signed_zero_where_the_format_has_one():
    assert verdict("float8_e4m3fn", [0.0], [-0.0]) == "fail"
    assert verdict("float8_e5m2", [-0.0], [-0.0]) == "pass"
    # fnuz: there is no -0 to produce; a negative reference zero (or a negative value that
    # rounds to zero) is +0
    for name in ("float8_e4m3fnuz", "float8_e5m2fnuz"):
        assert verdict(name, [0.0], [-0.0]) == "pass"
        assert verdict(name, [0.0], [-1e-30]) == "pass"
        assert verdict(name, [0.0], [-0.0], ULP_HALF) == "pass"
        assert round_to_dtype(np.array([-0.0]), name).view(np.uint8)[0] == 0


def test_saturation_declared_by_the_model():
    assert verdict("float8_e4m3fn", [448.0], [1e6], SATURATING) == "pass"
    assert verdict("float8_e4m3fn", [np.nan], [1e6], SATURATING) == "fail"
    assert verdict("float8_e4m3fn", [-448.0], [-np.inf], SATURATING) == "pass"
    assert verdict("float8_e5m2", [57344.0], [np.inf], SATURATING) == "pass"
    assert verdict("float8_e5m2", [np.inf], [np.inf], SATURATING) == "fail"
    assert verdict("float8_e5m2", [np.nan], [np.nan], SATURATING) == "pass"
    assert verdict("float8_e4m3fn", [np.nan], [1e6], {**ULP_HALF, "saturate": True}) == "fail"
    assert verdict("float8_e4m3fn", [448.0], [1e6], {**ULP_HALF, "saturate": True}) == "pass"


def test_ulp_model_measures_a_nan_overflow_as_the_value_past_the_largest():
    # e4m3fn: NaN stands for 480 (the value after 448); ULP there is 32
    judged = compare(f8("float8_e4m3fn", np.nan), np.array([470.0]), out_dtype="float8_e4m3fn",
                     model=ULP_HALF)
    assert judged.verdict == "pass" and judged.max_error == pytest.approx(10 / 32)
    assert verdict("float8_e4m3fn", [np.nan], [455.0], ULP_HALF) == "fail"      # 25/32 ULP
    assert verdict("float8_e4m3fn", [np.nan], [1000.0], ULP_HALF) == "pass"     # beyond 480
    assert verdict("float8_e4m3fn", [np.nan], [np.inf], ULP_HALF) == "pass"
    assert verdict("float8_e4m3fn", [448.0], [np.inf], ULP_HALF) == "fail"
    judged = compare(f8("float8_e4m3fn", np.nan), np.array([1.0]), out_dtype="float8_e4m3fn",
                     model=ULP_HALF)
    assert judged.verdict == "fail" and judged.max_error > 100
    # e5m2 is IEEE-like: NaN for a finite reference is a special-value failure, inf passes
    assert verdict("float8_e5m2", [np.nan], [1e6], ULP_HALF) == "fail"
    assert verdict("float8_e5m2", [np.inf], [1e6], ULP_HALF) == "pass"


def test_existing_formats_keep_their_overflow_rules():
    assert compare(np.float16([np.inf]), np.array([65520.0]), out_dtype="float16",
                   model=ULP_HALF).verdict == "pass"
    assert compare(np.float16([np.inf]), np.array([65519.0]), out_dtype="float16",
                   model=ULP_HALF).verdict == "fail"
    assert compare(np.float16([np.nan]), np.array([1e6]), out_dtype="float16",
                   model=ULP_HALF).verdict == "fail"
    assert compare(np.float32([0.0]), np.array([-0.0]), out_dtype="float32",
                   model=EXACT).verdict == "fail"


def test_four_bit_integers_are_judged_exactly():
    out = np.array([3, -8], np_dtype("int4"))
    assert compare(out, np.array([3, -8]), out_dtype="int4", model=EXACT).verdict == "pass"
    assert compare(out, np.array([3, 7]), out_dtype="int4", model=EXACT).verdict == "fail"
    wrong_type = np.array([3, -8], np.int8)
    assert compare(wrong_type, np.array([3, -8]), out_dtype="int4", model=EXACT).verdict == "fail"
