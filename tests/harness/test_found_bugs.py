"""Replay the reduced failures of docs/found-bugs.md on onnxruntime, confirmed outside the judge.

Each ledger entry is a reduced generated graph (docs/found-bugs/<name>.onnx, every node's
outputs exposed, and <name>.npz, its inputs). The blamed node's output is recomputed here with
NumPy in float64 from the values onnxruntime itself exposes as that node's inputs, rounded once
to the node's dtype: onnxruntime's value differs from it, as recorded. (One entry, float32
Tanh above 1, is a single node: a single-op deviation the suite's default budget misses.) (When onnxruntime fixes a
bug, its test fails: move the entry to the ledger's fixed section.)
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

LEDGER = Path(__file__).resolve().parents[2] / "docs" / "found-bugs"

#: The blamed ops' definitions, from their ONNX operator texts, in float64.
FORMULAS = {
    "sqrt": np.sqrt, "sin": np.sin, "tan": np.tan, "asin": np.arcsin, "sinh": np.sinh,
    "cosh": np.cosh, "floor": np.floor, "tanh": np.tanh,
    "onnx_reduce_sum_square": lambda x: np.sum(np.square(x), keepdims=True),   # a 1-D operand
    "reciprocal": lambda x: 1 / x, "onnx_div": np.divide, "onnx_mul": np.multiply,
    "onnx_sub": np.subtract, "logistic": lambda x: 1 / (1 + np.exp(-x)),
    "onnx_prelu": lambda x, slope: np.where(x < 0, slope * x, x),
    "leaky_relu": lambda x, alpha: np.where(x < 0, alpha * x, x),
}


def _entries(runtime: str = "onnxruntime"):
    """The ledger's entries found on ``runtime`` whose blamed op has a formula here."""
    return [e for e in json.loads((LEDGER / "ledger.json").read_text())
            if e["blamed"] in FORMULAS and e.get("runtime", "onnxruntime") == runtime]


def _ort_values(name: str, feeds: dict) -> dict:
    """Every value of ledger model ``name`` as onnxruntime (CPU, one thread) gives it, with
    its inputs: ``feeds`` and the model's initializers."""
    import onnx
    import onnxruntime as ort
    from onnx.numpy_helper import to_array

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(LEDGER / f"{name}.onnx"), options,
                                   providers=["CPUExecutionProvider"])
    held = {t.name: to_array(t) for t in onnx.load(LEDGER / f"{name}.onnx").graph.initializer}
    return {**held, **feeds, **dict(zip([o.name for o in session.get_outputs()],
                                         session.run(None, feeds)))}


def _wanted(entry, values: dict) -> np.ndarray:
    """The blamed node's output recomputed in float64 from ``values`` (its inputs as the
    runtime exposes them), rounded once to the node's dtype."""
    args = [values[name].astype(np.float64) for name in entry["inputs"]]
    if entry["blamed"] == "leaky_relu":
        args.append(entry["attrs"]["alpha"])
    with np.errstate(all="ignore"):
        return np.asarray(FORMULAS[entry["blamed"]](*args)).astype(entry["dtype"])


@pytest.mark.parametrize("entry", _entries(), ids=lambda e: e["name"])
def test_a_ledger_reduction_still_fails_as_recorded(entry):
    feeds = dict(np.load(LEDGER / f"{entry['name']}.npz"))
    values = _ort_values(entry["name"], feeds)
    want = _wanted(entry, values)
    got = values[entry["output"]]
    wrong = np.flatnonzero(got.ravel() != np.broadcast_to(want, got.shape).ravel())
    assert wrong.size == entry["mismatched_enable_all"]
    assert float(got.ravel()[wrong[0]]) == entry["enable_all"]
    assert float(np.broadcast_to(want, got.shape).ravel()[wrong[0]]) == entry["rounded"]


