"""NNEF tensor files (``.dat``): the binary format in which NNEF stores a tensor's data, a
variable's weights above all (NNEF 1.0, chapter 5 "Storing Network Data", tensor files; the
seeds' chapter 1 names it: "a binary format describing the content of individual tensors").

A file is a 128-byte header, then the data. Every multi-byte field is a little-endian unsigned
integer:

| bytes   | field |
|---------|-------|
| 0-1     | magic number ``0x4E 0xEF`` |
| 2-3     | version, major then minor (1, 0) |
| 4-7     | data length: the bytes after the header |
| 8-11    | rank (at most 8) |
| 12-43   | extents: eight uint32, those past the rank zero |
| 44-47   | bits per item |
| 48-51   | item type code |
| 52-127  | reserved: zero (before NNEF 1.0.3, the quantization algorithm's code and parameters; since 1.0.3 quantization lives in the ``.quant`` file and the item type only says whether the integers are quantized) |

Item type codes: 0 float, 1 unsigned integer, 2 quantized unsigned integer, 3 quantized signed
integer, 4 signed integer, 5 logical. The data follows in row-major order, little-endian;
logical items take one bit each, packed with the first item in the most significant bit of
the first byte, the last byte padded with zero bits.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"\x4e\xef"
HEADER = struct.Struct("<2s2BII8III19I")   # 128 bytes
MAX_RANK = 8
FLOAT, UINT, QUINT, QINT, INT, BOOL = range(6)
ITEM_TYPES = {FLOAT: "float", UINT: "unsigned integer", QUINT: "quantized unsigned integer",
              QINT: "quantized signed integer", INT: "signed integer", BOOL: "logical"}
_KIND = {"f": FLOAT, "u": UINT, "i": INT, "b": BOOL}
_QUANTIZED = {UINT: QUINT, INT: QINT}


@dataclass(frozen=True)
class TensorHeader:
    """The fields of a tensor file's header, as stored."""

    magic: bytes
    version: tuple
    data_length: int
    rank: int
    extents: tuple          # all eight
    bits_per_item: int
    item_type: int
    reserved: tuple         # nineteen uint32

    @property
    def shape(self) -> tuple:
        return self.extents[:self.rank]


def header_of(array: np.ndarray, *, quantized: bool = False) -> TensorHeader:
    """The header a tensor file of ``array`` carries (``quantized``: an integer tensor whose
    values are quantized, item type 2 or 3)."""
    kind = _KIND.get(array.dtype.kind)
    if kind is None:
        raise TypeError(f"NNEF tensor files hold no {array.dtype} items")
    if quantized:
        if kind not in _QUANTIZED:
            raise TypeError(f"quantized=True takes an integer tensor, not {array.dtype}")
        kind = _QUANTIZED[kind]
    if array.ndim > MAX_RANK:
        raise ValueError(f"rank={array.ndim} is larger than {MAX_RANK}")
    bits = 1 if kind == BOOL else array.dtype.itemsize * 8
    length = (array.size * bits + 7) // 8
    extents = tuple(array.shape) + (0,) * (MAX_RANK - array.ndim)
    return TensorHeader(MAGIC, (1, 0), length, array.ndim, extents, bits, kind, (0,) * 19)


def encode(array, *, quantized: bool = False) -> bytes:
    """The bytes of a tensor file holding ``array``.

    >>> encode(np.array([True, False, True]))[128:]
    b'\\xa0'
    """
    array = np.asarray(array)
    h = header_of(array, quantized=quantized)
    head = HEADER.pack(h.magic, *h.version, h.data_length, h.rank, *h.extents,
                       h.bits_per_item, h.item_type, *h.reserved)
    if h.item_type == BOOL:
        return head + np.packbits(array.ravel()).tobytes()
    return head + np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()


def read_header(data: bytes) -> TensorHeader:
    """The header at the start of ``data``, field by field (ValueError if it is not one)."""
    if len(data) < HEADER.size:
        raise ValueError(f"a tensor file's header is {HEADER.size} bytes, found {len(data)}")
    fields = HEADER.unpack_from(data)
    h = TensorHeader(fields[0], fields[1:3], fields[3], fields[4], fields[5:13], fields[13],
                     fields[14], fields[15:])
    if h.magic != MAGIC:
        raise ValueError(f"magic={h.magic!r} is not {MAGIC!r}")
    if h.rank > MAX_RANK or h.item_type not in ITEM_TYPES:
        raise ValueError(f"rank={h.rank}, item_type={h.item_type}: not a tensor file header")
    return h


def decode(data: bytes) -> tuple[np.ndarray, TensorHeader]:
    """``(array, header)`` of a tensor file's bytes; the array's dtype follows the item type
    and bits per item (quantized integers read as the integers they are stored as)."""
    h = read_header(data)
    count = math.prod(h.shape)
    body = data[HEADER.size:]
    if len(body) != h.data_length:
        raise ValueError(f"data length={h.data_length}, but {len(body)} bytes follow the header")
    if h.item_type == BOOL:
        if h.bits_per_item != 1:
            raise ValueError(f"bits_per_item={h.bits_per_item} for logical items (1 expected)")
        items = np.unpackbits(np.frombuffer(body, np.uint8), count=count).astype(bool)
    else:
        kind = {FLOAT: "f", UINT: "u", QUINT: "u", INT: "i", QINT: "i"}[h.item_type]
        if h.bits_per_item not in (8, 16, 32, 64) or (kind == "f" and h.bits_per_item == 8):
            raise ValueError(f"bits_per_item={h.bits_per_item} for {ITEM_TYPES[h.item_type]} "
                             "items is not read here")
        items = np.frombuffer(body, f"<{kind}{h.bits_per_item // 8}", count)
        items = items.astype(items.dtype.newbyteorder("="))
    return items.reshape(h.shape), h


def write_tensor(path: Path | str, array, *, quantized: bool = False) -> Path:
    """Write ``array`` as the NNEF tensor file ``path``; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(array, quantized=quantized))
    return path


def read_tensor(path: Path | str) -> tuple[np.ndarray, TensorHeader]:
    """``(array, header)`` of the NNEF tensor file ``path``."""
    return decode(Path(path).read_bytes())
