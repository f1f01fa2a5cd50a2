"""The corpus file format: cases and their oracle answers as data only (a JSON header and raw
array bytes), in one digest-checked cache entry (:func:`conform.caches.write_entry`).

Content (after the entry's tag and SHA-256), all offsets from the content's start::

    8 bytes      the header's length, little-endian
    header       JSON: {"blocks": [[dtype name, shape, offset, count], ...],
                        "scalars": [array index, ...], "values": [value, ...],
                        "cases": {field: column}, "answers": {name: column}}
    padding      to a multiple of 16
    blocks       the array bytes

A block holds the arrays of one dtype and shape, one per row, each row padded to 16 bytes: its
rows are read back as views of the file's one buffer in one step (a fifth of the time of
making each array on its own). Every array starts at a 16-byte aligned address, as NumPy's own
allocations do: onnxruntime's float reductions give results that differ in the last bit with
the input's alignment (61 of 300 reduce_sum float32 cases, inputs shifted by 4, 8 or 12
bytes), and a cached case must run exactly as the freshly generated one did. Arrays are
numbered in block order; ``scalars`` lists those that were NumPy scalars (kept as 0-d rows).
No dtype holding Python objects is written or read, but for string arrays (object arrays of
``str``), written as data: a block of dtype ``string`` holds, row after row, each array's UTF-8
lengths and bytes (:func:`conform.dtypes.string_bytes`, 16-byte aligned rows of their own
sizes), read back as text.

``values`` holds each distinct value of a case's op, dtype, input dtypes, out dtype, attrs,
plan and extra once, as tagged JSON data (:func:`conform.caches.to_data`: tuples stay
tuples; cases with equal attrs share one dict when read: nothing changes a case's attrs or
extra); ``cases`` holds one column per Case field (``id``, ``seed``, ``inputs`` as
lists of array indices, the others as indices into ``values``), and ``answers`` one column per
name of :func:`answer_arrays` (an array index, or null where a case has no such array). Reading
column by column costs a third less than case by case.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import orjson

from conform.generators._case import Case
from conform.oracles.expectations import Expectation
from conform.caches import (CONTENT_START, DamagedEntry, from_data, read_entry, to_data,
                                 write_entry)
from conform.dtypes import STRING, np_dtype, string_bytes, strings_from

TAG = b"conform-corpus/2"
_ALIGN = 16


# ------------------------------------------------------------------ oracle answers

def answer_arrays(answer) -> dict[str, np.ndarray]:
    """An oracle answer (per output, a :class:`conform.oracles.expectations.Expectation`) as
    named arrays, absent parts left out (a residual beyond float64 is ``residual``): what the
    corpus stores and the corpus hash covers. The
    first output's arrays are named as they were before ops had several outputs (``expected``,
    ...), so that a single-output case's stored answer and hash are unchanged; output ``k > 0``
    adds ``@k`` to each name."""
    arrays = {}
    for k, part in enumerate(answer):
        suffix = f"@{k}" if k else ""
        arrays["expected" + suffix] = part.expected
        if part.impl_mask is not None:
            arrays["impl_mask" + suffix] = part.impl_mask
        if part.accumulation is not None:
            magnitude_sum, length = part.accumulation
            arrays["magnitude_sum" + suffix] = magnitude_sum
            arrays["accumulation_length" + suffix] = np.asarray(length, np.int64)
        if part.residual is not None:
            arrays["residual" + suffix] = part.residual
    return arrays


def answers_from_arrays(named: dict[str, list], count: int) -> list:
    """The oracle answers of ``count`` cases from their :func:`answer_arrays`, one list per
    name (None where a case has no such array; no ``expected``: no answer)."""
    missing = [None] * count
    outputs = 1 + max((int(name.partition("@")[2] or 0) for name in named), default=0)
    parts = []
    for k in range(outputs):
        suffix = f"@{k}" if k else ""
        expected = named.get("expected" + suffix, missing)
        sums = named.get("magnitude_sum" + suffix, missing)
        lengths = named.get("accumulation_length" + suffix, missing)
        accumulations = [None if s is None else (s, int(n)) for s, n in zip(sums, lengths)]
        parts.append([None if e is None else Expectation(e, m, a, r) for e, m, a, r in
                      zip(expected, named.get("impl_mask" + suffix, missing), accumulations,
                          named.get("residual" + suffix, missing))])
    if outputs == 1:   # the common case, made without a loop over cases in Python
        return [None if p is None else (p,) for p in parts[0]]
    return [tuple(p for p in case if p is not None) or None for case in zip(*parts)]


# ------------------------------------------------------------------------- writing

def _row_bytes(dtype: np.dtype, shape) -> int:
    """Bytes from one row of a block to the next: an array's size rounded up to ``_ALIGN``."""
    size = dtype.itemsize * math.prod(shape)
    return size + (-size % _ALIGN)


