"""The judge's mutation score: how many injected bugs (bench/mutants.py) conform catches at the
default budget.

    python bench/mutation_score.py [--mutants NAME,..] [--jobs 2] [--out FILE] [--keep DIR]

Each mutant wraps onnxruntime and breaks some of its ops under a bug's condition. The script runs
onnxruntime once on every op a mutant targets (the clean run), then each mutant with the real CLI
(``conform run --backend bench.mutants:Name --ops <its ops> --no-manifest``, default budget and
seed), at most ``--jobs`` runs at a time, one worker each. A mutant is *detected* when some case
has verdict fail, error, crash or timeout in its run and not in the clean run (the same case id:
both runs draw the same corpus), so onnxruntime's own deviations never count as detections.

It prints ``detected N/M``, each mutant's verdict, and for each missed one why, read from the two
runs' records: how many cases the affected op x dtype cells had, which verdicts changed, and the
largest error/bound ratio the mutant reached there against the clean run's. The figures go to
``bench/results/mutation-<date>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BAD = {"fail", "error", "crash", "timeout"}
MODULE = "bench.mutants"


def _mutants():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench import mutants

    return {cls.__name__: cls for cls in mutants.ALL}


def _run(backend: str, ops, out: Path, timeout: float = 900) -> float:
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(
        [sys.executable, "-m", "conform.harness.cli", "run", "--backend", backend,
         "--ops", ",".join(sorted(ops)), "--no-manifest", "--quiet", "--workers", "1",
         "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode not in (0, 1) or not (out / "results.jsonl").exists():
        raise RuntimeError(f"conform run --backend {backend} exited {proc.returncode}:\n"
                           f"{proc.stderr[-4000:]}")
    return time.perf_counter() - start


def _records(out: Path) -> dict:
    return {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())
            if r.get("id")}


def _ratio(record) -> float:
    err, bound = record.get("max_error"), record.get("bound")
    if err is None or bound is None:
        return 0.0
    try:
        return float(err) / float(bound) if float(bound) > 0 else (0.0 if float(err) == 0
                                                                   else float("inf"))
    except (TypeError, ValueError):
        return 0.0


def judge_mutant(cls, clean: dict, mutated: dict) -> dict:
    """Detected or not, and for a missed mutant why, from the clean and the mutated records."""
    caught = sorted(i for i, r in mutated.items()
                    if r["verdict"] in BAD and clean.get(i, {}).get("verdict") not in BAD)
    affected = [i for i, r in mutated.items() if r["op"] in cls.targets
                and (not cls.affects or r["dtype"] in cls.affects)]
    changed = Counter(f"{clean[i]['verdict']}->{mutated[i]['verdict']}" for i in affected
                      if i in clean and clean[i]["verdict"] != mutated[i]["verdict"])
    verdicts = Counter(mutated[i]["verdict"] for i in affected)
    worst = max((_ratio(mutated[i]) for i in affected), default=0.0)
    worst_clean = max((_ratio(clean[i]) for i in affected if i in clean), default=0.0)
    result = {"mutant": cls.__name__, "bug": cls.bug, "resembles": cls.resembles,
              "ops": list(cls.targets), "dtypes": list(cls.affects) or "all",
              "detected": bool(caught), "caught_cases": caught[:5], "n_caught": len(caught),
              "affected_cases": len(affected), "verdicts": dict(verdicts),
              "changed": dict(changed), "worst_ratio": worst, "clean_worst_ratio": worst_clean}
    if not caught:
        if not affected:
            why = "no case of the affected op x dtype cells was drawn (or claimed)"
        elif changed:
            why = ("its changes land only on verdicts that are not failures: "
                   + ", ".join(f"{k} x{v}" for k, v in changed.items()))
        elif worst > worst_clean:
            why = (f"its error stays within the bound (worst error/bound {worst:.3g} against "
                   f"{worst_clean:.3g} clean) on the {len(affected)} cases drawn")
        else:
            why = (f"no drawn case meets the bug's condition: the {len(affected)} cases of the "
                   f"affected cells judge exactly as in the clean run ({dict(verdicts)})")
        result["why_missed"] = why
    return result


def score(names=None, jobs: int = 2, keep: Path | None = None) -> dict:
    table = _mutants()
    chosen = [table[n] for n in (names or table)]
    ops = sorted({op for cls in chosen for op in cls.targets})
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="conform-mutants-") as tmp:
        base = Path(keep) if keep else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        clean_seconds = _run("onnxruntime", ops, base / "clean")
        clean = _records(base / "clean")

        def one(cls):
            out = base / cls.__name__
            seconds = _run(f"{MODULE}:{cls.__name__}", cls.targets, out)
            return {**judge_mutant(cls, clean, _records(out)), "seconds": round(seconds, 1)}

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(one, chosen))
    detected = sum(r["detected"] for r in results)
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "budget": "default", "detected": detected, "total": len(results),
            "score": detected / len(results) if results else 0.0,
            "clean_seconds": round(clean_seconds, 1),
            "seconds": round(time.perf_counter() - started, 1), "mutants": results}


def report(result: dict) -> str:
    lines = [f"mutation score: detected {result['detected']}/{result['total']} "
             f"({100 * result['score']:.1f}%) at the default budget, {result['seconds']} s"]
    for r in result["mutants"]:
        mark = "detected" if r["detected"] else "MISSED  "
        lines.append(f"  {mark} {r['mutant']:34} {r['bug']} [{', '.join(r['ops'])}]"
                     + (f" ({r['n_caught']} cases)" if r["detected"] else ""))
    missed = [r for r in result["mutants"] if not r["detected"]]
    if missed:
        lines.append("missed:")
        lines += [f"  {r['mutant']}: {r['why_missed']}" for r in missed]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", help="comma-separated class names (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    parser.add_argument("--out", type=Path, help="JSON result (default bench/results/mutation-<date>.json)")
    parser.add_argument("--keep", type=Path, help="keep the runs' output directories here")
    args = parser.parse_args(argv)
    result = score(args.mutants.split(",") if args.mutants else None, args.jobs, args.keep)
    print(report(result))
    out = args.out or ROOT / "bench" / "results" / f"mutation-{result['date'][:10]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
