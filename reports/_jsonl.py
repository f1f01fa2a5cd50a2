"""Streaming results.jsonl: one JSON object per case, written as the run goes."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterator

import orjson


def to_json_safe(value):
    """Replace non-finite floats by the strings 'nan', 'inf', '-inf' (strict JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: to_json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_safe(v) for v in value]
    return value


def dumps(value) -> str:
    """Strict JSON; non-finite floats become the strings 'nan', 'inf', '-inf' (records from
    the judge already hold them so). A record is encoded by orjson, 5x faster than json."""
    if type(value) is dict:
        try:
            line = orjson.dumps(value)
            # orjson writes NaN and infinities as null, silently: the line is exact when each
            # null in it is one of the record's top-level None values (a nested None, a NaN or
            # "null" in a string all add one: then the record is made safe first)
            if line.count(b"null") != [*value.values()].count(None):
                line = orjson.dumps(to_json_safe(value))
            return line.decode()
        except TypeError:   # e.g. a NumPy scalar, or an integer beyond 64 bits
            pass
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False)
    except ValueError:
        return json.dumps(to_json_safe(value), allow_nan=False, ensure_ascii=False)


class ResultWriter:
    """Appends result records to a JSONL file, flushing each line."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._file = None

    def __enter__(self):
        self._file = self.path.open("w", encoding="utf-8")
        return self

    def write(self, record: dict) -> None:
        self._file.write(dumps(record) + "\n")

    def write_line(self, line: str) -> None:
        """Write a record already encoded with :func:`dumps` (workers encode their own)."""
        self._file.write(line + "\n")

    def __exit__(self, *exc):
        self._file.close()


def read_results(path: Path) -> Iterator[dict]:
    """The records of a results.jsonl file, in file order."""
    with Path(path).open("rb") as f:
        for line in f:
            if line.strip():
                yield orjson.loads(line)
