"""Adapters that attack the harness on purpose, one failure class each, named by import path
(``--backend tests.harness.hostile_adapters:Class``) in the reliability tests.

Each computes ``add`` with NumPy except on the cases whose id ends in one of its marked indices
(``add.float32.3`` is index 3): there it misbehaves in its own way.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from conform.harness.backends.base import Backend, Unsupported

#: A file the adapters touch or look for (set by the tests in the environment).
MARKER = "CONFORM_HOSTILE_MARKER"

SURROGATE = "lone \ud800 surrogate"
CONTROLS = "NUL\x00 ANSI \x1b[31mred\x1b[0m bell\x07 CR\r bidi \u202eesrever"
HUGE = 3_000_000   # characters in the huge message


def index(case) -> int:
    """The case's index within its op and dtype (-1 for a sweep or other named case)."""
    tail = case.id.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _touch_marker() -> None:
    if os.environ.get(MARKER):
        Path(os.environ[MARKER]).touch()


class _Adds(Backend):
    """Computes ``add``; subclasses misbehave in :meth:`misbehave` on chosen cases."""

    name = "hostile"

    def version(self) -> str:
        return "hostile 1.0"

    def run(self, *, spec, case):
        if spec.op != "add":
            raise Unsupported(f"hostile adapters compute add only, not {spec.op}")
        self.misbehave(index(case))
        with np.errstate(all="ignore"):
            return [np.add(*case.inputs)]

    def misbehave(self, at: int) -> None:
        """Misbehave (or not) on the case with index ``at``."""


class HangsInLoad(_Adds):
    """Never finishes loading: ``__init__`` sleeps for an hour."""

    def __init__(self):
        time.sleep(3600)


class HangsOnReload(_Adds):
    """Loads once; case 2 crashes its worker (and leaves the marker file), and every later
    instance hangs in ``__init__``: the replacement worker never loads."""

    def __init__(self):
        while os.path.exists(os.environ[MARKER]):
            time.sleep(0.05)   # hangs as long as the marker exists

    def misbehave(self, at):
        if at == 2:
            _touch_marker()
            os._exit(3)


class OddStrings(_Adds):
    """Messages no writer takes as they are: a lone surrogate (1), NUL, ANSI, CR and bidi
    controls (2), three million characters (3), an exception whose ``str()`` raises (4), a
    surrogate in an ``Unsupported`` reason (5); its version string holds a surrogate too."""

    def version(self) -> str:
        return "odd \udcff 1.0\x1b[0m"

    def misbehave(self, at):
        if at == 1:
            raise RuntimeError(SURROGATE)
        if at == 2:
            raise RuntimeError(CONTROLS)
        if at == 3:
            raise RuntimeError("x" * HUGE)
        if at == 4:
            raise _Unprintable()
        if at == 5:
            raise Unsupported(f"cannot: {SURROGATE}")


class _Unprintable(Exception):
    def __str__(self):
        raise ValueError("no text for you")


class WrongReturns(_Adds):
    """Returns what is not a list of arrays: None (1), a string (2), two arrays (3), a bare
    array (4), [None] (5), an iterable that raises (6); a generator of one array (7) is fine.
    Its ``prepare`` returns a string instead of a function for case 8; ``stats`` a string."""

    def run(self, *, spec, case):
        with np.errstate(all="ignore"):
            total = np.add(*case.inputs)
        wrong = {1: None, 2: "not an array", 3: [total, total], 4: total, 5: [None],
                 6: _Exploding(), 7: (x for x in [total])}
        return wrong.get(index(case), [total])

    def stats(self):
        return "no counters"

    def prepare(self, *, spec, case, model=None):
        if index(case) == 8:
            return "not a function"
        return super().prepare(spec=spec, case=case, model=model)


class _Exploding:
    def __iter__(self):
        raise KeyError("iterating me fails")


class SlowPrepare(_Adds):
    """Uses the documented ``prepare``: each case takes ``SLOW`` seconds to prepare (a batch of
    them far longer than the timeout), and preparing case 5 hangs."""

    SLOW = 0.2

    def prepare(self, *, spec, case, model=None):
        time.sleep(3600 if index(case) == 5 else self.SLOW)
        return lambda: self.run(spec=spec, case=case)


