"""The 8-bit float formats and 4-bit integers: traits against ml_dtypes' finfo and against the
format definitions (OCP OFP8 rev 1.0; ONNX's "Float 8 types"), edge values, and the one
rounding (``round_to_format``) against an independent nearest-value search over every encoding
decoded from its bit fields."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conform.dtypes import (FLOAT_FORMATS, AbsentValue, int_info, is_integer, np_dtype,
                                 resolve_edge_value, round_to_format)

FLOAT8 = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e4m3",
          "float8_e3m4", "float8_e4m3b11fnuz"]
# exponent bits, fraction bits, bias (OCP OFP8 table 1; fnuz: bias one larger; StableHLO's
# f8E4M3 and f8E3M4: IEEE 754-style, bias 2**(e-1) - 1; f8E4M3B11FNUZ: fnuz with bias 11)
FIELDS = {"float8_e4m3fn": (4, 3, 7), "float8_e4m3fnuz": (4, 3, 8), "float8_e5m2": (5, 2, 15),
          "float8_e5m2fnuz": (5, 2, 16), "float8_e4m3": (4, 3, 7), "float8_e3m4": (3, 4, 3),
          "float8_e4m3b11fnuz": (4, 3, 11)}
#: the formats that follow IEEE 754: infinities and NaNs at the all-ones exponent
IEEE_LIKE = ("float8_e5m2", "float8_e4m3", "float8_e3m4")


def decode(name: str, code: int) -> float:
    """The value of 8-bit ``code`` in format ``name``, from the format definitions alone."""
    e_bits, m_bits, bias = FIELDS[name]
    sign = -1.0 if code >> 7 else 1.0
    exponent, fraction = (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    if name.endswith("fnuz") and code == 0x80:
        return np.nan                                  # the one NaN, where -0 would be
    if name == "float8_e4m3fn" and exponent == 15 and fraction == 7:
        return np.nan                                  # S.1111.111
    if name in IEEE_LIKE and exponent == (1 << e_bits) - 1:
        return sign * np.inf if fraction == 0 else np.nan
    if exponent == 0:
        return sign * fraction * 2.0 ** (1 - bias - m_bits)
    return sign * (1 + fraction / 2 ** m_bits) * 2.0 ** (exponent - bias)


def table(name: str) -> np.ndarray:
    return np.array([decode(name, c) for c in range(256)])


@pytest.mark.parametrize("name", FLOAT8)
def test_traits_match_ml_dtypes_finfo_and_the_encodings(name):
    fmt, info = FLOAT_FORMATS[name], ml_dtypes.finfo(np_dtype(name))
    assert fmt.max_finite == float(info.max)
    assert fmt.min_normal == float(info.tiny)
    assert fmt.min_subnormal == float(info.smallest_subnormal)
    assert 2.0 ** (1 - fmt.precision) == float(info.eps)
    assert fmt.bits == info.bits == 8
    values = table(name)
    # every encoding decodes as ml_dtypes decodes it
    ml = np.arange(256, dtype=np.uint16).astype(np.uint8).view(np_dtype(name)).astype(np.float64)
    assert np.array_equal(values, ml, equal_nan=True)
    numbers = ~np.isnan(values)
    assert np.array_equal(np.signbit(values[numbers]), np.signbit(ml[numbers]))
    finite = values[np.isfinite(values)]
    assert fmt.max_finite == finite.max() and -fmt.max_finite == finite.min()
    assert fmt.has_inf == bool(np.isinf(values).any())
    assert fmt.has_nan == bool(np.isnan(values).any())
    assert fmt.has_negative_zero == any(v == 0 and np.signbit(v) for v in values)
    nans = int(np.isnan(values).sum())
    ieee = 2 * ((1 << FIELDS[name][1]) - 1)   # both signs, every non-zero fraction
    assert nans == {"all_ones": 2, "negative_zero": 1, "ieee": ieee}[fmt.nan_encoding]


def test_the_documented_traits():
    e4m3fn, e5m2 = FLOAT_FORMATS["float8_e4m3fn"], FLOAT_FORMATS["float8_e5m2"]
    assert (e4m3fn.has_inf, e4m3fn.has_nan, e4m3fn.has_negative_zero, e4m3fn.max_finite) == \
        (False, True, True, 448.0)
    assert (e5m2.has_inf, e5m2.has_negative_zero, e5m2.max_finite) == (True, True, 57344.0)
    for name in ("float8_e4m3fnuz", "float8_e5m2fnuz"):
        fmt = FLOAT_FORMATS[name]
        assert (fmt.has_inf, fmt.has_nan, fmt.has_negative_zero) == (False, True, False)
    assert np.isnan(e4m3fn.overflow_value) and e5m2.overflow_value == np.inf
    # the existing formats: IEEE traits, and beyond_max is 2**(emax+1)
    for name in ("float16", "bfloat16", "float32"):
        fmt = FLOAT_FORMATS[name]
        assert fmt.has_inf and fmt.has_negative_zero and fmt.beyond_max == 2.0 ** (fmt.emax + 1)
    assert FLOAT_FORMATS["float16"].max_finite == 65504.0


@pytest.mark.parametrize("name, edges", [
    ("float8_e4m3fn", {"max_finite": 448.0, "below_max_finite": 416.0, "min_normal": 2.0 ** -6,
                       "min_subnormal": 2.0 ** -9, "max_subnormal": 7 * 2.0 ** -9}),
    ("float8_e4m3fnuz", {"max_finite": 240.0, "below_max_finite": 224.0, "min_normal": 2.0 ** -7,
                         "min_subnormal": 2.0 ** -10, "max_subnormal": 7 * 2.0 ** -10}),
    ("float8_e5m2", {"max_finite": 57344.0, "below_max_finite": 49152.0, "min_normal": 2.0 ** -14,
                     "min_subnormal": 2.0 ** -16, "max_subnormal": 3 * 2.0 ** -16, "inf": np.inf}),
    ("float8_e5m2fnuz", {"max_finite": 57344.0, "below_max_finite": 49152.0,
                         "min_normal": 2.0 ** -15, "min_subnormal": 2.0 ** -17,
                         "max_subnormal": 3 * 2.0 ** -17}),
])
def test_edge_values_are_values_of_the_format(name, edges):
    values = table(name)
    for edge, want in edges.items():
        got = resolve_edge_value(edge, name)
        assert got == want, edge
        assert got in values and -got in values, edge
    assert np.isnan(resolve_edge_value("nan", name))


@pytest.mark.parametrize("name, absent", [
    ("float8_e4m3fn", "inf"), ("float8_e4m3fn", "-inf"), ("float8_e4m3fnuz", "inf"),
    ("float8_e4m3fnuz", "-zero"), ("float8_e5m2fnuz", "-zero"), ("float8_e5m2fnuz", "-inf"),
    ("int4", "-zero"), ("int4", "max_finite"), ("float8_e5m2", "int_min"),
])
def test_a_value_the_format_lacks_is_refused_by_name(name, absent):
    with pytest.raises(AbsentValue, match=f"{absent!r}"):
        resolve_edge_value(absent, name)


def test_an_unknown_name_is_still_a_plain_key_error():
    with pytest.raises(KeyError) as raised:
        resolve_edge_value("max_finit", "float8_e4m3fn")
    assert not isinstance(raised.value, AbsentValue)
    assert resolve_edge_value("-zero", "float8_e5m2") == 0.0   # e5m2 and e4m3fn have -0


def test_four_bit_integers():
    assert (int_info("int4").min, int_info("int4").max, int_info("int4").bits) == (-8, 7, 4)
    assert (int_info("uint4").min, int_info("uint4").max) == (0, 15)
    assert is_integer("int4") and is_integer("uint4") and is_integer("uint64")
    assert not is_integer("float8_e4m3fn") and not is_integer("bool")
    assert resolve_edge_value("int_min", "int4") == -8 and resolve_edge_value("int_max", "uint4") == 15
    for name in ("int8", "int16", "uint16", "uint64"):   # known before, still known
        assert np_dtype(name) == np.dtype(name)


def nearest(name: str, x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even into ``name`` by searching its decoded values: the nearest finite
    value, ties to the even encoding; a result past the largest finite value (were the exponent
    range unbounded: the value one step beyond it) overflows to inf or NaN (non-saturating)."""
    fmt = FLOAT_FORMATS[name]
    codes = np.arange(128)
    values = table(name)[:128]
    keep = np.isfinite(values)
    values, codes = values[keep], codes[keep]
    _, m_bits, _ = FIELDS[name]
    top_code = int(codes[np.argmax(values)])
    # the virtual value one step past the largest: even where the step carries into the exponent
    virtual_even = ((top_code & ((1 << m_bits) - 1)) + 1) % (1 << m_bits) % 2 == 0
    candidates = np.append(values, fmt.max_finite + fmt.ulp_at_max)
    even = np.append(codes % 2 == 0, virtual_even)
    order = np.argsort(candidates)
    candidates, even = candidates[order], even[order]
    out = np.empty(x.shape)
    for k, v in enumerate(x):
        if np.isnan(v):
            out[k] = np.nan
            continue
        a = abs(v)
        if a == np.inf:
            out[k] = np.copysign(fmt.overflow_value, v)
            continue
        i = np.searchsorted(candidates, a)
        if i < len(candidates) and candidates[i] == a:
            pick = candidates[i]
        elif i == len(candidates):
            pick = np.inf
        else:
            lo, hi = candidates[i - 1], candidates[i]
            pick = lo if (a - lo < hi - a or (a - lo == hi - a and even[i - 1])) else hi
        if pick > fmt.max_finite:
            out[k] = np.copysign(fmt.overflow_value, v)
        elif pick == 0 and not fmt.has_negative_zero:
            out[k] = 0.0
        else:
            out[k] = np.copysign(pick, v)
    return out


