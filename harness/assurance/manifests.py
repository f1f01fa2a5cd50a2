"""Manifests of known deviations: per-backend YAML files that excuse, expect or skip cases.

A manifest names the cases it covers by globs and says what to do with them::

    backend: onnxruntime          # optional; loading it for another backend is an error
    entries:
      - op: reduce_max            # glob over op names
        dtype: "float*"           # glob over dtype labels (``float32``, ``float32->int8``)
        case: "reduce_max.*.1?"   # optional glob over case ids
        when: {inputs: nan}       # optional: the condition it excuses (below)
        kind: xfail               # xfail | skip | waiver
        reason: NaN is ignored instead of propagated
        link: https://github.com/...
        expires: 2026-06-30       # optional: the last day the entry holds

An entry names what it excuses: a ``when`` condition, or a ``case`` glob, or, to cover every case
of its op x dtype cells, ``scope: cell`` (said explicitly, with its reason): an entry with none of
them is an error, since it would hide every new bug of its cells. A ``case`` glob that matches
every case of its cells (``"*"``) is cell scope, and needs ``scope: cell`` as well. A ``when`` condition holds for a
failing case when every condition it lists holds (:data:`CONDITIONS`), each over *every* failing
element of the case (the judge sums them up in the record's ``failing`` profile,
:mod:`conform.harness.judge.profile`), so a case with any other failing element stays a failure;
``attrs`` holds when the case's attributes have the values given. A case with no failing
element to look at (an error, crash or timeout) meets no element condition. ``skip`` entries
can only use ``attrs`` (a skipped case is never judged).

The first entry (in file order, files in the order given) that matches a case and whose condition
holds decides:

* ``skip``: the case is generated (ids stay stable) but not run; it is recorded with verdict ``skip``.
* ``xfail``: a failing case (``fail``, ``error``, ``crash``, ``timeout``) becomes ``xfail``; a
  passing one becomes ``xpass`` (reported; it fails the gate only under ``--strict-xfail``).
* ``waiver``: a failing case becomes ``waived``: counted and shown, not a failure.

An entry past its ``expires`` date is an error (of any kind). An entry whose op and dtype globs
match cases of the run but which excused no failure (xfail, waiver) or skipped nothing (skip)
is *stale* (in an ``--exhaustive`` run, an entry naming cases only if it matched one). Records
keep the verdict the backend earned in ``raw_verdict`` whenever the manifest changed it, so a
manifest can be re-applied to finished results (``conform gate``).
"""
from __future__ import annotations

import datetime
import fnmatch
import importlib.resources
import itertools
import operator
import re
from dataclasses import dataclass
from pathlib import Path

from conform.spec import SpecError
from conform.spec import line_of, read_yaml_mapping, validate_document
from conform import verdicts

KINDS = ("xfail", "skip", "waiver")
FAILING = verdicts.PROBLEMS
#: A ``when`` condition's keys, and what each says of every failing element of a case.
CONDITIONS = {
    "inputs": "nan: a NaN is among its inputs; inf: an infinity is; nonfinite: either is",
    "inputs_below": "every input's magnitude is below this",
    "some_input_at_least": "some input's magnitude is at least this",
    "expected": "zero: the expected value is +0 or -0; inf: an infinity; nan: NaN",
    "expected_below": "the expected value's magnitude is below this",
    "expected_at_least": "the expected value's magnitude is at least this",
    "attrs": "(of the case) its attributes have these values",
}
_NUMBER = {"type": "number", "exclusiveMinimum": 0}

_TEXT = {"type": "string", "minLength": 1}
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "conform manifest of known deviations",
    "type": "object",
    "additionalProperties": False,
    "required": ["entries"],
    "properties": {
        "backend": _TEXT,
        "entries": {"type": "array", "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["op", "dtype", "kind", "reason", "link"],
            "properties": {"op": _TEXT, "dtype": _TEXT, "case": _TEXT, "kind": {"enum": list(KINDS)},
                           "reason": {"type": "string", "minLength": 5}, "link": _TEXT,
                           "expires": {},  # a YAML date or a YYYY-MM-DD string; checked below
                           "scope": {"enum": ["cell"]},
                           "when": {"type": "object", "additionalProperties": False,
                                    "minProperties": 1, "properties": {
                                        "inputs": {"enum": ["nan", "inf", "nonfinite"]},
                                        "inputs_below": _NUMBER, "some_input_at_least": _NUMBER,
                                        "expected": {"enum": ["zero", "inf", "nan"]},
                                        "expected_below": _NUMBER, "expected_at_least": _NUMBER,
                                        "attrs": {"type": "object", "minProperties": 1}}}},
        }},
    },
}


