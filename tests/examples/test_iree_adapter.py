"""The IREE example adapter (examples/iree-adapter), installed as a package: the real CLI finds it
by its entry point, `conform adapter check` passes, a small run computes every case it can; plus
the adapter's own logic (float64 kept as float64, float64 math IREE cannot link -> unsupported,
the disk cache of compiled modules, the measured subnormal policy).

No importorskip: CI installs the adapter, and a missing install must fail here, not skip.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import conform_iree
from conform.harness.backends import Unsupported
from conform.reports import read_results


def test_adapter_check_passes(conform_cli):
    proc = conform_cli("adapter", "check", "iree", check_status=0)
    assert "[ ]" not in proc.stdout and "checks pass" in proc.stdout
    assert "subnormals = 'ftz'" in proc.stdout and "model_format = 'stablehlo'" in proc.stdout


def test_small_run(conform_cli, tmp_path):
    out = tmp_path / "run"
    # small: each distinct case shape costs a ~1 s compilation on a cold cache (as in CI)
    conform_cli("run", "--backend", "iree", "--ops", "add,sin", "--dtypes", "float32,float64",
                "--max-examples", "1", "--quiet", "--out", out, check_status=0)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "iree" and "iree-base-runtime 3.13.0" in summary["backend_version"]
    counts = summary["counts"]
    assert counts["error"] == counts["crash"] == counts["timeout"] == 0, counts
    assert counts["pass"] > 0
    lines = list(read_results(out / "results.jsonl"))
    by_id = {line["id"]: line for line in lines}
    # float64 stays float64 (IREE would demote it to float32 and reject the inputs): add is exact
    assert all(line["verdict"] == "pass" for id_, line in by_id.items()
               if id_.startswith("add.float64.")), counts
    # IREE links no libm into its executables, so float64 sin does not compile: unsupported, why
    sin64 = [line for id_, line in by_id.items() if id_.startswith("sin.float64.")
             and 0 not in [d for shape in line["shapes"] for d in shape]]
    assert sin64 and all(line["verdict"] == "unsupported" and "no sin()" in line["message"]
                         for line in sin64)


class _Model:
    """A stand-in for conform's Model: fixed StableHLO text and inputs."""

    def __init__(self, text, inputs):
        self.key, self.text, self._inputs = text, text, inputs

    def build(self):
        return self.text

    def inputs(self):
        return self._inputs


def _binary(op, dtype, n=3):
    t = f"tensor<{n}x{dtype}>"
    return (f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n"
            f"  %0 = stablehlo.{op} %a, %b : {t}\n  return %0 : {t}\n}}\n")


@pytest.fixture
def fresh_backend(tmp_path, monkeypatch):
    """A factory of backends (each with an empty memory cache) sharing one empty disk cache."""
    monkeypatch.setenv("CONFORM_CACHE_DIR", str(tmp_path / "cache"))
    return conform_iree.IreeBackend


def test_compiled_modules_are_cached_in_memory_and_on_disk(fresh_backend):
    model = _Model(_binary("add", "f32"), [np.float32([1, 2, 3]), np.float32([0.5, 0.25, -3])])
    first = fresh_backend()
    for _ in range(2):
        (out,) = first.run(spec=None, case=None, model=model)
        np.testing.assert_array_equal(out, np.float32([1.5, 2.25, 0]))
    assert first.stats() == {"compilations": 1, "disk_cache_hits": 0}
    second = fresh_backend()                     # a new worker: the module comes from disk
    (out,) = second.run(spec=None, case=None, model=model)
    np.testing.assert_array_equal(out, np.float32([1.5, 2.25, 0]))
    assert second.stats() == {"compilations": 0, "disk_cache_hits": 1}


def test_float64_math_without_libm_is_unsupported_and_remembered(fresh_backend):
    text = ("func.func @main(%a: tensor<2xf64>) -> tensor<2xf64> {\n"
            "  %0 = stablehlo.sine %a : tensor<2xf64>\n  return %0 : tensor<2xf64>\n}\n")
    model = _Model(text, [np.float64([1, 2])])
    for backend in (fresh_backend(), fresh_backend()):
        with pytest.raises(Unsupported, match=r"no sin\(\)"):
            backend.run(spec=None, case=None, model=model)
    assert backend.stats() == {"compilations": 0, "disk_cache_hits": 1}


def test_declared_subnormal_policy_is_what_iree_does(fresh_backend):
    # ftz: a subnormal input reads as zero and a subnormal result is flushed to zero
    tiny, normal = np.float32(1e-40), np.float32(1.0e-38)
    (out,) = fresh_backend().run(spec=None, case=None, model=_Model(
        _binary("add", "f32"), [np.float32([tiny, normal, 1]), np.float32([0, -0.99e-38, 0])]))
    assert conform_iree.IreeBackend.subnormals == "ftz"
    np.testing.assert_array_equal(out, np.float32([0, 0, 1]))
