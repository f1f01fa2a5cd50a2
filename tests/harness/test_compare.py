"""Error models on hand-computed cases: binade edges, subnormals, signed zeros, inf/NaN, overflow,
and the accumulation bound telling a float32-accumulating dot from a float16-accumulating one."""
from __future__ import annotations

import numpy as np
import pytest

from conform.harness.judge.compare import compare, ulp_of
from conform.oracles import evaluate

ULP_HALF = {"ulp": 0.5, "why": "IEEE 754 correctly rounded"}
EXACT = {"exact": True, "why": "bit-exact op"}


def f32(*values):
    return np.array(values, dtype=np.float32)


@pytest.mark.parametrize("reference, dtype, expected", [
    (1.0, "float32", 2.0 ** -23),
    (1.9999999, "float32", 2.0 ** -23),
    (2.0, "float32", 2.0 ** -22),
    (-0.75, "float32", 2.0 ** -24),
    (0.0, "float32", 2.0 ** -149),            # clamped at the smallest normal's ULP
    (1e-45, "float32", 2.0 ** -149),          # subnormal binade: same ULP as the smallest normal
    (2.0 ** -126, "float32", 2.0 ** -149),
    (65504.0, "float16", 32.0),
    (1.0, "float16", 2.0 ** -10),
    (1.0, "float64", 2.0 ** -52),
])
def test_ulp_is_measured_in_the_binade_of_the_reference(reference, dtype, expected):
    assert ulp_of(np.array(reference), dtype) == expected


def test_half_ulp_passes_and_just_over_fails():
    one = np.array([1.0])
    assert compare(f32(1.0), one + 2.0 ** -24, out_dtype="float32", model=ULP_HALF).verdict == "pass"
    judged = compare(f32(1.0), one + 2.0 ** -24 + 2.0 ** -40, out_dtype="float32", model=ULP_HALF)
    assert judged.verdict == "fail"
    assert judged.max_error == pytest.approx(0.5 + 2.0 ** -17)
    assert judged.worst["index"] == [0]


def test_error_below_a_power_of_two_uses_the_lower_binade():
    # reference just below 2: ULP is 2**-23 there, so actual=2.0 is 0.5 ULP away from 2 - 2**-24.
    judged = compare(f32(2.0), np.array([2.0 - 2.0 ** -24]), out_dtype="float32", model=ULP_HALF)
    assert judged.verdict == "pass" and judged.max_error == 0.5


def test_subnormal_results_are_judged_in_units_of_the_smallest_subnormal():
    tiny = 2.0 ** -149
    assert compare(f32(tiny), np.array([tiny * 1.4]), out_dtype="float32", model=ULP_HALF).verdict == "pass"
    flushed = compare(f32(0.0), np.array([3 * tiny]), out_dtype="float32", model=ULP_HALF)
    assert flushed.verdict == "fail" and flushed.max_error == 3.0


@pytest.mark.parametrize("actual, expected, verdict", [
    (np.nan, np.nan, "pass"),
    (-np.nan, np.nan, "pass"),           # any NaN matches a NaN reference
    (1.0, np.nan, "fail"),
    (np.nan, 1.0, "fail"),
    (np.inf, np.inf, "pass"),
    (-np.inf, np.inf, "fail"),           # infinities must match in sign
    (3.4028235e38, np.inf, "fail"),
    (-0.0, -0.0, "pass"),
    (0.0, -0.0, "fail"),                 # signed_zero: strict is the default
    (-0.0, 0.0, "fail"),
])
def test_special_values(actual, expected, verdict):
    judged = compare(f32(actual), np.array([expected]), out_dtype="float32", model=ULP_HALF)
    assert judged.verdict == verdict


def test_signed_zero_any_accepts_either_zero():
    model = {**EXACT, "signed_zero": "any"}
    assert compare(f32(0.0), np.array([-0.0]), out_dtype="float32", model=model).verdict == "pass"
    assert compare(f32(0.0), np.array([-0.0]), out_dtype="float32", model=EXACT).verdict == "fail"


