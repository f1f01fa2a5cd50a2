"""How an oracle sees its inputs: widened to float64, int64 or bool, whatever their dtype."""
from __future__ import annotations

import numpy as np

from conform.dtypes import is_integer


def widen(array: np.ndarray) -> np.ndarray:
    """An input as the oracle sees it: float64 for floats, complex128 for complex numbers, int64
    for integers, bool for bool; strings (object arrays of ``str``) as they are.

    >>> widen(np.float16([0.5])).dtype, widen(np.uint8([7])).dtype, widen(np.complex64(1j)).dtype
    (dtype('float64'), dtype('int64'), dtype('complex128'))
    """
    kind = array.dtype.kind
    if kind == "c":
        return array.astype(np.complex128)
    if kind == "b":
        return array.astype(np.bool_)
    if kind == "O":   # the string dtype: text has no wider form
        return array
    if kind in "iu" or (kind == "V" and is_integer(array.dtype.name)):   # int4, uint4
        return array.astype(np.int64)
    return array.astype(np.float64)
