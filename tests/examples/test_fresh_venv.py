"""Issue 4's promise to vendors, checked for real: in a fresh venv, installing conform and then an
adapter's package (`pip install ./examples/<adapter>`) is all `conform run --backend <name>` and
`conform adapter check <name>` need."""
from __future__ import annotations

import json
import subprocess
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ADAPTERS = {"openvino": "openvino-adapter", "iree": "iree-adapter"}


def _pip(python, *args):
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile",
                           *map(str, args)], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    """A venv without system site packages: conform from the repository, then the two adapters."""
    directory = tmp_path_factory.mktemp("fresh")
    venv.EnvBuilder(with_pip=True).create(directory)
    python = directory / "bin" / "python"
    _pip(python, REPO)   # not editable: as a user installs a release
    _pip(python, *(REPO / "examples" / d for d in ADAPTERS.values()))
    return directory / "bin"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_installed_adapter_checks_and_runs(fresh_venv, tmp_path, name):
    conform = str(fresh_venv / "conform")
    check = subprocess.run([conform, "adapter", "check", name], capture_output=True, text=True,
                           timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "checks pass" in check.stdout and "[ ]" not in check.stdout
    out = tmp_path / name
    # (one op, bound in every format: IREE compiles each model, ~1 s a case; the adapters' own
    # tests run more ops)
    run = subprocess.run([conform, "run", "--backend", name, "--ops", "exp", "--dtypes", "float32",
                          "--max-examples", "2", "--quiet", "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == name and summary["counts"]["pass"] > 0
    assert summary["counts"]["error"] == summary["counts"]["crash"] == 0, summary["counts"]
