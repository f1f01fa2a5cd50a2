"""``conform hunt`` against random drawing on the same budget, on a drifting op.

    python bench/hunt_vs_random.py [--budget 256] [--seeds 8] [--out FILE]

The drifting op is :class:`ExpNarrowDrift`: onnxruntime's float32 Exp with an error that rises
linearly from nothing at |x - 7.3| = 1 to 2.6 ULP at x = 7.3 (a polynomial table whose error
grows toward one node, as in a sub-range accuracy drift): added to onnxruntime's own error (up
to ~0.7 ULP), it passes the 3-ULP bound only within a few hundredths of 7.3 where that error
has the same sign, a sliver of the spec's draw range [-12, 12]. For each seed the
script runs ``conform hunt`` (climbing) and ``conform hunt --random`` (the whole budget drawn by
the suite's value plans: normal, wide, edge) with the same budget and seed, through the real
CLI, and prints each one's worst error/bound ratio and how many seeds found a failing input
(ratio > 1). The figures go to ``bench/results/hunt-<date>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.mutants.base import ORT, OrtMutant, _search  # noqa: E402


class ExpNarrowDrift(OrtMutant):
    """float32 exp off by up to 2.6 ULP near x = 7.3, fading linearly to 0 at |x - 7.3| = 1."""

    targets, affects = ("exp",), ("float32",)
    bug = "sub-range accuracy drift, narrow"
    resembles = _search(ORT, "Exp accuracy float32 range")
    centre, half_width, peak = 7.3, 1.0, 2.6

    def mutate(self, program, inputs, outputs):
        x, out = inputs[0].astype(np.float64), outputs[0]
        with np.errstate(invalid="ignore"):
            drift = self.peak * np.clip(1 - np.abs(x - self.centre) / self.half_width, 0, 1)
        moved = out.astype(np.float64) + np.nan_to_num(drift) * np.spacing(out).astype(np.float64)
        return [np.where(np.isfinite(out), moved, out).astype(np.float32)]


class ExpNarrowDriftPlanted(ExpNarrowDrift):
    """The same drift, 8 ULP at its peak: what tests/e2e/test_hunt_cli.py plants for hunt to find."""

    peak = 8.0


def _hunt(budget: int, seed: int, out: Path, random: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(
        [sys.executable, "-m", "conform.harness.cli", "hunt", "--backend",
         "bench.hunt_vs_random:ExpNarrowDrift", "--ops", "exp", "--dtypes", "float32",
         "--budget", str(budget), "--seed", str(seed), "--out", str(out),
         *(["--random"] if random else [])],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"conform hunt exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    entry = json.loads((out / "summary.json").read_text())["hunt"][0]
    return {"ratio": entry["ratio"], "inputs": entry["inputs"], "evaluated": entry["evaluated"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=256)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            climb = _hunt(args.budget, seed, Path(tmp) / f"climb{seed}", random=False)
            drawn = _hunt(args.budget, seed, Path(tmp) / f"random{seed}", random=True)
            rows.append({"seed": seed, "hunt": climb, "random": drawn})
            print(f"seed {seed}: hunt {climb['ratio']:.3f} at {climb['inputs']}, "
                  f"random {drawn['ratio']:.3f} at {drawn['inputs']}")
    figures = {kind: {"found": sum(r[kind]["ratio"] > 1 for r in rows),
                      "median_ratio": statistics.median(r[kind]["ratio"] for r in rows),
                      "best_ratio": max(r[kind]["ratio"] for r in rows)}
               for kind in ("hunt", "random")}
    for kind, f in figures.items():
        print(f"{kind:6s}: found a failing input in {f['found']}/{len(rows)} seeds; worst "
              f"error/bound median {f['median_ratio']:.3f}, best {f['best_ratio']:.3f} "
              f"(budget {args.budget} evaluations)")
    out = args.out or ROOT / "bench" / "results" / \
        f"hunt-{datetime.now(timezone.utc).strftime('%Y-%m-%d')}.json"
    out.write_text(json.dumps({"budget": args.budget, "seeds": args.seeds, "mutant": "ExpNarrowDrift",
                               "figures": figures, "rows": rows}, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