class ManifestError(SpecError):
    """A manifest is malformed, is for another backend, or holds an expired entry."""


@dataclass(frozen=True)
class Entry:
    """One manifest entry, from line ``line`` of the manifest file ``path``."""

    op: str
    dtype: str
    kind: str
    reason: str
    link: str
    path: str
    line: int
    case: str | None = None
    expires: datetime.date | None = None
    when: tuple = ()          # the condition's (key, value) pairs, attrs as sorted pairs
    scope: str | None = None  # "cell": every case of its op x dtype cells, said explicitly

    @property
    def where(self) -> str:
        """``file:line``: the entry's identity in messages, records and summaries."""
        return f"{self.path}:{self.line}"

    def in_scope(self, op: str, dtype: str) -> bool:
        """Whether the entry's op and dtype globs cover ``op`` x ``dtype``."""
        return fnmatch.fnmatchcase(op, self.op) and fnmatch.fnmatchcase(dtype, self.dtype)

    def matches(self, op: str, dtype: str, case_id: str) -> bool:
        """Whether the entry covers the case ``case_id`` of ``op`` x ``dtype``."""
        return self.in_scope(op, dtype) and (self.case is None
                                             or fnmatch.fnmatchcase(case_id, self.case))

    def holds(self, record: dict) -> bool:
        """Whether the entry's ``when`` condition holds for the result ``record`` (or a case's
        ``{"attrs": ...}`` for a skip); an entry without one holds for every case it matches."""
        if not self.when:
            return True
        elements = None
        for key, wanted in self.when:
            if key == "attrs":
                attrs = record.get("attrs") or {}
                if any(attrs.get(name, _MISSING) != value for name, value in wanted):
                    return False
                continue
            if elements is None:
                profile = record.get("failing")
                if not profile or not profile["elements"] or profile["profiled"] < profile["elements"]:
                    return False
                elements = profile["elements"]
            if not _condition(key, wanted, profile, elements):
                return False
        return True

    @property
    def condition(self) -> dict | None:
        """The ``when`` condition as written (None: none)."""
        return {key: dict(value) if key == "attrs" else value for key, value in self.when} or None

    def describe(self) -> str:
        """``file:line (kind op=.. dtype=.. [case=..] [when=..])`` for messages."""
        case = f" case={self.case}" if self.case else ""
        when = f" when={self.condition}" if self.when else ""
        return f"{self.where} ({self.kind} op={self.op} dtype={self.dtype}{case}{when})"

    def as_json(self) -> dict:
        """The entry as recorded in results.jsonl and summary.json."""
        fields = {"entry": self.where, "kind": self.kind, "op": self.op, "dtype": self.dtype,
                  "case": self.case, "when": self.condition, "scope": self.scope,
                  "reason": self.reason, "link": self.link,
                  "expires": self.expires.isoformat() if self.expires else None}
        return {k: v for k, v in fields.items() if v is not None}


def recorded_entry(data: dict) -> Entry:
    """The entry a record or a certificate recorded (:meth:`Entry.as_json`), made again."""
    path, _, line = data["entry"].rpartition(":")
    return Entry(op=data["op"], dtype=data["dtype"], kind=data["kind"], reason=data["reason"],
                 link=data["link"], path=path, line=int(line), case=data.get("case"),
                 when=_condition_pairs(data.get("when")), scope=data.get("scope"))


def excused_counts(records) -> dict:
    """Per manifest entry (its ``file:line``), the cases it excused: skipped, or given ``xfail``
    or ``waived`` for a failure."""
    counts: dict = {}
    for record in records:
        tag = record.get("manifest")
        if tag and (record.get("raw_verdict") in FAILING
                    or (tag["kind"] == "skip" and record["verdict"] == "skip")):
            counts[tag["entry"]] = counts.get(tag["entry"], 0) + 1
    return counts


