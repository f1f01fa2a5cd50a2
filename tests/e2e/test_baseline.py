"""Verdicts, error figures and case digests on the default corpus (at a small budget) are those
recorded in tests/fixtures/baseline/: a change meant to move code without changing what it
computes shows here if it changed a result. A change that means to change results re-records
them (`python3 bench/baseline.py record`) and says why in its commit."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _baseline():
    spec = importlib.util.spec_from_file_location("baseline", ROOT / "bench" / "baseline.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("baseline", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("backend", ["numpy", "onnxruntime", "jax", "nnef"])
def test_results_match_the_recorded_baseline(backend):
    assert _baseline().differences(backend) == []


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
