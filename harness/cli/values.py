"""Range-checked command-line values, and a parser whose every usage mistake is one line.

Each ``type=`` function here raises :class:`argparse.ArgumentTypeError` naming the value and the
range it must lie in; :class:`Parser` turns that (and every other argparse complaint) into one
line, ``conform: error: ...``, and exit status 2, before any work starts.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

EXIT_USAGE = 2

#: The smallest ``--memory-limit-mb`` accepted. The cap is on each worker's address space, not
#: its resident memory: measured, a worker needs 256 MiB of it to import NumPy and conform and
#: run one case on numpy, onnxruntime or nnef (jax needs 512 MiB; under its own need a backend
#: fails to load, and the run says so). Below 256 MiB no built-in backend can load.
MIN_MEMORY_LIMIT_MB = 256


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit status 2 (sub-parsers
    made by ``add_subparsers`` are of this class too)."""

    def error(self, message: str):
        print(f"conform: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _number(text: str, kind):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") \
            from None


def at_least_one(text: str) -> int:
    """An integer >= 1 (a count: workers, cases, cases before recycling)."""
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is below 1")
    return value


def non_negative(text: str) -> int:
    """An integer >= 0."""
    value = _number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def seconds(text: str) -> float:
    """A finite number of seconds > 0."""
    value = _number(text, float)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number of seconds > 0")
    return value


def fraction(text: str) -> float:
    """A number from 0 to 1 (a rate or a chance)."""
    value = _number(text, float)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is outside [0, 1]")
    return value


def memory_mb(text: str) -> int:
    """A worker memory cap in MiB, at least :data:`MIN_MEMORY_LIMIT_MB`."""
    value = _number(text, int)
    if value < MIN_MEMORY_LIMIT_MB:
        raise argparse.ArgumentTypeError(
            f"{text} MB is below {MIN_MEMORY_LIMIT_MB} MB, the least a worker needs to load a "
            "backend (the cap is on its address space)")
    return value


def seed(text: str) -> int:
    """A seed: an integer in [0, 2**63)."""
    value = _number(text, int)
    if not 0 <= value < 1 << 63:
        raise argparse.ArgumentTypeError(f"{text} is outside [0, 2**63)")
    return value


def names(text: str) -> list[str]:
    """A comma-separated list of at least one name."""
    found = [part.strip() for part in text.split(",") if part.strip()]
    if not found:
        raise argparse.ArgumentTypeError(f"{text!r} names nothing")
    return found


def add_backend_and_ops(parser, ops_help: str) -> None:
    """The ``--backend`` and ``--ops`` options of a command that searches ops on a backend."""
    parser.add_argument("--backend", required=True,
                        help="the backend: an entry-point name or module.path:ClassName")
    parser.add_argument("--ops", required=True, type=names, help=ops_help)


def bit_range(text: str) -> tuple[int, int]:
    """``LO:HI``, two hexadecimal bit patterns (``0x`` optional): the first input and the one
    past the last, ``LO < HI``.

    >>> bit_range("3f800000:0x3f800010")
    (1065353216, 1065353232)
    """
    low, sep, high = text.partition(":")
    try:
        if not sep:
            raise ValueError
        first, stop = int(low, 16), int(high, 16)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not LO:HI in hexadecimal "
                                         "(e.g. 3f800000:3f900000)") from None
    if not 0 <= first < stop:
        raise argparse.ArgumentTypeError(f"{text!r} is empty: LO must be below HI (and >= 0)")
    return first, stop


class UnusableDirectory(Exception):
    """A directory conform must write into cannot be created or written (exit status 2)."""


#: The file that says conform made (or has written in) an output folder.
MARKER = ".conform-out"


def writable_directory(path: Path, what: str, force: bool = False) -> Path:
    """Create ``path`` (with its parents) if needed and check that a file can be written there;
    raise :class:`UnusableDirectory` naming ``what`` (``--out``, the cache directory) if not.
    A folder that holds files but no :data:`MARKER` is someone else's: refused unless
    ``force`` (conform would overwrite their report.html, summary.json...). The marker is
    written, so that conform may write there again."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not force and not (path / MARKER).is_file() and any(path.iterdir()):
            raise UnusableDirectory(f"{what} {path} holds files that conform did not write (it "
                                    f"has no {MARKER} marker); choose a new or empty folder, or "
                                    "pass --force to write there anyway")
        with tempfile.TemporaryFile(dir=path):
            pass
        fd = os.open(path / MARKER, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        os.close(fd)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UnusableDirectory(f"{what} {path} is not a writable directory: {reason}") from None
    return path


def check_cache_directory() -> None:
    """The cache directory (``$CONFORM_CACHE_DIR`` or ``~/.cache/conform``) is a directory or
    can be made one. (One that cannot be written is usable: it costs the time, nothing else.)"""
    from conform.caches import cache_dir

    where = "$CONFORM_CACHE_DIR" if os.environ.get("CONFORM_CACHE_DIR") else "the cache directory"
    path = cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UnusableDirectory(f"{where} {path} is not a usable directory: "
                                f"{exc.strerror or exc}") from None