_MISSING = object()


def _condition(key: str, wanted, profile: dict, elements: int) -> bool:
    """Whether ``key: wanted`` holds for every one of the ``elements`` failing elements the
    ``profile`` sums up (values may be JSON's 'inf' strings)."""
    if key == "inputs":
        return profile[f"inputs_{wanted}"] == elements
    if key == "expected":
        return profile[f"expected_{wanted}"] == elements
    if key == "inputs_below":
        return float(profile["inputs_max_abs"]) < wanted
    if key == "some_input_at_least":
        return float(profile["inputs_min_of_max_abs"]) >= wanted
    if key == "expected_below":
        return profile["expected_nan"] == 0 and float(profile["expected_max_abs"]) < wanted
    if key == "expected_at_least":
        return profile["expected_nan"] == 0 and float(profile["expected_min_abs"]) >= wanted
    raise KeyError(key)


def _verdict_under(kind: str, verdict: str) -> str:
    if kind == "skip":
        return "skip"
    if verdict in FAILING:
        return "xfail" if kind == "xfail" else "waived"
    return "xpass" if kind == "xfail" and verdict == "pass" else verdict


@dataclass(frozen=True)
class Manifest:
    """The entries of one or more manifest files, in order."""

    entries: tuple[Entry, ...]
    files: tuple[str, ...]

    def find(self, op: str, dtype: str, case_id: str, record: dict | None = None) -> Entry | None:
        """The first entry that matches the case and whose condition holds for ``record`` (its
        result, or ``{"attrs": ...}``), or None."""
        return next((e for e in self._in_scope(op, dtype)
                     if (e.case is None or fnmatch.fnmatchcase(case_id, e.case))
                     and e.holds(record or {})), None)

    def _in_scope(self, op: str, dtype: str) -> tuple[Entry, ...]:
        """The entries covering ``op`` x ``dtype``, in order (memoised: a run asks per case)."""
        try:
            return self.__dict__["_scope_memo"][op, dtype]
        except KeyError:
            memo = self.__dict__.setdefault("_scope_memo", {})   # frozen: not via setattr
            found = memo[op, dtype] = tuple(e for e in self.entries if e.in_scope(op, dtype))
            return found

    def partition(self, cases) -> tuple[list, list[dict]]:
        """``(cases to run, records of the skipped ones)``."""
        from conform.harness.judge.judging import case_record

        run, skipped = [], []
        # a suite comes op x dtype by op x dtype, and most have no skip entry in scope
        for (op, dtype), group in itertools.groupby(cases, operator.attrgetter("op", "dtype")):
            if not any(e.kind == "skip" for e in self._in_scope(op, dtype)):
                run.extend(group)
                continue
            for case in group:
                entry = self.find(op, dtype, case.id, {"attrs": case.attrs})
                if entry is None or entry.kind != "skip":
                    run.append(case)
                    continue
                skipped.append({**case_record(case), "seconds": 0.0, "verdict": "skip",
                                "manifest": entry.as_json(),
                                "message": f"skipped by manifest {entry.where}: {entry.reason}"})
        return run, skipped

    def apply(self, record: dict) -> dict:
        """``record`` re-judged under this manifest, starting from the verdict the backend earned
        (``raw_verdict`` where an earlier manifest changed it)."""
        if "raw_verdict" not in record and "manifest" not in record \
                and not self._in_scope(record["op"], record["dtype"]):
            return record   # the common case: nothing to undo, no entry to apply
        raw = record.get("raw_verdict", record["verdict"])
        out = {k: v for k, v in record.items() if k not in ("raw_verdict", "manifest")}
        out["verdict"] = raw
        entry = self.find(record["op"], record["dtype"], record["id"], out)
        if entry is None:
            return out
        out["manifest"] = entry.as_json()
        verdict = _verdict_under(entry.kind, raw)
        if verdict != raw:
            out.update(verdict=verdict, raw_verdict=raw)
        return out

    def expired(self, today: datetime.date) -> list[Entry]:
        """Entries whose ``expires`` date is before ``today``."""
        return [e for e in self.entries if e.expires is not None and e.expires < today]

    def check_expiry(self, today: datetime.date | None = None) -> None:
        """Raise :class:`ManifestError` naming the first expired entry."""
        expired = self.expired(today or datetime.date.today())
        if expired:
            first = expired[0]
            raise ManifestError(first.path, first.line, "expires",
                                f"{first.kind} entry op={first.op} dtype={first.dtype} expired on "
                                f"{first.expires.isoformat()} ({len(expired)} expired in all): "
                                f"renew it with a reason or remove it")


