"""What a worker tells the parent, as bytes the parent reads without running any of the worker's code.

The worker runs the adapter's code, so whatever it sends is foreign: a pickle from it could make
the parent run anything (``__reduce__``), and with it patch the judge. So the worker's messages
are frames the parent takes apart itself: a JSON header (decoded by orjson: strings, numbers,
lists and dicts only) and the raw bytes of the arrays it names, each read back with
``numpy.frombuffer`` under a dtype from :data:`ARRAY_DTYPES` (numeric types only: nothing that
holds objects), or a string array (``["string", shape]``: its elements' UTF-8 lengths and
bytes, :func:`conform.dtypes.string_bytes`, decoded by the parent as text). A frame that does
not parse is a :class:`WireError`: the parent treats the worker as broken, as if it had died.
The parent's messages to the worker are still pickled: the worker trusts the parent, not the
other way round.
"""
from __future__ import annotations

import math

import numpy as np
import orjson

from conform.dtypes import ML_DTYPES, STRING, np_dtype, string_bytes, strings_from
from conform.harness.judge.outcome import Outcome

#: The dtypes an array may have on the wire, by name (``dtype.name``): NumPy's numeric types and
#: every type of conform's vocabulary that ml_dtypes adds (none of them holds objects).
ARRAY_DTYPES = frozenset({
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128", *ML_DTYPES})

_LENGTH = 8   # bytes of the header's length, little-endian, before the header


class WireError(ValueError):
    """A worker's frame that does not parse: the worker is broken (or hostile)."""


def wire_array(array: np.ndarray) -> np.ndarray:
    """``array`` as it travels: C-contiguous, native byte order. Raises :class:`WireError` if
    its dtype cannot travel (see :data:`ARRAY_DTYPES`; an object array travels if its elements
    are all ``str``: a string array)."""
    if array.dtype.hasobject:
        try:
            string_bytes(array)
        except TypeError:
            raise WireError("an object array whose elements are not all str") from None
        return array
    if array.dtype.name not in ARRAY_DTYPES:
        raise WireError(f"arrays of dtype {array.dtype} cannot be sent")
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return array if array.flags.c_contiguous else array.copy(order="C")   # (0-d stays 0-d)


def pack(kind: str, body=None, arrays=()) -> bytes:
    """A frame: ``kind`` and ``body`` (JSON-encodable) and ``arrays`` (from :func:`wire_array`),
    read back by :func:`unpack`."""
    header = orjson.dumps({"kind": kind, "body": body,
                           "arrays": [[STRING if a.dtype.hasobject else a.dtype.name, list(a.shape)]
                                      for a in arrays]},
                          option=orjson.OPT_SERIALIZE_NUMPY)
    return b"".join([len(header).to_bytes(_LENGTH, "little"), header,
                     *(string_bytes(a) if a.dtype.hasobject else a.reshape(-1).view(np.uint8).data
                       for a in arrays)])


def unpack(frame: bytes) -> tuple:
    """``(kind, body, arrays)`` of a frame made by :func:`pack`; the arrays are writable and
    share one buffer. Raises :class:`WireError` for anything else."""
    try:
        size = int.from_bytes(frame[:_LENGTH], "little")
        header = orjson.loads(frame[_LENGTH:_LENGTH + size])
        kind, body, described = header["kind"], header["body"], header["arrays"]
    except (orjson.JSONDecodeError, TypeError, KeyError) as exc:
        raise WireError(f"a frame that does not parse: {exc}") from None
    if type(kind) is not str or type(described) is not list:
        raise WireError("a frame whose header is not a kind and a list of arrays")
    data = bytearray(memoryview(frame)[_LENGTH + size:])
    arrays, offset = [], 0
    for item in described:
        dtype, shape = _described(item)
        if dtype.hasobject:   # a string array: lengths, then UTF-8 text
            try:
                array, offset = strings_from(data, offset, shape)
            except ValueError as exc:
                raise WireError(f"string data that does not parse: {exc}") from None
            arrays.append(array)
            continue
        count = math.prod(shape)
        if offset + count * dtype.itemsize > len(data):
            raise WireError("a frame shorter than the arrays it names")
        arrays.append(np.frombuffer(data, dtype, count, offset).reshape(shape))
        offset += count * dtype.itemsize
    if offset != len(data):
        raise WireError("a frame longer than the arrays it names")
    return kind, body, arrays


def _described(item) -> tuple:
    """The dtype and shape an array's ``[dtype name, shape]`` names."""
    if type(item) is not list or len(item) != 2 or type(item[0]) is not str \
            or item[0] not in ARRAY_DTYPES | {STRING} \
            or type(item[1]) is not list \
            or not all(type(n) is int and 0 <= n < 2 ** 62 for n in item[1]):
        raise WireError(f"an array described as {str(item)[:80]}")
    return np_dtype(item[0]), tuple(item[1])


def computed_frame(outcomes: list, counters: dict) -> bytes:
    """A worker's reply: ``outcomes`` (:class:`~conform.harness.judge.outcome.Outcome`, their
    outputs from :func:`wire_array`) and the backend's counters, read back by
    :func:`computed_outcomes`."""
    rows, arrays = [], []
    for o in outcomes:
        outputs = o.outputs or ()
        rows.append([o.kind, o.message, o.traceback, o.seconds, o.on_input, len(outputs), o.stderr])
        arrays.extend(outputs)
    return pack("computed", {"rows": rows, "counters": counters}, arrays)


#: What a worker may say happened to a case (a crash or a timeout is the parent's to say).
_KINDS = frozenset({"ok", "unsupported", "error"})


def computed_outcomes(body, arrays: list) -> tuple:
    """``(outcomes, counters)`` of a ``computed`` frame's body and arrays; raises
    :class:`WireError` unless every field has its type."""
    try:
        rows, counters = body["rows"], body["counters"]
    except (TypeError, KeyError):
        raise WireError("a reply without rows and counters") from None
    if type(rows) is not list or type(counters) is not dict \
            or not all(type(v) in (int, float) for v in counters.values()):
        raise WireError("a reply whose rows or counters have the wrong type")
    outcomes, start = [], 0
    for row in rows:
        if type(row) is not list or len(row) != 7:
            raise WireError("a reply row that is not seven fields")
        kind, message, trace, seconds, on_input, count, stderr = row
        if type(kind) is not str or kind not in _KINDS or type(message) is not str or type(trace) is not str \
                or type(stderr) is not str \
                or type(seconds) not in (int, float) or type(on_input) is not bool \
                or type(count) is not int or not 0 <= count <= len(arrays) - start:
            raise WireError(f"a reply row with a field of the wrong type: {str(row)[:200]}")
        outputs = arrays[start:start + count] if kind == "ok" else None
        start += count
        outcomes.append(Outcome(kind, outputs, message, trace, float(seconds), on_input=on_input,
                                stderr=stderr))
    if start != len(arrays):
        raise WireError("a reply with arrays no row claims")
    return outcomes, counters


def read_reply(frame: bytes, owed: int) -> tuple:
    """``(outcomes, counters)`` of a worker's reply (:func:`computed_frame`) to a worker that
    owes ``owed`` cases. Raises :class:`WireError` for a frame that is not a reply, or that
    answers more cases than that."""
    kind, body, arrays = unpack(frame)
    if kind != "computed":
        raise WireError(f"a {kind[:40]!r} frame where a reply was due")
    outcomes, counters = computed_outcomes(body, arrays)
    if len(outcomes) > owed:
        raise WireError(f"{len(outcomes)} outcomes for {owed} cases owed")
    return outcomes, counters


def read_first(frame: bytes) -> tuple:
    """A starting worker's first frame as ``(kind, payload)``: ``("hello", what it says of its
    backend)`` or ``("fatal", why it could not load)`` (also for a frame that is neither)."""
    try:
        kind, body, _ = unpack(frame)
        if kind == "fatal" and type(body) is str:
            return kind, body
        if kind == "hello":
            return kind, _hello(body)
        raise WireError(f"a {kind[:40]!r} frame")
    except WireError as exc:
        return "fatal", f"its first message is not a hello: {exc}"


#: What a worker's hello says of its backend: strings, and two that may be None.
_HELLO = {"name": (str,), "version": (str,), "device": (str,), "subnormals": (str,),
          "model_format": (str, type(None)), "binding": (str, type(None))}


def _hello(body) -> dict:
    if type(body) is not dict or set(body) != set(_HELLO) \
            or not all(type(body[key]) in types for key, types in _HELLO.items()):
        raise WireError(f"a hello that does not say {', '.join(_HELLO)}")
    return body
