"""The cache's entries: data only (JSON, raw bytes), each checked against its sha256 when read;
a damaged or crafted entry is made again with a one-line warning, and never run."""
from __future__ import annotations

import datetime
import math
import pickle
import re
from dataclasses import dataclass

import pytest

from conform.spec import load_specs
from conform.caches import (CONTENT_START, DamagedEntry, from_data, read_entry, to_data,
                                 write_entry)


@dataclass(frozen=True)
class Point:
    x: float
    tags: tuple


VALUES = [
    None, True, 3, -0.5, "text", [1, [2, "x"]], (1, (2, 3)), {"a": (1,), "b": [{"c": None}]},
    datetime.date(2026, 2, 28), Point(1.5, ("a", "b")), [Point(math.inf, ())],
    {"tuple": [1]},   # a mapping that looks like a tagged value stays a mapping
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_data_round_trips_with_its_types(value):
    back = from_data(to_data(value, {"Point": Point}), {"Point": Point})
    assert repr(back) == repr(value)


@pytest.mark.parametrize("value, message", [
    ({1: "a"}, "a mapping with keys other than strings"),
    (Point(1.0, ()), "cannot keep a Point as data"),          # not among the allowed types
    ({1.5j}, "cannot keep a set as data"),
])
def test_data_refuses_what_it_cannot_keep(value, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        to_data(value, {})


@pytest.mark.parametrize("data", [
    {"dataclass": "Popen", "fields": {"args": ["true"]}},     # only the allowed classes are made
    {"dataclass": "Point", "fields": {"x": 1}, "extra": 2},
    {"set": [1]},
])
def test_data_makes_only_what_it_writes(data):
    with pytest.raises((KeyError, TypeError)):
        from_data(data, {"Point": Point})


def test_an_entry_is_read_only_with_its_tag_and_digest(tmp_path):
    path = tmp_path / "entry"
    write_entry(path, b"conform-test/1\n\n", [b"hello ", b"world"])
    assert bytes(read_entry(path, b"conform-test/1\n\n")[CONTENT_START:]) == b"hello world"
    with pytest.raises(DamagedEntry, match="not a conform-test/2 entry"):
        read_entry(path, b"conform-test/2\n\n")
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(data)
    with pytest.raises(DamagedEntry, match="does not match its sha256"):
        read_entry(path, b"conform-test/1\n\n")


class _Payload:
    """Unpickling this writes the file ``path``: what a crafted cache entry would do."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (exec, (f"open({self.path!r}, 'w').write('ran')",))


def crafted_pickle(sentinel) -> bytes:
    return pickle.dumps(_Payload(sentinel))


def test_a_crafted_or_damaged_spec_cache_entry_is_never_run_but_made_again(tmp_path, monkeypatch,
                                                                         capsys):
    monkeypatch.setenv("CONFORM_CACHE_DIR", str(tmp_path / "cache"))
    fresh = load_specs()
    [entry] = (tmp_path / "cache" / "specs").iterdir()
    assert entry.suffix == ".json" and entry.read_bytes()[:1] != b"\x80"
    sentinel = tmp_path / "ran"
    for bad in (crafted_pickle(sentinel), entry.read_bytes()[:-1] + b"!", b""):
        entry.write_bytes(bad)
        assert load_specs() == fresh
        [warning] = capsys.readouterr().err.splitlines()
        assert warning.startswith(f"conform: warning: ignoring damaged cache entry {entry} (")
        assert warning.endswith("); making it again")
        assert load_specs() == fresh and capsys.readouterr().err == ""   # made again: read
    assert not sentinel.exists()