def probes(name: str) -> np.ndarray:
    """Every value of the format, every midpoint between neighbours and just either side of
    it, values around the overflow threshold, and random float64 values."""
    values = np.unique(np.abs(table(name)[np.isfinite(table(name))]))
    fmt = FLOAT_FORMATS[name]
    values = np.append(values, fmt.max_finite + fmt.ulp_at_max)
    mids = (values[1:] + values[:-1]) / 2
    rng = np.random.default_rng(8)
    randoms = rng.uniform(-1.2, 1.2, 2000) * fmt.beyond_max
    tiny = rng.uniform(-4, 4, 500) * fmt.min_subnormal
    x = np.concatenate([values, mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf),
                        mids + 2.0 ** -40 * mids, randoms, tiny, [np.inf, np.nan, 1e300]])
    return np.concatenate([x, -x])


@pytest.mark.parametrize("name", FLOAT8)
def test_rounding_matches_a_search_over_every_encoding(name):
    x = probes(name)
    got, want = round_to_format(x, FLOAT_FORMATS[name]), nearest(name, x)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))


@pytest.mark.parametrize("name", FLOAT8)
def test_rounding_agrees_with_ml_dtypes_from_float32(name):
    """A cross-check only (ml_dtypes rounds float32 once; from float64 it can round twice)."""
    rng = np.random.default_rng(3)
    half = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    x = np.concatenate([half, rng.standard_normal(20000).astype(np.float32) * 300])
    with np.errstate(invalid="ignore"):
        ours = round_to_format(x.astype(np.float64), FLOAT_FORMATS[name])
        theirs = x.astype(np_dtype(name)).astype(np.float64)
    assert np.array_equal(ours, theirs, equal_nan=True)
    numbers = ~np.isnan(ours)
    assert np.array_equal(np.signbit(ours[numbers]), np.signbit(theirs[numbers]))


