"""The OCP Microscaling formats (FP4 E2M1, E8M0) and ONNX's 2-bit integers: every encoding
decoded from the spec's formula against the traits and against ml_dtypes, the roundings
(``round_to_format``, ``round_to_scale``) against a nearest-value search over those encodings,
the named edge values, and the generators' draws and edge values per format (no zero and no
negative value ever asked of E8M0)."""
from __future__ import annotations

import numpy as np
import pytest

from conform.dtypes import (FLOAT_FORMATS, AbsentValue, int_info, is_integer, np_dtype,
                            resolve_edge_value, round_to_format, round_to_scale)
from conform.generators._values import DEFAULT_EDGES, PLANS, edge_values, fill, value_range


def e2m1(code: int) -> float:
    """OCP MX v1.0 FP4 E2M1: sign bit 3, exponent bits 2-1 (bias 1), mantissa bit 0; exponent 0
    is subnormal, (-1)**S * 2**(1 - bias) * (0 + M / 2); no infinities, no NaN."""
    sign = -1.0 if code & 0b1000 else 1.0
    exponent, mantissa = (code >> 1) & 0b11, code & 1
    if exponent == 0:
        return sign * mantissa / 2
    return sign * 2.0 ** (exponent - 1) * (1 + mantissa / 2)


def e8m0(code: int) -> float:
    """OCP MX v1.0 scale format E8M0: 2**(code - 127), 0xFF is NaN; no sign, no zero."""
    return np.nan if code == 0xFF else 2.0 ** (code - 127)


def test_every_fp4_encoding_decodes_as_the_spec_says_and_gives_the_traits():
    values = np.array([e2m1(c) for c in range(16)])
    ml = np.arange(16, dtype=np.uint8).view(np_dtype("float4_e2m1fn")).astype(np.float64)
    assert np.array_equal(values, ml) and np.array_equal(np.signbit(values), np.signbit(ml))
    fmt = FLOAT_FORMATS["float4_e2m1fn"]
    assert sorted(set(np.abs(values))) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert (fmt.max_finite, fmt.min_normal, fmt.min_subnormal, fmt.below_max_finite) == \
        (values.max(), 1.0, 0.5, 4.0)
    assert (fmt.has_inf, fmt.has_nan, fmt.has_negative_zero, fmt.has_zero, fmt.signed) == \
        (False, False, True, True, True)
    assert fmt.bits == 4 and fmt.nan_encoding == "none" and fmt.has_subnormals


def test_every_e8m0_encoding_decodes_as_the_spec_says_and_gives_the_traits():
    values = np.array([e8m0(c) for c in range(256)])
    ml = np.arange(256, dtype=np.uint16).astype(np.uint8).view(np_dtype("float8_e8m0fnu"))
    assert np.array_equal(values, ml.astype(np.float64), equal_nan=True)
    fmt = FLOAT_FORMATS["float8_e8m0fnu"]
    finite = values[~np.isnan(values)]
    assert (fmt.max_finite, fmt.min_normal, fmt.below_max_finite) == \
        (finite.max(), finite.min(), 2.0 ** 126)
    assert finite.min() == 2.0 ** -127 and finite.max() == 2.0 ** 127 and np.isnan(values[255])
    assert (fmt.has_inf, fmt.has_nan, fmt.has_negative_zero, fmt.has_zero, fmt.signed) == \
        (False, True, False, False, False)
    assert fmt.nan_encoding == "exponent_all_ones" and not fmt.has_subnormals


def test_fp4_rounding_is_the_nearest_encoding_ties_to_even_and_nan_past_the_range():
    codes = np.arange(8)   # the non-negative encodings; even mantissa = even code
    values = np.array([e2m1(c) for c in codes])
    x = np.random.default_rng(0).uniform(0, 6.99, 4000)
    x = np.concatenate([x, (values[:-1] + values[1:]) / 2])   # every midpoint
    distance = np.abs(x[:, None] - values[None, :])
    best = distance.min(axis=1, keepdims=True)
    candidates = np.where(distance == best, codes, 99)
    even = np.where(candidates % 2 == 0, candidates, 99).min(axis=1)
    want = values[np.where(even < 99, even, candidates.min(axis=1))]
    fmt = FLOAT_FORMATS["float4_e2m1fn"]
    assert np.array_equal(round_to_format(x, fmt), want)
    assert np.array_equal(round_to_format(-x, fmt), -want)
    assert np.isnan(round_to_format(np.array([7.0, -7.0, np.inf, np.nan]), fmt)).all()
    assert round_to_format(np.array([6.99]), fmt)[0] == 6.0   # below the midpoint 7 of 6 and 8


