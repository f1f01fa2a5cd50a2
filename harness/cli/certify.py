"""Profiles and certification on the command line: ``conform run --profile P``, ``conform
certify`` and ``conform verify`` (wired in by :mod:`conform.harness.cli.main`).

``certify`` exits 0 when the backend is certified, 1 when it ran and is not; ``verify`` exits 0
when the certificate is verified, 1 when it is not (what did not match is printed); both exit 2
on a usage error.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from conform.harness.cli.gate import add_manifest_options
from conform.harness.cli.values import at_least_one, seconds, writable_directory

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
PROFILED = ("ops", "dtypes", "max_examples", "seed", "subnormals")  # run options a profile sets


def _count(text: str) -> int | str:
    """A ``--rerun`` value: ``all`` or a count >= 0."""
    if text == "all":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a count nor 'all'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def add_profile_options(run: argparse.ArgumentParser) -> None:
    """``--profile`` and ``--profiles`` on ``conform run``. The options a profile sets default to
    None here, so that :func:`apply_profile` can tell those given on the command line (which
    override the profile's) from the run's own defaults (kept in ``args.run_defaults``)."""
    run.add_argument("--profile", default=None, metavar="P",
                     help="run a certification profile's selection: its ops, dtypes, budget, seed "
                          "and subnormal policy (options given here override the profile's)")
    run.add_argument("--profiles", type=Path, default=None, metavar="FILE",
                     help="a YAML file of further profiles (see docs/certification.md)")
    run.set_defaults(run_defaults={dest: run.get_default(dest) for dest in PROFILED},
                     **{dest: None for dest in PROFILED})


def apply_profile(args):
    """Fill the profiled run options from ``--profile`` (or the run's defaults); a profile that
    allows no manifest turns the default manifest off. Returns the profile, or None."""
    if args.profile is None:
        if args.profiles is not None:
            from conform.harness.run.runner import SelectionError

            raise SelectionError("--profiles needs --profile")
        profile, values = None, {}
    else:
        from conform.harness.assurance.certify import find_profile

        profile = find_profile(args.profile, args.profiles)
        values = {"ops": list(profile.ops), "dtypes": list(profile.dtypes or []) or None,
                  "max_examples": profile.max_examples, "seed": profile.seed,
                  "subnormals": profile.subnormal_policy}
        if not profile.manifests and not args.manifest:
            args.no_manifest = True
    for dest in PROFILED:
        if getattr(args, dest) is None:
            value = values.get(dest)
            setattr(args, dest, args.run_defaults[dest] if value is None else value)
    return profile


def add_commands(sub) -> None:
    """The ``certify`` and ``verify`` sub-commands."""
    certify = sub.add_parser("certify", help="run a profile's frozen corpus on a backend and "
                                             "write a certificate")
    certify.add_argument("--backend", required=True,
                         help="the backend certified: an entry-point name or module.path:ClassName")
    certify.add_argument("--profile", required=True, metavar="P",
                         help="xla-core, onnx-core, nnef-core, full, or one from --profiles")
    certify.add_argument("--profiles", type=Path, default=None, metavar="FILE",
                         help="a YAML file of further profiles (see docs/certification.md)")
    certify.add_argument("--out", type=Path, default=None,
                         help="output directory (default conform-out/<backend>-<profile>)")
    certify.add_argument("--force", action="store_true", help="write into an --out folder that holds files conform did not write (no .conform-out marker)")
    certify.add_argument("--workers", type=at_least_one, default=min(2, os.cpu_count() or 1),
                         help="worker processes (default: min(2, cores))")
    certify.add_argument("--timeout", type=seconds, default=60.0, help="seconds per case")
    add_manifest_options(certify, where=", where the profile allows one")
    certify.add_argument("--no-cache", action="store_true",
                         help="draw the corpus afresh instead of reusing the cached one")
    certify.add_argument("--key", type=Path, default=None, metavar="KEYFILE",
                         help="sign the certificate with this Ed25519 private key (PEM; make "
                              "one with `conform key new`)")
    certify.add_argument("--quiet", action="store_true", help="no progress display")

    verify = sub.add_parser("verify", help="verify a certificate (exit 0 verified, 1 not)")
    verify.add_argument("certificate", type=Path,
                        help="certificate.json, or the directory holding it")
    verify.add_argument("--rerun", type=_count, default=None, metavar="N|all",
                        help="re-run N cases sampled from the certificate, covering every op x "
                             "dtype cell, on its backend and check the claimed verdicts (default: "
                             "all of them where the backend is installed; 0: none)")
    verify.add_argument("--sample-seed", type=int, default=0, metavar="S",
                        help="mixed into the sample (default 0: the sample follows from the "
                             "digest alone)")
    verify.add_argument("--results", type=Path, default=None, metavar="FILE",
                        help="the results.jsonl the certificate names, if it is not beside it")
    verify.add_argument("--workers", type=at_least_one, default=min(2, os.cpu_count() or 1),
                        help="worker processes re-running the cases (default: min(2, cores))")
    verify.add_argument("--trusted-key", type=Path, action="append", default=[],
                        metavar="PUBKEY", help="require a valid signature by this Ed25519 public "
                                               "key (PEM; repeat to trust several)")
    verify.add_argument("--allow-module-backend", action="store_true",
                        help="let a re-run import a backend the certificate names by module path "
                             "(runs that module's code; by default only installed backends run)")
    verify.add_argument("--cached-corpus", action="store_true",
                        help="read the corpus from the local cache instead of regenerating it "
                             "afresh (faster; trusts whoever could write the cache)")
    verify.add_argument("--no-cache", action="store_true", help=argparse.SUPPRESS)  # the default

    key = sub.add_parser("key", help="make an Ed25519 key pair to sign certificates with")
    key_sub = key.add_subparsers(dest="key_command", required=True)
    new = key_sub.add_parser("new", help="write a private key to PATH and its public key to "
                                         "PATH.pub")
    new.add_argument("path", type=Path, metavar="PATH",
                     help="where to write the private key (the public key goes to PATH.pub)")


def _usage(message: str) -> int:
    print(f"conform: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def cmd_key(args) -> int:
    """``conform key new PATH``."""
    from conform.harness.assurance.signing import SigningError, new_key_pair

    try:
        private, public, key_id = new_key_pair(args.path)
    except SigningError as exc:
        return _usage(str(exc))
    print(f"wrote {private} (private: keep it secret) and {public} (public: give it to whoever "
          f"verifies)\nkey id {key_id}")
    return EXIT_OK


def cmd_certify(args, specs: dict) -> int:
    """``conform certify --backend B --profile P [--key KEYFILE]``."""
    from conform.harness.assurance.certify import CertifyError, certify, find_profile
    from conform.harness.assurance.manifests import resolve_manifest
    from conform.harness.backends.registry import check_backend
    from conform.harness.assurance.signing import SigningError, load_private_key

    try:
        key = load_private_key(args.key) if args.key is not None else None
    except SigningError as exc:
        return _usage(str(exc))
    profile = find_profile(args.profile, args.profiles)
    check_backend(args.backend)
    if not profile.manifests and args.manifest:
        return _usage(f"profile {profile.name} allows no manifest of known deviations")
    manifest = resolve_manifest(args.backend, args.manifest, disabled=args.no_manifest) \
        if profile.manifests else None
    from conform.harness.run.outdir import locked

    out = writable_directory(args.out or Path("conform-out") / f"{args.backend}-{profile.name}",
                             "--out", args.force)
    try:
        with locked(out):
            cert = certify(profile, args.backend, specs, out, spec_dir=args.specs,
                           workers=args.workers, timeout=args.timeout, manifest=manifest,
                           use_cache=not args.no_cache, progress=not args.quiet, key=key)
    except CertifyError as exc:
        return _usage(str(exc))
    totals = cert["totals"]
    print(f"\n{cert['environment']['backend']} ({cert['environment']['backend_version']}), "
          f"profile {profile.name}: {cert['verdict'].upper()}")
    for reason in cert["reasons"]:
        print(f"  {reason}")
    counts = "  ".join(f"{k} {v}" for k, v in totals["counts"].items() if v)
    print(f"  {totals['cases']} cases: {counts}")
    if manifest is not None:
        print(f"  manifest applied: {', '.join(manifest.files)}")
    print(f"  corpus sha256 {cert['corpus']['sha256']}\n  digest        {cert['digest']}")
    if "signature" in cert:
        print(f"  signed by key {cert['signature']['key_id']}")
    print(f"\nwrote {out}/{{certificate.json,certificate.html,results.jsonl,summary.json,"
          f"report.html,junit.xml,summary.md}}")
    return EXIT_OK if cert["verdict"] == "certified" else EXIT_FAILED


def cmd_verify(args, specs: dict) -> int:
    """``conform verify CERT [--rerun N|all] [--trusted-key PUBKEY]``."""
    from conform.harness.assurance.certify import CertifyError
    from conform.harness.assurance.verify import verify
    from conform.harness.assurance.signing import SigningError, load_public_key

    try:
        trusted = [load_public_key(path) for path in args.trusted_key]
        report = verify(args.certificate, specs, rerun=args.rerun, sample_seed=args.sample_seed,
                        results=args.results, spec_dir=args.specs,
                        use_cache=args.cached_corpus, workers=args.workers,
                        trusted_keys=trusted, allow_module_backend=args.allow_module_backend)
    except (CertifyError, SigningError) as exc:
        return _usage(str(exc))
    for note in report.notes:
        print(f"conform: note: {note}", file=sys.stderr)
    for line in report.checks:
        print(f"ok: {line}")
    claimed = _claimed(report)
    if report.problems:
        print(f"NOT VERIFIED: {len(report.problems)} problem(s)", file=sys.stderr)
        for line in report.problems:
            print(f"  {line}", file=sys.stderr)
        if claimed:
            print(f"the certificate claims (not verified): {claimed}", file=sys.stderr)
        return EXIT_FAILED
    print(f"VERIFIED: {args.certificate}")
    print(f"the certificate's own verdict: {claimed}")
    return EXIT_OK


def _claimed(report) -> str:
    """The certificate's own verdict and its reasons, on one line."""
    if report.claimed_verdict is None:
        return ""
    reasons = "; ".join(report.claimed_reasons)
    return report.claimed_verdict.upper() + (f" ({reasons})" if reasons else "")
