"""The benchmark's kernels per cell (bench/kernels.py) through a real jax pack: a pack's
compilation is counted once, its kernels to their cells (cases of one signature share one), and
jax's own compile event gives its seconds."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path


from conform.generators import generate_cases
from conform.harness.backends import jax_backend, jax_packing
from conform.harness.backends.jax_packing import Slot, run_pack
from conform.harness.backends.models import declared_inputs
from conform.harness.backends.program import Program

ROOT = Path(__file__).resolve().parents[2]


def _kernels():
    """bench/kernels.py, loaded afresh (its figures empty)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import kernels
        return importlib.reload(kernels)
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_a_pack_counts_its_kernels_per_cell_and_its_compile_seconds(specs, tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(jax_packing, "_compute_together", jax_packing._compute_together)
    monkeypatch.setattr(jax_backend.JaxBackend, "run", jax_backend.JaxBackend.run)
    kernels = _kernels()
    kernels.install()
    exp = [c for c in generate_cases(specs["exp"], "float32", count=2, seed=3)
           if c.plan != "must_reject"]
    sums = generate_cases(specs["reduce_sum"], "float32", count=2, seed=3)[:2]
    chosen = [(specs["exp"], c) for c in exp] + [(specs["reduce_sum"], c) for c in sums]
    exp_shapes = {c.inputs[0].shape for c in exp}
    assert 2 < len(exp_shapes) < len(exp)   # some cases share a shape
    slots = [Slot(Program(spec, case), declared_inputs(case)) for spec, case in chosen]
    run_pack(jax_backend.JaxBackend(), slots)
    assert all(slot.error is None for slot in slots)
    figures = kernels.figures()
    assert figures["compilations"] == 1 and figures["loads"] == 0
    sum_shapes = {(c.inputs[0].shape, tuple(sorted(map(str, c.attrs.items())))) for c in sums}
    assert figures["kernels"] == {"exp.float32": len(exp_shapes),
                                  "reduce_sum.float32": len(sum_shapes)}
    assert figures["cases"] == {"exp.float32": len(exp), "reduce_sum.float32": 2}
    assert sum(figures["seconds"].values()) > 0
    report = kernels.report(figures, len(slots))
    assert report["kernels"] == sum(figures["kernels"].values()) and report["cells"] == 2
    assert report["cases_per_kernel"] == round(len(slots) / report["kernels"], 2)
