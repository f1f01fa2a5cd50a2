"""NNEF tensor files (conform.harness.backends.nnef_tensors): the header read back field by
field at the offsets the format gives (NNEF-Tools once wrote 4 bytes too many), and a round trip
of every item type against the ``nnef`` package's own reader and writer (a second opinion):
conform's bytes equal the package's, each reads the other's file back to the same array."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from conform.harness.backends.nnef_tensors import (BOOL, FLOAT, INT, QINT, QUINT, UINT, decode,
                                                   encode, read_header, read_tensor,
                                                   write_tensor)

nnef = pytest.importorskip("nnef")

RNG = np.random.default_rng(7)
ARRAYS = {   # (array, quantized) -> item type code, bits per item
    "float16": (RNG.standard_normal((2, 3)).astype(np.float16), False, FLOAT, 16),
    "float32": (np.array([[-0.0, np.inf], [np.nan, 1e-45]], np.float32), False, FLOAT, 32),
    "float64": (np.array(3.25), False, FLOAT, 64),
    "int8": (np.arange(-4, 4, dtype=np.int8), False, INT, 8),
    "int16": (np.array([-32768, 32767], np.int16), False, INT, 16),
    "int32": (RNG.integers(-2**31, 2**31, (2, 2, 2), dtype=np.int32), False, INT, 32),
    "int64": (np.array([[-2**63, 2**63 - 1]]), False, INT, 64),
    "uint8": (np.arange(250, 256, dtype=np.uint8), False, UINT, 8),
    "uint16": (np.array([65535], np.uint16), False, UINT, 16),
    "uint32": (np.array([2**32 - 1, 0], np.uint32), False, UINT, 32),
    "uint64": (np.array([2**64 - 1], np.uint64), False, UINT, 64),
    "bool": (RNG.random((3, 3)) < 0.5, False, BOOL, 1),
    "qint8": (np.array([-128, 5, 127], np.int8), True, QINT, 8),
    "quint8": (np.array([[0, 200]], np.uint8), True, QUINT, 8),
    "qint32": (np.array([-7], np.int32), True, QINT, 32),
    "empty": (np.zeros((2, 0), np.float32), False, FLOAT, 32),
}


def _theirs(path, array, quantized):
    with open(path, "wb") as file:
        nnef.write_tensor(file, array, quantized=quantized)
    return path.read_bytes()


@pytest.mark.parametrize("name", ARRAYS)
def test_the_header_field_by_field(name):
    array, quantized, code, bits = ARRAYS[name]
    data = encode(array, quantized=quantized)
    assert data[:4] == bytes([0x4E, 0xEF, 1, 0])                     # magic, version 1.0
    length, rank = struct.unpack_from("<II", data, 4)
    assert length == len(data) - 128 == (array.size * bits + 7) // 8
    assert rank == array.ndim
    assert struct.unpack_from("<8I", data, 12) == array.shape + (0,) * (8 - array.ndim)
    assert struct.unpack_from("<II", data, 44) == (bits, code)
    assert data[52:128] == bytes(76)                                   # reserved, zero
    expected = np.packbits(array) if code == BOOL else array.astype(array.dtype.newbyteorder("<"))
    assert data[128:] == expected.tobytes()                            # the data at byte 128
    header = read_header(data)
    assert (header.shape, header.item_type, header.bits_per_item) == (array.shape, code, bits)


@pytest.mark.parametrize("name", ARRAYS)
def test_round_trip_against_the_nnef_package(tmp_path, name):
    array, quantized, code, _ = ARRAYS[name]
    assert encode(array, quantized=quantized) == _theirs(tmp_path / "t.dat", array, quantized)
    mine = write_tensor(tmp_path / "mine.dat", array, quantized=quantized)
    with open(mine, "rb") as file:
        back, was_quantized = nnef.read_tensor(file, return_quantization=True)
    assert back.dtype == array.dtype and back.shape == array.shape and was_quantized == quantized
    np.testing.assert_array_equal(back, array)
    read, header = read_tensor(tmp_path / "t.dat")
    assert read.dtype == array.dtype and header.item_type == code
    np.testing.assert_array_equal(read, array)


def test_bits_are_packed_first_item_in_the_most_significant_bit():
    data = encode(np.array([True, False, False, False, False, False, False, False, True]))
    assert data[128:] == bytes([0b10000000, 0b10000000])


@pytest.mark.parametrize("damage, message", [
    (lambda d: b"NN" + d[2:], "magic=b'NN'"),
    (lambda d: d + b"\x00", "data length=8, but 9 bytes follow"),
    (lambda d: d[:100], "header is 128 bytes, found 100"),
    (lambda d: d[:44] + struct.pack("<I", 12) + d[48:], "bits_per_item=12"),
])
def test_damaged_files_are_refused(damage, message):
    data = encode(np.array([1.0, 2.0], np.float32))
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
        decode(damage(data))


def test_types_without_an_item_type_are_refused():
    with pytest.raises(TypeError, match="no complex128 items"):
        encode(np.zeros(2, complex))
    with pytest.raises(TypeError, match="quantized=True takes an integer tensor"):
        encode(np.zeros(2, np.float32), quantized=True)
