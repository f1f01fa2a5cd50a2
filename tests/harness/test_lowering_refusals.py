"""Lowering artefacts refused per case (docs/lowering-artefacts.md): an XLA op whose NaN rule the
ONNX or NNEF node it is lowered to does not share is ``unsupported`` there with a NaN operand,
and runs as before without one."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators._case import Case
from conform.harness.backends.base import Unsupported
from conform.harness.backends.models import run_case


def _case(op, inputs, attrs):
    return Case(id=f"{op}.float32.0", op=op, dtype="float32",
                input_dtypes=("float32",) * len(inputs), out_dtype="float32", inputs=inputs,
                attrs=attrs, plan="normal", seed=1)


def _backend(name):
    if name == "onnxruntime":
        pytest.importorskip("onnxruntime")
        from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

        return OnnxRuntimeBackend()
    pytest.importorskip("nnef")
    from conform.harness.backends.nnef_backend import NnefBackend

    return NnefBackend()


WINDOW = {"window_dimensions": [1, 1, 2], "window_strides": [1, 1, 1],
          "padding": [[0, 0], [0, 0], [0, 0]], "base_dilation": [1, 1, 1],
          "window_dilation": [1, 1, 1]}


@pytest.mark.parametrize("backend, op, inputs, attrs, node", [
    ("onnxruntime", "clamp", [np.float32(np.nan), np.float32([1, 2]), np.float32(3)], {},
     "ONNX Clip"),
    ("onnxruntime", "reduce_window_max", [np.float32([[[1, np.nan, 2]]])], WINDOW,
     "ONNX MaxPool"),
    ("nnef", "reduce_max", [np.float32([[1, np.nan], [2, 3]])], {"dimensions": [1]},
     "NNEF max_reduce"),
])
def test_a_nan_operand_is_refused_and_a_number_is_run(specs, backend, op, inputs, attrs, node):
    runner = _backend(backend)
    with pytest.raises(Unsupported, match=f"lowering artefact: {node} says nothing of NaN"):
        run_case(runner, specs[op], _case(op, inputs, attrs))
    numbers = [np.nan_to_num(x, nan=0.5).astype(np.float32) for x in inputs]
    (out,) = run_case(runner, specs[op], _case(op, numbers, attrs))
    assert not np.isnan(out).any()
