"""ONNX CausalConvWithState-27 (ops/onnx_causal_conv.py): the causal depthwise convolution,
its state and SiLU on hand-worked cases, the bound, the numpy backend, onnxruntime (which
has no kernel for the models conform builds, with symbolic dimensions, but expands the
function body where shapes are static: judged here on such a model), and the judge catching
a convolution that is not causal."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conform.generators._case import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate

sys.path.insert(0, str(Path(__file__).parent))
from backend_runs import judged, numpy_backend  # noqa: E402
from onnx_node_cases import assert_reproduces, node_cases  # noqa: E402

OP = "onnx_causal_conv_with_state"
RNG = np.random.default_rng(11)


def test_output_t_reads_the_k_positions_ending_at_t_and_the_state_keeps_the_last_k_minus_1():
    x = np.array([[[1.0, 2.0, 3.0]]])
    w = np.array([[[10.0, 100.0, 1000.0]]])   # k = 3: out[t] = 10 p[t] + 100 p[t+1] + 1000 p[t+2]
    past = np.array([[[7.0, 8.0]]])
    y, state = evaluate(OP, [x, w, past], {"absent_inputs": ["bias"]})
    assert y.ravel().tolist() == [70 + 800 + 1000, 80 + 100 + 2000, 10 + 200 + 3000]
    assert state.ravel().tolist() == [2.0, 3.0]
    y, state = evaluate(OP, [np.array([[[5.0]]]), w, np.array([0.5])],
                        {"absent_inputs": ["past_state"]})
    assert y.ravel().tolist() == [5000.5] and state.ravel().tolist() == [0.0, 5.0]


def test_silu_and_swish_apply_y_sigmoid_y():
    x, w = RNG.uniform(-2, 2, (1, 2, 4)), RNG.uniform(-1, 1, (2, 1, 2))
    absent = {"absent_inputs": ["bias", "past_state"]}
    plain, _ = evaluate(OP, [x, w], absent)
    for name in ("silu", "swish"):
        y, _ = evaluate(OP, [x, w], {**absent, "activation": name})
        assert np.allclose(y, plain / (1 + np.exp(-plain)), rtol=1e-15)


def test_oracle_reproduces_the_node_tests():
    cases = node_cases("causal_conv_with_state")
    assert len(cases) >= 10
    for name, node, inputs, outputs in cases:
        assert_reproduces(OP, node, inputs, outputs, ("input", "weight", "bias", "past_state"),
                          evaluate)


def _case(inputs, attrs):
    inputs = [x.astype(np.float32) for x in inputs]
    return Case(id=f"{OP}.float32.0", op=OP, dtype="float32",
                input_dtypes=("float32",) * len(inputs), out_dtype="float32", inputs=inputs,
                attrs=attrs, plan="normal", seed=0)


def _static_ort(case):
    """onnxruntime on a model with static shapes (it then expands the function body)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    names = [n for n in ("input", "weight", "bias", "past_state")
             if n not in case.attrs.get("absent_inputs", ())]
    node = helper.make_node("CausalConvWithState", names, ["y", "s"],
                            **{k: v for k, v in case.attrs.items() if k != "absent_inputs"})
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, x.shape)
                      for n, x in zip(names, case.inputs)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "ys"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 27)], ir_version=10)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, case.inputs)))


@pytest.mark.parametrize("activation", ["none", "silu"])
def test_onnxruntime_with_static_shapes_passes(specs, activation):
    x, w = RNG.uniform(-4, 4, (2, 3, 5)), RNG.uniform(-4, 4, (3, 1, 3))
    bias, past = RNG.uniform(-4, 4, 3), RNG.uniform(-4, 4, (2, 3, 2))
    case = _case([x, w, bias, past], {"activation": activation})
    outputs = _static_ort(case)
    assert judge_outputs(specs[OP], case, outputs).verdict == "pass"


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_numpy_passes(specs, dtype):
    verdicts = {j.verdict for _, j in judged(specs, numpy_backend(), OP, dtype, count=12)}
    assert verdicts and verdicts <= {"pass", "impl_defined"}


def test_judge_catches_a_convolution_that_looks_ahead(specs):
    """The kernel flipped (out[t] reading p[t + k - 1 - i] with weight i) fails."""
    x, w = RNG.uniform(-4, 4, (1, 2, 5)), RNG.uniform(-4, 4, (2, 1, 3))
    attrs = {"absent_inputs": ["bias", "past_state"]}
    case = _case([x, w], attrs)
    wrong = evaluate(OP, [case.inputs[0], case.inputs[1][..., ::-1].copy()], attrs)
    right = evaluate(OP, case.inputs, attrs)
    assert judge_outputs(specs[OP], case, [o.astype(np.float32) for o in right]).verdict == "pass"
    assert judge_outputs(specs[OP], case, [o.astype(np.float32) for o in wrong]).verdict == "fail"
