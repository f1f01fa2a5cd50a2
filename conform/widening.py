"""How an oracle sees its inputs: widened to float64, int64 (uint64 kept) or bool, whatever their
dtype."""
from __future__ import annotations

import numpy as np

from conform.dtypes import is_integer


def widen(array: np.ndarray) -> np.ndarray:
    """An input as the oracle sees it: float64 for floats, complex128 for complex numbers, int64
    for integers but uint64, bool for bool; strings (object arrays of ``str``) as they are.
    uint64 stays uint64: int64 would read every value from 2**63 up as negative (2**64 - 1 as
    -1), and its order, maximum and clamp with it; uint64 arithmetic wraps modulo 2**64 as the
    int64 path's does, so sums and products keep their low 64 bits either way.

    >>> widen(np.float16([0.5])).dtype, widen(np.uint8([7])).dtype, widen(np.complex64(1j)).dtype
    (dtype('float64'), dtype('int64'), dtype('complex128'))
    >>> widen(np.uint64([2**64 - 1])).tolist()
    [18446744073709551615]
    """
    kind = array.dtype.kind
    if kind == "c":
        return array.astype(np.complex128)
    if kind == "b":
        return array.astype(np.bool_)
    if kind == "O":   # the string dtype: text has no wider form
        return array
    if array.dtype == np.uint64:
        return array
    if kind in "iu" or (kind == "V" and is_integer(array.dtype.name)):   # int4, uint4
        return array.astype(np.int64)
    return array.astype(np.float64)
