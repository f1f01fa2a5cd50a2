"""results.jsonl lines and summary.json carry their format's schema_version; a run written
before they did (version 1) is still read by report and gate, and a newer one is refused."""
from __future__ import annotations

import json

import pytest


@pytest.fixture()
def run_dir(tmp_path, conform_cli):
    out = tmp_path / "run"
    conform_cli("run", "--backend", "numpy", "--ops", "add,onnx_reduce_sum", "--dtypes", "float32",
                "--max-examples", "4", "--out", out, "--quiet", check_status=0)
    return out


def _rewrite(out, change):
    summary = json.loads((out / "summary.json").read_text())
    (out / "summary.json").write_text(json.dumps(change(summary)))
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    (out / "results.jsonl").write_text("".join(json.dumps(change(r)) + "\n" for r in lines))


def test_every_line_and_the_summary_carry_schema_version_2(run_dir):
    summary = json.loads((run_dir / "summary.json").read_text())
    lines = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert summary["schema_version"] == 2 and {r["schema_version"] for r in lines} == {2}


def test_a_run_written_before_schema_version_is_still_read(run_dir, conform_cli):
    _rewrite(run_dir, lambda d: {k: v for k, v in d.items() if k != "schema_version"})
    conform_cli("gate", run_dir, "--min-pass-rate", "0.5", check_status=0)
    conform_cli("report", run_dir, check_status=0)
    assert json.loads((run_dir / "summary.json").read_text())["schema_version"] == 2


def test_a_run_from_a_newer_conform_is_refused_in_one_line(run_dir, conform_cli):
    _rewrite(run_dir, lambda d: {**d, "schema_version": 3})
    for command in (("gate", run_dir), ("report", run_dir)):
        proc = conform_cli(*command, check_status=2)
        assert "written with schema_version 3; this conform reads versions 1 to 2" in proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
