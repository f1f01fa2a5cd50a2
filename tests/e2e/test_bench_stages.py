"""The benchmark's stage breakdown (bench/stages.py) through a real onnxruntime run: every second
of the command is attributed to a named stage, cold (drawing: draw, fill, oracle) and warm
(corpus read), and the workers' stages (session/compile, execute, encode, ...) and the parent's
(judge, encode, IPC receive) are there."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stages():
    spec = importlib.util.spec_from_file_location("stages", ROOT / "bench" / "stages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(tmp_path: Path, name: str) -> tuple[dict, float]:
    folder = tmp_path / f"stages-{name}"
    folder.mkdir()
    launched = time.time()
    env = {**os.environ, "CONFORM_CACHE_DIR": str(tmp_path / "cache"),
           "CONFORM_STAGES_DIR": str(folder), "CONFORM_STAGES_T0": repr(launched)}
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "stages.py"), "run", "--backend",
                           "onnxruntime", "--ops", "onnx_add,onnx_cast", "--dtypes",
                           "float32,float16", "--max-examples", "3", "--workers", "2", "--quiet",
                           "--out", str(tmp_path / f"out-{name}")],
                          env=env, capture_output=True, text=True, timeout=600)
    wall = time.time() - launched
    assert proc.returncode in (0, 1), proc.stderr
    cpu = _stages().cpu_seconds(folder)
    # workers (started from the fork server) compute; the parent judges (a short run: here)
    assert cpu["worker: session/compile"] > 0 and cpu["judge"] > 0, cpu
    return _stages().attribute(folder, wall, launched, 2), wall


def test_every_stage_target_is_where_the_driver_looks_for_it():
    """A function renamed or moved is a stage silently folded into its caller: the driver
    finds every one of its targets in this tree."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import stages; stages.install(); "
            "print(stages.MISSING)")
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT / "bench")], check=True,
                          capture_output=True, text=True)
    assert proc.stdout.strip() == "[]"


def test_every_second_of_a_cold_and_a_warm_run_has_a_stage(tmp_path):
    cold, cold_wall = _run(tmp_path, "cold")
    warm, warm_wall = _run(tmp_path, "warm")
    for stages, wall in ((cold, cold_wall), (warm, warm_wall)):
        assert abs(sum(stages.values()) - wall) < 0.05 * wall
        assert stages["unattributed"] < 0.1 * wall, stages
        for stage in ("start-up", "worker start", "reports", "worker: session/compile",
                      "worker: execute", "judge", "encode", "IPC receive", "worker: encode"):
            assert stages.get(stage, 0.0) > 0.0, (stage, stages)
    # cold: the corpus is drawn in two processes; warm: it is read
    assert all(cold.get(f"drawing: {stage}", 0.0) > 0.0 for stage in ("draw", "fill", "oracle"))
    assert not any(stage.startswith("drawing: ") for stage in warm)
    assert warm["corpus read"] > 0.0


def _guard():
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("guard", ROOT / "bench" / "guard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_guard_fails_on_a_stage_that_grew_beyond_noise_and_only_then():
    compare = _guard().compare
    base = {"cases": 10, "total": 200.0, "worker: execute": 50.0, "judge": 40.0, "tiny": 1.0}
    assert compare(base, dict(base), 0.15, 0.02) == []
    # a stage 25% dearer (10 us: 5% of the whole) fails; the total within 15% does not
    assert compare(base, {**base, "total": 210.0, "judge": 50.0}, 0.15, 0.02) == ["judge"]
    # a tiny stage tripled (2 us: 1% of the whole) is noise; a new big stage is not
    assert compare(base, {**base, "tiny": 3.0}, 0.15, 0.02) == []
    assert compare(base, {**base, "IPC": 20.0}, 0.15, 0.02) == ["IPC"]
    assert compare(base, {**base, "total": 240.0}, 0.15, 0.02) == ["total"]
