"""ONNX Erf-9 on integer tensors (Erf-13 allows only floats).

The text, 'Computes the error function of the given input tensor element-wise', gives erf and
no rounding of it to an integer type: erf(0) = 0 is the one integer value; every other integer
x has 0 < |erf x| < 1, and the oracle marks it open (the region ``oracle_marked``).
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op


@op("onnx_erf_integer", version=1)
def oracle_onnx_erf_integer(input, *, open_elements=False):  # noqa: A002 - ONNX's input name
    """erf(0) = 0; any other element open (no rounding of erf(x) to an integer in the text)."""
    nonzero = np.asarray(input) != 0
    return (nonzero,) if open_elements else (np.zeros(np.shape(input), np.int64),)
