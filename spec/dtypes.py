"""Dtype vocabulary shared by specs, generators, oracles and backends.

Named edge values used in spec files (``edge_values``) are resolved here, e.g. ``-max_finite``,
``min_subnormal``, ``int_min``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import ml_dtypes
import numpy as np


@functools.cache   # called for every input of every case
def np_dtype(name: str) -> np.dtype:
    """The NumPy dtype for a conform dtype name (bfloat16 comes from ml_dtypes)."""
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


@dataclass(frozen=True)
class FloatFormat:
    """Parameters of a binary floating-point format (IEEE 754 terms)."""

    precision: int   # p: significand bits including the implicit one
    emin: int        # exponent of the smallest normal number
    emax: int        # exponent of the largest finite number

    @property
    def unit_roundoff(self) -> float:
        return 2.0 ** -self.precision

    @property
    def min_normal(self) -> float:
        return 2.0 ** self.emin

    @property
    def min_subnormal(self) -> float:
        return 2.0 ** (self.emin - self.precision + 1)

    @property
    def max_finite(self) -> float:
        return (2.0 - 2.0 ** (1 - self.precision)) * 2.0 ** self.emax


FLOAT_FORMATS = {
    "float16": FloatFormat(11, -14, 15),
    "bfloat16": FloatFormat(8, -126, 127),
    "float32": FloatFormat(24, -126, 127),
    "float64": FloatFormat(53, -1022, 1023),
}


def float_format(name: str) -> FloatFormat:
    return FLOAT_FORMATS[name]


def _float_named(fmt: FloatFormat) -> dict[str, float]:
    ulp_at_max = 2.0 ** (fmt.emax - fmt.precision + 1)
    return {
        "zero": 0.0, "inf": np.inf, "nan": np.nan, "one": 1.0, "half": 0.5,
        "min_subnormal": fmt.min_subnormal,
        "max_subnormal": fmt.min_normal - fmt.min_subnormal,
        "min_normal": fmt.min_normal,
        "max_finite": fmt.max_finite,
        "below_max_finite": fmt.max_finite - ulp_at_max,
    }


def resolve_edge_value(value, dtype: str):
    """A spec edge value (number or name, optionally '-'-prefixed) as a Python number.

    >>> resolve_edge_value("-max_finite", "float16")
    -65504.0
    >>> resolve_edge_value("int_min", "int32")
    -2147483648
    """
    if not isinstance(value, str):
        return value
    sign, name = (-1, value[1:]) if value.startswith("-") else (1, value)
    if dtype in FLOAT_FORMATS:
        named = _float_named(FLOAT_FORMATS[dtype])
        if name not in named:
            raise KeyError(f"edge value {value!r} is not defined for {dtype}; known: {sorted(named)}")
        return sign * named[name]
    if value == "-zero":
        raise KeyError(f"edge value {value!r} exists only for floating-point dtypes")
    info = np.iinfo(np_dtype(dtype))
    named = {"zero": 0, "one": 1, "int_min": int(info.min), "int_max": int(info.max)}
    if name not in named:
        raise KeyError(f"edge value {value!r} is not defined for {dtype}; known: {sorted(named)}")
    return sign * named[name]
