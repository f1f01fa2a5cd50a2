"""Arrays of ml_dtypes' types (bfloat16, float8, float4, int4/uint4, int2/uint2) in and out of
onnxruntime, whose ``session.run`` takes and gives none of them: they cross as OrtValues typed
by their ONNX element type, 8- and 16-bit float types by their bits, 4- and 2-bit types packed
into bytes (ONNX: two 4-bit elements a byte, element ``2k`` in the low nibble; four 2-bit
elements a byte, element ``4k + j`` in bits ``2j`` and ``2j + 1``).

Self-contained (NumPy, ml_dtypes, ctypes): repro scripts for onnxruntime include this module's
source as it stands.
"""
from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np

#: float types crossing by their bits: (TensorProto element type, unsigned type of their width)
BY_BITS = {"bfloat16": (16, "uint16"), "float8_e4m3fn": (17, "uint8"),
           "float8_e4m3fnuz": (18, "uint8"), "float8_e5m2": (19, "uint8"),
           "float8_e5m2fnuz": (20, "uint8"), "float8_e8m0fnu": (24, "uint8")}
#: types packed several to a byte: (TensorProto element type, bits per element)
PACKED = {"int4": (22, 4), "uint4": (21, 4), "float4_e2m1fn": (23, 4), "int2": (26, 2),
          "uint2": (25, 2)}
#: the signed integers among them (sign-extended when unpacked)
_SIGNED = ("int4", "int2")


def needs_ort_values(dtypes) -> bool:
    """Whether any of the dtype names must cross as OrtValues."""
    return any(d in BY_BITS or d in PACKED for d in dtypes)


def ort_value(ort, x: np.ndarray):
    """``x`` as an OrtValue of onnxruntime module ``ort``."""
    name = x.dtype.name
    if name in BY_BITS:
        element_type, bits = BY_BITS[name]
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(x.view(bits),
                                                               onnx_element_type=element_type)
    if name in PACKED:
        element_type, bits = PACKED[name]
        packed = _pack(x, name, bits)
        value = ort.OrtValue.ortvalue_from_shape_and_type(x.shape, element_type)
        ctypes.memmove(value.data_ptr(), packed.ctypes.data, packed.nbytes)
        return value
    return ort.OrtValue.ortvalue_from_numpy(x)


class NoStringOrtValue(Exception):
    """A model takes a string input and gives a result that crosses as an OrtValue: onnxruntime
    makes no OrtValue of a string array, and ``session.run`` gives no result of those types."""


def run_session(ort, session, feeds: dict) -> list:
    """``session``'s outputs (an ``ort.InferenceSession``) on ``feeds`` (name -> array), the
    values of ml_dtypes' types crossing as OrtValues both ways. A string input cannot be an
    OrtValue: with one, ``session.run`` takes it as an object array and the others as OrtValues,
    and a result of ml_dtypes' types raises :class:`NoStringOrtValue`."""
    crossing = [output.name for output in session.get_outputs()
                if output.type[len("tensor("):-1] in _BY_ONNX_NAME]
    if not crossing and not needs_ort_values(x.dtype.name for x in feeds.values()):
        return session.run(None, feeds)
    strings = [name for name, x in feeds.items() if x.dtype.kind in "OU"]
    if not strings:
        values = session.run_with_ort_values(None, {name: ort_value(ort, x)
                                                    for name, x in feeds.items()})
        return [array_of(value) for value in values]
    if crossing:
        raise NoStringOrtValue(f"onnxruntime makes no OrtValue of a string array ("
                               f"{', '.join(strings)}), and session.run gives no "
                               f"{', '.join(crossing)} of its type")
    return session.run(None, {name: x.astype(object) if name in strings else ort_value(ort, x)
                              for name, x in feeds.items()})


def _onnx_name(name: str) -> str:
    """ONNX's name of an ml_dtypes type: float8e8m0 for float8_e8m0fnu, float4e2m1 for
    float4_e2m1fn (the others: the name without its underscores)."""
    return {"float8_e8m0fnu": "float8e8m0", "float4_e2m1fn": "float4e2m1"}.get(
        name, name.replace("_", ""))


#: ONNX's names of those types (float8e4m3fn) -> conform's (float8_e4m3fn)
_BY_ONNX_NAME = {_onnx_name(n): n for n in (*BY_BITS, *PACKED)}


def array_of(value) -> np.ndarray:
    """An OrtValue's data as a NumPy array (ml_dtypes' types by their bits)."""
    name = _BY_ONNX_NAME.get(value.data_type()[len("tensor("):-1])   # e.g. float8e4m3fn, int4
    if name is None:
        return value.numpy()
    shape = tuple(value.shape())
    if name in BY_BITS:
        bits = np.empty(shape, BY_BITS[name][1])
        ctypes.memmove(bits.ctypes.data, value.data_ptr(), bits.nbytes)
        return bits.view(getattr(ml_dtypes, name))
    bits = PACKED[name][1]
    size = int(np.prod(shape, dtype=np.int64))
    packed = np.empty(-(-size * bits // 8), np.uint8)
    ctypes.memmove(packed.ctypes.data, value.data_ptr(), packed.nbytes)
    return _unpack(packed, name, bits, size).reshape(shape)


def _pack(x: np.ndarray, name: str, bits: int) -> np.ndarray:
    """The elements' codes, ``8 // bits`` to a byte, the first in the low bits."""
    if name.startswith("float"):   # ml_dtypes holds a float4 code in the byte's low bits
        codes = np.ascontiguousarray(x).view(np.uint8).ravel().astype(np.int64)
    else:
        codes = x.astype(np.int64).ravel()
    codes &= (1 << bits) - 1
    per_byte = 8 // bits
    codes = np.append(codes, np.zeros(-codes.size % per_byte, np.int64))
    shifts = np.arange(per_byte, dtype=np.int64) * bits
    return (codes.reshape(-1, per_byte) << shifts).sum(axis=1).astype(np.uint8)


def _unpack(packed: np.ndarray, name: str, bits: int, size: int) -> np.ndarray:
    """The first ``size`` elements of ``packed`` (see :func:`_pack`) in ml_dtypes' type."""
    shifts = np.arange(8 // bits, dtype=np.uint8) * bits
    codes = ((packed[:, None] >> shifts) & ((1 << bits) - 1)).ravel()[:size]
    if name.startswith("float"):
        return codes.astype(np.uint8).view(getattr(ml_dtypes, name))
    codes = codes.astype(np.int64)
    if name in _SIGNED:
        codes = np.where(codes >= 1 << (bits - 1), codes - (1 << bits), codes)
    return codes.astype(getattr(ml_dtypes, name))
