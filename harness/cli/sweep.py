"""``conform sweep``: every input of a bit range of unary element-wise ops, judged in chunks on
a local pool or a Ray cluster, merged into an accuracy map (:mod:`conform.harness.run.sweep`),
wired in by :mod:`conform.harness.cli.main`.

Exit status: 0 = every chunk ran (or the backend said it cannot: unsupported) and every judged
input passes; 1 = an input fails its bound, or a chunk was lost (crash, timeout, error);
2 = usage error.
"""
from __future__ import annotations

from pathlib import Path

from conform.harness.cli.values import (add_backend_and_ops, at_least_one, bit_range, names, seconds,
                                        writable_directory)

EXIT_OK, EXIT_FOUND = 0, 1


def add_commands(sub) -> None:
    """The ``sweep`` sub-command."""
    sweep = sub.add_parser("sweep", help="run every input of a bit range of unary ops in chunks "
                                         "(locally or on Ray) into an accuracy map")
    add_backend_and_ops(sweep, "comma-separated op names or globs (unary element-wise ops)")
    sweep.add_argument("--dtypes", type=names, default=["float32"],
                       help="comma-separated float16, bfloat16, float32 (default float32)")
    sweep.add_argument("--range", type=bit_range, default=None, metavar="LO:HI",
                       help="the first input bit pattern and the one past the last, in hex "
                            "(default: every pattern of the dtype)")
    sweep.add_argument("--chunk", type=at_least_one, default=None, metavar="N",
                       help="inputs per chunk (default 2**22 for float32, 2**16 for 16-bit types)")
    sweep.add_argument("--executor", choices=["local", "ray"], default="local",
                       help="local slot processes (default) or a Ray cluster (conform[ray])")
    sweep.add_argument("--address", default=None,
                       help="the Ray cluster's address (default: Ray's own: $RAY_ADDRESS, a "
                            "running local cluster, or a new one)")
    sweep.add_argument("--workers", type=at_least_one, default=2,
                       help="local slots, or Ray tasks in flight at once (default 2)")
    sweep.add_argument("--timeout", type=seconds, default=300.0, help="seconds per chunk")
    sweep.add_argument("--subnormals", choices=["ieee", "ftz"], default=None,
                       help="subnormal policy to judge by (default: the one the backend declares)")
    sweep.add_argument("--out", type=Path, default=None,
                       help="output directory (default conform-out/<backend>-sweep); a sweep "
                            "run again into it resumes")
    sweep.add_argument("--force", action="store_true", help="write into an --out folder that "
                       "holds files conform did not write (no .conform-out marker)")


def cmd_sweep(args, specs: dict) -> int:
    """Run the sweep, write summary.json, report.html and chunks.jsonl, print the map."""
    from conform.harness.backends.registry import check_backend
    from conform.harness.run.sweep import SweepConfig, run_sweep

    check_backend(args.backend)
    first, stop = args.range or (None, None)
    out = writable_directory(args.out or Path("conform-out") / f"{args.backend}-sweep", "--out",
                             args.force)
    config = SweepConfig(backend=args.backend, ops=tuple(args.ops), dtypes=tuple(args.dtypes),
                         first=first, stop=stop, chunk=args.chunk, executor=args.executor,
                         address=args.address, workers=args.workers, timeout=args.timeout,
                         subnormals=args.subnormals, out=out,
                         spec_dir=None if args.specs is None else str(args.specs))
    summary = run_sweep(config, specs, on_done=_progress)
    bad = False
    for entry in summary["accuracy_map"]:
        bad |= bool(entry["failed"]) or any(lost["status"] != "unsupported" for lost in entry["lost"])
        if entry["tier"] is None:
            print(f"{entry['op']} {entry['dtype']}: nothing judged ({', '.join(sorted(entry['chunks']))}"
                  f"{': ' + entry['lost'][0]['message'][:120] if entry['lost'] else ''})")
            continue
        worst = entry["max_ulp"]
        share = entry["correctly_rounded_share"]
        print(f"{entry['op']} {entry['dtype']}: {entry['tier']} — max {worst['ulp']:.4g} ULP at "
              f"{worst['input']!r} (bits {worst['bits'] or 0:#x}), "
              f"{'-' if share is None else f'{100 * share:.2f}%'} correctly rounded, "
              f"{entry['failed']} failing of {entry['checked']} judged, "
              f"{len(entry['lost'])} chunks lost")
    print(f"\nwrote {out}/{{chunks.jsonl,summary.json,report.html}} "
          f"in {summary['wall_seconds']:.1f} s")
    return EXIT_FOUND if bad else EXIT_OK


def _progress(summary: dict, done: int, planned: int) -> None:
    import sys

    if sys.stderr.isatty():
        print(f"\r{done}/{planned} chunks", end="", file=sys.stderr, flush=True)


__all__ = ["add_commands", "cmd_sweep"]
