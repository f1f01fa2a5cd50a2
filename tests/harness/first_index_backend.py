"""onnxruntime with an injected ArgMax/ArgMin bug, named by import path in the arg-reduction
tests: it ignores select_last_index (the model it runs always asks for the first of equal
extremes), so ties come out at the first index where the last is asked for."""
from __future__ import annotations

import dataclasses

from conform.harness.backends.models import Model
from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend


class FirstIndexBackend(OnnxRuntimeBackend):
    name = "first-index"

    def prepare(self, *, program, inputs, model=None):
        case = program.case
        if program.op in ("onnx_arg_max", "onnx_arg_min") and case.attrs["select_last_index"]:
            first = dataclasses.replace(case, attrs={**case.attrs, "select_last_index": 0})
            model = Model("onnx", program.spec, first)
        return super().prepare(program=program, inputs=inputs, model=model)