class _Layout:
    """The arrays and distinct values of the cases being written, numbered as they come."""

    def __init__(self):
        self.arrays: list = []
        self.blocks: dict = {}    # (dtype, shape) -> indices in ``arrays``
        self.scalars: list = []
        self.values: list = []         # as written (conform.caches.to_data)
        self.originals: list = []
        self._value_index: dict = {}   # repr -> index in ``values``

    def array(self, value) -> int:
        if isinstance(value, np.generic):
            self.scalars.append(len(self.arrays))
            value = np.asarray(value)
        if type(value) is not np.ndarray:
            raise TypeError(f"cannot store a {type(value).__name__} as array data")
        if value.dtype.hasobject:   # a string array (TypeError if an element is no str)
            string_bytes(value)
        self.blocks.setdefault((value.dtype, value.shape), []).append(len(self.arrays))
        self.arrays.append(value)
        return len(self.arrays) - 1

    def value(self, value) -> int:
        """``value``'s index among the distinct values (attrs, extra, input dtypes)."""
        key = repr(value)
        index = self._value_index.get(key)
        if index is None:
            index = self._value_index[key] = len(self.values)
            self.originals.append(value)
            self.values.append(to_data(value, {}))
        return index


#: The Case fields kept as indices into ``values`` (repeated, and kept as tagged data).
_VALUE_FIELDS = ("op", "dtype", "input_dtypes", "out_dtype", "attrs", "plan", "extra")


def encode(cases: list[Case]) -> list:
    """The content chunks of a corpus file holding ``cases``. Raises TypeError for a value the
    format cannot keep exactly."""
    layout = _Layout()
    columns = {"id": [c.id for c in cases], "seed": [c.seed for c in cases],
               "inputs": [[layout.array(x) for x in c.inputs] for c in cases]}
    for name in _VALUE_FIELDS:
        columns[name] = [layout.value(getattr(c, name)) for c in cases]
    answers: dict = {}
    for k, case in enumerate(cases):
        named = {} if case.expectation is None else answer_arrays(case.expectation)
        for name, array in named.items():   # in order: the file is the same in every process
            answers.setdefault(name, [None] * len(cases))[k] = layout.array(array)
    order, blocks, offset, data = [], [], 0, []
    for (dtype, shape), members in layout.blocks.items():
        data.append(_block_bytes(dtype, shape, [layout.arrays[i] for i in members]))
        blocks.append([_dtype_name(dtype), list(shape), offset, len(members)])
        offset += len(data[-1])
        order.extend(members)
    renumber = {old: new for new, old in enumerate(order)}
    columns["inputs"] = [[renumber[i] for i in row] for row in columns["inputs"]]
    answers = {name: [None if i is None else renumber[i] for i in column]
               for name, column in answers.items()}
    header = orjson.dumps({"blocks": blocks, "scalars": sorted(renumber[i] for i in layout.scalars),
                           "values": layout.values, "cases": columns, "answers": answers})
    kept = [repr(from_data(v, {})) for v in orjson.loads(header)["values"]]
    if kept != [repr(v) for v in layout.originals]:
        raise TypeError("attrs, extra or input dtypes that JSON does not keep exactly")
    return [len(header).to_bytes(8, "little"), header, bytes(-(8 + len(header)) % _ALIGN), *data]


