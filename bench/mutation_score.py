"""The judge's mutation score: how many injected bugs (bench/mutants/) conform catches at the
default budget.

    python bench/mutation_score.py [--mutants NAME,..] [--jobs 2] [--out FILE] [--keep DIR]

Each mutant wraps onnxruntime (or jax, or numpy) and breaks some of its ops under a bug's
condition. Single-op mutants run in sets with the real CLI (``conform run --backend
bench.mutant_sets:Together_A__B --ops <their ops> [--dtypes <the cells they affect>]
--no-manifest``, default budget and seed; bench/mutant_sets.py: the mutants of a set own
disjoint cells, so each case meets at most one bug), each set beside a clean run of the same ops
and dtypes on the unmutated backend; graph mutants run ``conform fuzz`` campaigns. At most
``--jobs`` runs go at a time, one worker each. A mutant is *detected* when some case of its
cells has verdict fail, error, crash or timeout in its run and not in the clean run (the same
case id: both runs draw the same corpus), so the backend's own deviations never count.
A mutant whose bug the clean backend has itself (``shared = "what"``) is detected when every
case whose outputs it changes fails in both runs, and listed apart.

A mutant may be marked *equivalent* (``equivalent = "why"`` in bench/mutants/): the behaviour it
injects is a real-world bug pattern but the op's standard allows it, so no correct judge fails it.
Equivalent mutants are run and listed, and left out of the score's denominator.

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

from conform.verdicts import PROBLEMS

ROOT = Path(__file__).resolve().parents[1]
BAD = set(PROBLEMS)   # what fails a case: fail, inconsistent, error, crash, timeout
MODULE = "bench.mutants"


def _mutants():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench import mutants

    return {cls.__name__: cls for cls in mutants.ALL}


def _run(backend: str, ops, out: Path, dtypes=(), timeout: float = 900) -> float:
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(
        [sys.executable, "-m", "conform.harness.cli", "run", "--backend", backend,
         "--ops", ",".join(sorted(ops)), "--no-manifest", "--quiet", "--workers", "1",
         *(["--dtypes", ",".join(sorted(dtypes))] if dtypes else []), "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode not in (0, 1) or not (out / "results.jsonl").exists():
        raise RuntimeError(f"conform run --backend {backend} exited {proc.returncode}:\n"
                           f"{proc.stderr[-4000:]}")
    return time.perf_counter() - start


def _fuzz(backend: str, cls, out: Path, timeout: float = 900) -> float:
    """``conform fuzz`` of a graph mutant's campaign (its ops, budget, seed) on ``backend``."""
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(
        [sys.executable, "-m", "conform.harness.cli", "fuzz", "--backend", backend,
         "--ops", ",".join(cls.fuzz_ops), "--budget", str(cls.budget), "--seed", str(cls.seed),
         "--max-nodes", str(cls.max_nodes), "--out", str(out), "--force"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode not in (0, 1) or not (out / "results.jsonl").exists():
        raise RuntimeError(f"conform fuzz --backend {backend} exited {proc.returncode}:\n"
                           f"{proc.stderr[-4000:]}")
    return time.perf_counter() - start


#: The most mutants one run holds: a set this large costs about two runs of one mutant, and
#: several sets keep ``--jobs`` runs going at once.
SET_SIZE = 16


def mutant_sets(classes) -> list[list]:
    """Single-op mutants grouped into sets that can share a run (bench/mutant_sets.py: one
    wrapped backend, disjoint cells), each set holding either mutants of every dtype or mutants
    of named dtypes only (a run of the latter takes ``--dtypes``), in the order given."""
    from bench.mutant_sets import clash

    sets: list[list] = []
    for cls in classes:
        for members in sets:
            if (len(members) < SET_SIZE and bool(members[0].affects) == bool(cls.affects)
                    and not any(clash(cls, other) for other in members)):
                members.append(cls)
                break
        else:
            sets.append([cls])
    return sets


def _ops(members) -> list:
    return sorted({op for cls in members for op in cls.targets})


def _dtypes(members) -> list:
    return sorted({label for cls in members for label in cls.affects})


def _cells(cls, records: dict) -> dict:
    """The records of the cases in ``cls``'s cells: its ops, and its dtypes if it names any."""
    return {i: r for i, r in records.items() if r["op"] in cls.targets
            and (not cls.affects or r["dtype"] in cls.affects)}


def _campaign(cls) -> tuple:
    return (cls.fuzz_ops, cls.budget, cls.seed, cls.max_nodes)


def _reduced_nodes(records: dict, caught) -> int | None:
    """The fewest nodes a caught graph was reduced to (``conform fuzz`` reduces failures)."""
    sizes = [len(records[i]["failure"]["nodes"]) for i in caught
             if (records[i].get("failure") or {}).get("reduced")]
    return min(sizes, default=None)


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


def _raised_by_mutant(record) -> bool:
    """An error raised by the injection code itself (its innermost frame in bench/mutants/):
    a defect of the mutant, not a detection."""
    frames = [line for line in (record.get("traceback") or "").splitlines()
              if line.strip().startswith("File ")]
    return record["verdict"] == "error" and bool(frames) and "/bench/mutants/" in frames[-1]


def _shared_catch(cls, clean: dict, mutated: dict, moved: list) -> list:
    """For a mutant whose bug the clean backend shares (``shared``): the cases whose outputs
    it changes, if each fails in both runs (the judge catches the bug's condition on the real
    runtime), else none."""
    if not getattr(cls, "shared", "") or not moved:
        return []
    fails = all(mutated[i]["verdict"] in BAD and clean[i]["verdict"] in BAD for i in moved)
    return sorted(moved) if fails else []


def judge_mutant(cls, clean: dict, mutated: dict) -> dict:
    """Detected or not, and for a missed mutant why, from the clean and the mutated records."""
    bad = [i for i, r in mutated.items()
           if r["verdict"] in BAD and clean.get(i, {}).get("verdict") not in BAD]
    own_errors = sorted(i for i in bad if _raised_by_mutant(mutated[i]))
    caught = sorted(set(bad) - set(own_errors))
    affected = list(_cells(cls, mutated))
    changed = Counter(f"{clean[i]['verdict']}->{mutated[i]['verdict']}" for i in affected
                      if i in clean and clean[i]["verdict"] != mutated[i]["verdict"])
    verdicts = Counter(mutated[i]["verdict"] for i in affected)
    worst = max((_ratio(mutated[i]) for i in affected), default=0.0)
    worst_clean = max((_ratio(clean[i]) for i in affected if i in clean), default=0.0)
    moved = [i for i in affected if i in clean
             and mutated[i].get("max_error") != clean[i].get("max_error")]
    worst_moved = max((_ratio(mutated[i]) for i in moved), default=0.0)
    worst_moved_clean = max((_ratio(clean[i]) for i in moved), default=0.0)
    result = {"mutant": cls.__name__, "bug": cls.bug, "resembles": cls.resembles,
              "equivalent": cls.equivalent or None,
              "ops": list(cls.targets), "dtypes": list(cls.affects) or "all",
              "detected": bool(caught), "caught_cases": caught, "n_caught": len(caught),
              "mutant_errors": own_errors[:5],
              "affected_cases": len(affected), "verdicts": dict(verdicts),
              "changed": dict(changed), "outputs_changed": len(moved), "worst_ratio": worst, "clean_worst_ratio": worst_clean}
    shared = _shared_catch(cls, clean, mutated, moved) if not caught and not own_errors else []
    if shared:
        result.update(detected=True, caught_cases=shared, n_caught=len(shared),
                      shared=cls.shared)
    if not result["detected"]:
        if own_errors:
            why = f"the mutant's own code raised on {len(own_errors)} cases (a defect of the mutant)"
        elif not affected:
            why = "no case of the affected op x dtype cells was drawn (or claimed)"
        elif changed:
            why = ("its changes land only on verdicts that are not failures: "
                   + ", ".join(f"{k} x{v}" for k, v in changed.items()))
        elif moved and worst_moved > 1:
            why = (f"it changes the outputs of {len(moved)} of the {len(affected)} cases drawn; "
                   f"past their bounds (error/bound up to {worst_moved:.3g}) only on elements in "
                   f"the spec's implementation-defined regions (verdicts {dict(verdicts)})")
        elif moved:
            why = (f"it changes the outputs of {len(moved)} of the {len(affected)} cases drawn, "
                   f"all within their bounds (largest error/bound there {worst_moved:.3g}, "
                   f"{worst_moved_clean:.3g} clean): no case reaches the bug's condition")
        else:
            why = (f"no drawn case meets the bug's condition: the {len(affected)} cases of the "
                   f"affected cells judge exactly as in the clean run ({dict(verdicts)})")
        doc = " ".join((cls.__doc__ or "").split())
        result["why_missed"] = why + (f". The bug: {doc}" if doc else "")
    return result


def score(names=None, jobs: int = 2, keep: Path | None = None) -> dict:
    table = _mutants()
    chosen = [table[n] for n in (names or table)]
    wrapped = sorted({cls.wraps for cls in chosen})
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="conform-mutants-") as tmp:
        base = Path(keep) if keep else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)

        # Single-op mutants run in sets (bench/mutant_sets.py): one run per set, and one clean
        # run of the same ops and dtypes on the unmutated backend; graph mutants run one
        # campaign each, against one clean campaign per distinct campaign.
        graph_mutants = [cls for cls in chosen if getattr(cls, "fuzz_ops", ())]
        sets = mutant_sets([cls for cls in chosen if cls not in graph_mutants])
        campaigns = sorted({_campaign(cls): cls for cls in graph_mutants}.items())
        graph_clean = {key: base / f"clean-graphs-{n}" for n, (key, _) in enumerate(campaigns)}

        def clean_run(job):
            kind, n, what = job
            if kind == "graph":   # a graph mutants' campaign, on the unmutated adapter
                return _fuzz(f"{MODULE}:Clean", what, graph_clean[_campaign(what)])
            return _run(what[0].wraps, _ops(what), base / f"clean-set-{n}", _dtypes(what))

        def mutant_run(job):
            kind, n, what = job
            if kind == "graph":
                seconds = _fuzz(f"{MODULE}:{what.__name__}", what, base / what.__name__)
                mutated = _records(base / what.__name__)
                result = judge_mutant(what, _records(graph_clean[_campaign(what)]), mutated)
                result["reduced_nodes"] = _reduced_nodes(mutated, result["caught_cases"])
                result["caught_cases"] = result["caught_cases"][:5]
                return [{**result, "wraps": what.wraps, "seconds": round(seconds, 1)}]
            from bench.mutant_sets import set_name

            out = base / f"set-{n}"
            seconds = _run(f"bench.mutant_sets:{set_name(what)}", _ops(what), out, _dtypes(what))
            clean, mutated = _records(base / f"clean-set-{n}"), _records(out)
            results = []
            for cls in what:
                result = judge_mutant(cls, _cells(cls, clean), _cells(cls, mutated))
                result["caught_cases"] = result["caught_cases"][:5]
                results.append({**result, "wraps": cls.wraps, "seconds": round(seconds, 1),
                                "run_with": len(what) - 1})
            return results

        jobs_list = [("set", n, members) for n, members in enumerate(sets)]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            clean_seconds = sum(pool.map(clean_run, jobs_list + [
                ("graph", n, cls) for n, (_, cls) in enumerate(campaigns)]))
            found = [r for batch in pool.map(mutant_run, jobs_list + [
                ("graph", 0, cls) for cls in graph_mutants]) for r in batch]
        by_name = {r["mutant"]: r for r in found}
        results = [by_name[cls.__name__] for cls in chosen]
    counted = [r for r in results if not r["equivalent"]]
    detected = sum(r["detected"] for r in counted)
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "budget": "default", "detected": detected, "total": len(counted),
            "score": detected / len(counted) if counted else 0.0,
            "equivalent": len(results) - len(counted),
            "detected_of_all": sum(r["detected"] for r in results), "all": len(results),
            "clean_seconds": round(clean_seconds, 1),
            "seconds": round(time.perf_counter() - started, 1), "mutants": results}