def test_overflow_to_inf_only_where_rounding_reaches_past_max_finite():
    max16 = 65504.0
    # 65520 = max + half an ULP (ULP at max is 32): rounds to inf under round-to-nearest-even.
    assert compare(np.float16([np.inf]), np.array([65520.0]), out_dtype="float16",
                   model=ULP_HALF).verdict == "pass"
    # 65519 rounds to max finite: inf is 0.5 ULP + 1/32 ULP away, past the 0.5 bound.
    assert compare(np.float16([np.inf]), np.array([65519.0]), out_dtype="float16",
                   model=ULP_HALF).verdict == "fail"
    assert compare(np.float16([np.inf]), np.array([1e6]), out_dtype="float16",
                   model=ULP_HALF).verdict == "pass"
    assert compare(np.float16([max16]), np.array([1e6]), out_dtype="float16",
                   model=ULP_HALF).verdict == "fail"
    assert compare(np.float16([-np.inf]), np.array([1e6]), out_dtype="float16",
                   model=ULP_HALF).verdict == "fail"


def test_exact_compares_after_rounding_the_reference_once():
    # 0.1 as float64 rounds to float32 0.1f: exact match after a single RNE rounding
    assert compare(f32(0.1), np.array([0.1]), out_dtype="float32", model=EXACT).verdict == "pass"
    assert compare(np.int32([7, -3]), np.array([7, -3]), out_dtype="int32", model=EXACT).verdict == "pass"
    judged = compare(np.int32([7, -4]), np.array([7, -3]), out_dtype="int32", model=EXACT)
    assert (judged.verdict, judged.mismatched, judged.worst["index"]) == ("fail", 1, [1])


def test_abs_rel():
    model = {"abs_rel": {"atol": 1e-3, "rtol": 1e-2}, "why": "stated as abs/rel"}
    assert compare(f32(1.010), np.array([1.0]), out_dtype="float32", model=model).verdict == "pass"
    assert compare(f32(1.012), np.array([1.0]), out_dtype="float32", model=model).verdict == "fail"


def test_wrong_shape_or_dtype_fails_with_a_reason():
    judged = compare(np.float64([1.0]), np.array([1.0]), out_dtype="float32", model=ULP_HALF)
    assert judged.verdict == "fail" and "float64[1]" in judged.reason
    judged = compare(f32(1.0, 2.0), np.array([1.0]), out_dtype="float32", model=ULP_HALF)
    assert judged.verdict == "fail" and "expected float32[1]" in judged.reason


def test_implementation_defined_elements_are_counted_not_judged():
    """A case passes or fails on the elements the text defines; its open ones are counted and
    sampled; ``impl_defined`` only where no element is left to judge."""
    mask = np.array([False, True])
    judged = compare(np.int32([1, 99]), np.array([1, 5]), out_dtype="int32", model=EXACT,
                     impl_mask=mask)
    assert (judged.verdict, judged.impl_defined, judged.checked) == ("pass", 1, 1)
    assert judged.observed == [[99, 5]] and judged.worst["index"] == [0]
    judged = compare(np.int32([2, 99]), np.array([1, 5]), out_dtype="int32", model=EXACT,
                     impl_mask=mask)
    assert (judged.verdict, judged.mismatched, judged.impl_defined) == ("fail", 1, 1)
    judged = compare(np.int32([2, 99]), np.array([1, 5]), out_dtype="int32", model=EXACT,
                     impl_mask=np.array([True, True]))
    assert (judged.verdict, judged.impl_defined, judged.checked, judged.worst) == \
        ("impl_defined", 2, 0, None)


ACCUMULATION = {"accumulation": {"final_ulp": 0.5, "accumulator_at_least": "float32"},
                "why": "Higham gamma_n with a float32 accumulator"}


def test_accumulator_at_least_tightens_only_narrower_types():
    from conform.harness.judge.compare import accumulator_roundoff

    params = {"accumulator_at_least": "float32"}
    assert accumulator_roundoff("float16", params) == 2.0 ** -24
    assert accumulator_roundoff("float64", params) == 2.0 ** -53
    assert accumulator_roundoff("float16", {}) == 2.0 ** -11


def _dot_inputs(seed=0, k=256):
    rng = np.random.default_rng(seed)
    lhs = rng.uniform(0.5, 1.5, size=(16, k)).astype(np.float16)
    rhs = rng.uniform(0.5, 1.5, size=(k, 16)).astype(np.float16)
    return lhs, rhs


def _judge_dot(actual, lhs, rhs):
    (expected,) = evaluate("dot_general", [lhs, rhs], {})
    (magnitudes,) = evaluate("dot_general", [np.abs(lhs), np.abs(rhs)], {})
    return compare(actual, expected, out_dtype="float16", model=ACCUMULATION,
                   accumulation=(magnitudes, lhs.shape[1]))


