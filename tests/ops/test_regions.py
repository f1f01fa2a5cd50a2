"""Tests of the implementation-defined region masks (conform/ops/regions.py).

Contexts are built the way harness/judge.py builds them: inputs in their own dtypes, the oracle's
result as ``expected``, and ``float_oracle`` evaluating the same oracle on float64 copies.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.oracles import accumulation_length, evaluate
from conform.op_registry import regions
from conform.ops.regions import RegionContext, region_mask

I32_MIN, I32_MAX = -2**31, 2**31 - 1
I64_MIN, I64_MAX = -2**63, 2**63 - 1
INF, NAN = math.inf, math.nan


def context(op, inputs, out_dtype, attrs=None, with_length=False):
    attrs = attrs or {}
    inputs = [np.asarray(x) for x in inputs]
    (expected,) = evaluate(op, inputs, attrs)
    length = accumulation_length(op, [x.shape for x in inputs], attrs) if with_length else None
    return RegionContext(inputs=inputs, expected=expected, out_dtype=out_dtype,
                         float_oracle=lambda xs: evaluate(op, xs, attrs)[0],
                         accumulation_length=length)


def mask(region, op, inputs, out_dtype, attrs=None, with_length=False):
    out = regions()[region](context(op, inputs, out_dtype, attrs, with_length))
    assert out.dtype == np.bool_
    return out


def test_registry_names():
    assert {"int_div_by_zero", "int_min_div_neg1", "int_overflow", "float_to_int_out_of_range",
            "accumulation_overflow"} <= set(regions())
    assert all(regions()[name].__name__ == name for name in regions())


# --- int_div_by_zero ------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["divide", "remainder"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_int_div_by_zero(op, dtype):
    lhs, rhs = np.array([7, 0, -7, 5], dtype), np.array([0, 0, 2, -1], dtype)
    np.testing.assert_array_equal(mask("int_div_by_zero", op, [lhs, rhs], np.dtype(dtype).name),
                                  [True, True, False, False])


def test_int_div_by_zero_broadcast_scalar_divisor():
    out = mask("int_div_by_zero", "divide", [np.int32([1, 2, 3]), np.int32(0)], "int32")
    np.testing.assert_array_equal(out, [True, True, True])


def test_int_div_by_zero_not_for_floats():
    out = mask("int_div_by_zero", "divide", [np.float32([1, 0]), np.float32([0, 0])], "float32")
    np.testing.assert_array_equal(out, [False, False])


# --- int_min_div_neg1 -----------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["divide", "remainder"])
@pytest.mark.parametrize("dtype, low", [(np.int32, I32_MIN), (np.int64, I64_MIN)])
def test_int_min_div_neg1(op, dtype, low):
    lhs = np.array([low, low, low + 1, -1, low], dtype)
    rhs = np.array([-1, 1, -1, -1, 0], dtype)
    np.testing.assert_array_equal(mask("int_min_div_neg1", op, [lhs, rhs], np.dtype(dtype).name),
                                  [True, False, False, False, False])


def test_int_min_div_neg1_is_per_dtype():
    # -2**31 is INT_MIN for int32 but an ordinary value for int64.
    lhs, rhs = np.int64([I32_MIN]), np.int64([-1])
    assert not mask("int_min_div_neg1", "divide", [lhs, rhs], "int64").any()


@pytest.mark.parametrize("lhs, rhs, out_dtype", [
    (np.float64([-2.0**63]), np.float64([-1.0]), "float64"),
    (np.uint32([0, 5]), np.uint32([1, 2]), "uint32"),
])
def test_int_min_div_neg1_not_for_floats_or_unsigned(lhs, rhs, out_dtype):
    assert not mask("int_min_div_neg1", "divide", [lhs, rhs], out_dtype).any()


# --- int_overflow ----------------------------------------------------------------------------------

@pytest.mark.parametrize("op, inputs, expected", [
    ("add", [np.int32([I32_MAX, I32_MAX, I32_MIN, 5]), np.int32([1, 0, -1, -5])],
     [True, False, True, False]),
    ("subtract", [np.int32([I32_MIN, I32_MIN, 0]), np.int32([1, 0, I32_MIN])], [True, False, True]),
    ("multiply", [np.int32([65536, 46341, 46340, -65536]), np.int32([32768, 46341, 46340, 32768])],
     [True, True, False, False]),                 # 46341**2 > 2**31 - 1 > 46340**2; -2**31 fits
    ("negate", [np.int32([I32_MIN, I32_MAX, 0])], [True, False, False]),
    ("abs", [np.int32([I32_MIN, -I32_MAX])], [True, False]),
])
def test_int_overflow_int32(op, inputs, expected):
    np.testing.assert_array_equal(mask("int_overflow", op, inputs, "int32"), expected)


def test_int_overflow_int32_reduce_and_dot():
    x = np.int32([[I32_MAX, 1], [I32_MAX, -1], [I32_MIN, -1]])
    out = mask("int_overflow", "reduce_sum", [x], "int32", {"dimensions": [1]})
    np.testing.assert_array_equal(out, [True, False, True])
    lhs, rhs = np.int32([[2**16, 2**15], [1, 2]]), np.int32([[2**15], [2**16]])
    np.testing.assert_array_equal(mask("int_overflow", "dot_general", [lhs, rhs], "int32"),
                                  [[True], [False]])          # 2**32 vs 2**15 + 2**17


def test_int_overflow_narrowing_convert():
    x = np.int64([2**31, I32_MAX, I32_MIN, I32_MIN - 1, 300])
    out = mask("int_overflow", "convert_element_type", [x], "int32", {"new_dtype": "int32"})
    np.testing.assert_array_equal(out, [True, False, False, True, False])
    out = mask("int_overflow", "convert_element_type", [x], "uint8", {"new_dtype": "uint8"})
    np.testing.assert_array_equal(out, [True, True, True, True, True])


@pytest.mark.parametrize("op, inputs, expected", [
    # The int64 oracle wraps (I64_MAX + 1 == I64_MIN): the float64 evaluation catches it.
    ("add", [np.int64([I64_MAX, I64_MIN, 2**62, 2**62]), np.int64([1, -1, 2**62, 2**62 - 2**20])],
     [True, True, True, False]),
    ("multiply", [np.int64([2**32, 3037000500, 3037000499, -(2**32)]),
                  np.int64([2**32, 3037000500, 3037000499, 2**31 - 1])],
     [True, True, False, False]),                 # 3037000500**2 > 2**63 > 3037000499**2
    ("subtract", [np.int64([I64_MIN, 0, -5]), np.int64([1, I64_MIN, 7])], [True, True, False]),
    ("negate", [np.int64([I64_MIN, 2**62, -(2**62)])], [True, False, False]),
])
def test_int_overflow_int64_uses_float_oracle(op, inputs, expected):
    np.testing.assert_array_equal(mask("int_overflow", op, inputs, "int64"), expected)


def test_int_overflow_int64_reduce_and_dot():
    x = np.int64([[I64_MAX, 1, 0], [2**62, 2**62, -(2**62)], [-5, 6, 7]])
    out = mask("int_overflow", "reduce_sum", [x], "int64", {"dimensions": [1]})
    np.testing.assert_array_equal(out, [True, False, False])
    lhs, rhs = np.int64([[2**40, 2**40], [3, -4]]), np.int64([[2**23], [2**23]])
    np.testing.assert_array_equal(mask("int_overflow", "dot_general", [lhs, rhs], "int64"),
                                  [[True], [False]])          # 2**64 vs -2**23


@pytest.mark.parametrize("op, inputs", [
    ("add", [np.int64([I64_MAX]), np.int64([0])]),
    ("subtract", [np.int64([I64_MIN + 1]), np.int64([1])]),
    ("subtract", [np.int64([0]), np.int64([I64_MIN + 1])]),
    ("negate", [np.int64([I64_MAX])]),
    ("reduce_sum", [np.int64([I64_MIN, 0])]),
])
def test_int_overflow_int64_fitting_extremes_not_flagged(op, inputs):
    attrs = {"dimensions": [0]} if op == "reduce_sum" else {}
    assert not mask("int_overflow", op, inputs, "int64", attrs).any()


def test_int_overflow_not_for_float_outputs():
    out = mask("int_overflow", "add", [np.float32([3e38]), np.float32([3e38])], "float32")
    assert not out.any()


# --- float_to_int_out_of_range ----------------------------------------------------------------------

def convert_mask(values, src, dst):
    return mask("float_to_int_out_of_range", "convert_element_type", [np.array(values, src)], dst,
                {"new_dtype": dst})


def test_float_to_int32_out_of_range():
    values = [NAN, INF, -INF, 2.0**31, 2.0**31 - 1, -2.0**31, -2.0**31 - 1, 2147483647.9,
              -2147483648.9, 1e10, -0.5, 0.0]
    expected = [True, True, True, True, False, False, True, False, False, True, False, False]
    np.testing.assert_array_equal(convert_mask(values, np.float64, "int32"), expected)


def test_float32_to_int32_out_of_range():
    # float32 cannot hold 2**31 - 1: its neighbours are 2147483520 and 2**31.
    values = [2.0**31, 2147483520.0, -2.0**31, NAN, -INF]
    np.testing.assert_array_equal(convert_mask(values, np.float32, "int32"),
                                  [True, False, False, True, True])


@pytest.mark.parametrize("values, dst, expected", [
    ([255.9, 256.0, -0.5, -1.0, 0.0], "uint8", [False, True, False, True, False]),
    ([-2.0**63, 9223372036854774784.0, -1e19, NAN], "int64", [False, False, True, True]),
    ([127.5, -128.9, -129.0, 128.0], "int8", [False, False, True, True]),
])
def test_float_to_int_other_targets(values, dst, expected):
    np.testing.assert_array_equal(convert_mask(values, np.float64, dst), expected)


@pytest.mark.parametrize("value, dst", [(2.0**63, "int64"), (2.0**64, "uint64")])
def test_float_to_int64_two_to_the_63(value, dst):
    # ConvertElementType: like C++ static_cast, which is undefined when the truncated value does
    # not fit the target; 2**63 > INT64_MAX and 2**64 > UINT64_MAX.
    assert convert_mask([value], np.float64, dst).all()


def test_float_to_int_not_for_int_sources_or_float_targets():
    out = mask("float_to_int_out_of_range", "convert_element_type", [np.int64([2**40])], "int32",
               {"new_dtype": "int32"})
    assert not out.any()
    assert not convert_mask([NAN, 1e300], np.float64, "float32").any()


# --- accumulation_overflow ---------------------------------------------------------------------------

def acc_mask(op, inputs, out_dtype, attrs):
    return mask("accumulation_overflow", op, inputs, out_dtype, attrs, with_length=True)


@pytest.mark.parametrize("x, out_dtype, expected", [
    ([[3e38, 3e38], [1e38, 1e38]], "float32", [True, False]),
    # (a + b) + c overflows to inf, a + (b + c) is 3e38: an order-dependent result.
    ([[3e38, 3e38, -3e38], [1.0, 2.0, 3.0]], "float32", [True, False]),
    # Infinite terms are excluded from the magnitude: inf + 1 is inf in every order.
    ([[INF, 1.0], [INF, 3e38]], "float32", [False, False]),
    ([[60000.0, 10000.0], [30000.0, 30000.0]], "float16", [True, False]),
    ([[1e308, 1e308], [1e307, 1e307]], "float64", [True, False]),
])
def test_accumulation_overflow_reduce_sum(x, out_dtype, expected):
    x = np.asarray(x, dtype=out_dtype)
    np.testing.assert_array_equal(acc_mask("reduce_sum", [x], out_dtype, {"dimensions": [1]}),
                                  expected)


def test_accumulation_overflow_margin_grows_with_length():
    # float16: max 65504, u = 2**-11. Four terms of 16370 sum to 65480 < 65504, but
    # 65480 * (1 + gamma_4) = 65480 * 1.00196 > 65504, so some order may round past max.
    x = np.float16([[16370.0] * 4, [16000.0] * 4])
    np.testing.assert_array_equal(acc_mask("reduce_sum", [x], "float16", {"dimensions": [1]}),
                                  [True, False])


def test_accumulation_overflow_dot_general_and_conv():
    lhs, rhs = np.float32([[2e19, 2e19], [1e19, 1e19]]), np.float32([[2e19], [-2e19]])
    # Row 0: |2e19 * 2e19| + |2e19 * -2e19| = 8e38 > 3.4e38; row 1: 4e38 > 3.4e38 as well.
    np.testing.assert_array_equal(acc_mask("dot_general", [lhs, rhs], "float32", {}), [[True], [True]])
    lhs2 = np.float32([[1e19, 1e19], [1.0, 2.0]])
    np.testing.assert_array_equal(acc_mask("dot_general", [lhs2, np.float32([[1e19], [1e19]])],
                                           "float32", {}), [[False], [False]])  # 2e38 + 2e19
    attrs = {"window_strides": [1, 1], "padding": [[0, 0], [0, 0]], "rhs_dilation": [1, 1]}
    image = np.float16([[[[200.0, 200.0, 1.0]]]])            # 1x1x1x3
    kernel = np.float16([[[[200.0, -200.0]]]])               # 1x1x1x2: 80000 vs 400 in magnitude
    np.testing.assert_array_equal(acc_mask("conv", [image, kernel], "float16", attrs),
                                  [[[[True, False]]]])


def test_accumulation_overflow_not_for_int_outputs():
    x = np.int32([[I32_MAX, I32_MAX]])
    assert not acc_mask("reduce_sum", [x], "int32", {"dimensions": [1]}).any()


# --- padding_times_nonfinite -------------------------------------------------------------------------

CONV_ATTRS = {"window_strides": [1, 1], "padding": [[1, 0], [1, 0]], "rhs_dilation": [1, 1]}


@pytest.mark.parametrize("weight", [INF, -INF, NAN])
def test_padding_times_nonfinite(weight):
    # Padded input is 4x4 (one zero row on top, one zero column on the left); the 2x2 kernel's
    # top-left tap sits at padded (y, x) for output (y, x): a padded zero iff y == 0 or x == 0.
    kernel = np.float32([[[[weight, 1.0], [1.0, 1.0]]]])
    out = mask("padding_times_nonfinite", "conv", [np.ones((1, 1, 3, 3), np.float32), kernel],
               "float32", CONV_ATTRS)
    np.testing.assert_array_equal(out[0, 0], [[True, True, True], [True, False, False],
                                              [True, False, False]])


def test_padding_times_nonfinite_needs_padding_and_a_nonfinite_weight():
    image = np.ones((1, 1, 3, 3))
    finite = mask("padding_times_nonfinite", "conv", [image, np.ones((1, 1, 2, 2))], "float64",
                  CONV_ATTRS)
    assert not finite.any()
    unpadded = dict(CONV_ATTRS, padding=[[0, 0], [0, 0]])
    kernel = np.float64([[[[INF, 1.0], [1.0, 1.0]]]])
    assert not mask("padding_times_nonfinite", "conv", [image, kernel], "float64", unpadded).any()


# --- accumulation_length and region_mask -------------------------------------------------------------

@pytest.mark.parametrize("op, shapes, attrs, n", [
    ("reduce_sum", [(2, 3, 4)], {"dimensions": [0, 2]}, 8),
    ("reduce_sum", [(5,)], {"dimensions": []}, 1),
    ("dot_general", [(2, 3, 5), (2, 5, 4)], {}, 5),
    ("conv", [(1, 3, 8, 8), (4, 3, 2, 2)], {}, 12),
])
def test_accumulation_length(op, shapes, attrs, n):
    assert accumulation_length(op, shapes, attrs) == n


def test_accumulation_length_unknown_op():
    with pytest.raises(KeyError):
        accumulation_length("add", [(3,), (3,)], {})


def test_region_mask_is_the_union():
    ctx = context("divide", [np.int32([I32_MIN, 7, 7]), np.int32([-1, 0, 2])], "int32")
    np.testing.assert_array_equal(region_mask(["int_div_by_zero", "int_min_div_neg1"], ctx),
                                  [True, True, False])
    np.testing.assert_array_equal(region_mask(["int_div_by_zero"], ctx), [False, True, False])
    np.testing.assert_array_equal(region_mask([], ctx), [False, False, False])


def test_nan_operand_sees_bfloat16_nans():
    """bfloat16 arrays have NumPy kind 'V', not 'f': the region must still see their NaNs."""
    import ml_dtypes

    x = np.array([1.0, np.nan, -0.0], ml_dtypes.bfloat16)
    ctx = RegionContext(inputs=[x], expected=np.array([1.0, np.nan, -0.0]), out_dtype="bfloat16",
                        float_oracle=lambda xs: xs[0])
    assert regions()["nan_operand"](ctx).tolist() == [False, True, False]


def test_a_signalling_nan_operand_is_open_where_annex_f_decides_only_quiet_ones(specs):
    """pow(+1, y) = 1 'even for a NaN' (C11 F.10.4.4) holds for a quiet NaN; Annex F leaves
    signalling NaNs unspecified (F.2.1), so with one both 1 and a quiet NaN are readings."""
    from conform.harness.judge.judging import judge_outputs
    from tests.ops.onnx_schema_checks import case_of

    one = np.ones(1, np.float32)
    signalling = np.array([0x7F800001], np.uint32).view(np.float32)
    quiet = np.array([np.nan], np.float32)

    def verdict(y, answer):
        return judge_outputs(specs["onnx_pow"], case_of("onnx_pow", [one, y]),
                             [np.asarray(answer, np.float32)]).verdict

    assert verdict(signalling, [np.nan]) == verdict(signalling, [1.0]) == "impl_defined"
    assert verdict(quiet, [np.nan]) == "fail" and verdict(quiet, [1.0]) == "pass"