@pytest.mark.parametrize("mode", ["up", "down", "nearest"])
def test_e8m0_rounding_modes_against_a_search_over_the_encodings(mode):
    fmt = FLOAT_FORMATS["float8_e8m0fnu"]
    powers = np.array([e8m0(c) for c in range(255)])
    rng = np.random.default_rng(1)
    x = np.exp2(rng.uniform(-127, 127, 3000))
    x = np.concatenate([x, powers, 1.5 * powers[:-1]])   # exact values and the ties
    below = powers[np.searchsorted(powers, x, side="right") - 1]
    above = powers[np.minimum(np.searchsorted(powers, x, side="left"), 254)]
    want = {"up": above, "down": below,
            "nearest": np.where(x - below >= above - x, above, below)}[mode]
    assert np.array_equal(round_to_scale(x, fmt, mode=mode), want)


def test_e8m0_out_of_range_saturates_or_gives_nan():
    fmt = FLOAT_FORMATS["float8_e8m0fnu"]
    x = np.array([0.0, 2.0 ** -130, np.inf, 2.0 ** 130, np.nan, -1.0])
    got = round_to_scale(x, fmt, mode="up", saturate=True)
    assert got[:4].tolist() == [2.0 ** -127, 2.0 ** -127, 2.0 ** 127, 2.0 ** 127]
    assert np.isnan(got[4:]).all()
    assert np.isnan(round_to_scale(x, fmt, mode="nearest", saturate=False)).all()
    # round_to_format of a scale format: to nearest, ties up
    assert round_to_format(np.array([3.0, 5.0, 6.0]), fmt).tolist() == [4.0, 4.0, 8.0]


def test_named_edge_values_the_new_formats_lack_are_absent():
    for value, dtype in [("inf", "float4_e2m1fn"), ("nan", "float4_e2m1fn"),
                         ("zero", "float8_e8m0fnu"), ("-one", "float8_e8m0fnu"),
                         ("-zero", "float8_e8m0fnu"), ("min_subnormal", "float8_e8m0fnu"),
                         (0.0, "float8_e8m0fnu"), (-3, "float8_e8m0fnu"), ("-zero", "int2")]:
        with pytest.raises(AbsentValue):
            resolve_edge_value(value, dtype)
    assert resolve_edge_value("-max_finite", "float4_e2m1fn") == -6.0
    assert resolve_edge_value("below_max_finite", "float8_e8m0fnu") == 2.0 ** 126
    assert resolve_edge_value("int_min", "int2") == -2 and resolve_edge_value("int_max", "uint2") == 3


def test_two_bit_integers():
    assert is_integer("int2") and is_integer("uint2") and not is_integer("float4_e2m1fn")
    assert (int_info("int2").min, int_info("int2").max, int_info("uint2").max) == (-2, 1, 3)
    assert int_info("int2").bits == int_info("uint2").bits == 2


class _Spec:
    """What the value plans read of a spec: no overrides, so the defaults apply."""
    values, input_values, edge_values = {}, {}, {}


