"""The baseline runs (bench/baseline.py: every op at a small budget on numpy and onnxruntime, a
sample on jax and nnef) through the real CLI. Their verdicts, error figures and case digests are
those recorded in tests/fixtures/baseline/: a change meant to move code without changing what it
computes shows here if it changed a result. A change that means to change results re-records
them (`python3 bench/baseline.py record`) and says why in its commit. The same runs show the
outputs' form: the five files, their fields, and what every failure message names."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from conform.reports import OUTPUT_FILES

ROOT = Path(__file__).resolve().parents[2]


def _baseline():
    spec = importlib.util.spec_from_file_location("baseline", ROOT / "bench" / "baseline.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("baseline", module)
    spec.loader.exec_module(module)
    return module


BACKENDS = ("numpy", "onnxruntime", "jax", "nnef")
SUMMARY_FIELDS = {"backend", "backend_version", "conform_version", "seed", "ops", "cases", "counts",
                  "pass_rate", "by_op"}
RESULT_FIELDS = {"id", "op", "dtype", "shapes", "attrs", "seed", "verdict"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """backend -> (the finished process, its output folder): each baseline run once."""
    baseline = _baseline()
    found = {}
    for backend in BACKENDS:
        out = tmp_path_factory.mktemp(backend)
        found[backend] = (baseline.execute(backend, out), out)
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_results_match_the_recorded_baseline(runs, backend):
    baseline = _baseline()
    assert baseline.differences(backend, baseline.digests(runs[backend][1])) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_exits_0_and_writes_the_five_files(runs, backend):
    proc, out = runs[backend]
    assert proc.returncode == 0, proc.stderr
    for name in OUTPUT_FILES:
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    assert SUMMARY_FIELDS <= set(summary)
    sampled = "--ops" in _baseline().RUNS[backend]
    assert summary["backend"] == backend and summary["ops"] >= (9 if sampled else 200)
    assert summary["cases"] == sum(summary["counts"].values())
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == summary["cases"]
    assert all(RESULT_FIELDS <= set(json.loads(line)) for line in lines)
    # the runtime's own seconds (the benchmark's measure) are a part of the backend calls' time
    stats = summary["backend_stats"]
    runtime = sum(stats.get(f"{phase}_seconds", 0.0) for phase in ("execute", "compile", "load", "model_build"))
    assert 0 < stats["execute_seconds"] and runtime <= sum(json.loads(line)["seconds"] for line in lines) + 0.002
    suite = ET.parse(out / "junit.xml").getroot()
    assert suite.tag == "testsuite" and int(suite.get("tests")) >= summary["ops"]   # a test per op x dtype
    assert "Pass rate" in (out / "summary.md").read_text()
    assert f"conform report: {backend}" in (out / "report.html").read_text()
    assert "pass rate" in proc.stdout  # the closing summary table


def test_every_failure_message_names_op_dtype_shapes_seed_and_worst_element(runs):
    failing = 0
    for backend, (_, out) in runs.items():
        for line in (out / "results.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record["verdict"] != "fail":
                continue
            failing += 1
            message = record["message"]
            worst = record["worst"]
            if record.get("property"):   # a property broken: it, its source, the elements
                parts = (f"property {record['property']} ", " broken at ", "[source: ")
            elif worst is None:   # an output of the wrong shape has no worst element: both shapes
                parts = ("output is", ", expected ")
            else:               # an op with several outputs names the output holding it
                parts = (f"worst {worst.get('output', 'out')}[", "actual=", "expected=", "inputs=",
                         record["model"])
            for part in (record["op"], f"dtype={record['dtype']}", "shapes=", f"seed={record['seed']}",
                         *parts):
                assert part in message, (backend, part, message)
    assert failing > 100   # onnxruntime's and the nnef executor's known deviations among them


def test_the_check_sees_a_changed_result(tmp_path, monkeypatch):
    """The comparison can fail: a recorded verdict that differs is reported by case id."""
    baseline = _baseline()
    recorded = (baseline.FIXTURES / "numpy.json").read_text()
    case = next(iter(__import__("json").loads(recorded)))
    monkeypatch.setattr(baseline, "FIXTURES", tmp_path)
    (tmp_path / "numpy.json").write_text(recorded.replace(f'"{case}": ["pass"',
                                                          f'"{case}": ["fail"', 1))
    monkeypatch.setattr(baseline, "run", lambda backend: __import__("json").loads(recorded))
    found = baseline.differences("numpy")
    assert len(found) == 1 and found[0].startswith(f"numpy: {case} ['fail'")
