"""The regression guard: the benchmark at the previous landed commit and at the working tree, side
by side in one sitting, per case and per stage. Run it before each submission.

    python bench/guard.py [--base main] [--backend onnxruntime] [--max-examples 20]
                          [--rounds 3] [--ops GLOB,..] [--threshold 0.15]

The base commit is checked out in a git worktree of its own (``$TMPDIR/conform-guard-<sha>``,
kept between sittings) with its own virtualenv (``--system-site-packages``, conform installed
with ``pip install --no-deps -e``). Each side gets its own cache directory and one cold run
(which fills it, and is reported too), then ``--rounds`` warm runs each, interleaved (base, work,
work, base, ...: a load that comes and goes hits both alike). Every run goes through
bench/stages.py of the working tree, which attributes each second to a stage.

It prints the microseconds per case of each stage (median over the rounds) on both sides and
their ratio, in wall time and in CPU time, and exits 1 if the whole per-case CPU cost, or any
stage's, grew by more than ``--threshold`` (CPU time: on a loaded machine wall times swing by
2-3x between two runs a minute apart, CPU times far less) (a stage must also have grown by more than ``--floor`` of the base's whole
per-case cost: a stage of a few microseconds moves by more than 15% from noise alone).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import kernels  # noqa: E402  (bench/kernels.py)
from run_bench import _conform, call_floor_us  # noqa: E402  (bench/run_bench.py)

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def base_python(rev: str) -> tuple[str, str]:
    """``(sha, python)``: the interpreter of a worktree of ``rev`` with conform installed."""
    sha = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    tree = Path(tempfile.gettempdir()) / f"conform-guard-{sha[:12]}"
    if not (tree / ".git").exists():
        _git("worktree", "add", "--detach", str(tree), sha)
    python = tree / ".venv" / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                        str(tree / ".venv")], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps",
                        "--disable-pip-version-check", "-e", str(tree)], check=True)
    return sha, str(python)


def _run(python: str, args: list[str], cache: Path, out: Path) -> dict:
    """Microseconds per case of each stage of one run (and ``total``): CPU time (what the guard
    compares: the load of other processes stretches wall times far more), and wall time
    (``wall``: the same, attributed to stages as bench/stages.py does)."""
    wall, _, stages = _conform([*args, "--out", str(out)], cache, python=python)
    cases = max(json.loads((out / "summary.json").read_text())["cases"], 1)
    compiled = stages.kernels
    return {"cases": cases,
            **({"kernels": kernels.report(compiled, cases)} if compiled["compilations"] else {}), "total": sum(stages.cpu.values()) / cases * 1e6,
            "tree_cpu": stages.tree_cpu / cases * 1e6,   # every process, every thread
            **{stage: seconds / cases * 1e6 for stage, seconds in stages.cpu.items()},
            "wall": {"total": wall / cases * 1e6,
                     **{stage: seconds / cases * 1e6 for stage, seconds in stages.items()}}}


def _median(runs: list[dict]) -> dict:
    stages = {stage for run in runs for stage in run if stage not in ("wall", "kernels")}
    return {stage: statistics.median(run.get(stage, 0.0) for run in runs) for stage in stages}


def compare(base: dict, work: dict, threshold: float, floor: float) -> list[str]:
    """The stages (``total`` first) whose per-case cost grew beyond ``threshold`` and, for a
    stage, by more than ``floor`` of the base's whole per-case cost."""
    grown = []
    for stage in sorted((set(base) | set(work)) - {"cases"}, key=lambda s: -work.get(s, 0.0)):
        before, after = base.get(stage, 0.0), work.get(stage, 0.0)
        beyond = after > before * (1 + threshold)
        if beyond and (stage == "total" or after - before > floor * base["total"]):
            grown.append(stage)
    return sorted(grown, key=lambda s: s != "total")


