"""A backend runs the ops its model format can express: the ones with the binding it consumes."""
from __future__ import annotations

import pytest

from conform.harness.run.runner import SelectionError, by_format, select


def test_each_backend_runs_the_ops_bound_in_its_format(specs):
    pairs = select(specs, None, ["float32"])
    ops = {backend: {spec.op for spec, _ in by_format(pairs, backend)}
           for backend in ("jax", "onnxruntime", "nnef", "numpy")}
    assert {"add", "onnx_add", "nnef_add"} <= ops["numpy"]          # numpy computes every op
    assert "add" in ops["jax"] and not {"onnx_add", "nnef_add"} & ops["jax"]
    assert "onnx_add" in ops["onnxruntime"] and not {"add", "nnef_add"} & ops["onnxruntime"]
    assert "nnef_add" in ops["nnef"] and not {"add", "onnx_add"} & ops["nnef"]
    assert all("xla" in specs[op].bindings for op in ops["jax"])


def test_a_selection_with_nothing_in_the_backends_format_says_so(specs):
    with pytest.raises(SelectionError, match="none of the selected ops has the onnx binding"):
        by_format(select(specs, ["atan2"], None), "onnxruntime")


def test_an_onnx_type_the_schema_refuses_is_never_drawn(specs, monkeypatch):
    """ONNX Cos (opset 21) takes float16, float32 and float64: a bfloat16 cos is not drawn for
    onnxruntime, but is for jax."""
    monkeypatch.delenv("CONFORM_ONNX_OPSET", raising=False)
    labels = {label for _, label in by_format(select(specs, ["cos"], None), "onnxruntime")}
    assert labels == {"float16", "float32", "float64"}
    assert "bfloat16" in {label for _, label in by_format(select(specs, ["cos"], None), "jax")}
