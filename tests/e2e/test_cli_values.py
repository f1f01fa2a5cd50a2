"""Bad values through the real ``conform`` command: every usage mistake exits 2 with one line
on stderr, before any work starts, and a closed pipe or a full disk is one line at most."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conform.harness.cli.values import MIN_MEMORY_LIMIT_MB

RUN = ["run", "--backend", "numpy", "--ops", "add", "--max-examples", "2", "--quiet", "--out", "{tmp}/out"]
FEB_30 = """\
entries:
  - {op: add, dtype: float32, scope: cell, kind: xfail, reason: a reason here, link: x, expires: 2026-02-30}
"""

# (id, arguments ({tmp} is the test's folder), fragment of the one line on stderr)
BAD = [
    ("timeout 0", [*RUN, "--timeout", "0"], "argument --timeout: 0 is not a finite number of seconds > 0"),
    ("timeout -1", [*RUN, "--timeout", "-1"], "argument --timeout: -1 is not a finite number"),
    ("timeout nan", [*RUN, "--timeout", "nan"], "argument --timeout: nan is not a finite number"),
    ("timeout inf", [*RUN, "--timeout", "inf"], "argument --timeout: inf is not a finite number"),
    ("timeout text", [*RUN, "--timeout", "soon"], "argument --timeout: 'soon' is not a number"),
    ("load-timeout 0", [*RUN, "--load-timeout", "0"], "argument --load-timeout: 0 is not a finite"),
    ("workers 0", [*RUN, "--workers", "0"], "argument --workers: 0 is below 1"),
    ("max-examples 0", [*RUN, "--max-examples", "0"], "argument --max-examples: 0 is below 1"),
    ("max-examples -5", [*RUN, "--max-examples=-5"], "argument --max-examples: -5 is below 1"),
    ("max-examples 2.5", [*RUN, "--max-examples", "2.5"], "'2.5' is not an integer"),
    ("recycle-after -1", [*RUN, "--recycle-after=-1"], "argument --recycle-after: -1 is below 1"),
    ("recycle-after 0", [*RUN, "--recycle-after", "0"], "argument --recycle-after: 0 is below 1"),
    ("memory -1", [*RUN, "--memory-limit-mb=-1"], f"below {MIN_MEMORY_LIMIT_MB} MB"),
    ("memory 100", [*RUN, "--memory-limit-mb", "100"], f"100 MB is below {MIN_MEMORY_LIMIT_MB} MB"),
    ("min-pass-rate 1.5", [*RUN, "--min-pass-rate", "1.5"], "1.5 is outside [0, 1]"),
    ("unknown option", [*RUN, "--wrokers", "2"], "unrecognized arguments: --wrokers 2"),
    ("out is a file", [*RUN, "--out", "{tmp}/file"], "--out {tmp}/file is not a writable directory"),
    ("out under a file", [*RUN, "--out", "{tmp}/file/sub"], "--out {tmp}/file/sub is not a writable"),
    ("feb 30", [*RUN, "--manifest", "{tmp}/feb30.yaml"],
     "{tmp}/feb30.yaml:2: field <top>: invalid YAML: '2026-02-30' is not a date that exists"),
    ("non-UTF-8 spec", ["--specs", "{tmp}/specs", *RUN], "{tmp}/specs/add.yaml:1: field <top>: not UTF-8"),
    ("no specs", ["--specs", "{tmp}/nowhere", *RUN], "{tmp}/nowhere: field <top>: spec folder does not exist"),
    ("certify workers", ["certify", "--backend", "numpy", "--profile", "full", "--workers", "0"],
     "argument --workers: 0 is below 1"),
    ("certify timeout", ["certify", "--backend", "numpy", "--profile", "full", "--timeout", "nan"],
     "argument --timeout: nan is not a finite number"),
    ("verify rerun", ["verify", "{tmp}/cert.json", "--rerun=-1"], "argument --rerun: -1 is negative"),
    ("adapter timeout", ["adapter", "check", "numpy", "--timeout", "0"], "argument --timeout: 0 is not"),
    ("gate growth", ["gate", "{tmp}", "--max-error-growth", "nan"], "nan is below 1"),
    ("list format", ["list", "--format", "xml"], "argument --format: invalid choice: 'xml'"),
    ("report nothing", ["report", "{tmp}/nowhere"], "{tmp}/nowhere has no results.jsonl"),
]


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    (tmp_path / "feb30.yaml").write_text(FEB_30)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "add.yaml").write_bytes(b"op: add \xff\n")
    return tmp_path


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "conform.harness.cli", *args], capture_output=True,
                          text=True, timeout=300, env=env)


@pytest.mark.parametrize("args, fragment", [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_a_bad_value_exits_2_with_one_line_before_any_work(folder, args, fragment):
    proc = _cli(*(a.format(tmp=folder) for a in args))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("conform: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert fragment.format(tmp=folder) in proc.stderr
    assert not (folder / "out").exists() and proc.stdout == ""


def test_an_unusable_cache_directory_exits_2_naming_it(folder):
    env = {**os.environ, "CONFORM_CACHE_DIR": str(folder / "file" / "cache")}
    proc = _cli(*(a.format(tmp=folder) for a in RUN), env=env)
    assert proc.returncode == 2
    assert proc.stderr == (f"conform: error: $CONFORM_CACHE_DIR {folder}/file/cache is not a "
                           "usable directory: Not a directory\n")
    assert not (folder / "out").exists()


def test_a_closed_pipe_exits_quietly_with_141():
    command = f"{sys.executable} -m conform.harness.cli list --format json | true"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 141 and proc.stderr == ""


def test_a_full_disk_is_one_line(tmp_path):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "conform.harness.cli", "list"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 2
    # (the output fills a buffer, which fails inside print, or else at the final flush)
    assert proc.stderr.startswith("conform: error: No space left on device")
    assert proc.stderr.count("\n") == 1
    # (a full disk under results.jsonl can no longer be planted as a link to /dev/full: conform
    # never writes through a link there, tests/harness/test_outdir.py)
