"""Vendor adapters on the command line: ``conform adapter new`` and ``conform adapter check``
(wired in by :mod:`conform.harness.cli.main`).

``check`` exits 0 when every check passes, 1 when any fails (the checklist says what to fix,
including an adapter that is not installed or fails to import); both exit 2 on a usage error
(:class:`~conform.harness.assurance.adapters.AdapterError`).
"""
from __future__ import annotations

from pathlib import Path

from conform.harness.cli.values import seconds

EXIT_OK, EXIT_FAILED = 0, 1


def add_commands(sub) -> None:
    """The ``adapter`` command and its ``new`` and ``check`` sub-commands."""
    adapter = sub.add_parser("adapter", help="write a starter vendor adapter, or self-check one")
    actions = adapter.add_subparsers(dest="adapter_command", required=True)
    new = actions.add_parser("new", help="write a starter adapter package (pyproject.toml with the "
                                         "entry point, the Backend subclass, a README)")
    new.add_argument("name", help="the backend name (lower case, digits and _)")
    new.add_argument("--dir", type=Path, default=None,
                     help="where to write the package (default ./conform-NAME; must be empty)")
    check = actions.add_parser("check", help="load an adapter in a worker, validate its "
                                             "declarations, probe it, run a smoke suite")
    check.add_argument("name", help="an installed backend's name, or module.path:ClassName")
    check.add_argument("--timeout", type=seconds, default=60.0,
                       help="seconds per case (and for loading) before giving up")


def cmd_adapter(args) -> int:
    from conform.harness.assurance.adapters import check_adapter, class_name, new_adapter

    if args.adapter_command == "new":
        out = new_adapter(args.name, args.dir)
        package = f"conform_{args.name}"
        print(f"wrote {out}: pyproject.toml, README.md, {package}/__init__.py\n"
              f"next: pip install -e {out} && conform adapter check {args.name}\n"
              f"  (or, without installing: PYTHONPATH={out} conform adapter check "
              f"{package}:{class_name(args.name)})")
        return EXIT_OK
    report = check_adapter(args.name, spec_dir=args.specs, timeout=args.timeout)
    print(report.render())
    return EXIT_OK if report.passed else EXIT_FAILED
