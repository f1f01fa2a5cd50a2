"""Streaming results.jsonl: one JSON object per case, written as the run goes."""
from __future__ import annotations

import contextlib
import json
import math
import os
import time
from pathlib import Path
from typing import Iterator

import orjson

from conform.records import SCHEMA_VERSION, SchemaVersionError, check_schema_version  # noqa: F401
from conform.reports._text import neutral, neutral_value

BACKEND_TEXT = ("message", "traceback")   # a record's fields that hold a backend's own words


def to_json_safe(value):
    """Replace non-finite floats by the strings 'nan', 'inf', '-inf' (strict JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: to_json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_safe(v) for v in value]
    return value


def _nested_nones(record: dict) -> int:
    """How many None values ``record``'s dict values and their lists hold (a result record's
    ``worst.inputs`` has one per input not aligned with the output)."""
    count = 0
    for value in record.values():
        if type(value) is dict:
            for item in value.values():
                if item is None:
                    count += 1
                elif type(item) is list:
                    count += item.count(None)
    return count


def dumps(value) -> str:
    """Strict JSON; non-finite floats become the strings 'nan', 'inf', '-inf' (records from
    the judge already hold them so). A record is encoded by orjson, 5x faster than json."""
    return encode(value).decode()


def _neutral_text(record: dict) -> dict:
    """``record`` with its backend text made safe (see :mod:`conform.reports._text`)."""
    safe = None
    for key in BACKEND_TEXT:
        text = record.get(key)
        if type(text) is str and neutral(text) is not text:
            safe = safe or dict(record)
            safe[key] = neutral(text)
    return safe or record


def encode(value) -> bytes:
    """:func:`dumps` as UTF-8 bytes (a results.jsonl line without its newline). A record's
    message and traceback are written :func:`~conform.reports._text.neutral`: no control,
    bidi or lone surrogate character reaches the file, which stays valid UTF-8 JSON."""
    if type(value) is dict:
        if "message" in value or "traceback" in value:
            value = _neutral_text(value)
        try:
            line = orjson.dumps(value)
            # orjson writes NaN and infinities as null, silently. Each null in the line is a
            # None, a NaN or infinity, or "null" in a string, so if there are no more nulls
            # than None values counted (some of them, where they usually are), there is no
            # NaN or infinity; else the record is made safe first.
            nulls = line.count(b"null")
            top = [*value.values()].count(None)
            if nulls != top and nulls != top + _nested_nones(value):
                line = orjson.dumps(to_json_safe(value))
            return line
        except TypeError:   # e.g. a NumPy scalar, or an integer beyond 64 bits
            pass
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except ValueError:
        text = json.dumps(to_json_safe(value), allow_nan=False, ensure_ascii=False)
    try:
        return text.encode()
    except UnicodeEncodeError:   # a lone surrogate outside the backend text fields
        return json.dumps(neutral_value(to_json_safe(value)), allow_nan=False,
                          ensure_ascii=False).encode()


class ResultWriter:
    """Writes result records to a JSONL file (UTF-8) as the run produces them, each write
    flushed to the operating system at once (a run killed with SIGKILL loses no line it
    wrote); ``seconds`` is the time spent encoding and writing them, and closing the file.
    ``keep_bytes``: continue an existing file after its first ``keep_bytes`` bytes (a resumed
    run: what follows its last complete line goes), instead of starting it afresh."""

    def __init__(self, path: Path, keep_bytes: int | None = None):
        self.path = Path(path)
        self.keep_bytes = keep_bytes
        self._file = None
        self.seconds = 0.0

    def __enter__(self):
        # never through a symbolic link (its target would be overwritten): a new file replaces
        # whatever was there, and a resumed one must be the file itself
        if self.keep_bytes is None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            self._file = os.fdopen(fd, "wb")
        else:
            self._file = os.fdopen(os.open(self.path, os.O_RDWR | os.O_NOFOLLOW), "r+b")
            self._file.truncate(self.keep_bytes)
            self._file.seek(self.keep_bytes)
        return self

    def write(self, record: dict) -> None:
        self.write_lines([encode(record)])

    def write_lines(self, lines: list[bytes]) -> None:
        """Write records already encoded with :func:`encode` (workers encode their own)."""
        if lines:
            start = time.perf_counter()
            try:
                self._file.write(b"\n".join(lines) + b"\n")
                self._file.flush()
            except OSError as exc:   # a full disk: say which file
                raise OSError(exc.errno, exc.strerror, str(self.path)) from None
            self.seconds += time.perf_counter() - start

    def __exit__(self, *exc):
        start = time.perf_counter()
        try:
            self._file.close()
        except OSError as error:   # what a failed write left buffered fails again: say it once
            if exc[0] is None:
                raise OSError(error.errno, error.strerror, str(self.path)) from None
        self.seconds += time.perf_counter() - start


def read_results(path: Path) -> Iterator[dict]:
    """The records of a results.jsonl file, in file order."""
    with Path(path).open("rb") as f:
        for line in f:
            if line.strip():
                yield orjson.loads(line)
