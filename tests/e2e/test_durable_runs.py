"""Interrupted, resumed and concurrent runs through the real ``conform`` command: a run killed
with SIGKILL or stopped with Ctrl-C leaves complete result lines and reports marked incomplete,
``--resume`` finishes it with the results of an uninterrupted run, and a locked output folder
turns a second run away."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SLOW = "tests.harness.slow_backend:SlowNumpy"
RUN = ["run", "--backend", SLOW, "--ops", "add,tanh,maximum", "--max-examples", "40",
       "--workers", "2", "--quiet"]
QUICK = ["run", "--backend", "numpy", "--ops", "add", "--max-examples", "4", "--quiet"]
TIMING = ("seconds", "judge_seconds")   # the only fields that differ between two runs


def _start(*args) -> subprocess.Popen:
    """The real command in its own process group (a terminal's Ctrl-C reaches the whole group)."""
    return subprocess.Popen([sys.executable, "-m", "conform.harness.cli", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _wait_for_lines(proc: subprocess.Popen, path: Path, count: int) -> None:
    deadline = time.monotonic() + 120
    while _lines(path) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run wrote too few lines"
        time.sleep(0.02)


def _results(out: Path) -> dict:
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    by_id = {r["id"]: {k: v for k, v in r.items() if k not in TIMING} for r in records}
    assert len(by_id) == len(records), "a case was recorded twice"
    return by_id


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, conform_cli):
    out = tmp_path_factory.mktemp("whole")
    conform_cli(*RUN, "--out", out, check_status=0)
    return out


def test_a_run_killed_with_sigkill_resumes_to_the_results_of_an_uninterrupted_run(
        tmp_path, conform_cli, uninterrupted):
    whole = _results(uninterrupted)
    proc = _start(*RUN, "--out", tmp_path)
    _wait_for_lines(proc, tmp_path / "results.jsonl", len(whole) // 3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with contextlib.suppress(ProcessLookupError):   # workers the parent left (only it writes)
        os.killpg(proc.pid, signal.SIGKILL)
    partial = _results(tmp_path)
    assert 0 < len(partial) < len(whole)
    summary = _summary(tmp_path)
    assert summary["complete"] is False and summary["cases_planned"] == len(whole)
    assert not (tmp_path / "report.html").exists()   # no stale report beside partial results
    gate = conform_cli("gate", tmp_path)
    assert gate.returncode == 2 and "incomplete" in gate.stderr and "Traceback" not in gate.stderr

    resumed = conform_cli(*RUN, "--out", tmp_path, "--resume", check_status=0)
    assert _results(tmp_path) == whole
    summary = _summary(tmp_path)
    assert summary["complete"] is True and summary["cases"] == len(whole)
    assert summary["resumed_cases"] >= len(partial)
    assert summary["counts"] == _summary(uninterrupted)["counts"]
    assert "Traceback" not in resumed.stderr
    conform_cli("gate", tmp_path, check_status=0)


def test_ctrl_c_writes_a_partial_report_exits_130_and_resume_finishes(tmp_path, conform_cli,
                                                                      uninterrupted):
    whole = _results(uninterrupted)
    proc = _start(*RUN, "--out", tmp_path)
    _wait_for_lines(proc, tmp_path / "results.jsonl", len(whole) // 3)
    os.killpg(proc.pid, signal.SIGINT)     # what a terminal's Ctrl-C does
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert "--resume" in stderr
    summary = _summary(tmp_path)
    done = len(_results(tmp_path))
    assert summary["complete"] is False and summary["cases"] == done < len(whole)
    assert f"INCOMPLETE: {done} of {len(whole)} cases" in stdout
    assert f"{done} of {len(whole)} cases" in (tmp_path / "summary.md").read_text()
    assert f"{done} of {len(whole)} cases" in (tmp_path / "report.html").read_text()
    assert "incomplete" in (tmp_path / "junit.xml").read_text()
    gate = conform_cli("gate", tmp_path, "--min-pass-rate", "0.5")
    assert gate.returncode == 2
    assert gate.stderr.startswith(f"conform: error: {tmp_path}: the run is incomplete ({done} of "
                                  f"{len(whole)} cases)")
    conform_cli(*RUN, "--out", tmp_path, "--resume", check_status=0)
    assert _results(tmp_path) == whole


def test_a_second_run_into_a_locked_folder_exits_2_naming_the_holder(tmp_path, conform_cli):
    """The first run holds the folder for as long as the test needs: its case 3 says so through
    a FIFO, then hangs until the first run is stopped (no race with how fast it runs)."""
    from tests.harness.hostile_adapters import MARKER

    fifo, out = tmp_path / "running", tmp_path / "out"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "conform.harness.cli", "run", "--backend",
         "tests.harness.hostile_adapters:SaysThenHangs", "--ops", "add", "--dtypes", "float32",
         "--max-examples", "8", "--workers", "1", "--quiet", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, MARKER: str(fifo)}, start_new_session=True)
    try:
        with fifo.open(encoding="utf-8") as said:   # blocks until case 3 is running
            assert said.readline() == "running\n"
        second = conform_cli(*QUICK, "--out", out)
        assert second.returncode == 2
        assert second.stderr.startswith(f"conform: error: {out} is in use by another conform "
                                        f"command (pid {proc.pid} on ")
        assert len(second.stderr.splitlines()) == 1
        report = conform_cli("report", out)
        assert report.returncode == 2 and "is in use" in report.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    assert proc.returncode == 143   # stopped, with its partial reports: the lock is released
    assert len(_results(out)) == _summary(out)["cases"]
    assert conform_cli("report", out).returncode == 0


def test_resume_refuses_a_run_made_with_other_options(tmp_path, conform_cli):
    conform_cli(*QUICK, "--out", tmp_path, check_status=0)
    proc = conform_cli(*QUICK, "--seed", "7", "--out", tmp_path, "--resume")
    assert proc.returncode == 2
    assert "had seed=0, this one has seed=7" in proc.stderr


def test_resume_into_an_empty_folder_starts_afresh(tmp_path, conform_cli):
    proc = conform_cli(*QUICK, "--out", tmp_path, "--resume", check_status=0)
    assert "holds no run; starting afresh" in proc.stderr
    assert _summary(tmp_path)["complete"] is True


def test_resume_refuses_another_backend_version_and_report_keeps_a_run_incomplete(tmp_path,
                                                                                  conform_cli):
    conform_cli(*QUICK, "--out", tmp_path, check_status=0)
    summary = _summary(tmp_path)
    lines = (tmp_path / "results.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "results.jsonl").write_text("".join(lines[:2]) + lines[2][:20])  # cut mid-line
    summary.update(complete=False, backend_version="0.0")
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    report = conform_cli("report", tmp_path, check_status=0)
    assert f"incomplete: 2 of {summary['cases_planned']} cases" in report.stdout
    assert f"2 of {summary['cases_planned']} cases" in (tmp_path / "summary.md").read_text()
    proc = conform_cli(*QUICK, "--out", tmp_path, "--resume")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"conform: error: --resume: the run in {tmp_path} used numpy 0.0")
