"""The result-record format every stage shares: its version, how a reader checks it, and the
canonical JSON encoding that digests and signatures are computed over."""
from __future__ import annotations

import json

#: The version of the results.jsonl line and summary.json formats this conform writes. 2: each
#: carries it (1: written before it did; the fields a version-1 run has mean the same in 2).
SCHEMA_VERSION = 2


class SchemaVersionError(ValueError):
    """A run written in a format this conform cannot read (by a newer conform)."""


def check_schema_version(document: dict, where) -> None:
    """Raise :class:`SchemaVersionError` naming ``where`` if ``document`` (a summary or a result
    line) was written in a format newer than this conform reads; no ``schema_version``: 1.

    >>> check_schema_version({"schema_version": 2}, "summary.json")
    """
    version = document.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= SCHEMA_VERSION:
        raise SchemaVersionError(f"{where}: written with schema_version {version!r}; this conform "
                                 f"reads versions 1 to {SCHEMA_VERSION}: read it with the conform "
                                 "that wrote it, or a newer one")


def canonical(value) -> bytes:
    """The canonical JSON encoding (sorted keys, no spaces, UTF-8, no NaN) that certificate
    digests and signatures are computed over.

    >>> canonical({"b": 1, "a": [1.5, "é"]})
    b'{"a":[1.5,"\\xc3\\xa9"],"b":1}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")
