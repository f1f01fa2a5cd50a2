"""Adapters that compute like the numpy backend except on two chunks of a sweep, named by import
path (``--backend tests.harness.sweep_adapters:Class``) in the sweep tests."""
from __future__ import annotations

import ctypes
import time

import numpy as np

from conform.harness.backends.numpy_backend import NumpyBackend

#: The float32 bit patterns whose chunks the adapter segfaults on and hangs on.
SEGFAULT, HANG = 0x3F001800, 0x3F002800


def poisoned(inputs, bits: int) -> bool:
    """Whether the inputs hold the float32 bit pattern ``bits``."""
    x = np.asarray(inputs[0])
    return x.dtype == np.float32 and bool(np.any(x.view(np.uint32) == bits))


class CrashesOnOneChunkHangsOnAnother(NumpyBackend):
    """Segfaults on the chunk holding :data:`SEGFAULT`, never returns on the one holding
    :data:`HANG`, every time."""

    name = "hostile-sweep"

    def run(self, *, program, inputs, model=None):
        if poisoned(inputs, SEGFAULT):
            ctypes.string_at(0)
        if poisoned(inputs, HANG):
            time.sleep(3600)
        return super().run(program=program, inputs=inputs, model=model)
