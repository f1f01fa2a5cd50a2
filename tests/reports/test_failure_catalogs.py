"""The failure catalogs (docs/failures/<backend>.yaml): each parses, its ids are unique, each
entry's op pattern names a registered op, and every failing record of the backend's recorded
baseline (tests/fixtures/baseline/<backend>.json) is explained. No backend runs here."""
from __future__ import annotations

import json
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from conform.op_registry import definitions
from conform.reports import FAILING, CatalogError, census, explain, load_catalog

ROOT = Path(__file__).resolve().parents[2]
CATALOGS = sorted((ROOT / "docs" / "failures").glob("*.yaml"))
BASELINES = ROOT / "tests" / "fixtures" / "baseline"


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: p.stem)
def test_every_entry_names_a_registered_op(path):
    ops = list(definitions())
    for entry in load_catalog(path):
        assert any(fnmatchcase(op, entry.match["op"]) for op in ops), \
            f"{path.name}:{entry.line}: {entry.id}: op pattern {entry.match['op']!r} matches no op"


def _baseline_failures(backend: str) -> list[dict]:
    """The failing records of a baseline: case id ``op.dtype.n`` -> [verdict, digests]."""
    recorded = json.loads((BASELINES / f"{backend}.json").read_text())
    out = []
    for case, (verdict, *_digests) in recorded.items():
        if verdict in FAILING:
            op, rest = case.split(".", 1)
            out.append({"id": case, "op": op, "dtype": rest.rsplit(".", 1)[0], "verdict": verdict})
    return out


@pytest.mark.parametrize("path", [p for p in CATALOGS if (BASELINES / f"{p.stem}.json").exists()],
                         ids=lambda p: p.stem)
def test_every_failure_of_the_baseline_is_explained(path):
    entries = load_catalog(path)
    failures = _baseline_failures(path.stem)
    unexplained = [r["id"] for r in failures
                   if explain(entries, r, keys=("op", "dtype", "verdict")) is None]
    assert not unexplained, f"{path.name} explains none of {unexplained[:20]}"


def test_census_counts_the_first_match_and_groups_the_rest():
    entries = _catalog_of(Path(__file__).parent, """
- id: first
  match: {op: "onnx_cast*", verdict: error, message: "saturate"}
  kind: deviation
  explanation: "a refusal the text does not allow"
  repro: "conform run --backend onnxruntime --ops onnx_cast --out /tmp/r"
- id: second
  match: {op: "onnx_*", verdict: error}
  kind: deviation
  explanation: "every other error of an onnx op"
  repro: "conform run --backend onnxruntime --ops onnx_cast --out /tmp/r"
""")
    records = [{"op": "onnx_cast", "dtype": "bool->int8", "verdict": "error", "message": "no saturate"},
               {"op": "onnx_cast_like", "dtype": "bool->int8", "verdict": "error", "message": "other"},
               {"op": "exp", "dtype": "float32", "verdict": "fail", "message": "exp [b] x (case exp.f.1): bad"},
               {"op": "exp", "dtype": "float32", "verdict": "fail", "message": "worse"},
               {"op": "exp", "dtype": "float32", "verdict": "pass"}]
    result = census(entries, records)
    assert dict(result.counts) == {"first": 1, "second": 1}
    assert result.unmatched == {("exp", "float32", "fail"): (2, "bad")}


def test_an_attrs_key_matches_an_op_inside_a_computation_that_the_message_does_not_name():
    entries = _catalog_of(Path(__file__).parent, """
- id: bitcast
  match: {op: "call", verdict: error, attrs: "'op': 'nextafter'"}
  kind: deviation
  explanation: "a lowering the text does not allow"
  repro: "conform run --backend jax --ops call --out /tmp/r"
""")
    error = "JaxRuntimeError: 'stablehlo.bitcast_convert' op result #0 must be ..."
    records = [{"op": "call", "dtype": "float6_e2m3fn", "verdict": "error", "message": error,
                "attrs": {"body": [{"op": "nextafter", "arity": 2}]}},
               {"op": "call", "dtype": "float6_e2m3fn", "verdict": "error", "message": error,
                "attrs": {"body": [{"op": "add", "arity": 2}]}},
               {"op": "call", "dtype": "float6_e2m3fn", "verdict": "error", "message": error}]
    result = census(entries, records)
    assert dict(result.counts) == {"bitcast": 1}
    assert result.unmatched == {("call", "float6_e2m3fn", "error"): (2, error)}


def _catalog_of(folder: Path, text: str):
    path = folder / "_catalog_under_test.yaml"
    path.write_text(text)
    try:
        return load_catalog(path)
    finally:
        path.unlink()


@pytest.mark.parametrize("text, names", [
    ("- id: a\n  match: {op: exp, verdict: wrong}\n  kind: deviation\n  explanation: 'long enough text here'\n"
     "  repro: r\n", (":2:", "field 0.match.verdict", "entry 'a'")),
    ("- id: a\n  match: {op: exp, verdict: fail}\n  kind: deviation\n  explanation: 'long enough text here'\n"
     "  repro: r\n- id: a\n  match: {op: exp, verdict: fail}\n  kind: deviation\n"
     "  explanation: 'long enough text here'\n  repro: r\n", (":6:", "'a' repeats the entry on line 1")),
    ("id: a\n", ("must be a YAML list",)),
])
def test_a_malformed_catalog_names_file_line_and_entry(tmp_path, text, names):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    message = str(caught.value)
    assert str(path) in message
    for name in names:
        assert name in message
