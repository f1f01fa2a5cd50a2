"""ONNX Pow: ``f(x) = x^exponent`` element-wise, with multidirectional broadcasting.

From opset 12 the exponent has a type of its own (``T1``: every integer and float type) and the
base may be an integer (``T``: int32, int64, the float types). The text gives the function and
nothing else: for a float base the C11 Annex F pow special cases are the spec's special-value
table, and for an integer base the result is the exact power where it is an integer of ``T``;
where it is not (a negative exponent of a base other than ±1, zero to a negative power) or
leaves ``T``'s range, the text gives no rounding and no overflow rule, and the oracle marks the
element open (the region ``oracle_marked``). ``onnx_pow`` draws the exponent in the base's type,
``onnx_pow_mixed`` in each integer type ``T1`` holds (opset 12 on).
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import yaml

from conform.ops._lowering import unsupported
from conform.ops.special_values import apply_table
from conform.ops.elementwise import oracle_power
from conform.op_registry import op

_INTEGER_BASES = ("int32", "int64")
#: past this exponent a base of magnitude 2 or more leaves int64: only the parity still counts
_EXPONENT_CAP = 64


def _exponent(y: np.ndarray, dtype: str | None) -> np.ndarray:
    """The exponent as stored: a uint64 one (widened to int64, so wrapped) read back."""
    return y.view(np.uint64) if dtype == "uint64" and y.dtype == np.int64 else y


def _integer_power(x, y, dtype: str):
    """``(values, open)``: x ** y exactly (Python integers), with open elements 0 (a float
    exponent that is no integer among them: 2 ** 0.5 is no integer either)."""
    info = np.iinfo(dtype)
    fraction = np.zeros(np.shape(y), bool)
    if y.dtype.kind == "f":   # a float exponent (T1): open where it is no integer
        with np.errstate(invalid="ignore"):
            fraction = ~(np.isfinite(y) & (y == np.trunc(y)) & (np.abs(y) < 2.0 ** 62))
        y = np.where(fraction, 0, y).astype(np.int64)
    base, power = np.broadcast_arrays(x.astype(object), y.astype(object))
    negative = np.asarray(power < 0, bool)
    unit = np.asarray(np.abs(base) == 1, bool)
    magnitude = np.where(negative, -power, power)
    capped = np.where(np.asarray(magnitude > _EXPONENT_CAP, bool), _EXPONENT_CAP + magnitude % 2, magnitude)
    exact = np.asarray(np.power(base, np.asarray(capped, object)), object)
    exact = np.where(negative & ~unit, 0, exact)   # base ** -n for base = ±1 is base ** n
    opened = (negative & ~unit) | np.asarray((exact < int(info.min)) | (exact > int(info.max)), bool)
    opened = opened | np.broadcast_to(fraction, opened.shape)
    return np.asarray(np.where(opened, 0, exact)).astype(np.int64), opened


def _float_power(x, y, dtypes):
    """x ** y for a float base, the exponent as a float64 (an integer exponent's parity kept
    where the float64 rounds it: the sign of a negative base's power)."""
    wide = y.astype(np.float64)
    base_dtype = dtypes[0] if dtypes else None
    (out,) = oracle_power(x, wide, dtypes=(base_dtype,) * 2 if dtypes else None)
    if y.dtype.kind in "iu":
        odd = (y % 2 == 1) & (np.abs(wide) >= 2.0 ** 53)
        with np.errstate(invalid="ignore"):
            out = np.where(odd & (x < 0), -np.abs(out), out)
    return (out,)


@cache
def _c11_table() -> tuple:
    """onnx_pow's special-value table (C11 Annex F F.10.4.4, ops/onnx_pow.yaml): the mixed op's
    exponent has a type of its own, which makes it no element-wise op to the spec loader, so
    its oracle applies the same rows itself."""
    text = (Path(__file__).with_name("onnx_pow.yaml")).read_text(encoding="utf-8")
    return tuple(yaml.safe_load(text)["special_values"])


def _pow(x, y, dtypes, open_elements):
    y = _exponent(y, dtypes[1] if dtypes else None)
    if dtypes and dtypes[0] in _INTEGER_BASES:
        values, opened = _integer_power(x, y, dtypes[0])
        return (opened,) if open_elements else (values,)
    if open_elements:
        return (np.zeros(np.broadcast_shapes(np.shape(x), np.shape(y)), bool),)
    return _float_power(x, y, dtypes)


def numpy_onnx_pow(x, y):
    """The numpy backend: ``numpy.power`` in the base's type, the exponent converted to it
    (unsupported where that changes its value, or where NumPy refuses an integer to a negative
    integer power)."""
    with np.errstate(all="ignore"):
        exponent = y.astype(x.dtype)
        if not np.array_equal(exponent.astype(y.dtype), y, equal_nan=y.dtype.kind not in "iu"):
            raise unsupported("the exponent is not representable in the base's type")
        if x.dtype.kind in "iu" and (exponent < 0).any():
            raise unsupported("NumPy refuses integers to negative integer powers")
        return np.power(x, exponent)


@op("onnx_pow", version=1, numpy=numpy_onnx_pow)
def oracle_onnx_pow(x, y, *, dtypes=None, open_elements=False):
    """ONNX Pow, 'f(x) = x^exponent' (the exponent in the base's type): a float base as C11's
    pow (the Annex F special cases are the spec's special_values table); an integer base's exact
    power, open where it is no integer of the type (see the module)."""
    return _pow(x, y, dtypes, open_elements)


@op("onnx_pow_mixed", version=1, numpy=numpy_onnx_pow)
def oracle_onnx_pow_mixed(x, y, *, dtypes=None, open_elements=False):
    """ONNX Pow-12 and later with an integer exponent type T1 other than the base's: as
    ``onnx_pow``, its special-value table included (an exponent beyond 2**53 keeps its parity:
    the sign of a negative base's power)."""
    (out,) = _pow(x, y, dtypes, open_elements)
    if open_elements or out.dtype.kind != "f":
        return (out,)
    return (apply_table(_c11_table(), [x, _exponent(y, dtypes and dtypes[1]).astype(np.float64)],
                        out, shapes="onnx_broadcast"),)
