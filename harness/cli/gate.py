"""The CI gate, manifests and repro on the command line: options shared by ``conform run`` and
``conform gate``, and the ``gate`` and ``repro`` commands (wired in by :mod:`conform.harness.cli.main`).

Errors are raised as :class:`GateError`, :class:`ReproError` or :class:`ManifestError`; the CLI
turns them into exit status 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conform.harness.cli.values import fraction

EXIT_OK, EXIT_GATE = 0, 1


def _factor(text: str) -> float:
    value = float(text)
    if not value >= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is below 1 (use inf to disable the check)")
    return value


def add_manifest_options(parser: argparse.ArgumentParser, where: str = "") -> None:
    """``--manifest FILE`` (repeatable) and ``--no-manifest``; ``where`` qualifies the help."""
    parser.add_argument("--manifest", type=Path, action="append", default=None, metavar="FILE",
                        help=f"manifest of known deviations{where} (repeatable; default: the "
                             "built-in manifests/<backend>.yaml, if any)")
    parser.add_argument("--no-manifest", action="store_true", help="apply no manifest")


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    """The gate's criteria and the manifest options (``run`` and ``gate`` share them)."""
    parser.add_argument("--min-pass-rate", type=fraction, default=None,
                        help="fail (exit 1) if the overall pass rate is below R")
    parser.add_argument("--min-op-pass-rate", type=fraction, default=None, metavar="R",
                        help="fail if any op's pass rate, over all its dtypes, is below R")
    parser.add_argument("--min-coverage", type=fraction, default=None, metavar="R",
                        help="fail if fewer than R of the cases were judged (coverage = judged / "
                             "cases; unsupported, skipped, excused and impl-defined cases are "
                             "not judged)")
    parser.add_argument("--baseline", type=Path, default=None, metavar="SUMMARY_OR_DIR",
                        help="a previous run (its directory or summary.json): fail on any case "
                             "that passed there and fails now, and on worst-error growth")
    parser.add_argument("--max-error-growth", type=_factor, default=2.0, metavar="F",
                        help="with --baseline: fail if an op x dtype's worst error/bound grows "
                             "by more than F (default 2; inf disables)")
    add_manifest_options(parser)
    parser.add_argument("--strict-xfail", action="store_true",
                        help="a case the manifest expects to fail that passes (xpass) fails the gate")


def add_commands(sub) -> None:
    """The ``gate`` and ``repro`` sub-commands."""
    gate = sub.add_parser("gate", help="apply the CI gate to a finished run, without rerunning it")
    gate.add_argument("dir", type=Path, help="the run directory (holding summary.json)")
    add_gate_options(gate)
    repro = sub.add_parser("repro", help="write a standalone script reproducing one case")
    repro.add_argument("case_id", help="the case's id, as results.jsonl names it (e.g. add.float32.3)")
    repro.add_argument("--from", dest="run_dir", type=Path, required=True, metavar="DIR",
                       help="the run directory holding the case")
    repro.add_argument("--out", type=Path, default=None, metavar="REPRO_DIR",
                       help="where to write repro.py and its files (default DIR/repro/CASE_ID)")
    repro.add_argument("--format", dest="formats", action="append", default=[], metavar="FMT",
                       help="also write the case's model as onnx (model.onnx), stablehlo "
                            "(model.mlir) or nnef (model.nnef/); repeat or comma-separate. A "
                            "generated graph (graph.N of conform fuzz) is written in its run's "
                            "format, the only one it may name")


def manifest_for(args, backend: str):
    """The manifest the options select for ``backend`` (None if none); expired entries raise."""
    from conform.harness.assurance.manifests import resolve_manifest

    return resolve_manifest(backend, args.manifest, disabled=args.no_manifest)


def baseline_for(args):
    """The ``--baseline`` run, read before anything else can overwrite it (None if not given)."""
    from conform.harness.assurance.gate import finished_run

    return finished_run(args.baseline) if args.baseline else None


def warn_stale(stale: list) -> None:
    """Print a warning for each stale manifest entry (see ``manifests.stale_entries``)."""
    for entry in stale:
        print(f"conform: warning: stale manifest entry {entry.describe()}: its op x dtype ran, "
              f"but it excused no failure and skipped no case", file=sys.stderr)


def gate_status(args, summary: dict, records: list, baseline) -> int:
    """Evaluate the gate, print what failed (stderr) or held (stdout); the exit status."""
    from conform.harness.assurance.gate import Criteria, evaluate

    criteria = Criteria(min_pass_rate=args.min_pass_rate, min_op_pass_rate=args.min_op_pass_rate,
                        min_coverage=args.min_coverage, max_error_growth=args.max_error_growth, strict_xfail=args.strict_xfail)
    report = evaluate(summary, records, criteria, baseline)
    for note in report.notes:
        print(f"conform: note: {note}", file=sys.stderr)
    if report.failures:
        print(f"GATE FAILED: {len(report.failures)} problem(s)", file=sys.stderr)
        for line in report.failures:
            print(f"  {line}", file=sys.stderr)
        return EXIT_GATE
    for line in report.held:
        print(f"gate holds: {line}")
    return EXIT_OK


def cmd_gate(args) -> int:
    """``conform gate DIR``: re-judge the run's recorded verdicts under the manifest the options
    select (as ``run`` would), rebuild its summary in memory and apply the gate. Writes nothing."""
    from conform.harness.assurance.gate import finished_run
    from conform.harness.assurance.manifests import Manifest, stale_entries
    from conform.reports import build_summary
    from conform.reports import coverage_text, rate_text

    run = finished_run(args.dir)
    baseline = baseline_for(args)
    manifest = manifest_for(args, run.summary["backend"])
    records = [(manifest or Manifest((), ())).apply(r) for r in run.records]
    used = run.summary.get("manifest", {}).get("files", [])
    if used != list(manifest.files if manifest else []):
        print(f"conform: note: the run applied the manifest(s) {used or 'none'}; the gate applies "
              f"{list(manifest.files) if manifest else 'none'}", file=sys.stderr)
    # build_summary recomputes counts, pass rates and by_op; the rest of summary.json is kept
    summary = build_summary(records, run.summary, run.summary["conform_version"])
    warn_stale(stale_entries(manifest, records) if manifest else [])
    print(f"{args.dir}: pass rate {rate_text(summary['pass_rate'])}, {coverage_text(summary['counts'])}")
    return gate_status(args, summary, records, baseline)


def cmd_repro(args, specs: dict) -> int:
    """``conform repro CASE_ID --from DIR``."""
    from conform.harness.assurance.repro import write_repro

    formats = [f.strip() for text in args.formats for f in text.split(",") if f.strip()]
    out = write_repro(args.run_dir, args.case_id, specs, args.out, formats=formats)
    files = ", ".join(sorted(p.name for p in out.iterdir()))
    print(f"wrote {out}: {files}\nrun it with: python {out / 'repro.py'}")
    return EXIT_OK
