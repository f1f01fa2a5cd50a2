"""Streaming results.jsonl: one JSON object per case, written as the run goes."""
from __future__ import annotations

import json
import math
from json import encoder as json_encoder
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


def _record_encoder():
    """The C encoder json.dumps(value, allow_nan=False, ensure_ascii=False) would build, built
    once: json.dumps builds one for every call, a quarter of the cost of encoding a record.
    None where the json module has no C speedups."""
    make = json_encoder.c_make_encoder
    if make is None:
        return None
    return make(None, json.JSONEncoder().default, json_encoder.encode_basestring, None, ": ", ", ",
                False, False, False)


_ENCODE = _record_encoder()


def dumps(value) -> str:
    """Strict JSON; non-finite floats become strings (records from the judge already are)."""
    try:
        if _ENCODE is not None and isinstance(value, dict):
            return "".join(_ENCODE(value, 0))
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