def test_ml_dtypes_rounds_float64_twice_and_we_do_not():
    """Why ml_dtypes is no oracle: 1 + 2**-4 + 2**-40 is above the midpoint of 1 and 1.125."""
    x = np.array([1 + 2.0 ** -4 + 2.0 ** -40])
    assert round_to_format(x, FLOAT_FORMATS["float8_e4m3fn"])[0] == 1.125
    assert float(x.astype(ml_dtypes.float8_e4m3fn)[0]) == 1.0


def test_saturating_rounding():
    fmt = FLOAT_FORMATS["float8_e4m3fn"]
    got = round_to_format(np.array([465.0, -1e9, np.inf, -np.inf, np.nan, 464.0]), fmt,
                          saturate=True)
    assert np.array_equal(got, [448, -448, 448, -448, np.nan, 448], equal_nan=True)
    e5m2 = round_to_format(np.array([np.inf, 61440.0]), FLOAT_FORMATS["float8_e5m2"], saturate=True)
    assert e5m2.tolist() == [57344.0, 57344.0]


def test_a_spec_declares_float8_dtypes_and_saturation(tmp_path):
    from conform.spec import SpecError, load_spec
    from tests.spec.test_loader import ADD, _write

    text = ADD.replace("dtypes: [float16, float32, float64, int32, int64]",
                       "dtypes: [float8_e4m3fn, float8_e5m2fnuz, int4, uint4]").replace(
        '  float: {ulp: 0.5, why:', '  float: {ulp: 0.5, saturate: true, why:')
    spec = load_spec(_write(tmp_path, text))
    assert spec.dtypes == ("float8_e4m3fn", "float8_e5m2fnuz", "int4", "uint4")
    assert spec.model_for("float8_e4m3fn")["saturate"] is True
    assert spec.model_for("int4")["exact"] is True
    with pytest.raises(SpecError, match="saturate"):
        load_spec(_write(tmp_path, text.replace("saturate: true", "saturate: false")))
    with pytest.raises(SpecError, match="dtypes"):
        load_spec(_write(tmp_path, text.replace("int4, uint4", "int4, float8_e6m1")))