def _parse_expiry(value, path: Path, line: int, index: int) -> datetime.date | None:
    if value is None or (isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)):
        return value
    try:
        return datetime.date.fromisoformat(str(value))
    except ValueError:
        raise ManifestError(path, line, f"entries.{index}.expires",
                            f"expires={value!r} is not a date (YYYY-MM-DD)") from None


def load_manifest(path: Path | str, backend: str | None = None) -> Manifest:
    """Load and validate one manifest file; ``backend`` must match its ``backend`` field, if any.
    The parsed manifest is cached (see :func:`conform.caches.cached_loads`).

    >>> load_manifest("manifests/onnxruntime.yaml", "onnxruntime").entries[0].kind  # doctest: +SKIP
    'waiver'
    """
    from conform.caches import cached_loads

    path = Path(path)
    if not path.is_file():
        return _parse_manifest(path, backend)   # the loader's own error
    return cached_loads([path], lambda p: _parse_manifest(p, backend), kind="manifests",
                        sources=(Path(__file__),), context=f"backend={backend}",
                        types=(Manifest, Entry))[0]


def _parse_manifest(path: Path, backend: str | None) -> Manifest:
    try:
        data, root = read_yaml_mapping(path, "a manifest", ManifestError)
    except OSError as exc:
        raise ManifestError(path, None, "", f"cannot read manifest: {exc.strerror}") from None
    validate_document(data, root, path, SCHEMA, ManifestError)
    if backend and data.get("backend", backend) != backend:
        raise ManifestError(path, line_of(root, ["backend"]), "backend",
                            f"backend={data['backend']!r}, but the run is for {backend!r}")
    entries = []
    for i, raw in enumerate(data["entries"]):
        line = line_of(root, ["entries", i])
        expires = _parse_expiry(raw.get("expires"), path, line_of(root, ["entries", i, "expires"]), i)
        entries.append(Entry(op=raw["op"], dtype=raw["dtype"], kind=raw["kind"], reason=raw["reason"],
                             link=raw["link"], path=str(path), line=line, case=raw.get("case"),
                             expires=expires, when=_when(raw, path, line, i), scope=raw.get("scope")))
    return Manifest(entries=tuple(entries), files=(str(path),))


def _when(raw: dict, path: Path, line: int, index: int) -> tuple:
    """The entry's ``when`` condition as pairs; an entry must say what it excuses."""
    when = raw.get("when") or {}
    if raw.get("case") is not None and raw.get("scope") != "cell" and _covers_cells(raw):
        raise ManifestError(path, line, f"entries.{index}.case",
                            f"case={raw['case']!r} matches every case of its op x dtype cells: "
                            "that is cell scope, so say 'scope: cell' (its reason says why the "
                            "whole cell is excused), or name the cases or the condition")
    if not when and raw.get("case") is None and raw.get("scope") != "cell":
        raise ManifestError(path, line, f"entries.{index}",
                            f"the {raw['kind']} entry op={raw['op']} dtype={raw['dtype']} names no "
                            "condition: give 'when' (the condition it excuses, e.g. {inputs: nan}), "
                            "'case' (a glob over case ids), or 'scope: cell' to cover every case of "
                            "its op x dtype cells")
    if raw["kind"] == "skip" and set(when) - {"attrs"}:
        raise ManifestError(path, line, f"entries.{index}.when",
                            "a skip entry can only use 'attrs' (a skipped case is never judged, "
                            "so nothing is known of its elements)")
    return _condition_pairs(when)


