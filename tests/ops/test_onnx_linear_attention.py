"""ONNX LinearAttention-27 (ops/onnx_linear_attention.py): each update rule against the doc's
formula written out token by token, GQA, the onnx package's node test cases, the bound, runs
on onnxruntime (opset 27) and numpy, and the judge catching a gate applied after the write."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conform.generators._case import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate

sys.path.insert(0, str(Path(__file__).parent))
from backend_runs import judged, numpy_backend, onnxruntime  # noqa: E402,F401 - a fixture
from onnx_node_cases import assert_reproduces, node_cases  # noqa: E402

OP = "onnx_linear_attention"
NAMES = ("query", "key", "value", "past_state", "decay", "beta")
RNG = np.random.default_rng(13)


def _doc(q, k, v, s, g, beta, rule, scale):
    """The doc's four rules for one head, token by token (vectors per token)."""
    outs = []
    for t in range(q.shape[0]):
        e = np.exp(g[t]) if g is not None else 1.0
        if rule == "linear":
            s = s + np.outer(k[t], v[t])
        elif rule == "gated":
            s = e[:, None] * s + np.outer(k[t], v[t])
        elif rule == "delta":
            s = s + beta[t] * np.outer(k[t], v[t] - s.T @ k[t])
        else:
            s = e[:, None] * s + beta[t] * np.outer(k[t], v[t] - (e[:, None] * s).T @ k[t])
        outs.append(scale * q[t] @ s)
    return np.array(outs), s


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
def test_each_rule_is_the_docs_recurrence(rule):
    t, dk, dv = 4, 3, 2
    q, k, v = RNG.uniform(-1, 1, (1, t, dk)), RNG.uniform(-1, 1, (1, t, dk)), \
        RNG.uniform(-1, 1, (1, t, dv))
    past, decay, beta = RNG.uniform(-1, 1, (1, 1, dk, dv)), RNG.uniform(-1, 0, (1, t, dk)), \
        RNG.uniform(0, 1, (1, t, 1))
    given = {"query": q, "key": k, "value": v, "past_state": past}
    if "gated" in rule:
        given["decay"] = decay
    if "delta" in rule:
        given["beta"] = beta
    attrs = {"q_num_heads": 1, "kv_num_heads": 1, "update_rule": rule,
             "absent_inputs": [n for n in NAMES if n not in given]}
    out, state = evaluate(OP, [given[n] for n in NAMES if n in given], attrs)
    want, want_state = _doc(q[0], k[0], v[0], past[0, 0], decay[0] if "gated" in rule else None,
                            beta[0, :, 0], rule, 1 / np.sqrt(dk))
    assert np.allclose(out[0], want, rtol=1e-13) and np.allclose(state[0, 0], want_state)


def test_query_heads_share_their_groups_state():
    q, k, v = RNG.uniform(-1, 1, (1, 2, 4 * 2)), RNG.uniform(-1, 1, (1, 2, 2 * 2)), \
        RNG.uniform(-1, 1, (1, 2, 2 * 3))
    attrs = {"q_num_heads": 4, "kv_num_heads": 2, "update_rule": "linear", "scale": 0.5,
             "absent_inputs": ["past_state", "decay", "beta"]}
    out, _ = evaluate(OP, [q, k, v], attrs)
    for h in range(4):
        kv = h // 2
        want, _ = _doc(q[0, :, 2 * h:2 * h + 2], k[0, :, 2 * kv:2 * kv + 2],
                       v[0, :, 3 * kv:3 * kv + 3], np.zeros((2, 3)), None, None, "linear", 0.5)
        assert np.allclose(out[0, :, 3 * h:3 * h + 3], want, rtol=1e-13)


def test_oracle_reproduces_the_node_tests():
    cases = node_cases("linear_attention")
    assert len(cases) >= 10
    for name, node, inputs, outputs in cases:
        assert_reproduces(OP, node, inputs, outputs, NAMES, evaluate)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_onnxruntime_passes_at_opset_27(specs, onnxruntime, monkeypatch, dtype):
    monkeypatch.setenv("CONFORM_ONNX_OPSET", "27")
    verdicts = [j.verdict for _, j in judged(specs, onnxruntime, OP, dtype, count=12)]
    assert len(verdicts) == 12 and set(verdicts) <= {"pass", "impl_defined"}
    assert "pass" in verdicts


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_numpy_passes(specs, dtype):
    verdicts = {j.verdict for _, j in judged(specs, numpy_backend(), OP, dtype, count=12)}
    assert verdicts and verdicts <= {"pass", "impl_defined"}


def test_judge_catches_the_gate_applied_after_the_write(specs):
    """S_t = exp(g) (S_(t-1) + k (x) v) instead of exp(g) S_(t-1) + k (x) v fails."""
    q, k, v = (RNG.uniform(-1, 1, (1, 3, 2)).astype(np.float32) for _ in range(3))
    decay = RNG.uniform(-2, -1, (1, 3, 1)).astype(np.float32)
    attrs = {"q_num_heads": 1, "kv_num_heads": 1, "update_rule": "gated", "scale": 0.5,
             "absent_inputs": ["past_state", "beta"]}
    case = Case(id=f"{OP}.float32.0", op=OP, dtype="float32", input_dtypes=("float32",) * 4,
                out_dtype="float32", inputs=[q, k, v, decay], attrs=attrs, plan="normal",
                seed=0)
    right = evaluate(OP, case.inputs, attrs)
    s, outs = np.zeros((2, 2)), []
    for t in range(3):
        s = np.exp(decay[0, t, 0]) * (s + np.outer(k[0, t], v[0, t]))
        outs.append(0.5 * q[0, t] @ s)
    wrong = [np.array(outs)[None], s[None, None]]
    assert judge_outputs(specs[OP], case, [o.astype(np.float32) for o in right]).verdict == "pass"
    assert judge_outputs(specs[OP], case, [o.astype(np.float32) for o in wrong]).verdict == "fail"
