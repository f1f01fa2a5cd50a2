"""What a newcomer meets first: ``conform --help`` and every subcommand's help are plain text
with a help line for each option, and ``--specs`` is taken before or after the subcommand."""
from __future__ import annotations

import argparse
from pathlib import Path

from conform.harness.cli.main import _READ_SPECS, _parser


def _parsers(parser, name="conform"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                yield from _parsers(child, f"{name} {sub}")


def test_every_help_is_plain_text_and_every_option_has_a_help_line():
    for name, parser in _parsers(_parser()):
        texts = [parser.description or "", parser.epilog or "", parser.format_help()]
        assert not any(mark in text for text in texts for mark in ("``", ":func:", ":class:")), name
        for action in parser._actions:
            if not isinstance(action, argparse._SubParsersAction):
                assert action.help, (name, action.option_strings or action.dest)


def test_specs_is_taken_before_or_after_the_subcommand():
    parser = _parser()
    assert parser.parse_args(["--specs", "d", "list"]).specs == Path("d")
    assert parser.parse_args(["list"]).specs is None
    for command in _READ_SPECS:
        needed = {"run": ["--backend", "numpy"], "repro": ["x", "--from", "r"],
                  "certify": ["--backend", "numpy", "--profile", "p"], "verify": ["c.json"],
                  "hunt": ["--backend", "numpy", "--ops", "add"],
                  "fuzz": ["--backend", "onnxruntime"],
                  "sweep": ["--backend", "numpy", "--ops", "tanh"]}.get(command, [])
        assert parser.parse_args([command, *needed, "--specs", "d"]).specs == Path("d"), command