#: The kinds of case id a cell holds, by suffix (``<op>.<dtype>.<suffix>``): drawn, edge,
#: critical, midpoint, sweep, exhaustive and hunt cases.
_SUFFIXES = ("0", "1", "19", "123", "critical", "midpoint", "sweep", "edge", "exhaustive",
             "exhaustive0517", "hunt0007")


def _covers_cells(raw: dict) -> bool:
    """Whether the entry's ``case`` glob matches every kind of case id of its cells."""
    op, dtype = (re.sub(r"\[!?(.)[^\]]*\]", r"\1", raw[key]).replace("*", "x").replace("?", "x")
                 for key in ("op", "dtype"))
    return all(fnmatch.fnmatchcase(f"{op}.{dtype}.{suffix}", raw["case"]) for suffix in _SUFFIXES)


def _condition_pairs(when: dict | None) -> tuple:
    """A ``when`` condition as :attr:`Entry.when` holds it: sorted (key, value) pairs, the
    attributes of ``attrs`` as sorted pairs too (hashable, and equal however written)."""
    return tuple((key, tuple(sorted(value.items())) if key == "attrs" else value)
                 for key, value in sorted((when or {}).items()))


def load_manifests(paths, backend: str | None = None) -> Manifest:
    """The entries of several manifest files, in the order given."""
    loaded = [load_manifest(p, backend) for p in paths]
    return Manifest(entries=tuple(e for m in loaded for e in m.entries),
                    files=tuple(f for m in loaded for f in m.files))


def default_manifest_path(backend: str) -> Path | None:
    """The built-in manifest ``manifests/<backend>.yaml`` shipped with conform, if there is one."""
    if not backend.replace("_", "").replace("-", "").isalnum():
        return None  # a ``module:Class`` backend has no built-in manifest
    path = Path(str(importlib.resources.files("conform.manifests") / f"{backend}.yaml"))
    return path if path.is_file() else None


def resolve_manifest(backend: str, paths=None, *, disabled: bool = False) -> Manifest | None:
    """The manifest a run or gate applies: ``paths`` if given, else the built-in one for
    ``backend`` (if any); None when ``disabled`` or there is none. Expired entries are an error."""
    if disabled:
        return None
    if not paths:
        default = default_manifest_path(backend)
        paths = [default] if default else []
    if not paths:
        return None
    manifest = load_manifests(paths, backend)
    manifest.check_expiry()
    return manifest


def stale_entries(manifest: Manifest, records) -> list[Entry]:
    """Entries in scope of the run that changed nothing: no failure excused (xfail, waiver) or
    no case skipped (skip). An entry is in scope where its op and dtype globs cover some case;
    one that names cases (a ``case`` glob) in an ``--exhaustive`` run only where it matched one:
    such a run holds none of the suite's cases (no edge sweep), so an entry for one of them has
    had nothing to change. In a suite run it is in scope as any other, so that an entry naming
    a case that does not exist (a typo, a budget too small) is reported."""
    seen, suite, matched, used = set(), set(), set(), set()
    for r in records:
        seen.add((r["op"], r["dtype"]))
        if r.get("plan") != "exhaustive":
            suite.add((r["op"], r["dtype"]))
        tag = r.get("manifest")
        if tag:
            matched.add(tag["entry"])
            if (tag["kind"] == "skip" and r["verdict"] == "skip") or r.get("raw_verdict") in FAILING:
                used.add(tag["entry"])
    return [e for e in manifest.entries if e.where not in used
            and (e.where in matched
                 or any(e.in_scope(op, dtype) for op, dtype in (seen if e.case is None else suite)))]


def manifest_summary(manifest: Manifest, records, stale: list | None = None) -> dict:
    """The ``manifest`` section of summary.json: files, entry count, stale entries (``stale``
    if already found, else :func:`stale_entries`), xpass ids."""
    if stale is None:
        stale = stale_entries(manifest, records)
    return {"files": list(manifest.files), "entries": len(manifest.entries),
            "stale": [e.as_json() for e in stale],
            "xpass": sorted(r["id"] for r in records if r["verdict"] == "xpass")}
