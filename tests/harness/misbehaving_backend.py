"""A backend that misbehaves on purpose, named by import path in the isolation tests.

It computes ``add`` with NumPy, except for marker values in the first input: 13 segfaults the
worker, 17 hangs it, 19 allocates without bound, 23 raises; 29 poisons the worker without
failing (the next case it runs segfaults, as after a silent heap corruption); 31 takes 2 s.
"""
from __future__ import annotations

import ctypes
import time

import numpy as np

from conform.harness.backends.base import Backend

SEGFAULT, HANG, ALLOCATE, RAISE, POISON, SLOW = 13, 17, 19, 23, 29, 31
_poisoned = []   # set by a POISON case: this process's next case dies


class MisbehavingBackend(Backend):
    name = "misbehaving"

    def version(self) -> str:
        return "misbehaving 1.0"

    def run(self, *, spec, case):
        marker = int(case.inputs[0].flat[0]) if case.inputs[0].size else 0
        if marker == POISON:
            _poisoned.append(True)
        elif _poisoned:
            ctypes.string_at(0)
        if marker == SEGFAULT:
            ctypes.string_at(0)
        if marker == HANG:
            time.sleep(3600)
        if marker == SLOW:
            time.sleep(2.0)
        if marker == ALLOCATE:
            hoard = []
            while True:
                hoard.append(np.empty(1 << 28, np.uint8))   # address space: the cap stops it, not the machine
        if marker == RAISE:
            raise RuntimeError("adapter failed on purpose")
        return [np.add(*case.inputs)]


class PackingMisbehavingBackend(MisbehavingBackend):
    """The same markers, from a backend that ``packs``: the first case of a batch asked for
    computes every case prepared with it, so a marker anywhere in the batch strikes while the
    first case is being computed."""

    name = "packing-misbehaving"
    packs = True

    def __init__(self):
        self._pending: list = []

    def run(self, *, program, inputs, model=None):
        return super().run(spec=program.spec, case=program.case)

    def prepare(self, *, program, inputs, model=None):
        slot = {"program": program}
        self._pending.append(slot)

        def compute():
            if "outputs" not in slot:
                pack, self._pending = self._pending, []
                for each in pack:
                    each["outputs"] = self.run(program=each["program"], inputs=None)
            return slot["outputs"]

        return compute