def _table(base: dict, work: dict, grown: list[str]) -> str:
    rows = [f"{'stage':42} {'base':>9} {'work':>9} {'ratio':>6}   (us/case, median)"]
    for stage in ["total"] + sorted((set(base) | set(work)) - {"total", "cases"},
                                    key=lambda s: -max(base.get(s, 0.0), work.get(s, 0.0))):
        before, after = base.get(stage, 0.0), work.get(stage, 0.0)
        if max(before, after) < 0.5:
            continue
        ratio = f"{after / before:6.2f}" if before else "   new"
        rows.append(f"{stage:42} {before:9.1f} {after:9.1f} {ratio}"
                    + ("   <- grew" if stage in grown else ""))
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="the commit to compare with (default main)")
    parser.add_argument("--backend", default="onnxruntime")
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ops", default=None)
    parser.add_argument("--threshold", type=float, default=0.15)
    parser.add_argument("--floor", type=float, default=0.02)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    sha, python = base_python(args.base)
    sides = {"base": python, "work": sys.executable}
    command = ["run", "--backend", args.backend, "--max-examples", str(args.max_examples),
               "--workers", str(args.workers), "--quiet", *(["--ops", args.ops] if args.ops else [])]
    figures: dict = {side: {"cold": None, "warm": []} for side in sides}
    with tempfile.TemporaryDirectory(prefix="conform-guard-") as tmp:
        order = [side for k in range(args.rounds) for side in
                 (("base", "work") if k % 2 == 0 else ("work", "base"))]
        for k, side in enumerate([*sides, *order]):
            cold = k < len(sides)
            run = _run(sides[side], command, Path(tmp) / f"cache-{side}", Path(tmp) / f"out-{k}")
            if cold:
                figures[side]["cold"] = run
            else:
                figures[side]["warm"].append(run)
            print(f"{side} {'cold' if cold else 'warm'}: {run['cases']} cases, "
                  f"{run['wall']['total']:.0f} us/case wall, {run['tree_cpu']:.0f} CPU "
                  f"({run['total']:.0f} in stages)", flush=True)
            if "kernels" in run:
                print(f"{side} {'cold' if cold else 'warm'} kernels: "
                      f"{kernels.report_lines(run['kernels'])}", flush=True)
            if args.backend == "onnxruntime" and not cold and side == "work":
                figures.setdefault("call_floor_us", []).append(call_floor_us())
    walls = [_median([run["wall"] for run in figures[side]["warm"]]) for side in sides]
    print(f"\nwarm {args.backend}, base {sha[:10]} ({args.base}) against the working tree, "
          "wall time by stage:")
    print(_table(*walls, []))
    base, work = (_median(figures[side]["warm"]) for side in sides)
    grown = compare(base, work, args.threshold, args.floor)
    print("\nCPU time by stage (summed over the processes; what the guard compares):")
    print(_table(base, work, grown))
    cold = {side: figures[side]["cold"] for side in sides}
    print(f"cold (one run each), wall: base {cold['base']['wall']['total']:.0f} us/case, "
          f"work {cold['work']['wall']['total']:.0f} us/case; CPU: base "
          f"{cold['base']['total']:.0f}, work {cold['work']['total']:.0f} us/case")
    if figures.get("call_floor_us"):
        floor = statistics.median(figures["call_floor_us"])
        print(f"onnxruntime's per-call floor (20,000 calls of a one-node model, each round): "
              f"{floor:.1f} us; warm wall per case: base {walls[0]['total'] / floor:.1f}x, "
              f"work {walls[1]['total'] / floor:.1f}x")
    if args.out:
        args.out.write_text(json.dumps({"base": sha, "figures": figures, "grown": grown},
                                       indent=1) + "\n")
    if grown:
        print(f"regression beyond {args.threshold:.0%}: {', '.join(grown)}")
        return 1
    print("no per-case regression beyond noise")
    return 0


if __name__ == "__main__":
    sys.exit(main())
