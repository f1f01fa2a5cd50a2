"""A worker's own channels while an adapter runs in it: the pipe to conform, which the adapter must
not take, and its standard error, which belongs to the case that wrote it.

An adapter is foreign code in the worker's process: it may close every descriptor it did not open
(as a daemonising library does), or point them elsewhere. If it takes the worker's pipe, the
worker notices right after the case that did it (:class:`PipeGuard`) and exits with
:data:`PIPE_TAKEN_STATUS` while the parent's counter still names that case, so the blame lands on
it and not on a later case that happened to be running when a reply was lost.

A worker's standard error goes to a file of its own (:class:`StderrLog`), not to the terminal the
user watches: what a case wrote there (a runtime's warning, a C++ assertion before an abort)
travels with the case's outcome into its record, and the parent reads what a crashed or hung
case wrote from the same file.
"""
from __future__ import annotations

import os
import signal

from conform.harness.run.boundary import safe_text
from conform.harness.run.wire import read_first

#: A worker's exit status after its backend closed or replaced its pipe to conform.
PIPE_TAKEN_STATUS = 86
#: Bytes of a case's standard error kept in its record: the last ones, where the error is.
STDERR_KEPT = 4096
#: A worker's standard error file is emptied once it grows past this (an adapter that prints
#: without end must not fill the disk); what a case wrote is read before.
STDERR_FILE_CAP = 64 << 20


def death_message(exitcode: int | None) -> str:
    """Why a worker that exited with ``exitcode`` (negative: the signal that killed it) died."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"worker killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"worker killed by signal {-exitcode}"
    if exitcode == PIPE_TAKEN_STATUS:
        return ("the backend closed or replaced the worker's pipe to conform while computing "
                "this case")
    return f"worker exited with status {exitcode}"


class PipeGuard:
    """The worker's pipe to conform as it was given: :meth:`hold` exits the worker (status
    :data:`PIPE_TAKEN_STATUS`) once the descriptor is closed or names another file."""

    def __init__(self, conn):
        self.fd = conn.fileno()
        self._identity = self._file(self.fd)

    @staticmethod
    def _file(fd: int):
        try:
            found = os.fstat(fd)
        except OSError:
            return None
        return found.st_dev, found.st_ino

    def intact(self) -> bool:
        """Whether the descriptor still names the pipe conform gave the worker."""
        return self._file(self.fd) == self._identity

    def hold(self) -> None:
        """Return if the pipe is intact; else end the worker at once: nothing it could send
        would reach the parent, and the case it just ran is the one the parent will blame."""
        if not self.intact():
            os._exit(PIPE_TAKEN_STATUS)


class StderrLog:
    """A worker's standard error, kept in the file ``path``. ``mark`` (a shared integer) is
    where the output of the case being run begins: the worker sets it (:meth:`begin`), the
    parent reads from it when the case crashed or hung (:meth:`since_mark`)."""

    def __init__(self, path: str, mark):
        self.path, self.mark = path, mark

    def capture(self) -> None:
        """In the worker: send file descriptor 2 (and so ``sys.stderr``, and what C code
        writes) to the file."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)   # read back per case
        os.dup2(fd, 2)
        os.close(fd)

    def begin(self) -> None:
        """In the worker: the output written from now on is the next case's."""
        self.mark.value = _size(2)

    def taken(self) -> str:
        """In the worker: what was written since :meth:`begin` (its last :data:`STDERR_KEPT`
        bytes), made safe; the file is emptied once it passes :data:`STDERR_FILE_CAP`."""
        end = _size(2)
        start = self.mark.value
        if end <= start:
            return ""
        text = _tail(2, start, end)
        if end > STDERR_FILE_CAP:
            os.ftruncate(2, 0)
            self.mark.value = 0
        return text

    def since_mark(self) -> str:
        """In the parent: what the worker's running case wrote (its last bytes), made safe;
        empty if there is no file."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return ""
        try:
            return _tail(fd, self.mark.value, _size(fd))
        finally:
            os.close(fd)


class NoStderrLog:
    """A worker whose standard error stays where its parent's goes: its cases keep nothing."""

    def begin(self) -> None:
        """Nothing to mark."""

    def taken(self) -> str:
        """Nothing kept."""
        return ""


def _size(fd: int) -> int:
    try:
        return os.fstat(fd).st_size
    except OSError:   # no standard error at all: nothing was written
        return 0


def _tail(fd: int, start: int, end: int) -> str:
    """The bytes of ``fd`` from ``start`` to ``end``, at most the last :data:`STDERR_KEPT`."""
    if end <= start:
        return ""
    length = min(end - start, STDERR_KEPT)
    try:
        data = os.pread(fd, length, end - length)
    except OSError:
        return ""
    text = data.decode("utf-8", "replace").rstrip("\n")
    if end - start > length:
        text = f"[{end - start - length:,} earlier bytes left out]\n{text}"
    return safe_text(text)


def first_message(conn):
    """A starting worker's first message on ``conn``, ``(kind, payload)`` (``hello`` with what
    it says of its backend, or ``fatal`` with why it could not load), or None if it died before
    sending one."""
    try:
        frame = conn.recv_bytes()
    except (EOFError, OSError):
        return None
    return read_first(frame)
