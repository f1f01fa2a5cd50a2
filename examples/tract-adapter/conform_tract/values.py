"""Arrays across tract's C API, read at their own dtype.

Two helpers of tract 0.21.7's Python API cannot be used as they are:

* ``Value.to_numpy`` reads every tensor's bytes as float32 (it passes no datum type to
  ``tract_value_as_bytes`` and views the data as ``c_float``): a float16, float64, int64 or bool
  result comes back as garbage. :func:`to_numpy` asks the C API for the datum type and reads the
  bytes as that.
* ``Value.from_numpy`` passes the array through ``numpy.ascontiguousarray``, which makes a 0-d
  array 1-d: a rank-0 input then mismatches the model's fact. :func:`from_numpy` keeps the rank.
"""
from __future__ import annotations

import ctypes

import numpy as np
from tract.bindings import check, lib
from tract.value import Value, dt_numpy_to_tract

# tract's DatumType codes (tract.h: TRACT_DATUM_TYPE_*): 0x01 bool, 0x1N uN, 0x2N iN, 0x3N fN,
# N the size in bytes
_KINDS = {0x00: "b", 0x10: "u", 0x20: "i", 0x30: "f"}


def numpy_dtype(code: int) -> np.dtype:
    """The NumPy dtype of tract's DatumType ``code`` (ValueError for complex or unknown)."""
    if code == 0x01:
        return np.dtype(bool)
    kind = _KINDS.get(code & 0xF0)
    if kind is None or code & 0xF0 == 0x00:
        raise ValueError(f"tract datum type 0x{code:02x} has no NumPy dtype here")
    return np.dtype(f"{kind}{code & 0x0F}")


def from_numpy(array: np.ndarray) -> Value:
    """A tract ``Value`` holding a copy of ``array`` (any rank, 0 included)."""
    array = np.asarray(array, order="C")
    code = dt_numpy_to_tract(array.dtype)
    shape = (ctypes.c_size_t * max(array.ndim, 1))(*array.shape)
    ptr = ctypes.c_void_p()
    check(lib.tract_value_from_bytes(code, ctypes.c_size_t(array.ndim), shape,
                                     ctypes.c_void_p(array.ctypes.data), ctypes.byref(ptr)))
    return Value(ptr)


def to_numpy(value) -> np.ndarray:
    """A copy of tract ``Value`` ``value``'s data, in its own dtype and shape."""
    datum, rank = ctypes.c_uint32(), ctypes.c_size_t()
    shape, data = ctypes.POINTER(ctypes.c_size_t)(), ctypes.c_void_p()
    check(lib.tract_value_as_bytes(value.ptr, ctypes.byref(datum), ctypes.byref(rank),
                                   ctypes.byref(shape), ctypes.byref(data)))
    dims = tuple(int(shape[i]) for i in range(rank.value))
    dtype = numpy_dtype(datum.value)
    size = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    raw = ctypes.string_at(data.value, size) if size else b""
    return np.frombuffer(raw, dtype=dtype).reshape(dims).copy()
