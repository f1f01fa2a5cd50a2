"""End-to-end: coverage beside every pass rate, and a report a vendor can work from, on real
runs. nnef runs few of the suite's cases (float32, int32 and bool only; no binding for some
ops), numpy runs them all: their coverage differs, their answers mostly do not."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from xml.etree import ElementTree as ET

import pytest

from conform.reports import read_results
from conform.reports._compare import compare_runs, load_run

OPS = ("--ops", "add,exp,abs,round,reshape", "--max-examples", 3, "--quiet")
COVERAGE = re.compile(r"judged (\d+) of (\d+) cases \(coverage ([\d.]+)%\)")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, conform_cli):
    root = tmp_path_factory.mktemp("coverage")
    nnef = conform_cli("run", "--backend", "nnef", *OPS, "--out", root / "nnef", check_status=0)
    numpy = conform_cli("run", "--backend", "numpy", *OPS, "--out", root / "numpy",
                        "--baseline", root / "nnef", "--max-error-growth", "inf", check_status=0)
    return root, nnef, numpy


def _summary(directory) -> dict:
    return json.loads((directory / "summary.json").read_text(encoding="utf-8"))


def test_every_output_says_judged_n_of_m_beside_the_pass_rate(runs):
    root, nnef, _ = runs
    summary = _summary(root / "nnef")
    counts = summary["counts"]
    judged = sum(counts[v] for v in ("pass", "xpass", "fail", "error", "crash", "timeout"))
    assert summary["judged"] == judged and summary["cases"] == sum(counts.values())
    assert summary["coverage"] == judged / summary["cases"] < 0.6   # most of it is not run
    expected = f"judged {judged} of {summary['cases']} cases (coverage "
    assert re.search(rf"pass rate [\d.]+%, {re.escape(expected)}", nnef.stdout)
    assert expected in (root / "nnef" / "summary.md").read_text(encoding="utf-8")
    page = (root / "nnef" / "report.html").read_text(encoding="utf-8")
    assert expected in page[page.index('id="pass-rate"'):page.index('id="counts"')]
    suite = ET.parse(root / "nnef" / "junit.xml").getroot()
    assert expected in suite.find("system-out").text
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["judged"] == str(judged)


def test_unsupported_cells_say_why(runs):
    root, _, _ = runs
    by_op = _summary(root / "nnef")["by_op"]
    assert "round" not in by_op   # no nnef binding: the nnef backend does not run the op at all
    float16 = by_op["exp"]["float16"]
    assert float16["judged"] == 0 and float16["coverage"] == 0.0
    assert set(float16["unsupported_reasons"]) == {"dtype"}
    assert "does not claim dtype float16" in float16["unsupported_reasons"]["dtype"]["example"]
    page = (root / "nnef" / "report.html").read_text(encoding="utf-8")
    matrix = page[page.index('id="matrix"'):page.index("</table>", page.index('id="matrix"'))]
    assert re.search(r'href="#c-exp-float16">n/a<span class="n">dtype not claimed</span>', matrix)
    assert "dtype not claimed by the backend" in page


def test_gate_min_coverage(runs, conform_cli):
    root, _, _ = runs
    low = conform_cli("gate", root / "nnef", "--min-coverage", 0.9, check_status=1)
    assert re.search(r"coverage 0\.\d+ \(judged \d+ of \d+ cases\) < --min-coverage 0.9", low.stderr)
    held = conform_cli("gate", root / "nnef", "--min-coverage", 0.05, check_status=0)
    assert "gate holds: coverage" in held.stdout
    conform_cli("gate", root / "nnef", "--min-coverage", 1.5, check_status=2)


def test_list_backend_shows_only_what_it_runs(conform_cli):
    rows = json.loads(conform_cli("list", "--backend", "nnef", "--format", "json", check_status=0).stdout)
    everything = json.loads(conform_cli("list", "--format", "json", check_status=0).stdout)
    assert 0 < len(rows) < len(everything)
    assert all("nnef" in r["bindings"] and set(r["dtypes"]) <= {"float32", "int32", "bool"} and r["dtypes"]
               for r in rows)
    assert "round" not in {r["op"] for r in rows}   # no nnef binding
    # the types a run draws (abs takes tensor<scalar>: no int32), and a note that the cases
    # NNEF cannot express (pad's interior padding) are left out of its suite
    assert {r["op"]: r["dtypes"] for r in rows}["abs"] == ["float32"]
    table = conform_cli("list", "--backend", "nnef", check_status=0).stdout
    assert table.startswith("nnef: model format nnef; claims every op whose spec has a binding for nnef; "
                            "dtypes bool, float32, int32")
    assert table.rstrip().endswith(f"{len(rows)} ops that nnef runs")
    assert "a run on nnef leaves out the drawn cases the nnef format cannot express" in table
    broken = conform_cli("list", "--backend", "no_such_module:Backend", check_status=2)
    assert broken.stderr.count("\n") == 1 and "cannot be loaded" in broken.stderr


def test_comparison_counts_unsupported_against_a_verdict_as_coverage(runs):
    root, _, _ = runs
    figures = compare_runs([load_run(root / "nnef"), load_run(root / "numpy")])
    nnef = {r["id"]: r["verdict"] for r in read_results(root / "nnef" / "results.jsonl")}
    numpy = {r["id"]: r["verdict"] for r in read_results(root / "numpy" / "results.jsonl")}
    gaps = sum(1 for i in nnef if nnef[i] != numpy[i] and "unsupported" in (nnef[i], numpy[i]))
    assert gaps > 20 and figures["total"]["coverage"] == gaps == len(figures["coverage_only"])
    assert figures["total"]["differ"] == len(figures["differing"]) < gaps
    assert all("unsupported" not in [r["verdict"] for r in d["runs"]] for d in figures["differing"])


def test_report_shows_definitions_and_the_baseline(runs):
    root, _, _ = runs
    summary = _summary(root / "numpy")
    exp = summary["definitions"]["exp"]
    assert "ONNX Exp (opset 13)" in exp["defined_by"] and "OpenCL" in exp["why"]["float32"]
    baseline = summary["baseline"]
    assert baseline["where"] == str((root / "nnef").resolve())
    assert any(c["op"] == "exp" and c["dtype"] == "float16" and c["old_judged"] == 0 < c["new_judged"]
               for c in baseline["cells"])
    page = (root / "numpy" / "report.html").read_text(encoding="utf-8")
    assert "defined by: XLA Exp" in page and "why: no IEEE bound for exp" in page
    section = page[page.index('<div id="baseline">'):]
    assert f"Against <code>{root / 'nnef'}</code>" in section and 'id="baseline-cells"' in section


def test_repro_commands_work_from_any_directory(tmp_path, conform_cli):
    out = tmp_path / "run"
    conform_cli("run", "--backend", "jax", "--ops", "multiply", "--dtypes", "float32",
                "--max-examples", 8, "--subnormals", "ieee", "--out", out, "--quiet", check_status=0)
    page = (out / "report.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="failing-data">(.*?)</script>',
                                page, re.S).group(1))
    rows = data["cells"]["c-multiply-float32"]["rows"]
    assert rows, "jax flushes subnormals: judged under ieee, some cases fail"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = shlex.split(rows[0][-1])
    assert command[:2] == ["conform", "repro"] and command[-1] == str(out.resolve())
    proc = subprocess.run([sys.executable, "-m", "conform.harness.cli", *command[1:],
                           "--out", str(elsewhere / "repro")], cwd=elsewhere,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (elsewhere / "repro" / "repro.py").exists()
