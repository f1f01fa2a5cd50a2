"""``conform hunt`` through the real CLI on onnxruntime: it reports the worst input with a repro
that ``conform repro`` accepts, shows it in the report, finds a planted narrow drift, and exits
2 with one line on bad values."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def hunt(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "conform.harness.cli", "hunt", *map(str, args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_hunt_reports_the_worst_input_with_a_repro(tmp_path):
    out = tmp_path / "hunt"
    proc = hunt("--backend", "onnxruntime", "--ops", "cosh", "--dtypes", "float32", "--budget", 64,
                "--out", out)
    assert proc.returncode == 0, proc.stderr
    (entry,) = json.loads((out / "summary.json").read_text())["hunt"]
    assert entry["op"] == "cosh" and entry["evaluated"] == 64 and entry["verdict"] == "pass"
    assert 0 < entry["ratio"] <= 1 and len(entry["inputs"]) == 1
    assert f"worst error/bound {entry['ratio']:.3g}" in proc.stdout
    assert '<table id="hunt">' in (out / "report.html").read_text()
    case_id = entry["case"]
    repro = subprocess.run([sys.executable, "-m", "conform.harness.cli", "repro", case_id,
                            "--from", str(out)], capture_output=True, text=True, timeout=300)
    assert repro.returncode == 0, repro.stderr
    assert (out / "repro" / case_id / "model.onnx").exists()


def test_hunt_finds_a_planted_narrow_drift(tmp_path):
    proc = hunt("--backend", "bench.hunt_vs_random:ExpNarrowDriftPlanted", "--ops", "exp",
                "--dtypes", "float32", "--budget", 256, "--out", tmp_path / "h")
    assert proc.returncode == 1, proc.stderr   # a failing input was found
    (entry,) = json.loads((tmp_path / "h" / "summary.json").read_text())["hunt"]
    assert entry["verdict"] == "fail" and entry["ratio"] > 1.5
    assert abs(entry["inputs"][0] - 7.3) < 0.5


@pytest.mark.parametrize("args, message", [
    (["--budget", "4"], "--budget: 4 is below 8"),
    (["--budget", "x"], "--budget"),
    (["--seed", "-1"], "--seed"),
    (["--ops", "onnx_matmul"], "no element-wise op under a float dtype"),
    (["--ops", " , "], "--ops: ' , ' names nothing"),
    (["--dtypes", "int32"], "no op/dtype matches"),
])
def test_bad_values_exit_2_with_one_line(tmp_path, args, message):
    base = {"--ops": "exp", "--budget": "64"}
    for k in range(0, len(args), 2):
        base[args[k]] = args[k + 1]
    flat = [x for kv in base.items() for x in kv]
    proc = hunt("--backend", "onnxruntime", *flat, "--out", tmp_path / "o")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr, proc.stderr
