"""A backend that misbehaves on purpose, named by import path in the isolation tests.

It computes ``add`` with NumPy, except for marker values in the first input: 13 segfaults the
worker, 17 hangs it, 19 allocates without bound, 23 raises.
"""
from __future__ import annotations

import ctypes
import time

import numpy as np

from conform.harness.backends.base import Backend

SEGFAULT, HANG, ALLOCATE, RAISE = 13, 17, 19, 23


class MisbehavingBackend(Backend):
    name = "misbehaving"

    def version(self) -> str:
        return "misbehaving 1.0"

    def run(self, *, spec, case):
        marker = int(case.inputs[0].flat[0]) if case.inputs[0].size else 0
        if marker == SEGFAULT:
            ctypes.string_at(0)
        if marker == HANG:
            time.sleep(3600)
        if marker == ALLOCATE:
            hoard = []
            while True:
                hoard.append(np.ones(1 << 27, np.uint8))
        if marker == RAISE:
            raise RuntimeError("adapter failed on purpose")
        return [np.add(*case.inputs)]
