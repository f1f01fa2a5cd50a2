"""Wrapping adapters (contract 3), named by import path in the wrapping tests: onnxruntime
forwarded as it is, and onnxruntime under another name that counts the cases it forwards."""
from __future__ import annotations

from conform.harness.backends import Wrapping


class PlainOnnxRuntime(Wrapping):
    """onnxruntime, every declaration and call forwarded."""

    wraps = "onnxruntime"


class CountingOnnxRuntime(Wrapping):
    """onnxruntime under its own name, counting the cases it prepares (in ``stats()``)."""

    wraps = "onnxruntime"
    name = "counting-onnxruntime"

    def __init__(self):
        super().__init__()
        self.forwarded = 0

    def prepare(self, *, program, inputs, model=None):
        self.forwarded += 1
        return super().prepare(program=program, inputs=inputs, model=model)

    def stats(self) -> dict:
        return {**super().stats(), "forwarded": self.forwarded}


class DriftingTanhOnnxRuntime(Wrapping):
    """onnxruntime whose float32 tanh drifts by 64 ulp on inputs of magnitude 1/2 to 4: a bug in
    a cell (tanh x float32) whose shipped manifest entry excuses failures on tiny inputs only."""

    wraps = "onnxruntime"

    def prepare(self, *, program, inputs, model=None):
        compute = super().prepare(program=program, inputs=inputs, model=model)
        if program.op != "tanh" or program.input_dtypes != ("float32",):
            return compute

        def drifting():
            import numpy as np

            (out,) = compute()
            x = inputs[0]
            drift = (np.abs(x) >= 0.5) & (np.abs(x) <= 4) & np.isfinite(x)
            return [np.where(drift, out * np.float32(1 + 2**-17), out).astype(np.float32)]

        return drifting