@pytest.mark.parametrize("dtype", ["float4_e2m1fn", "float8_e8m0fnu", "int2", "uint2"])
def test_each_format_draws_its_own_edges_and_values(dtype):
    spec = _Spec()
    edges = edge_values(spec, dtype)
    assert edges.dtype == np_dtype(dtype) and len(edges)
    wide = edges.astype(np.float64)
    if dtype == "float8_e8m0fnu":   # no zero, no sign, no subnormals: 1, 2**-127, 2**127, NaN
        assert set(wide[~np.isnan(wide)]) == {1.0, 2.0 ** -127, 2.0 ** 127}
        assert np.isnan(wide).sum() == 1
    elif dtype == "float4_e2m1fn":   # both zeros, +-0.5 subnormals, 1, 6, -4; no inf, no NaN
        assert sorted(set(wide)) == [-4.0, -1.0, -0.5, 0.0, 0.5, 1.0, 6.0]
        assert (np.signbit(wide) & (wide == 0)).sum() == 1
    else:
        info = int_info(dtype)
        assert set(wide) == {v for v in DEFAULT_EDGES["int"] + [info.min, info.max]
                             if isinstance(v, int) and info.min <= v <= info.max}
    cls = "float" if dtype.startswith("float") else "int"
    low, high = value_range(spec, "x", dtype)
    rng = np.random.default_rng(3)
    for plan in PLANS[cls]:
        for _ in range(20):
            drawn = fill(rng, shape=(64,), dtype=dtype, plan=plan, low=low, high=high,
                         edges=edges).astype(np.float64)
            numbers = drawn[~np.isnan(drawn)]
            if dtype == "float8_e8m0fnu":
                assert (numbers >= 2.0 ** -127).all(), plan
            elif dtype == "float4_e2m1fn":
                assert not np.isnan(drawn).any() and (np.abs(drawn) <= 6).all(), plan
            else:
                assert ((numbers >= int_info(dtype).min) & (numbers <= int_info(dtype).max)).all()


def test_wide_draws_reach_every_encoding_of_the_small_floats():
    rng = np.random.default_rng(4)
    for dtype, count in (("float4_e2m1fn", 16), ("float8_e8m0fnu", 256)):
        drawn = fill(rng, shape=(4000,), dtype=dtype, plan="wide", low=0, high=0,
                     edges=np.array([], np_dtype(dtype)))
        assert len(np.unique(drawn.view(np.uint8))) == count


#: OCP MX v1.0's FP6 element formats: exponent bits, mantissa bits, bias
FP6 = {"float6_e2m3fn": (2, 3, 1), "float6_e3m2fn": (3, 2, 3)}


def fp6(name: str, code: int) -> float:
    """OCP MX v1.0 FP6: sign bit 5, then the exponent and mantissa fields; exponent 0 is
    subnormal, (-1)**S * 2**(1 - bias) * (0 + M / 2**m); no infinities, no NaN."""
    e_bits, m_bits, bias = FP6[name]
    sign = -1.0 if code & 0b100000 else 1.0
    exponent, mantissa = (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    if exponent == 0:
        return sign * mantissa * 2.0 ** (1 - bias - m_bits)
    return sign * 2.0 ** (exponent - bias) * (1 + mantissa / 2 ** m_bits)


@pytest.mark.parametrize("name, largest", [("float6_e2m3fn", 7.5), ("float6_e3m2fn", 28.0)])
def test_every_fp6_encoding_decodes_as_the_spec_says_and_rounds_to_the_nearest(name, largest):
    values = np.array([fp6(name, c) for c in range(64)])
    ml = np.arange(64, dtype=np.uint8).view(np_dtype(name)).astype(np.float64)
    assert np.array_equal(values, ml) and np.array_equal(np.signbit(values), np.signbit(ml))
    fmt = FLOAT_FORMATS[name]
    assert (fmt.max_finite, fmt.min_normal, fmt.bits) == (largest, values[1 << FP6[name][1]], 6)
    assert fmt.min_subnormal == values[1] and fmt.has_subnormals
    assert (fmt.has_inf, fmt.has_nan, fmt.has_negative_zero, fmt.has_zero, fmt.signed) == \
        (False, False, True, True, True)
    # nearest, ties to the even code (even mantissa); past max_finite + ulp/2: no value (NaN)
    positive = values[:32]
    mids = (positive[1:] + positive[:-1]) / 2
    probes = np.concatenate([positive, mids, mids * (1 + 2.0 ** -30), mids * (1 - 2.0 ** -30),
                             [largest + fmt.ulp_at_max / 2, largest * 1.01]])
    want = []
    for x in probes:
        gaps = np.abs(positive - x)
        best = np.flatnonzero(gaps == gaps.min())
        pick = best[0] if len(best) == 1 else next(c for c in best if c % 2 == 0)
        beyond = x >= largest + fmt.ulp_at_max / 2
        want.append(np.nan if beyond else positive[pick])
    assert np.array_equal(round_to_format(probes, fmt), np.array(want), equal_nan=True)
    assert np.array_equal(round_to_format(-probes, fmt), -np.array(want), equal_nan=True)
