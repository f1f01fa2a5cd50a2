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
