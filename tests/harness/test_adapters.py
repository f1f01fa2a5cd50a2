"""The adapter self-check (``check_adapter``) and the starter package (``new_adapter``)."""
from __future__ import annotations

import tomllib

import pytest

from conform.harness.assurance.adapters import AdapterError, check_adapter, class_name, new_adapter
from conform.harness.backends import API_VERSION, Backend

BAD = "tests.harness.bad_adapters"


def _failed(report) -> dict:
    return {c.title: c for c in report.checks if not c.ok}


def test_api_version_is_exported_and_inherited():
    assert API_VERSION == 3 and Backend.api_version == API_VERSION


def test_numpy_backend_passes():
    report = check_adapter("numpy")
    assert report.passed, report.render()
    titles = [c.title for c in report.checks]
    assert "unexpressible case -> unsupported" in titles
    assert "exception -> error with traceback" in titles and "smoke suite" in titles


def test_generated_starter_passes_as_generated(tmp_path, monkeypatch):
    out = new_adapter("acme_npu", tmp_path / "pkg")
    meta = tomllib.loads((out / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["conform.backends"] == {
        "acme_npu": "conform_acme_npu:AcmeNpuBackend"}
    source = (out / "conform_acme_npu" / "__init__.py").read_text()
    assert "VENDOR" in source and (out / "README.md").exists()
    monkeypatch.syspath_prepend(str(out))   # spawned workers inherit sys.path
    report = check_adapter(f"conform_acme_npu:{class_name('acme_npu')}")
    assert report.passed, report.render()
    assert report.info["name"] == "acme_npu"


def test_new_refuses_bad_names_and_occupied_dirs(tmp_path):
    with pytest.raises(AdapterError, match="lower-case"):
        new_adapter("Acme-NPU", tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "keep.txt").write_text("mine")
    with pytest.raises(AdapterError, match="not empty"):
        new_adapter("acme", tmp_path / "b")


def test_bad_declarations_are_each_named():
    report = check_adapter(f"{BAD}:BadDeclarations")
    failed = _failed(report)
    assert {"name", "model_format", "subnormals", "version()", "API version"} <= set(failed)
    assert "tflite" in failed["model_format"].detail and "native" in failed["model_format"].fix
    assert "smoke suite" not in failed   # it computes add; the rest is unsupported
    assert not report.passed


def test_swallowed_exceptions_fail_the_error_probe():
    report = check_adapter(f"{BAD}:SwallowsErrors")
    failed = _failed(report)
    assert "exception -> error with traceback" in failed
    assert "propagate" in failed["exception -> error with traceback"].fix


def test_misbehaving_backend_fails_probe_and_smoke():
    report = check_adapter("tests.harness.misbehaving_backend:MisbehavingBackend")
    failed = _failed(report)
    assert {"unexpressible case -> unsupported", "smoke suite"} <= set(failed)
    assert "error" in failed["smoke suite"].detail


def test_load_failure_reports_name_traceback_and_fix():
    name = f"{BAD}:FailsToInit"
    report = check_adapter(name)
    (check,) = report.checks
    assert check.title == "loads in a worker" and not check.ok
    assert name in check.detail and "Traceback" in check.detail
    assert "cannot open device /dev/acme0" in check.detail and "PYTHONPATH" in check.fix
    assert name in report.render()


def test_unregistered_name_fails_with_the_entry_point_fix():
    report = check_adapter("no_such_adapter")
    assert not report.passed and 'entry-points."conform.backends"' in report.checks[0].fix
