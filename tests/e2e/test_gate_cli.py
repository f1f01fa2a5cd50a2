"""End-to-end: the CI gate against a real recorded baseline, manifests, and `conform gate`."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

MULTIPLY = ("--backend", "jax", "--ops", "multiply", "--dtypes", "float32", "--max-examples", 12,
            "--quiet")


def _regressions(text: str) -> list[str]:
    return sorted(re.findall(r"regression (\S+): pass -> fail", text))


@pytest.fixture(scope="module")
def jax_runs(tmp_path_factory, conform_cli):
    """A baseline recorded under ftz (jax flushes subnormals: all pass), then the same cases
    judged under ieee (the flushed ones now fail) and an identical re-run, both against it."""
    root = tmp_path_factory.mktemp("gate")
    conform_cli("run", *MULTIPLY, "--subnormals", "ftz", "--out", root / "baseline", check_status=0)
    ieee = conform_cli("run", *MULTIPLY, "--subnormals", "ieee", "--out", root / "ieee",
                   "--baseline", root / "baseline")
    again = conform_cli("run", *MULTIPLY, "--subnormals", "ftz", "--out", root / "again",
                    "--baseline", root / "baseline" / "summary.json", "--min-pass-rate", 1.0,
                    "--min-op-pass-rate", 1.0)
    return root, ieee, again


def test_baseline_fails_a_run_where_passing_cases_now_fail(jax_runs):
    root, ieee, _ = jax_runs
    assert ieee.returncode == 1, ieee.stdout + ieee.stderr
    baseline = {json.loads(line)["id"]: json.loads(line)
                for line in (root / "baseline" / "results.jsonl").read_text().splitlines()}
    now = [json.loads(line) for line in (root / "ieee" / "results.jsonl").read_text().splitlines()]
    expected = sorted(r["id"] for r in now
                      if r["verdict"] == "fail" and baseline[r["id"]]["verdict"] == "pass")
    assert expected and _regressions(ieee.stderr) == expected
    assert "GATE FAILED" in ieee.stderr
    assert re.search(r"error growth multiply float32: worst \S+ ulp \(bound 0 ulp, case "
                     r"multiply\.float32\.\S+\) -> \S+ ulp", ieee.stderr)


def test_an_identical_rerun_passes_the_gate(jax_runs):
    _, _, again = jax_runs
    assert again.returncode == 0, again.stdout + again.stderr
    assert "gate holds: no regressions against" in again.stdout
    assert "gate holds: every op's pass rate >= 1.0" in again.stdout


def test_gate_gives_the_same_answers_on_the_recorded_dirs(jax_runs, conform_cli):
    root, ieee, _ = jax_runs
    failed = conform_cli("gate", root / "ieee", "--baseline", root / "baseline", check_status=1)
    assert _regressions(failed.stderr) == _regressions(ieee.stderr)
    conform_cli("gate", root / "again", "--baseline", root / "baseline", "--min-pass-rate", 1.0,
            "--min-op-pass-rate", 1.0, check_status=0)
    op_floor = conform_cli("gate", root / "ieee", "--min-op-pass-rate", 1.0, check_status=1)
    assert "op multiply: pass rate" in op_floor.stderr
    conform_cli("gate", root / "ieee", "--baseline", root / "nowhere", check_status=2)


def _manifest(tmp_path, entries: str):
    path = tmp_path / "manifest.yaml"
    path.write_text("backend: jax\nentries:\n" + entries, encoding="utf-8")
    return path


def test_a_manifest_on_gate_turns_failures_into_xfail_and_reports_xpass(jax_runs, tmp_path,
                                                                         conform_cli):
    root, _, _ = jax_runs
    manifest = _manifest(tmp_path, """\
  - {op: multiply, dtype: float32, scope: cell, kind: xfail, reason: jax flushes subnormals, link: "https://x"}
  - {op: add, dtype: "*", scope: cell, kind: waiver, reason: not in this run, link: "https://x"}
""")
    proc = conform_cli("gate", root / "ieee", "--baseline", root / "baseline", "--manifest", manifest,
                   "--min-pass-rate", 1.0, check_status=0)
    assert "xpass" in proc.stderr and "stale" not in proc.stderr  # add is not in the run: not stale
    conform_cli("gate", root / "ieee", "--manifest", manifest, "--strict-xfail", check_status=1)
    conform_cli("gate", root / "ieee", "--manifest", manifest, "--no-manifest", "--min-pass-rate", 1.0,
            check_status=1)
    expired = _manifest(tmp_path, """\
  - {op: "mul*", dtype: float32, scope: cell, kind: waiver, reason: jax flushes subnormals, link: "https://x",
     expires: 2001-02-03}
""")
    proc = conform_cli("gate", root / "ieee", "--manifest", expired, check_status=2)
    assert f"{expired}:3: field expires: waiver entry op=mul* dtype=float32 expired on 2001-02-03" \
        in proc.stderr


def test_onnxruntime_runs_with_its_builtin_manifest_and_reports_stale_entries(tmp_path,
                                                                              conform_cli):
    from conform.harness.assurance.manifests import default_manifest_path

    stale = _manifest(tmp_path, """\
  - {op: onnx_where, dtype: float32, case: onnx_where.float32.999, kind: skip, reason: no such case,
     link: "https://x"}
""")
    stale.write_text(stale.read_text().replace("backend: jax", "backend: onnxruntime"))
    out = tmp_path / "ort"
    proc = conform_cli("run", "--backend", "onnxruntime", "--ops", "onnx_where,tanh", "--dtypes", "float32",
                   "--max-examples", 12, "--out", out, "--quiet", "--min-pass-rate", 1.0,
                   "--manifest", default_manifest_path("onnxruntime"), "--manifest", stale,
                   check_status=0)
    assert f"stale manifest entry {stale}:3 (skip op=onnx_where dtype=float32 case=onnx_where.float32.999)" \
        in proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    # the tanh sweep (tanh of the smallest normal) and the critical case (1.0000001 near 8.9)
    assert summary["counts"]["xfail"] == 2 and summary["counts"]["fail"] == 0
    assert summary["pass_rate"] == 1.0
    assert f"{stale}:3" in [s["entry"] for s in summary["manifest"]["stale"]]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for case_id in ("tanh.float32.sweep", "tanh.float32.critical"):
        record = next(r for r in records if r["id"] == case_id)
        assert record["raw_verdict"] == "fail" and record["manifest"]["kind"] == "xfail"
    conform_cli("gate", out, "--min-pass-rate", 1.0, check_status=0)  # the built-in manifest alone
    conform_cli("gate", out, "--no-manifest", "--min-pass-rate", 1.0, check_status=1)


def test_the_example_workflow_calls_conform_with_options_it_accepts():
    import shlex
    from pathlib import Path

    import yaml

    from conform.harness.cli.main import _parser

    workflow = Path(__file__).parents[2] / "examples" / "github-actions" / "conform.yml"
    steps = yaml.safe_load(workflow.read_text())["jobs"]["conform"]["steps"]
    script = " ".join(s.get("run", "") for s in steps).replace("\\\n", " ")
    commands = [shlex.split(line.strip()) for line in script.splitlines()
                if line.strip().startswith("conform run")]
    gated = [_parser().parse_args(c[1:]) for c in commands]
    assert any(a.baseline == Path("baseline") and a.min_pass_rate == 0.95 and a.backend == "onnxruntime"
               for a in gated)
    uploads = [s["with"]["path"] for s in steps if s.get("uses", "").startswith("actions/upload")]
    assert any("report.html" in p and "junit.xml" in p for p in uploads)
