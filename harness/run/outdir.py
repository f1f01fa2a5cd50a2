"""A run's output folder: one run at a time (a lock), no stale reports beside new results, and
what an interrupted run left there for ``conform run --resume``.

The lock is a POSIX record lock (``fcntl.lockf``) on ``.conform.lock`` in the folder, which
also names its holder (pid, host, start time). A record lock belongs to the process that took
it: forked workers do not hold it, and it goes when the process dies, however it dies.
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import orjson

LOCK_FILE = ".conform.lock"
RESULTS = "results.jsonl"
SUMMARY = "summary.json"
#: What a new run removes before it writes its first result: reports describing an older run
#: (summary.json is written afresh at once, marked incomplete).
STALE = ("report.html", "junit.xml", "summary.md", "certificate.json", "certificate.html")


class OutputBusy(Exception):
    """Another conform process holds the output folder (exit status 2)."""


class NotResumable(Exception):
    """``--resume`` cannot continue what the output folder holds (exit status 2)."""


@contextlib.contextmanager
def locked(folder: Path):
    """Hold ``folder``'s lock for the block; raise :class:`OutputBusy` naming the holder if
    another process has it. ``folder`` must exist."""
    try:   # never through a link: its target would be truncated
        fd = os.open(Path(folder) / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise OutputBusy(f"{Path(folder) / LOCK_FILE} cannot be opened as conform's lock file "
                         f"({exc.strerror}; a symbolic link is never followed): remove it") from None
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (BlockingIOError, PermissionError):   # EAGAIN or EACCES: another process has it
            # read through the same descriptor: closing another one would drop a record lock
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace")
            raise OutputBusy(f"{folder} is in use by another conform command ({_holder(holder)}); "
                             "wait for it to finish or choose another --out") from None
        started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        note = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": started})
        os.ftruncate(fd, 0)
        os.pwrite(fd, note.encode() + b"\n", 0)
        yield
    finally:
        os.close(fd)   # releases the lock


def _holder(text: str) -> str:
    try:
        note = json.loads(text)
        return f"pid {note['pid']} on {note['host']}, started {note['started']}"
    except (ValueError, KeyError, TypeError):
        return "holder unknown"


def remove_stale_reports(folder: Path, keep_summary: bool = False) -> None:
    """Delete the reports an earlier run left in ``folder`` (see :data:`STALE`), and its
    summary.json unless ``keep_summary`` (a resumed run continues that run)."""
    for name in STALE + (() if keep_summary else (SUMMARY,)):
        with contextlib.suppress(FileNotFoundError):
            (Path(folder) / name).unlink()


@dataclass
class Previous:
    """What an earlier run left in an output folder: its summary.json, its complete result
    records, and the length of results.jsonl up to the last complete line."""

    summary: dict
    records: list
    valid_bytes: int

    @property
    def done(self) -> set:
        """The ids of the cases it finished."""
        return {record["id"] for record in self.records}


def complete_lines(path: Path) -> tuple[list, int]:
    """The records of a results.jsonl that a run may have been killed while writing: every
    line but a last one without its newline (a write cut short), and the length in bytes of
    what they take. A malformed complete line raises ValueError naming it."""
    data = Path(path).read_bytes()
    end = data.rfind(b"\n") + 1
    lines = data[:end].split(b"\n")[:-1]
    return [_record(path, number, line) for number, line in enumerate(lines, 1) if line.strip()], end


def _record(path: Path, number: int, line: bytes) -> dict:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{path}:{number} is not JSON ({exc})") from None
    if isinstance(record, dict) and "id" in record:
        return record
    raise ValueError(f"{path}:{number} is not a result record")


def read_previous(folder: Path) -> Previous | None:
    """What an earlier run left in ``folder`` for ``--resume``; None if it holds no run."""
    folder = Path(folder)
    summary_path, results_path = folder / SUMMARY, folder / RESULTS
    if not results_path.exists():
        return None
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        records, valid = complete_lines(results_path)
    except FileNotFoundError:
        raise NotResumable(f"{folder} has results.jsonl but no summary.json: nothing says how "
                           "that run was made; run again without --resume") from None
    except ValueError as exc:
        raise NotResumable(f"cannot resume the run in {folder}: {exc}") from None
    if not isinstance(summary, dict) or "run_key" not in summary:
        raise NotResumable(f"{summary_path} does not say how its run was made (written by an "
                           "older conform?); run again without --resume")
    return Previous(summary, records, valid)


def check_same_run(previous: Previous, key: dict, folder: Path) -> None:
    """Raise :class:`NotResumable` naming the first setting in which the run ``key`` differs
    from the interrupted one."""
    old = previous.summary["run_key"]
    for name in sorted(set(old) | set(key)):
        if old.get(name) != key.get(name):
            raise NotResumable(f"--resume: the run in {folder} had {name}={old.get(name)!r}, this "
                               f"one has {name}={key.get(name)!r}; run without --resume to start "
                               "afresh")
