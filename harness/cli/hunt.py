"""``conform hunt``: search element-wise ops for their worst error/bound ratio on a backend
(:mod:`conform.harness.run.hunt`), wired in by :mod:`conform.harness.cli.main`.

Exit status: 0 = the worst inputs found pass; 1 = some op x dtype has a failing input (it is
printed with its repro command); 2 = usage error.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from conform.harness.cli.values import (add_backend_and_ops, at_least_one, names, seconds, seed,
                                        writable_directory)

EXIT_OK, EXIT_FOUND = 0, 1


def budget(text: str) -> int:
    """A hunt budget: input evaluations per op x dtype, at least one case's worth."""
    from conform.harness.run.hunt import CASE_SIZE

    value = at_least_one(text)
    if value < CASE_SIZE:
        raise argparse.ArgumentTypeError(f"{text} is below {CASE_SIZE}, the inputs of one case")
    return value


def add_commands(sub) -> None:
    """The ``hunt`` sub-command."""
    hunt = sub.add_parser("hunt", help="climb toward an op's largest error/bound ratio on a "
                                       "backend, with a bounded budget")
    add_backend_and_ops(hunt, "comma-separated op names or globs (element-wise float ops)")
    hunt.add_argument("--dtypes", default=None, type=names,
                      help="comma-separated float dtypes (default: all the op has)")
    hunt.add_argument("--budget", type=budget, default=512,
                      help="input evaluations per op and dtype (default 512)")
    hunt.add_argument("--seed", type=seed, default=0, help="the hunt's random seed (default 0)")
    hunt.add_argument("--out", type=Path, default=None,
                      help="output directory (default conform-out/<backend>-hunt)")
    hunt.add_argument("--force", action="store_true", help="write into an --out folder that holds files conform did not write (no .conform-out marker)")
    hunt.add_argument("--timeout", type=seconds, default=60.0, help="seconds per case")
    hunt.add_argument("--subnormals", choices=["ieee", "ftz"], default=None,
                      help="subnormal policy to judge by (default: the one the backend declares)")
    hunt.add_argument("--random", action="store_true",
                      help="spend the budget on random draws instead of climbing (a baseline)")


def hunt_pairs(specs: dict, args) -> list:
    """The (spec, dtype) pairs the command hunts: element-wise ops under float dtypes that the
    backend's format expresses."""
    from conform.harness.run.runner import SelectionError, by_format, select
    from conform.dtypes import FLOAT_FORMATS

    pairs = [(spec, dtype) for spec, dtype in select(specs, args.ops, args.dtypes)
             if spec.elementwise and dtype in FLOAT_FORMATS]
    if not pairs:
        raise SelectionError(f"--ops {','.join(args.ops)} selects no element-wise op under a "
                             "float dtype: hunt climbs on float inputs of element-wise ops")
    return by_format(pairs, args.backend)


def cmd_hunt(args, specs: dict) -> int:
    """Run the searches, write results.jsonl, hunt-cases.npz and the reports, print the worst."""
    import conform
    from conform.harness.run.hunt import run_hunt, save_cases
    from conform.harness.run.isolation import PoolSettings
    from conform.harness.backends.registry import check_backend
    from conform.reports import dumps, write_atomically, write_reports

    check_backend(args.backend)
    pairs = hunt_pairs(specs, args)
    out = writable_directory(args.out or Path("conform-out") / f"{args.backend}-hunt", "--out",
                             args.force)
    settings = PoolSettings(workers=1, timeout=args.timeout, judge=True, subnormals=args.subnormals,
                            spec_dir=None if args.specs is None else str(args.specs))
    hunted, info = run_hunt(args.backend, pairs, specs, budget=args.budget, seed=args.seed,
                            settings=settings, climb=not args.random)
    save_cases(out, hunted)
    records = [record for found in hunted for record in found.records]
    write_atomically(out / "results.jsonl", "".join(dumps(record) + "\n" for record in records))
    absolute = out.resolve()
    meta = {"backend": args.backend, "backend_name": info.get("name") or args.backend,
            "backend_version": info.get("version", "unknown"), "device": info.get("device", "cpu"),
            "model_format": info.get("model_format"), "subnormals_declared": info.get("subnormals"),
            "subnormals_applied": info["subnormals_applied"], "seed": args.seed,
            "max_examples": None, "complete": True, "cases_planned": len(records),
            "selected_ops": sorted({spec.op for spec, _ in pairs}), "wall_seconds": info["wall_seconds"],
            "hunt": [found.summary(absolute) for found in hunted],
            "hunt_budget": args.budget, "hunt_strategy": "random" if args.random else "climb"}
    write_reports(out, meta, conform.__version__, records=records)
    found_failure = False
    for entry in meta["hunt"]:
        found_failure |= entry["verdict"] not in ("pass", "impl_defined", "unsupported", None)
        print(f"{entry['op']} {entry['dtype']}: worst error/bound {entry['ratio']:.3g} "
              f"({entry['verdict']}: error {entry['error']} {entry['unit'] or ''} against bound "
              f"{entry['bound']}) at inputs {entry['inputs']}, after {entry['evaluated']} "
              f"evaluations\n  {entry['repro']}")
    print(f"\nwrote {out}/{{results.jsonl,hunt-cases.npz,summary.json,report.html}}")
    return EXIT_FOUND if found_failure else EXIT_OK


__all__ = ["add_commands", "budget", "cmd_hunt", "hunt_pairs", "names"]
