"""The numpy backend, slowed down so that a test can interrupt a real run half-way through;
named by import path (``tests.harness.slow_backend:SlowNumpy``)."""
from __future__ import annotations

import time

from conform.harness.backends.numpy_backend import NumpyBackend

SECONDS_PER_CASE = 0.004


class SlowNumpy(NumpyBackend):
    name = "slow-numpy"

    def run(self, *, program, inputs, model=None):
        time.sleep(SECONDS_PER_CASE)
        return super().run(program=program, inputs=inputs, model=model)
