"""Arrays of ml_dtypes' types (bfloat16, float8, int4/uint4) in and out of onnxruntime, whose
``session.run`` takes and gives none of them: they cross as OrtValues typed by their ONNX
element type, float types by their bits, 4-bit integers packed two to a byte (ONNX: element
``2k`` in the low nibble, ``2k + 1`` in the high one).

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
           "float8_e5m2fnuz": (20, "uint8")}
#: 4-bit integers: TensorProto element type
PACKED = {"int4": 22, "uint4": 21}


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
        nibbles = x.astype(np.int64).ravel() & 0xF
        if nibbles.size % 2:
            nibbles = np.append(nibbles, 0)
        packed = (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8)
        value = ort.OrtValue.ortvalue_from_shape_and_type(x.shape, PACKED[name])
        ctypes.memmove(value.data_ptr(), packed.ctypes.data, packed.nbytes)
        return value
    return ort.OrtValue.ortvalue_from_numpy(x)


#: ONNX's names of those types (float8e4m3fn) -> conform's (float8_e4m3fn)
_BY_ONNX_NAME = {n.replace("_", ""): n for n in (*BY_BITS, *PACKED)}


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
    size = int(np.prod(shape, dtype=np.int64))
    packed = np.empty((size + 1) // 2, np.uint8)
    ctypes.memmove(packed.ctypes.data, value.data_ptr(), packed.nbytes)
    nibbles = np.stack([packed & 0xF, packed >> 4], axis=-1).ravel()[:size].astype(np.int64)
    if name == "int4":
        nibbles = np.where(nibbles >= 8, nibbles - 16, nibbles)
    return nibbles.astype(getattr(ml_dtypes, name)).reshape(shape)