def test_accumulation_passes_float32_accumulation_and_fails_float16_accumulation():
    lhs, rhs = _dot_inputs()
    wide = (lhs.astype(np.float32) @ rhs.astype(np.float32)).astype(np.float16)
    assert _judge_dot(wide, lhs, rhs).verdict == "pass"
    narrow = np.zeros((16, 16), np.float16)
    for k in range(lhs.shape[1]):  # a float16 accumulator, rounding after every term
        narrow = (narrow + lhs[:, k:k + 1] * rhs[k:k + 1, :]).astype(np.float16)
    judged = _judge_dot(narrow, lhs, rhs)
    assert judged.verdict == "fail"
    assert judged.max_error > judged.bound


def test_accumulation_float32_conv_passes_and_float16_accumulating_conv_fails():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 1.5, size=(1, 64, 6, 6)).astype(np.float16)
    w = rng.uniform(0.5, 1.5, size=(4, 64, 3, 3)).astype(np.float16)
    attrs = {"window_strides": [1, 1], "padding": [[0, 0], [0, 0]], "rhs_dilation": [1, 1]}
    (expected,) = evaluate("conv", [x, w], attrs)
    (magnitudes,) = evaluate("conv", [np.abs(x), np.abs(w)], attrs)
    n = 64 * 3 * 3
    wide = expected.astype(np.float32).astype(np.float16)
    narrow = np.zeros(expected.shape, np.float16)
    for c in range(64):
        for i in range(3):
            for j in range(3):
                term = x[:, c:c + 1, i:i + 4, j:j + 4] * w[None, :, c, i, j, None, None][0][None]
                narrow = (narrow + term.astype(np.float16)).astype(np.float16)
    assert compare(wide, expected, out_dtype="float16", model=ACCUMULATION,
                   accumulation=(magnitudes, n)).verdict == "pass"
    assert compare(narrow, expected, out_dtype="float16", model=ACCUMULATION,
                   accumulation=(magnitudes, n)).verdict == "fail"


def test_ftz_excuses_flushed_inputs_and_flushed_results_and_nothing_else():
    tiny = 2.0 ** -140   # subnormal in float32
    # result of x * 1 with x subnormal: IEEE wants x; FTZ may give 0 (input read as 0).
    flushed = (np.array([0.0]), None)
    assert compare(f32(0.0), np.array([tiny]), out_dtype="float32", model=ULP_HALF).verdict == "fail"
    assert compare(f32(0.0), np.array([tiny]), out_dtype="float32", model=ULP_HALF,
                   subnormals="ftz", flushed=flushed).verdict == "pass"
    # a subnormal result may come out as -0 too (sign not enforced for a flushed result)
    assert compare(f32(-0.0), np.array([tiny]), out_dtype="float32", model=ULP_HALF,
                   subnormals="ftz").verdict == "pass"
    # but a wrong normal result is not excused
    assert compare(f32(2.0 ** -120), np.array([tiny]), out_dtype="float32", model=ULP_HALF,
                   subnormals="ftz", flushed=flushed).verdict == "fail"
    # nor is a zero where the result is normal and no input was subnormal
    assert compare(f32(0.0), np.array([2.0 ** -125]), out_dtype="float32", model=ULP_HALF,
                   subnormals="ftz", flushed=None).verdict == "fail"


def test_ftz_input_flush_applies_to_boolean_results_too():
    # eq(-subnormal, +subnormal): False under IEEE; True when both are read as zeros.
    flushed = (np.array([True]), None)
    assert compare(np.array([True]), np.array([False]), out_dtype="bool", model=EXACT).verdict == "fail"
    assert compare(np.array([True]), np.array([False]), out_dtype="bool", model=EXACT,
                   subnormals="ftz", flushed=flushed).verdict == "pass"


def test_asymmetric_ulp_bounds():
    model = {"ulp": {"below": 0, "above": 2}, "why": "may only round up"}
    one = np.array([1.0])
    assert compare(f32(1.0 + 2 * 2.0 ** -23), one, out_dtype="float32", model=model).verdict == "pass"
    assert compare(f32(1.0 - 2.0 ** -24), one, out_dtype="float32", model=model).verdict == "fail"


