"""How the installed NNEF consumers agree: with the oracle, and with each other (issue 32).

    python3 bench/nnef_consumers.py ROOT [--backends nnef,tract,nnef-torch] [--ops OPS]
                                         [--max-examples N] [--seed S]

Every installed backend with ``model_format = "nnef"`` (or those named) runs the default NNEF
suite (or the ops named), ``conform run --backend B --out ROOT/B --no-manifest`` (a run folder
that already holds a ``results.jsonl`` is read, not run again: pass the folders of earlier
runs' parent as ROOT).
The same seed draws the same cases for every consumer, so records are matched by case id.

Prints, per consumer, its judged cases (verdicts in ``conform.verdicts.JUDGED``: pass, fail,
error, crash, timeout, ...; not unsupported nor impl_defined) and its failing ones
(``PROBLEMS``) by dtype; then, for each pair of consumers, over the cases both judged: how many
there are, on how many one passes and the other fails (their verdicts disagree), how many fail
on both, and on how many each alone fails. A case both consumers fail may fail differently.

Measured 2026-11-29, seed 0, default suites (nnef 1.0.10's executor, tract 0.21.7, nnef-torch:
nnef_tools 1.0.11 on torch 2.13.0): judged (failing) nnef 3,360 (206), tract 4,548 (683),
nnef-torch 7,518 (454: float16 98, float32 138, float64 126). Verdicts disagree on 182 of the
2,757 cases nnef and nnef-torch both judged (6.6%; both fail 47), 274 of 2,261 for nnef and
tract (12.1%; both fail 56), 497 of 4,313 for nnef-torch and tract (11.5%; both fail 63).
"""
from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from conform.harness.backends.registry import available_backends, load_backend_class
from conform.reports import read_results
from conform.verdicts import JUDGED, PROBLEMS


def nnef_consumers() -> list[str]:
    """The installed backends whose model format is NNEF."""
    return sorted(name for name in available_backends()
                  if getattr(load_backend_class(name), "model_format", None) == "nnef")


def run_suite(backend: str, out: Path, *, ops: str | None, max_examples: int | None,
              seed: int) -> None:
    """``conform run`` of the default suite (or ``ops``) on ``backend`` into ``out``, unless
    it holds one."""
    if (out / "results.jsonl").exists():
        return
    command = [sys.executable, "-m", "conform.harness.cli", "run", "--backend", backend,
               "--out", str(out), "--seed", str(seed), "--no-manifest", "--quiet"]
    if ops:
        command += ["--ops", ops]
    if max_examples is not None:
        command += ["--max-examples", str(max_examples)]
    started = time.monotonic()
    subprocess.run(command, check=False)   # exit 1 on failures is the expected outcome here
    print(f"ran {backend}: {time.monotonic() - started:.0f} s", file=sys.stderr)


def judged_outcomes(run_dir: Path) -> dict[str, tuple[str, bool]]:
    """Case id -> (dtype, failed) for each case the run judged."""
    return {r["id"]: (r["dtype"], r["verdict"] in PROBLEMS)
            for r in read_results(run_dir / "results.jsonl") if r["verdict"] in JUDGED}


def consumer_lines(name: str, outcomes: dict) -> list[str]:
    """Judged and failing cases by dtype, and in all."""
    judged = Counter(dtype for dtype, _ in outcomes.values())
    failed = Counter(dtype for dtype, fails in outcomes.values() if fails)
    lines = [f"{name}: judged {len(outcomes)}, failing {sum(failed.values())}"]
    lines += [f"    {dtype:<22} judged {judged[dtype]:>6}  failing {failed[dtype]:>5}"
              for dtype in sorted(judged)]
    return lines


def pair_line(a: str, b: str, first: dict, second: dict) -> str:
    """Over the cases both judged: disagreements, failures on both, on each alone."""
    both = first.keys() & second.keys()
    fails = Counter((first[case][1], second[case][1]) for case in both)
    differ = fails[(True, False)] + fails[(False, True)]
    share = f" ({100 * differ / len(both):.1f}%)" if both else ""
    return (f"{a} vs {b}: both judged {len(both)}; verdicts disagree on {differ}{share}; "
            f"both fail {fails[(True, True)]}; {a} alone fails {fails[(True, False)]}, "
            f"{b} alone fails {fails[(False, True)]}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="a folder of run folders, one per consumer")
    parser.add_argument("--backends", help="comma-separated (default: every NNEF consumer)")
    parser.add_argument("--ops", help="comma-separated op names or globs (default: all)")
    parser.add_argument("--max-examples", type=int, help="cases per op and dtype (default: "
                                                         "conform run's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    names = args.backends.split(",") if args.backends else nnef_consumers()
    outcomes = {}
    for name in names:
        run_suite(name, args.root / name, ops=args.ops, max_examples=args.max_examples,
                  seed=args.seed)
        outcomes[name] = judged_outcomes(args.root / name)
    for name in names:
        print("\n".join(consumer_lines(name, outcomes[name])))
    for a, b in itertools.combinations(names, 2):
        print(pair_line(a, b, outcomes[a], outcomes[b]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
