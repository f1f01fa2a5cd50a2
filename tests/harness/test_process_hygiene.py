"""Process hygiene of ``conform run`` (issue 29, part 7): what a backend starts dies with its
worker, SIGTERM ends a run as Ctrl-C does (partial reports, how to resume), result lines do not
depend on the worker count or on a resume, and conform itself writes nothing to stderr (see
also tests/harness/test_judge.py: no NumPy warning from judging, no worst element where every
element is implementation-defined).

The tests wait for events (a pipe's end of file, a line written to a FIFO), never for a time;
their time limits only bound a failure."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from tests.harness.hostile_adapters import MARKER

HOSTILE = "tests.harness.hostile_adapters:"
LIMIT = 600   # seconds: only a failing run comes near it
#: A record's figures that time the case (they vary from run to run by nature).
TIMINGS = ("seconds", "judge_seconds")


def _conform(*args) -> list[str]:
    return [sys.executable, "-m", "conform.harness.cli", *map(str, args)]


def _lines(out) -> list[str]:
    """The run's result lines without their timings, sorted by case id (the order in which
    cases finish depends on the workers)."""
    records = [json.loads(line) for line in (out / "results.jsonl").read_text("utf-8").splitlines()]
    for record in records:
        for key in TIMINGS:
            record.pop(key, None)
    return sorted(json.dumps(record, sort_keys=True) for record in records)


def _wait_for_line(path, proc) -> str:
    """The first line written to the FIFO ``path`` (or "" if ``proc`` ends first)."""
    got: list = []
    reader = threading.Thread(target=lambda: got.append(path.open(encoding="utf-8").readline()),
                              daemon=True)
    reader.start()
    while reader.is_alive() and proc.poll() is None:
        reader.join(1)
    if reader.is_alive():   # the run ended without writing: let the reader go
        with open(path, "w", encoding="utf-8"):
            pass
        reader.join(LIMIT)
    return got[0] if got else ""


def _finish(proc) -> str:
    """``proc``'s stderr once its stdout and stderr reach their end: every process holding them
    (the children the backend started) is gone."""
    try:
        return proc.communicate(timeout=LIMIT)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("a process the backend started outlived the run, holding its output open")


def _run(*args) -> None:
    proc = subprocess.Popen(_conform(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    stderr = _finish(proc)
    assert proc.returncode == 0 and stderr == "", stderr


def test_sigterm_writes_partial_reports_and_a_resume_gives_the_lines_of_an_unbroken_run(tmp_path):
    """Each worker's backend leaves a child sleeping for an hour on the run's stdout and stderr
    (``conform run ... | cat`` waited for them): every run below still reaches its end of file.
    SIGTERM ends the first run while case 3 hangs; its resume and a run with two workers give
    the same result lines."""
    fifo, out = tmp_path / "running", tmp_path / "out"
    os.mkfifo(fifo)
    args = ["run", "--backend", HOSTILE + "SaysThenHangs", "--ops", "add", "--dtypes", "float32",
            "--max-examples", 8, "--workers", 1, "--quiet"]
    proc = subprocess.Popen(_conform(*args, "--out", out), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, MARKER: str(fifo)})
    assert _wait_for_line(fifo, proc) == "running\n", proc.communicate(timeout=LIMIT)
    proc.send_signal(signal.SIGTERM)   # case 3 hangs: the run is under way
    stderr = _finish(proc)
    assert proc.returncode == 143, stderr
    assert "partial" in stderr and "--resume" in stderr and "Traceback" not in stderr, stderr
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["complete"] is False and summary["interrupted_by"] == "SIGTERM"
    assert summary["cases"] < summary["cases_planned"]
    assert (out / "report.html").is_file() and (out / "junit.xml").is_file()

    _run(*args, "--out", out, "--resume")   # no FIFO now: case 3 is computed
    _run(*args[:-3], "--workers", 2, "--quiet", "--out", tmp_path / "fresh")
    assert _lines(out) == _lines(tmp_path / "fresh")
