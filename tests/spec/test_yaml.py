"""The shared safe YAML reader: specs, manifests and profiles refuse anchors, aliases, duplicate
keys, deep nesting, oversized files and non-UTF-8 text, each naming file and line."""
from __future__ import annotations

import re
import time

import pytest

from conform.harness.assurance.certify import ProfileError, load_profiles
from conform.harness.assurance.manifests import ManifestError, load_manifest
from conform.spec import SpecError, load_spec
from conform.spec._yaml import MAX_BYTES, MAX_DEPTH

MANIFEST = """\
backend: numpy
entries:
  - op: tanh
    dtype: float32
    case: tanh.float32.sweep
    kind: xfail
    reason: smallest normal is 29 ULP off
    link: https://example.org/tanh
"""

# A billion laughs: 600 bytes that expand to 10**9 strings for whatever walks the data.
BOMB = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))

LOADERS = {   # name of the file kind -> (loader, the error it raises)
    "spec": (lambda path: load_spec(path), SpecError),
    "manifest": (lambda path: load_manifest(path, "numpy"), ManifestError),
    "profiles": (lambda path: load_profiles(path), ProfileError),
}

# (what, file bytes, line named, message fragment)
REFUSALS = [
    ("anchor", b"backend: numpy\nentries: &e []\n", 2, "YAML anchor 'e'"),
    ("alias", b"x: 1\nentries:\n  - op: tanh\n  - *x\n", 4, "YAML alias 'x'"),
    ("bomb", BOMB.encode(), 1, "anchors and aliases are not allowed"),
    ("duplicate key", b"backend: numpy\nentries: []\nbackend: jax\n", 3,
     "duplicate key 'backend' (first on line 1)"),
    ("nested duplicate", b"entries:\n  - op: a\n    op: b\n", 3, "duplicate key 'op'"),
    ("not UTF-8", b"backend: numpy\n# caf\xe9\nentries: []\n", 2, "not UTF-8 text: byte 0xe9 at column 6"),
    ("control character", b"backend: numpy\nentries: [\x07]\n", 2, "invalid YAML"),
    ("deep nesting", b"x: " + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"\n", 1,
     f"nesting deeper than {MAX_DEPTH} levels"),
    ("oversized", b"# " + b"x" * MAX_BYTES + b"\nentries: []\n", None,
     f"larger than {MAX_BYTES} bytes"),
]


@pytest.mark.parametrize("kind", sorted(LOADERS))
@pytest.mark.parametrize("what, data, line, fragment", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_every_yaml_file_kind_refuses_with_file_and_line(tmp_path, kind, what, data, line, fragment):
    load, error = LOADERS[kind]
    path = tmp_path / "numpy.yaml"
    path.write_bytes(data)
    start = time.perf_counter()
    with pytest.raises(error, match=re.escape(fragment)) as info:
        load(path)
    assert time.perf_counter() - start < 0.5
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}:" if line else f"{path}:")
    assert len(str(info.value)) < 300   # never the expanded data


def test_a_date_that_does_not_exist_is_a_located_error(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST + "    expires: 2026-02-30\n")
    with pytest.raises(ManifestError, match=re.escape("'2026-02-30' is not a date that exists")) as info:
        load_manifest(path, "numpy")
    assert info.value.line == 9


def test_a_well_formed_manifest_still_loads(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST + "    expires: 2999-02-28\n")
    assert load_manifest(path, "numpy").entries[0].expires.isoformat() == "2999-02-28"


def test_an_alias_bomb_manifest_exits_2_at_once_through_the_cli(tmp_path, conform_cli):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    start = time.perf_counter()
    proc = conform_cli("run", "--backend", "numpy", "--manifest", bomb, "--out", tmp_path / "out")
    elapsed = time.perf_counter() - start
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"conform: error: {bomb}:1: ")
    assert "anchors and aliases are not allowed" in proc.stderr and len(proc.stderr.splitlines()) == 1
    # expanded, the bomb is 10**9 strings (minutes and gigabytes); refused, it costs the CLI's
    # start-up alone (~0.5 s quiet), so 10 s separates the two even on a loaded machine
    assert elapsed < 10.0
    assert not (tmp_path / "out").exists()   # refused before any work
