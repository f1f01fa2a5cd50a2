"""End-to-end: `conform adapter new` writes a starter that `conform adapter check` passes as
generated; a broken adapter fails the check with what to fix; usage errors exit 2."""
from __future__ import annotations

import os
import subprocess
import sys


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "conform.harness.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300, env=env)


def test_new_then_check_the_starter(tmp_path):
    out = tmp_path / "conform-acme"
    new = _cli("adapter", "new", "acme", "--dir", out)
    assert new.returncode == 0, new.stderr
    assert "conform adapter check acme" in new.stdout
    # checked by import path, the package directory on PYTHONPATH (no pip install needed)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(out)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    check = _cli("adapter", "check", "conform_acme:AcmeBackend", env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "all 11 checks pass" in check.stdout and "[ ]" not in check.stdout
    again = _cli("adapter", "new", "acme", "--dir", out)
    assert again.returncode == 2 and "not empty" in again.stderr


def test_check_fails_on_an_import_error_with_the_fix(conform_cli):
    proc = conform_cli("adapter", "check", "conform_no_such_vendor:Backend", check_status=1)
    assert "conform_no_such_vendor:Backend" in proc.stdout
    assert "ModuleNotFoundError" in proc.stdout and "Traceback" in proc.stdout
    assert "fix:" in proc.stdout and "PYTHONPATH" in proc.stdout


def test_check_fails_on_bad_declarations(conform_cli):
    proc = conform_cli("adapter", "check", "tests.harness.bad_adapters:BadDeclarations",
                       check_status=1)
    assert "[ ] model_format: model_format = 'tflite'" in proc.stdout
    assert "checks fail; to fix:" in proc.stdout


def test_usage_errors_exit_2(conform_cli):
    assert conform_cli("adapter", "new", "Not A Name").returncode == 2
    assert conform_cli("adapter").returncode == 2
    assert conform_cli("adapter", "check").returncode == 2
