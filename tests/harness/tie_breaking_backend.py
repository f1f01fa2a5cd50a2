"""onnxruntime with an injected top-k bug, named by import path in the multi-output tests: of
equal values it returns the higher index first (as an unstable sort may), values untouched."""
from __future__ import annotations

import numpy as np

from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend


def _later_index_first(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``indices`` with each run of equal values (along the last axis) in reverse order."""
    rows_v, rows_i = values.reshape(-1, values.shape[-1]), indices.reshape(-1, values.shape[-1]).copy()
    for row_v, row_i in zip(rows_v, rows_i):
        start = 0
        for end in range(1, len(row_v) + 1):
            if end == len(row_v) or row_v[end] != row_v[start]:
                row_i[start:end] = row_i[start:end][::-1]
                start = end
    return rows_i.reshape(indices.shape)


class TieBreakingBackend(OnnxRuntimeBackend):
    name = "tie-breaking"

    def prepare(self, *, program, inputs, model=None):
        compute = super().prepare(program=program, inputs=inputs, model=model)
        if program.op != "onnx_top_k" or program.attrs["axis"] % inputs[0].ndim != inputs[0].ndim - 1:
            return compute

        def buggy():
            values, indices = compute()
            return [values, _later_index_first(values, indices)]

        return buggy
