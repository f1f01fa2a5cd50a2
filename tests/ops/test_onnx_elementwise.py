"""ONNX's broadcasting element-wise operators (ops/onnx_elementwise.py) on the unsigned types: a
uint64 operand reaches the oracle widened to int64 (the oracle contract), so values of 2**63 and
above arrive negative; the oracles read them back and answer as the unsigned type does."""
from __future__ import annotations

import numpy as np
import pytest

from conform.oracles import evaluate

BIG = np.uint64(2**64 - 2)   # -2 once widened to int64


@pytest.mark.parametrize("op, expected", [
    ("onnx_div", 2**63 - 1), ("onnx_max", 2**64 - 2), ("onnx_min", 2),
    ("onnx_greater", True), ("onnx_less", False), ("onnx_add", 0), ("onnx_sub", 2**64 - 4),
])
def test_uint64_operands_past_int64_are_read_as_unsigned(op, expected):
    a, b = np.array([BIG], np.uint64), np.array([2], np.uint64)
    (out,) = evaluate(op, [a, b], {})
    assert np.asarray(out).astype(np.uint64 if out.dtype.kind in "iu" else bool)[0] == expected


def test_uint64_sign_of_a_large_value_is_one():
    (out,) = evaluate("onnx_sign", [np.array([BIG], np.uint64)], {})
    assert out[0] == 1


def test_unsigned_abs_is_the_value_itself_and_onnxruntime_agrees():
    """Abs-13 of an unsigned type: 'y = abs(x)' is x, the largest values too (a signed
    reading of 2**64 - 2 would give 2)."""
    from conform.harness.backends.models import run_case
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend
    from conform.harness.judge.judging import judge_outputs
    from conform.generators import generate_cases
    from conform.oracles.expectations import expect
    from conform.spec import load_specs

    (out,) = evaluate("onnx_abs_unsigned", [np.array([BIG, 0, 5], np.uint64)], {})
    assert np.asarray(out).astype(np.uint64).tolist() == [2**64 - 2, 0, 5]
    spec = load_specs()["onnx_abs_unsigned"]
    for case in generate_cases(spec, "uint64", count=2, seed=1, answer=expect):
        judged = judge_outputs(spec, case, run_case(OnnxRuntimeBackend(), spec, case))
        assert judged.verdict == "pass", (case.id, judged.reason)


def test_integer_mod_takes_the_divisors_sign_and_int_min_by_minus_one_is_zero():
    """Mod fmod=0 (Mod-13: 'the Python %-operator. The sign of the result is that of the
    divisor'): the floored remainder, exact."""
    a, b = np.array([-7, 7, -7, 7, -2**63]), np.array([2, -2, -2, 2, -1])
    (got,) = evaluate("onnx_mod", [a, b], {})
    assert got.tolist() == [1, -1, -1, 1, 0]
    (big,) = evaluate("onnx_mod", [np.array([BIG], np.uint64), np.array([7], np.uint64)], {})
    assert np.asarray(big).astype(np.uint64)[0] == (2**64 - 2) % 7


def test_float_mod_floor_follows_mod_28s_special_cases():
    """Mod-28 fmod=0 on floats: a zero has y's sign, x infinite or y zero is NaN, y infinite
    gives x of the same sign and y otherwise, and r + y rounds once."""
    a = np.array([-7.0, 0.0, -0.0, 4.0, np.inf, 1.0, 5.5, -5.5, -2.0 ** -1074])
    b = np.array([2.0, -3.0, 3.0, -2.0, 2.0, 0.0, np.inf, np.inf, 1.0])
    (got,) = evaluate("onnx_mod_floor", [a, b], {})
    assert np.array_equal(got, [1.0, -0.0, 0.0, -0.0, np.nan, np.nan, 5.5, np.inf, 1.0],
                          equal_nan=True)
    assert np.signbit(got[[1, 3]]).all() and not np.signbit(got[2])


@pytest.mark.parametrize("op, dtype, x, y, expected", [
    ("onnx_bit_shift_right_28", np.int8, [-128, -5, 5, -5, -5, 100], [1, 8, 8, -1, 2, 7],
     [-64, -1, 0, -1, -2, 0]),
    ("onnx_bit_shift_left_28", np.int8, [64, 1, -1, 3, 1], [1, 7, 8, -1, 0],
     [-128, -128, 0, 0, 1]),
    ("onnx_bit_shift_left_28", np.uint64, [1, 3], [63, 64], [2**63, 0]),
    ("onnx_bit_shift_left_28", np.int64, [3, -1], [63, 1], [-2**63, -2]),
])
def test_bit_shift_28_is_arithmetic_and_defines_every_amount(op, dtype, x, y, expected):
    """BitShift-28: a signed right shift fills with the sign bit, a left shift drops the bits
    past it, and an amount out of [0, bits) gives -1 (right shift of a negative x) or 0."""
    (out,) = evaluate(op, [np.array(x, dtype), np.array(y, dtype)], {})
    assert np.asarray(out).astype(dtype).tolist() == expected
