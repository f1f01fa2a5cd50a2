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