def _block_bytes(dtype: np.dtype, shape, arrays: list) -> bytes:
    """The rows of one block: each array's bytes padded to ``_ALIGN`` (a string array's
    :func:`~conform.dtypes.string_bytes`, aligned already)."""
    if dtype.hasobject:
        return b"".join(map(string_bytes, arrays))
    padding = bytes(_row_bytes(dtype, shape) - dtype.itemsize * math.prod(shape))
    return b"".join(np.ascontiguousarray(a).tobytes() + padding for a in arrays)


def write(path: Path, cases: list[Case]) -> None:
    """Store ``cases`` at ``path`` (atomically)."""
    write_entry(path, TAG, encode(cases))


# ------------------------------------------------------------------------- reading

def _c_strides(dtype: np.dtype, shape) -> tuple:
    strides, step = [], dtype.itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _dtype_name(dtype: np.dtype) -> str:
    """The name a block gives its dtype: fixed-width text (``<U32``, whose ``name`` ``str1024``
    NumPy cannot read back) by its ``str``."""
    if dtype.hasobject:
        return STRING
    return dtype.str if dtype.kind in "US" else dtype.name


def _dtype(name) -> np.dtype:
    dtype = np_dtype(name)
    if dtype.hasobject and name != STRING:
        raise DamagedEntry(f"dtype {name!r} holds objects")
    return dtype


def read(path: Path) -> list[Case]:
    """The cases stored at ``path``. Raises :class:`DamagedEntry` (or OSError) for a file
    that is not a whole, unaltered corpus file."""
    buffer = read_entry(path, TAG)
    try:
        return _decode(buffer)
    except (KeyError, IndexError, TypeError, ValueError, OverflowError) as exc:
        raise DamagedEntry(f"malformed: {type(exc).__name__}: {exc}") from None


def _decode(buffer: bytearray) -> list[Case]:
    length = int.from_bytes(buffer[CONTENT_START:CONTENT_START + 8], "little")
    header = orjson.loads(memoryview(buffer)[CONTENT_START + 8:CONTENT_START + 8 + length])
    start = CONTENT_START + 8 + length
    start += -start % _ALIGN
    arrays: list = []
    for name, shape, offset, count in header["blocks"]:
        dtype, shape = _dtype(name), tuple(shape)
        row = _row_bytes(dtype, shape)
        if dtype.hasobject:   # string rows, one after the other
            at = start + offset
            for _ in range(count):
                array, at = strings_from(buffer, at, shape)
                arrays.append(array)
        elif shape:
            arrays.extend(np.ndarray((count, *shape), dtype, buffer, start + offset,
                                     (row, *_c_strides(dtype, shape))))
        else:   # rows of a 1-d block would be NumPy scalars, not 0-d arrays
            arrays.extend(np.ndarray((), dtype, buffer, start + offset + k * row)
                          for k in range(count))
    for index in header["scalars"]:
        arrays[index] = arrays[index][()]
    values = [from_data(v, {}) for v in header["values"]]
    columns = header["cases"]
    count = len(columns["id"])
    fields = {name: list(map(values.__getitem__, columns[name])) for name in _VALUE_FIELDS}
    named = {name: [None if i is None else arrays[i] for i in column]
             for name, column in header["answers"].items()}
    answers = answers_from_arrays(named, count)
    inputs = [list(map(arrays.__getitem__, row)) for row in columns["inputs"]]
    if any(len(column) != count for column in (*fields.values(), inputs, answers, columns["seed"])):
        raise ValueError("columns of different lengths")
    return list(map(Case, columns["id"], fields["op"], fields["dtype"], fields["input_dtypes"],
                    fields["out_dtype"], inputs, fields["attrs"], fields["plan"], columns["seed"],
                    fields["extra"], answers))
