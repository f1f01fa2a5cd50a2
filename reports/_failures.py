"""Failure catalogs: ``docs/failures/<backend>.yaml`` explains each known cause of a backend's
failing records (a deviation from the standard's text, with its repro), and :func:`census`
groups a run's failing records by the first entry that explains them.

The format is documented in ``reports/schemas/failures.schema.json``. A record is explained by
an entry when every key of the entry's ``match`` holds: ``op``, ``dtype`` and ``plan`` are
fnmatch patterns on the record's fields, ``verdict`` equals the record's, ``message`` is a
substring of the record's message, and ``attrs`` a substring of the record's attributes as
Python prints them (``{'body': [{'op': 'sqrt', ...}]}``: an op inside a computation, which an
error's message does not name).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from fnmatch import fnmatchcase
from importlib import resources
from pathlib import Path

from conform.spec import SpecError, line_of, read_yaml_mapping, validate_document
from conform.verdicts import ACCEPTS_INVALID, PROBLEMS

#: The verdicts a catalog explains: every problem verdict, and a must-reject case answered.
FAILING = PROBLEMS + (ACCEPTS_INVALID,)
MESSAGE_CHARS = 100   # an unmatched group shows the start of its first message
_PATTERNS = ("op", "dtype", "plan")


class CatalogError(SpecError):
    """A failure catalog is malformed; the message names the file, the line and the entry."""


@dataclass(frozen=True)
class CatalogEntry:
    """One cause of failing records: what it matches and why the backend fails there."""

    id: str
    match: dict
    kind: str
    explanation: str
    repro: str
    line: int

    def matches(self, record: dict, keys=None) -> bool:
        """True when every key of ``match`` holds for ``record`` (only those among ``keys``
        when given: a record that keeps its op, dtype and verdict alone, as a baseline does)."""
        for key, want in self.match.items():
            if keys is not None and key not in keys:
                continue
            if key in _PATTERNS:
                if not fnmatchcase(str(record.get(key) or ""), want):
                    return False
            elif key == "message":
                if want not in (record.get("message") or ""):
                    return False
            elif key == "attrs":
                if want not in str(record.get("attrs") or ""):
                    return False
            elif record.get(key) != want:
                return False
        return True


def _schema() -> dict:
    return json.loads(resources.files("conform.reports").joinpath("schemas", "failures.schema.json")
                      .read_text())


def load_catalog(path: Path | str) -> list[CatalogEntry]:
    """The entries of a catalog file, in order; :class:`CatalogError` names file, line and entry
    for a malformed one (schema violation or repeated id). An empty file is an empty catalog."""
    path = Path(path)
    if not path.read_text(encoding="utf-8").strip():
        return []
    data, root = read_yaml_mapping(path, "a failure catalog", CatalogError, shape=list)
    try:
        validate_document(data, root, path, _schema(), CatalogError)
    except CatalogError as exc:   # name the entry by its id too, where it has one
        index = exc.field.split(".")[0]
        entry = data[int(index)] if index.isdigit() else None
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise
        raise CatalogError(path, exc.line, exc.field, f"entry {entry['id']!r}: "
                           f"{str(exc).split(': ', 2)[-1]}") from None
    entries, seen = [], {}
    for i, raw in enumerate(data):
        line = line_of(root, [i])
        if raw["id"] in seen:
            raise CatalogError(path, line, f"{i}.id", f"entry id {raw['id']!r} repeats the "
                                                      f"entry on line {seen[raw['id']]}")
        seen[raw["id"]] = line
        entries.append(CatalogEntry(raw["id"], raw["match"], raw["kind"], raw["explanation"],
                                    raw["repro"], line))
    return entries


def explain(entries: list[CatalogEntry], record: dict, keys=None) -> CatalogEntry | None:
    """The first entry that matches ``record`` (on ``keys`` alone when given), or None."""
    return next((entry for entry in entries if entry.matches(record, keys)), None)


def _core(message: str) -> str:
    """A judge message without its case prefix (``op [backend] dtype=... (case ID): ``)."""
    head, sep, rest = message.partition("): ")
    return rest if sep and "(case " in head else message


@dataclass
class Census:
    """A run's failing records counted per catalog entry, and those no entry explains grouped
    by (op, dtype, verdict) with their count and first message."""

    counts: Counter
    unmatched: dict

    def lines(self, entries: list[CatalogEntry]) -> list[str]:
        """The census as text: one line per entry (its count, possibly 0), then the unmatched."""
        out = [f"{self.counts[e.id]:6d}  {e.id}" for e in entries]
        out.append(f"{sum(self.counts.values()):6d}  explained")
        for (op, dtype, verdict), (count, message) in sorted(self.unmatched.items()):
            out.append(f"UNMATCHED {count:5d}  {op} {dtype} {verdict}: {message[:MESSAGE_CHARS]}")
        return out


def census(entries: list[CatalogEntry], records) -> Census:
    """Group the failing records of ``records`` by the first entry that explains them."""
    counts, unmatched = Counter(), {}
    for record in records:
        if record.get("verdict") not in FAILING:
            continue
        entry = explain(entries, record)
        if entry is not None:
            counts[entry.id] += 1
            continue
        key = (record.get("op"), record.get("dtype"), record.get("verdict"))
        count, message = unmatched.get(key, (0, _core(record.get("message") or "")))
        unmatched[key] = (count + 1, message)
    return Census(counts, unmatched)