def report(result: dict) -> str:
    lines = [f"mutation score: detected {result['detected']}/{result['total']} "
             f"({100 * result['score']:.1f}%) at the default budget, {result['seconds']} s"
             f" ({result['equivalent']} equivalent mutants left out; of all "
             f"{result['all']}: {result['detected_of_all']} detected)"]
    for r in result["mutants"]:
        mark = ("equivalent" if r["equivalent"] else "shared" if r.get("shared") else
                "detected" if r["detected"] else "MISSED")
        lines.append(f"  {mark:10} {r['mutant']:36} {r['bug']} [{', '.join(r['ops'])}]"
                     + (f" ({r['n_caught']} cases)" if r["detected"] else "")
                     + (f", reduced to {r['reduced_nodes']} nodes"
                        if r.get("reduced_nodes") is not None else ""))
    missed = [r for r in result["mutants"] if not r["detected"] and not r["equivalent"]]
    if missed:
        lines.append("missed:")
        lines += [f"  {r['mutant']}: {r['why_missed']}" for r in missed]
    shared = [r for r in result["mutants"] if r.get("shared")]
    if shared:
        lines.append("shared (the clean backend has the bug: each case it changes fails in both "
                     "runs; counted detected):")
        lines += [f"  {r['mutant']}: {r['shared']}" for r in shared]
    equivalent = [r for r in result["mutants"] if r["equivalent"]]
    if equivalent:
        lines.append("equivalent (the standard allows the behaviour; not counted):")
        lines += [f"  {r['mutant']}: {r['equivalent']}"
                  + (f"; in the runs: {r['why_missed']}" if not r["detected"] else
                     "; yet detected: check the judge") for r in equivalent]
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