def test_batch_normalization_training_writes_its_running_mean_into_the_callers_input():
    """Bug 4 of docs/found-bugs.md: a float32 BatchNormalization in training mode whose
    running mean another node reads (Neg), not a graph output, is computed in the buffer of the
    graph input ``input_mean``: the caller's array. Its values are right (float64: 0.9 * mean +
    0.1 * the batch mean, the batch mean of X's columns [1.5, 2.5, 3.5]), but the array fed as
    ``mean`` holds them after the run."""
    import onnxruntime as ort

    session = ort.InferenceSession(
        str(LEDGER / "batch-normalization-training-neg-float32.onnx"),
        providers=["CPUExecutionProvider"])
    feeds = {"X": np.float32([[0, 1, 2], [3, 4, 5]]), "scale": np.ones(3, np.float32),
             "B": np.zeros(3, np.float32), "mean": np.float32([1, 2, 3]),
             "var": np.float32([1, 2, 3])}
    _, negated = session.run(None, feeds)
    momentum = np.float64(np.float32(0.9))
    running = momentum * np.float64([1, 2, 3]) + (1 - momentum) * np.float64([1.5, 2.5, 3.5])
    assert np.array_equal(negated, -running.astype(np.float32))   # its output is right
    assert np.array_equal(feeds["mean"], running.astype(np.float32))   # the input is changed


@pytest.mark.parametrize("entry", _entries("openvino"), ids=lambda e: e["name"])
def test_an_openvino_reduction_still_fails_where_onnxruntime_agrees_with_float64(entry):
    """Bug 5 of docs/found-bugs.md: OpenVINO's CPU plugin gives a float16 node reading a graph
    input another node broadcasts to an empty result a value unrelated to its operands (it
    changes from run to run, so only the mismatch is pinned); onnxruntime, on the same model
    and inputs, gives the float64 recomputation rounded once."""
    ov = pytest.importorskip("openvino")
    feeds = dict(np.load(LEDGER / f"{entry['name']}.npz"))
    values = _ort_values(entry["name"], feeds)
    want = _wanted(entry, values)
    assert float(want.ravel()[0]) == entry["rounded"]
    assert np.array_equal(values[entry["output"]], want)
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(LEDGER / f"{entry['name']}.onnx")), "CPU",
                                  {"INFERENCE_NUM_THREADS": 1})
    outputs = compiled.create_infer_request().infer(feeds)
    got = next(v for k, v in outputs.items() if entry["output"] in k.get_names())
    wrong = np.flatnonzero(got.ravel() != np.broadcast_to(want, got.shape).ravel())
    assert wrong.size == entry["mismatched_enable_all"]


def test_openvino_reduces_the_wrong_axis_of_an_unsqueezed_value():
    """Bug 6 of docs/found-bugs.md: ``ReduceMean(Unsqueeze(x, axes=[-2]), axes=[-3],
    keepdims=1)`` with x of shape [2, 3, 4], as run (the reduction's output the model's only
    output): OpenVINO reduces x's axis 0 (-3 counted in x's rank 3, not in the rank 4 of the
    Unsqueeze's output, which the text makes the reduction's data), giving shape [1, 1, 3, 4]
    where the float64 recomputation has [2, 1, 1, 4]; its values are x's mean over axis 0.
    onnxruntime, on the same model, agrees with the recomputation."""
    ov = pytest.importorskip("openvino")
    name = "graph-193-onnx_unsqueeze-onnx_reduce_mean-openvino"
    entry = next(e for e in json.loads((LEDGER / "ledger.json").read_text())
                 if e["name"] == name)
    feeds = dict(np.load(LEDGER / f"{name}.npz"))
    x = feeds["x0_0"].astype(np.float64)
    want = np.expand_dims(x, -2).mean(axis=-3, keepdims=True)
    assert list(want.shape) == entry["shape_float64"]
    np.testing.assert_allclose(_ort_values(name, feeds)["v3"], want, rtol=1e-6)
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(LEDGER / f"{name}.onnx")), "CPU",
                                  {"INFERENCE_NUM_THREADS": 1})
    (got,) = compiled.create_infer_request().infer(feeds).values()
    assert list(got.shape) == entry["shape_openvino"] != entry["shape_float64"]
    np.testing.assert_allclose(got.ravel(), x.mean(axis=0).ravel(), rtol=1e-6)