class Crashes(_Adds):
    """Takes its worker down, or never returns: a segfault (1), ``os._exit`` (2), allocating
    without bound (3), an endless CPU loop (4), sleeping forever (5). On case 6 it touches the
    marker file, then sleeps (a busy worker for the parent-death tests); on case 8 it raises."""

    def misbehave(self, at):
        if at == 1:
            ctypes.string_at(0)
        if at == 2:
            os._exit(7)
        if at == 3:
            hoard = []
            while True:   # address space, not pages: the memory cap stops it, not the machine
                hoard.append(np.empty(1 << 28, np.uint8))
        if at == 4:
            while True:
                pass
        if at == 5:
            time.sleep(3600)
        if at == 6:
            _touch_marker()
            time.sleep(3600)
        if at == 8:
            raise RuntimeError("raised after a crash")


class CrashesAlways(_Adds):
    """Takes its worker down on every case: nothing is ever computed."""

    def misbehave(self, at):
        os._exit(5)


class LeavesAChild(_Adds):
    """Starts a process that sleeps for an hour holding the standard streams conform gave the
    worker (``conform run ... | cat`` then waits for it): it must die with its worker."""

    def __init__(self):
        self.child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])


class SaysThenHangs(LeavesAChild):
    """On case 3, with the MARKER variable naming a FIFO: writes a line to it (the test learns
    the run is under way), then hangs. Without MARKER it computes every case. It leaves a child
    too."""

    def misbehave(self, at: int) -> None:
        if at == 3 and os.environ.get(MARKER):
            with open(os.environ[MARKER], "w", encoding="utf-8") as fifo:
                fifo.write("running\n")
            time.sleep(3600)


class TakesThePipe(_Adds):
    """On case 3 it takes every socket the worker holds, conform's pipe among them: it closes
    them (as a daemonising library closes what it did not open) or, with MARKER set to
    ``redirect``, points them at /dev/null, and then returns a correct answer."""

    def misbehave(self, at: int) -> None:
        if at != 3:
            return
        null = os.open(os.devnull, os.O_RDWR)
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            try:
                if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                    if os.environ.get(MARKER) == "redirect":
                        os.dup2(null, fd)
                    else:
                        os.close(fd)
            except OSError:   # the listing's own descriptor, gone by now
                pass


class WritesToStderr(_Adds):
    """Writes to standard error: a Python warning line on case 2, C-level bytes (``write(2)``,
    invalid UTF-8 included) on case 4, then 10,000 lines on case 5; on case 6 it writes a last
    word, then dies of SIGSEGV. Loading writes a banner every case could be blamed for."""

    def __init__(self):
        print("hostile banner while loading", file=sys.stderr, flush=True)

    def misbehave(self, at: int) -> None:
        if at == 2:
            print("UserWarning: case two is odd", file=sys.stderr, flush=True)
        if at == 4:
            os.write(2, b"[E:runtime] kernel fallback \xff\n")
        if at == 5:
            sys.stderr.write("".join(f"line {i}\n" for i in range(10_000)))
            sys.stderr.flush()
        if at == 6:
            os.write(2, b"terminate called: about to crash\n")
            ctypes.string_at(0)


class DiesLoudlyWhileLoading(_Adds):
    """Writes why to standard error, then exits while loading (as a C++ runtime aborts)."""

    def __init__(self):
        os.write(2, b"fatal: libfoo.so.3: version GLIBC_9.99 not found\n")
        os._exit(3)


def add_cases(indices, dtype: str = "float32") -> list:
    """``add`` cases of small values with the given indices (ids ``add.<dtype>.<index>``)."""
    from conform.generators import Case

    return [Case(id=f"add.{dtype}.{i}", op="add", dtype=dtype, input_dtypes=(dtype, dtype),
                 out_dtype=dtype, inputs=[np.arange(8, dtype=dtype), np.ones(8, dtype)], attrs={},
                 plan="normal", seed=i) for i in indices]