def test_bfloat16_reference_is_rounded_once():
    from conform.harness.judge.compare import round_to_dtype
    from conform.dtypes import np_dtype

    value = 1.0 + 2.0 ** -8 + 2.0 ** -30      # just above the tie between 1 and 1 + 2**-7
    assert float(round_to_dtype(np.array([value]), "bfloat16")[0]) == 1.0 + 2.0 ** -7
    bf16 = np_dtype("bfloat16")
    assert compare(np.array([1.0 + 2.0 ** -7], bf16), np.array([value]), out_dtype="bfloat16",
                   model=EXACT).verdict == "pass"
    assert compare(np.array([1.0], bf16), np.array([value]), out_dtype="bfloat16",
                   model=EXACT).verdict == "fail"
    # overflow threshold and subnormals
    assert np.isinf(round_to_dtype(np.array([3.4e38 * 1.01]), "bfloat16")[0])
    assert float(round_to_dtype(np.array([2.0 ** -133 * 0.75]), "bfloat16")[0]) == 2.0 ** -133


def _outputs_for_many(rng, dtype, count):
    """Outputs of assorted sizes around float64 references, some off by many ULPs, some with
    NaN, infinities, signed zeros and implementation-defined elements, a few empty."""
    items = []
    for k in range(count):
        size = 0 if k % 9 == 4 else int(rng.integers(1, 12))
        expected = rng.normal(size=size) * 10.0 ** rng.integers(-3, 4)
        actual = expected.astype(dtype)
        if size and k % 3 == 0:
            actual[rng.integers(size)] = np.nextafter(actual[0], np.inf, dtype=dtype) * 3
        if size and k % 5 == 1:
            expected[0], actual[-1] = np.nan, -0.0
        if size and k % 7 == 2:
            actual[0] = np.inf
        impl = rng.random(size) < 0.2 if k % 4 == 3 else None
        accumulation = (np.abs(expected) * 4, int(rng.integers(1, 64)))
        flushed = (expected * 0.5, accumulation) if k % 2 else None
        items.append((actual.reshape(size), expected, impl, accumulation, flushed))
    items.append((np.zeros(3, np.float64), np.zeros(3), None, None, None))   # wrong dtype
    return items


@pytest.mark.parametrize("model", [ULP_HALF, EXACT, {"ulp": {"below": 1, "above": 3}},
                                   {"abs_rel": {"atol": 1e-3, "rtol": 1e-3}},
                                   {"accumulation": {"final_ulp": 0.5}}])
@pytest.mark.parametrize("subnormals", ["ieee", "ftz"])
def test_judging_many_outputs_together_gives_each_the_judgement_it_gets_alone(model, subnormals):
    from conform.harness.judge.compare import compare_many

    items = _outputs_for_many(np.random.default_rng(7), np.float32, 40)
    together = compare_many(items, out_dtype="float32", model=model, subnormals=subnormals)
    alone = [compare(a, e, out_dtype="float32", model=model, impl_mask=m, accumulation=s,
                     subnormals=subnormals, flushed=f) for a, e, m, s, f in items]
    assert [j.verdict for j in together].count("fail") > 0
    for one, other in zip(together, alone):
        assert repr(one) == repr(other)   # repr: NaN figures compare equal


# ------------------------------------------------------------------ the derived model

DERIVED = {"derived": {"final_ulp": 0.5}, "why": "a composite op's own bound"}


def test_derived_adds_the_ops_bound_to_final_ulp():
    u32 = 2.0 ** -24
    expected = np.array([1.0, 1.0, 1.0])
    bound = np.array([10 * u32, 10 * u32, 0.0])   # B: absolute, per element
    actual = np.float32([1 + 2 ** -23 * 5, 1 + 2 ** -23 * 6, 1 + 2 ** -23])
    judged = compare(actual, expected, out_dtype="float32", model=DERIVED, accumulation=(bound, 0))
    # bounds in ULPs of 1.0: 5 + 0.5, 5 + 0.5, 0 + 0.5
    assert judged.verdict == "fail" and judged.mismatched == 2 and judged.model == "derived(final_ulp=0.5)"
    assert judged.unit == "ulp" and (judged.max_error, judged.bound) == (1.0, 0.5)   # worst: 2x
    assert judged.histogram[4] == 1 and judged.histogram[5] == 2   # 5 of 5.5; 6 of 5.5, 1 of 0.5


def test_derived_with_an_infinite_bound_accepts_any_number_but_not_nan():
    expected = np.array([0.25, 0.25])
    bound = np.array([np.inf, np.inf])
    assert compare(np.float32([7.0, -3.0]), expected, out_dtype="float32", model=DERIVED,
                   accumulation=(bound, 0)).verdict == "pass"
    judged = compare(np.float32([0.25, np.nan]), expected, out_dtype="float32", model=DERIVED,
                     accumulation=(bound, 0))
    assert judged.verdict == "fail" and "special value" in judged.reason


