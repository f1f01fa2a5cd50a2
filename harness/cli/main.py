"""The ``conform`` command line.

Exit status: 0 = ran and the gate (if any) holds; 1 = ran and the gate failed;
2 = usage, spec or configuration error; 3 = ran but judged nothing (no case computed, or every
computed case an error, crash or timeout).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path

from conform.harness.cli import (adapter as cli_adapter, certify as cli_certify, fuzz as cli_fuzz,
                                 gate as cli_gate, hunt as cli_hunt, sweep as cli_sweep)
from conform.harness.cli.values import (Parser, at_least_one, check_cache_directory, memory_mb,
                                        seconds, writable_directory)
from conform.model_formats import ONNX_OPSET_NEWEST

EXIT_OK, EXIT_GATE, EXIT_USAGE = 0, 1, 2
DEFAULT_BUDGET, DEFAULT_SEED = 20, 0   # conform run's default cases per op and dtype, and seed
EXIT_NOTHING_JUDGED = 3    # a run whose every case was skipped, unsupported, error, crash or timeout
EXIT_INTERRUPTED = 130     # 128 + SIGINT, as a shell reports a command Ctrl-C stopped
EXIT_TERMINATED = 143      # 128 + SIGTERM: a run stopped by SIGTERM (its reports written)
EXIT_BROKEN_PIPE = 141     # 128 + SIGPIPE, as a command killed by a closed pipe exits


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _add_run_command(sub) -> argparse.ArgumentParser:
    """The ``run`` subcommand and its own options (the gate's and profiles' are added after)."""
    run = sub.add_parser("run", help="run the suite against a backend", epilog=(
        "exit status: 0 ran and the gate (if any) holds; 1 the gate failed; 2 usage, spec or "
        "configuration error; 3 nothing was judged (every case skipped or unsupported, or every "
        "case that ran an error, crash or timeout); 130 interrupted (Ctrl-C), 143 terminated "
        "(SIGTERM), each with partial reports; 141 stdout closed"))
    run.add_argument("--backend", required=True,
                     help="the backend: an entry-point name (conform list names the installed "
                          "ones) or module.path:ClassName")
    run.add_argument("--ops", type=_csv, default=None, help="comma-separated op names or globs")
    run.add_argument("--dtypes", type=_csv, default=None, help="comma-separated dtype names")
    run.add_argument("--max-examples", type=at_least_one, default=DEFAULT_BUDGET,
                     help="cases per op and dtype")
    run.add_argument("--seed", type=int, default=DEFAULT_SEED,
                     help="the seed the cases are drawn from (default 0): same seed, same cases")
    run.add_argument("--out", type=Path, default=None, help="output directory (default conform-out/<backend>)")
    run.add_argument("--force", action="store_true", help="write into an --out folder that holds files conform did not write (no .conform-out marker)")
    run.add_argument("--workers", type=at_least_one, default=min(2, os.cpu_count() or 1),
                     help="worker processes (default: min(2, cores))")
    run.add_argument("--timeout", type=seconds, default=60.0,
                     help="seconds per case (preparing and computing it) before `timeout`")
    run.add_argument("--load-timeout", type=seconds, default=None,
                     help="seconds a worker may take to load the backend, at the start and after "
                          "a crash (default: 120, or --timeout if longer); a backend that cannot "
                          "load in time makes its cases `error`")
    run.add_argument("--subnormals", choices=["ieee", "ftz"], default=None,
                     help="subnormal policy to judge by (default: the one the backend declares)")
    run.add_argument("--onnx-opset", type=int, default=None, metavar="N",
                     help="build ONNX models at opset N, 7 to 28 (default: $CONFORM_ONNX_OPSET, else 21, "
                          "the newest at which onnxruntime has a kernel for every operator it "
                          "implements); an op whose ONNX binding's opset range leaves N out is "
                          "unsupported")
    run.add_argument("--programs", action="store_true",
                     help="add the program suite: chains of 2 to 4 element-wise ops of the "
                          "backend's model format, run as one model each and judged node by node "
                          "(select among them with --ops 'chain__*')")
    run.add_argument("--exhaustive", action="store_true",
                     help="all 65,536 inputs of each selected unary float16/bfloat16 op, "
                          "in one call per op and dtype; with --dtypes float32, all 2**32 float32 "
                          "inputs in 1,024 chunks")
    run.add_argument("--memory-limit-mb", type=memory_mb, default=None,
                     help="cap each worker's address space; a case that exceeds it errors or crashes")
    run.add_argument("--recycle-after", type=at_least_one, default=None,
                     help="replace each worker after this many cases (bounds memory growth)")
    run.add_argument("--no-cache", action="store_true",
                     help="draw the corpus afresh instead of reusing the cached one")
    run.add_argument("--quiet", action="store_true", help="no progress display")
    run.add_argument("--executor", choices=["local", "ray"], default="local",
                     help="where the cases run: local worker processes (default) or a Ray "
                          "cluster (conform[ray]; --workers shards in flight)")
    run.add_argument("--address", default=None,
                     help="with --executor ray, the cluster's address (default: Ray's own: "
                          "$RAY_ADDRESS, a running local cluster, or a new one)")
    run.add_argument("--resume", action="store_true",
                     help="continue the interrupted run in --out (same options), skipping the "
                          "cases it finished")
    return run


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="conform", description="conform: a conformance test suite and "
                    "certification harness for tensor operations. The command's exit status: "
                    "0 ran and the gate (if any) holds, 1 the gate failed, 2 usage, spec or "
                    "configuration error, 3 nothing judged (see each command's --help).")
    parser.add_argument("--specs", type=Path, default=None, help=_SPECS_HELP)
    sub = parser.add_subparsers(dest="command", required=True)

    listing = sub.add_parser("list", help="list ops with their bindings and dtypes")
    listing.add_argument("--backend", default=None,
                         help="list only the ops and dtypes this backend says it runs")
    listing.add_argument("--format", choices=["table", "json"], default="table",
                         help="a table (default), or JSON with each op's signature for adapter "
                              "authors")
    listing.add_argument("--attribute-coverage", action="store_true",
                         help="with --format json: each op's attribute_pair_coverage, the share "
                              "of pairs of attribute classes (and optional inputs' presence) "
                              "its default corpus draws (drawing it takes a few seconds)")
    listing.add_argument("--programs", action="store_true",
                         help="add the program suite `conform run --programs` adds (chains of "
                              "ops in the backend's format; the XLA ops' without --backend)")

    run = _add_run_command(sub)
    cli_gate.add_gate_options(run)
    cli_certify.add_profile_options(run)

    report = sub.add_parser("report", help="re-render a finished run; several DIRs: compare them")
    report.add_argument("dirs", type=Path, nargs="+", metavar="DIR",
                        help="a run directory to re-render; several: a comparison page")
    report.add_argument("--out", type=Path, default=None,
                        help="comparison page to write (default ./conform-compare.html)")
    cli_gate.add_commands(sub)
    cli_certify.add_commands(sub)
    cli_adapter.add_commands(sub)
    cli_hunt.add_commands(sub)
    cli_fuzz.add_commands(sub)
    cli_sweep.add_commands(sub)
    for name in _READ_SPECS:   # --specs after the subcommand too (``conform run --specs DIR``)
        sub.choices[name].add_argument("--specs", type=Path, default=argparse.SUPPRESS,
                                       help=_SPECS_HELP)
    return parser


_SPECS_HELP = ("a folder of op spec YAML files added to the built-in suite (one there replaces "
               "the built-in spec of its op)")
#: The subcommands that read the specs.
_READ_SPECS = ("list", "run", "repro", "certify", "verify", "hunt", "fuzz", "sweep")


def _load_specs(directory):
    from conform.spec import load_specs

    check_cache_directory()   # the parsed specs are kept there
    return load_specs(directory)


def _bindings(spec) -> dict:
    """The spec's bindings, with ``numpy`` added where the op module computes the op with NumPy
    itself (a ``numpy`` hook) although the spec names no NumPy function."""
    if spec.definition.numpy is not None and "numpy" not in spec.bindings:
        return {**spec.bindings, "numpy": {"hook": spec.definition.module}}
    return spec.bindings


def cmd_list(args) -> int:
    """``conform list``: every op; with ``--backend B``, only what B runs (its claims)."""
    specs = _load_specs(args.specs)
    claims = None
    if args.backend:
        from conform.harness.run.claims import Claims, standard_refuses
        from conform.harness.backends.registry import UnknownBackend, load_backend_class

        try:
            backend_class = load_backend_class(args.backend)
        except UnknownBackend:
            raise
        except Exception as exc:   # a module:Class that does not import, a broken entry point
            raise _UsageError(f"backend {args.backend} cannot be loaded: {exc!r}") from None
        claims = Claims.of(backend_class, args.backend)
    if args.programs:
        from conform.spec.programs import chain_names

        chains = chain_names(specs, (claims.binding if claims else None) or "xla")
        specs = {**specs, **{name: specs[name] for name in chains}}
    rows = [{"op": s.op, "definition": s.definition.qualified_name,
             "dtypes": claims.dtypes_of(s) if claims else list(s.dtypes),
             "bindings": _bindings(s), "signature": s.described_signature(),
             "xla": s.defined_by.get("xla", {}).get("name"), "onnx": s.defined_by.get("onnx", {}).get("name"),
             "summary": s.summary, "not_runnable": _not_runnable(s)} for s in specs.values()]
    rows = [r for r in rows if r["dtypes"]]
    if claims and claims.binding:   # each op the backend claims: runnable, or why not
        for r in rows:
            r["runnable"] = claims.binding not in r["not_runnable"]
    if args.format == "json" and args.attribute_coverage:
        from conform.generators import attribute_pair_coverage

        for row in rows:
            row["attribute_pair_coverage"] = attribute_pair_coverage(
                specs[row["op"]], count=DEFAULT_BUDGET, seed=DEFAULT_SEED)
    if args.format == "json":
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return EXIT_OK
    if claims:
        print(claims.describe())
    print(f"{'op':24} {'definition':26} {'bindings':20} dtypes")
    for r in rows:
        bindings = ",".join(f + ("!" if f in r["not_runnable"] else "") for f in sorted(r["bindings"]))
        why = r["not_runnable"].get(claims.binding) if claims and claims.binding else None
        print(f"{r['op']:24} {r['definition']:26} {bindings:20} "
              + (f"not runnable on {claims.name}: {why}" if why else ",".join(r["dtypes"])))
    print()
    if any(r["not_runnable"] for r in rows):
        print("a binding marked ! says why its format cannot express the op (not runnable there: "
              "--format json gives each reason)")
    if claims and standard_refuses(claims.binding):
        print(f"a run on {claims.name} leaves out the drawn cases the {claims.model_format} "
              "format cannot express (the ops' lowerings say which: not part of its suite; "
              "summary.json's not_expressible counts them)")
    if claims and claims.binding:
        cannot = sum(not r["runnable"] for r in rows)
        if cannot:
            print(f"{cannot} ops bound for {claims.binding} that {claims.name} cannot run")
        print(f"{len(rows) - cannot} ops that {claims.name} runs")
    else:
        print(f"{len(rows)} ops" + (f" that {claims.name} runs" if claims else ""))
    return EXIT_OK


def _not_runnable(spec) -> dict:
    """Per binding that declares its format cannot express the op (``unsupported``), why."""
    return {fmt: b["unsupported"] for fmt, b in spec.bindings.items() if "unsupported" in b}


def _print_table(summary: dict) -> None:
    from conform.reports import coverage_text, rate_text

    counts = summary["counts"]
    print(f"\n{summary['backend']} ({summary['backend_version']}): "
          + "  ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"pass rate {rate_text(summary['pass_rate'])}, {coverage_text(counts)}, {summary['ops']} ops")
    if left_out := sum(entry["cases"] for entry in summary.get("not_expressible") or ()):
        print(f"not in the suite: {left_out} drawn cases the {summary.get('model_format')} model "
              "format cannot express (summary.md names them)")
    if summary.get("complete") is False:
        print(f"INCOMPLETE: {summary['cases']} of {summary['cases_planned']} cases ran")
    worst = sorted(((cell["pass_rate"], op, dtype, cell) for op, cells in summary["by_op"].items()
                    for dtype, cell in cells.items() if cell["pass_rate"] is not None
                    and cell["pass_rate"] < 1.0), key=lambda t: t[0])
    if worst:
        print(f"\n{'op':24} {'dtype':18} {'pass':>8} {'fail':>5} {'err':>4} {'crash':>5} {'t/o':>4}")
        for rate_, op, dtype, cell in worst[:20]:
            c = cell["counts"]
            print(f"{op:24} {dtype:18} {rate_text(rate_):>8} {c['fail']:5} {c['error']:4} "
                  f"{c['crash']:5} {c['timeout']:4}")
        if len(worst) > 20:
            print(f"... {len(worst) - 20} more op x dtype cells below 100%")


def cmd_run(args) -> int:
    from conform.harness.run.outdir import locked
    from conform.harness.run.processes import start_worker_server
    from conform.harness.backends.registry import check_backend

    profile = cli_certify.apply_profile(args)
    if args.onnx_opset is not None:   # before any model is built, here or in a worker
        if not 7 <= args.onnx_opset <= ONNX_OPSET_NEWEST:
            raise _UsageError(f"--onnx-opset {args.onnx_opset}: conform builds ONNX models at "
                              f"opsets 7 to {ONNX_OPSET_NEWEST}")
        os.environ["CONFORM_ONNX_OPSET"] = str(args.onnx_opset)
    check_backend(args.backend)
    baseline = cli_gate.baseline_for(args)  # read first: the run may overwrite it
    manifest = cli_gate.manifest_for(args, args.backend)
    start_worker_server()   # once the options hold: it loads while this process does
    specs = _load_specs(args.specs)
    out = writable_directory(args.out or Path("conform-out") / args.backend, "--out", args.force)
    with locked(out):
        return _run_locked(args, specs, profile, manifest, baseline, out)


def _run_locked(args, specs, profile, manifest, baseline, out: Path) -> int:
    """``conform run`` once ``out`` is checked and locked."""
    import conform
    from conform.harness.assurance.gate import baseline_view
    from conform.harness.assurance.manifests import manifest_summary, stale_entries
    from conform.harness.run.runner import RunConfig, cyclic_gc_paused, run_suite
    from conform.reports import read_results, write_reports
    from conform.reports import op_definitions

    config = RunConfig(backend=args.backend, ops=args.ops, dtypes=args.dtypes,
                       max_examples=args.max_examples, seed=args.seed, out=out,
                       workers=args.workers, timeout=args.timeout,
                       load_timeout=args.load_timeout, subnormals=args.subnormals,
                       exhaustive=args.exhaustive, programs=args.programs,
                       use_cache=not args.no_cache, manifest=manifest,
                       spec_dir=args.specs, memory_limit_mb=args.memory_limit_mb,
                       recycle_after=args.recycle_after, resume=args.resume, interruptible=True,
                       executor=args.executor, address=args.address)
    with cyclic_gc_paused():   # the corpus stays alive to the end of the command
        meta, tally = run_suite(config, specs, progress=not args.quiet)
        _kept_to_exit(tally)
        if profile:
            meta["profile"] = profile.name
        excerpt = tally.manifest_records()   # all that manifest checks read, not 100k records
        stale = stale_entries(manifest, excerpt) if manifest else []
        if manifest:
            meta["manifest"] = manifest_summary(manifest, excerpt, stale)
        meta["definitions"] = op_definitions(specs, tally.cells)
        # the gate reads xpass cases (all in the excerpt); a baseline compares every record
        records = excerpt if baseline is None else list(read_results(out / "results.jsonl"))
        if baseline is not None:
            meta["baseline"] = baseline_view(
                baseline, {key: cell["counts"] for key, cell in tally.cells.items()}, records)
        summary = write_reports(out, meta, conform.__version__, tally=tally)
        _print_table(summary)
        print(f"\nwrote {out}/{{results.jsonl,summary.json,report.html,junit.xml,summary.md}}")
        if not meta["complete"]:
            print(f"conform: interrupted: the reports in {out} are partial ({summary['cases']} of "
                  f"{summary['cases_planned']} cases); the same command with --resume "
                  "continues the run", file=sys.stderr)
            return EXIT_TERMINATED if meta.get("interrupted_by") == "SIGTERM" else EXIT_INTERRUPTED
        cli_gate.warn_stale(stale)
        status = cli_gate.gate_status(args, summary, records, baseline)
        nothing = nothing_judged(summary["counts"])
        if nothing:
            print(f"conform: NOTHING JUDGED: {nothing}; exit status {EXIT_NOTHING_JUDGED}",
                  file=sys.stderr)
            return EXIT_NOTHING_JUDGED
        return status


def nothing_judged(counts: dict) -> str | None:
    """Why a run with these verdict counts judged nothing, in words; None if it judged some
    case (computed it, and got a verdict other than error, crash or timeout)."""
    total = sum(counts.values())
    ran = total - counts.get("skip", 0) - counts.get("unsupported", 0)
    broken = sum(counts.get(v, 0) for v in ("error", "crash", "timeout"))
    if ran == 0:
        return (f"none of the {total} cases ran (each was skipped or unsupported)" if total
                else "the run had no case")
    if broken == ran:
        return (f"every one of the {ran} cases that ran ended in an error, crash or timeout, so "
                "the backend computed nothing to judge (did it load? is --memory-limit-mb too "
                "low?)")
    return None


def cmd_report(args) -> int:
    """One DIR: re-render its reports from results.jsonl. Several: write a comparison page."""
    for directory in args.dirs:
        if not (directory / "results.jsonl").exists():
            raise _UsageError(f"{directory} has no results.jsonl (is it a conform run directory?)")
    if len(args.dirs) == 1:
        if args.out is not None:
            raise _UsageError("--out names the comparison page: give two or more DIRs")
        from conform.harness.run.outdir import locked

        with locked(args.dirs[0]):
            return _rerender(args.dirs[0])
    from conform.reports import write_comparison
    from conform.records import SchemaVersionError

    try:
        out = write_comparison(args.dirs, args.out or Path("conform-compare.html"))
    except SchemaVersionError as exc:
        raise _UsageError(str(exc)) from None
    print(f"wrote {out}")
    return EXIT_OK


def _rerender(directory: Path) -> int:
    from conform.harness.run.outdir import complete_lines
    from conform.reports import write_reports
    from conform.records import check_schema_version

    summary_path = directory / "summary.json"
    if not summary_path.exists():
        raise _UsageError(f"{directory} has no summary.json (is it a conform run directory?)")
    try:
        previous = json.loads(summary_path.read_text(encoding="utf-8"))
        # a run killed while writing leaves its last line cut short: that case did not finish
        records, _ = complete_lines(directory / "results.jsonl")
        check_schema_version(previous, summary_path)   # (a SchemaVersionError is a ValueError)
        if records:
            check_schema_version(records[0], directory / "results.jsonl")
    except (ValueError, UnicodeDecodeError) as exc:
        raise _UsageError(f"{directory} is not a readable conform run: {exc}") from None
    meta = {k: v for k, v in previous.items()
            if k not in ("schema_version", "conform_version", "ops", "cases", "counts", "pass_rate",
                         "judged", "coverage", "histogram_bins", "by_op")}
    summary = write_reports(directory, meta, previous["conform_version"], records=records)
    note = "" if summary.get("complete", True) else \
        f" (incomplete: {summary['cases']} of {summary['cases_planned']} cases)"
    print(f"re-rendered {directory}{note}")
    return EXIT_OK


class _UsageError(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    """Run the ``conform`` command ``argv`` (default: ``sys.argv``); its exit status. Every
    usage, configuration or environment mistake (a full disk included) is one line on stderr
    and status 2; Ctrl-C is status 130, a closed stdout (``conform list | head``) 141."""
    try:
        return _main(argv)
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print("conform: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:
        print(f"conform: error: {_os_error(exc)}", file=sys.stderr)
        return EXIT_USAGE


def _main(argv: list[str] | None) -> int:
    from conform.harness.assurance.adapters import AdapterError
    from conform.harness.cli.values import UnusableDirectory
    from conform.harness.assurance.gate import GateError
    from conform.harness.run.isolation import BackendLoadError
    from conform.harness.run.outdir import NotResumable, OutputBusy
    from conform.harness.assurance.repro import ReproError
    from conform.harness.backends.registry import UnknownBackend
    from conform.harness.run.runner import SelectionError
    from conform.harness.run.sweep import SweepError
    from conform.harness.run.sweep_executors import SlotFailed
    from conform.spec import SpecError

    args = _parser().parse_args(argv)
    handlers = {"list": cmd_list, "run": cmd_run, "report": cmd_report, "gate": cli_gate.cmd_gate,
                "repro": lambda a: cli_gate.cmd_repro(a, _load_specs(a.specs)),
                "certify": lambda a: cli_certify.cmd_certify(a, _load_specs(a.specs)),
                "verify": lambda a: cli_certify.cmd_verify(a, _load_specs(a.specs)),
                "key": cli_certify.cmd_key,
                "hunt": lambda a: cli_hunt.cmd_hunt(a, _load_specs(a.specs)),
                "fuzz": lambda a: cli_fuzz.cmd_fuzz(a, _load_specs(a.specs)),
                "sweep": lambda a: cli_sweep.cmd_sweep(a, _load_specs(a.specs)),
                "adapter": cli_adapter.cmd_adapter}
    try:
        return handlers[args.command](args)
    except (SpecError, UnknownBackend, SelectionError, BackendLoadError, _UsageError, GateError,
            SweepError, SlotFailed,
            ReproError, AdapterError, OutputBusy, NotResumable, UnusableDirectory) as exc:
        print(f"conform: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _os_error(exc: OSError) -> str:
    """``reason: file`` for an OSError (ENOSPC: "No space left on device: .../results.jsonl")."""
    reason = exc.strerror or str(exc)
    return f"{reason}: {exc.filename}" if exc.filename else reason


def _silence_stdout() -> None:
    """Point stdout at /dev/null: its reader has gone, and what is still buffered would raise
    BrokenPipeError again when it is flushed at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def entry() -> None:
    """The ``conform`` command: :func:`main`, then exit without tearing the interpreter down.
    A 100,000-case run leaves millions of objects (cases, records) that the teardown would
    free one by one after a last pass of the cycle collector over all of them: over a second
    for memory the operating system takes back at once."""
    global _EXIT_WITHOUT_TEARDOWN
    _EXIT_WITHOUT_TEARDOWN = True
    status = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        status = EXIT_BROKEN_PIPE
    except OSError as exc:   # e.g. stdout on a full disk
        print(f"conform: error: {_os_error(exc)} (writing standard output)", file=sys.stderr)
        status = EXIT_USAGE
    sys.stderr.flush()
    os._exit(status)


# Set by entry(): a command then leaves what it built for the exit to drop (see _kept_to_exit).
_EXIT_WITHOUT_TEARDOWN = False
_KEPT: list = []


def _kept_to_exit(value) -> None:
    """Keep ``value`` alive to the end of the process when entry() will exit without freeing
    it (else it would be freed, object by object, when the command returns). Everything alive
    now also leaves the cycle collector's sight: the first collection after a paused one (see
    ``cyclic_gc_paused``) would otherwise walk the run's million objects (~0.25 s)."""
    if _EXIT_WITHOUT_TEARDOWN:
        _KEPT.append(value)
        gc.freeze()


if __name__ == "__main__":
    entry()