def test_a_derived_model_without_an_error_bound_hook_is_refused(tmp_path):
    from conform.spec import BUILTIN_DIR, SpecError, load_spec

    text = (BUILTIN_DIR / "erf.yaml").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.startswith("  float32:")]
    changed = text.replace(lines[0], '  float32: {derived: {final_ulp: 0.5}, why: "no hook here"}')
    (tmp_path / "erf.yaml").write_text(changed, encoding="utf-8")
    with pytest.raises(SpecError, match="the derived model needs an error_bound hook"):
        load_spec(tmp_path / "erf.yaml")


# --- the residual of a reference beyond float64 ----------------------------------------------------

def test_the_residual_moves_the_reference_off_its_float64_grid():
    # exact value 1 + 0.4 ULP: hi = 1, lo = 0.4 ULP. The actual 1 is 0.4 ULP off, its upper
    # neighbour 0.6 ULP; without the residual both would be measured against 1 (0 and 1 ULP).
    one, ulp = np.array([1.0]), 2.0 ** -52
    lo = np.array([0.4 * ulp])
    below = compare(np.array([1.0]), one, out_dtype="float64", model=ULP_HALF, residual=lo)
    above = compare(np.array([1.0 + ulp]), one, out_dtype="float64", model=ULP_HALF, residual=lo)
    assert below.verdict == "pass" and below.max_error == pytest.approx(0.4)
    assert above.verdict == "fail" and above.max_error == pytest.approx(0.6)
    plain = compare(np.array([1.0 + ulp]), one, out_dtype="float64", model=ULP_HALF)
    assert plain.max_error == pytest.approx(1.0)


def test_a_residual_leaves_special_values_alone():
    judged = compare(np.array([np.inf, np.nan, -0.0]), np.array([np.inf, np.nan, 0.0]),
                     out_dtype="float64", model=ULP_HALF, residual=np.array([0.0, 0.0, 1e-300]))
    assert judged.verdict == "fail" and judged.mismatched == 1     # only the -0 for +0


# --- the accumulation bound's underflow term --------------------------------------------------------

def _dot_model(dtype):
    from conform.spec import load_specs

    return load_specs()["dot_general"].model_for(dtype)


SUBNORMAL_PRODUCTS = (np.array([3e-160, 1e-160, 7e-161]), np.array([1.3e-160, 3.3e-161, -2e-161]))


def test_a_float64_dot_of_subnormal_products_passes_with_the_underflow_term():
    lhs, rhs = SUBNORMAL_PRODUCTS
    actual = np.array([np.dot(lhs, rhs)])           # a correct float64 dot: products round
    (expected,) = evaluate("dot_general", [lhs[None], rhs[:, None]], {})
    (magnitudes,) = evaluate("dot_general", [np.abs(lhs)[None], np.abs(rhs)[:, None]], {})
    figures = dict(out_dtype="float64", accumulation=(magnitudes.ravel(), 3))
    assert actual[0] != expected.ravel()[0]          # the products' underflow shows
    model = _dot_model("float64")
    assert model["accumulation"]["product_roundings"] == 1
    judged = compare(actual, expected.ravel(), model=model, **figures)
    assert judged.max_error == 1.0     # one subnormal ULP: the products' own roundings
    assert judged.verdict == "pass" and judged.bound == pytest.approx(0.5 + 3 * 0.5, rel=1e-9)
    without = {**model, "accumulation": {"final_ulp": 0.5}}
    failed = compare(actual, expected.ravel(), model=without, **figures)
    assert failed.verdict == "fail" and failed.bound == pytest.approx(0.5)   # was 0: it underflowed


def test_a_float16_accumulating_dot_still_fails_with_the_underflow_term():
    lhs, rhs = _dot_inputs(seed=2)
    assert _dot_model("float16")["accumulation"]["product_roundings"] == 1
    narrow = np.zeros((16, 16), np.float16)
    for k in range(lhs.shape[1]):  # a float16 accumulator, rounding after every term
        narrow = (narrow + lhs[:, k:k + 1] * rhs[k:k + 1, :]).astype(np.float16)
    (expected,) = evaluate("dot_general", [lhs, rhs], {})
    (magnitudes,) = evaluate("dot_general", [np.abs(lhs), np.abs(rhs)], {})
    judged = compare(narrow, expected, out_dtype="float16", model=_dot_model("float16"),
                     accumulation=(magnitudes, lhs.shape[1]))
    assert judged.verdict == "fail" and judged.max_error > judged.bound
