"""ONNX Attention at opsets 23 and 24 (ops/onnx_attention.py, ops/onnx_attention_bound.py):
the text's pattern on hand-worked cases, the onnx package's node test cases, the bound, runs
on onnxruntime and numpy, the judge catching wrong head mappings and causal alignments, and
onnxruntime 1.32's deviations from the text, each pinned with its repro.

onnxruntime 1.32's deviations (reproduce with
``conform run --backend onnxruntime --onnx-opset 23 --ops 'onnx_attention*' --dtypes float32
--out /tmp/att`` then ``conform repro ID --from /tmp/att`` on a failing case):

1. With a KV cache and kv_sequence_length != q_sequence_length, is_causal=1 lets query i see
   keys up to ``i + total - q_seq`` instead of the text's ``i + past_sequence_length``
   (onnx.reference agrees with the text).
2. qk_matmul_output in mode 2 holds the lowest finite float where the causal frontier masks,
   not the text's -inf ('disallowed positions contribute -inf to the bias').
3. An attn_mask whose q_sequence dimension is 1 (broadcast, which the text allows: 'Shape
   must be broadcastable') is refused: 'inconsistent q_sequence_length'.
4. Opset 24: an attn_mask shorter than total_sequence_length (the text: 'will be padded to
   total_sequence_length with negative infinity') is refused: 'inconsistent
   total_sequence_length'.
5. At opsets 25 to 28 (the spec onnx_attention_kv_cache binds 24 to 28: 25's text adds only
   the window attributes), softcap of a subnormal score is 502 smallest subnormals off
   (opset 24: 2), beyond tanh_ulp; deviations 2 to 4 are gone there. Repro:
   ``conform run --backend onnxruntime --onnx-opset 27 --ops onnx_attention_kv_cache
   --dtypes float32 --out /tmp/att27``, then ``conform repro onnx_attention_kv_cache.float32.0
   --from /tmp/att27``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.ops import definition
from conform.oracles import evaluate

sys.path.insert(0, str(Path(__file__).parent))
from backend_runs import judged, numpy_backend, onnxruntime  # noqa: E402,F401 - a fixture
from onnx_node_cases import assert_reproduces, node_cases_at_opsets  # noqa: E402

RNG = np.random.default_rng(5)
FORMALS = ("Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen")


def _attend(q, k, v, **attrs):
    """Y of a 4-D case without mask or cache (opset 24)."""
    attrs["absent_inputs"] = ["attn_mask", "nonpad_kv_seqlen"]
    return evaluate("onnx_attention", [q, k, v], attrs)[0]


def test_one_query_weights_its_keys_by_the_softmax_of_scaled_scores():
    q = np.array([1.0, 0.0, 0.0, 0.0]).reshape(1, 1, 1, 4)
    k = np.array([[2.0, 0, 0, 0], [0.0, 0, 0, 0]]).reshape(1, 1, 2, 4)
    v = np.array([[1.0], [3.0]]).reshape(1, 1, 2, 1)
    w = np.exp(2.0 / 2) / (np.exp(2.0 / 2) + 1)   # scale 1/sqrt(4)
    assert np.isclose(_attend(q, k, v).item(), w * 1 + (1 - w) * 3, rtol=1e-15)
    capped = 2.5 * np.tanh(1.0 / 2.5)
    w = np.exp(capped) / (np.exp(capped) + 1)
    assert np.isclose(_attend(q, k, v, softcap=2.5, scale=0.5).item(), w + 3 * (1 - w),
                      rtol=1e-15)


def test_gqa_query_head_h_reads_key_head_h_over_the_group():
    """4 query heads over 2 key/value heads: heads 0 and 1 read kv head 0, 2 and 3 kv head 1."""
    q = RNG.uniform(-1, 1, (1, 4, 2, 3))
    k, v = RNG.uniform(-1, 1, (1, 2, 3, 3)), RNG.uniform(-1, 1, (1, 2, 3, 2))
    y = _attend(q, k, v)
    for h in range(4):
        alone = _attend(q[:, h:h + 1], k[:, h // 2:h // 2 + 1], v[:, h // 2:h // 2 + 1])
        assert np.allclose(y[:, h:h + 1], alone, rtol=1e-14, atol=0)


def test_3d_inputs_are_split_into_heads_and_y_merged_back():
    q, k, v = (RNG.uniform(-1, 1, (1, 2, 2, 3)), RNG.uniform(-1, 1, (1, 2, 4, 3)),
               RNG.uniform(-1, 1, (1, 2, 4, 5)))
    flat = [x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1) for x in (q, k, v)]
    (y3,) = evaluate("onnx_attention", flat, {"q_num_heads": 2, "kv_num_heads": 2,
                                              "absent_inputs": ["attn_mask", "nonpad_kv_seqlen"]})
    assert y3.shape == (1, 2, 10)
    assert np.allclose(y3, _attend(q, k, v).transpose(0, 2, 1, 3).reshape(1, 2, 10), rtol=1e-14)


def test_causal_frontier_follows_the_past_length_and_a_fully_masked_row_is_zero():
    q, k, v = (RNG.uniform(-1, 1, (1, 1, 2, 2)), RNG.uniform(-1, 1, (1, 1, 2, 2)),
               RNG.uniform(-1, 1, (1, 1, 2, 2)))
    past_k, past_v = RNG.uniform(-1, 1, (1, 1, 3, 2)), RNG.uniform(-1, 1, (1, 1, 3, 2))
    y, pk, pv, qk = evaluate("onnx_attention_kv_cache_opset23", [q, k, v, past_k, past_v],
                             {"is_causal": 1, "qk_matmul_output_mode": 2,
                              "absent_inputs": ["attn_mask"]})
    assert np.array_equal(pk, np.concatenate([past_k, k], 2)) and pv.shape == (1, 1, 5, 2)
    assert np.isneginf(qk[0, 0, 0, 4]) and np.isfinite(qk[0, 0, 0, :4]).all()   # j <= i + 3
    assert np.isfinite(qk[0, 0, 1]).all()
    mask = np.array([[True, True], [False, False]])
    (y,) = evaluate("onnx_attention_opset23", [q, k, v, mask], {})
    assert np.all(y[0, 0, 1] == 0) and np.all(y[0, 0, 0] != 0)


def test_nonpad_kv_seqlen_pads_keys_and_shifts_the_causal_frontier():
    """Opset 24: keys j >= nonpad masked; causal offset nonpad - q_seq (negative: the leading
    query rows see no key and are zero)."""
    q, k, v = (RNG.uniform(-1, 1, (1, 1, 3, 2)), RNG.uniform(-1, 1, (1, 1, 4, 2)),
               RNG.uniform(-1, 1, (1, 1, 4, 2)))
    (y,) = evaluate("onnx_attention", [q, k, v, np.array([2])],
                    {"is_causal": 1, "absent_inputs": ["attn_mask"]})
    assert np.all(y[0, 0, 0] == 0)   # offset -1: row 0 sees no key
    assert np.allclose(y[0, 0, 1], v[0, 0, 0], rtol=1e-15)   # row 1 sees key 0 only
    assert np.allclose(y[0, 0, 2], _attend(q[:, :, 2:], k[:, :, :2], v[:, :, :2])[0, 0, 0])


def test_oracle_reproduces_the_node_tests():
    """Every node test of opsets 23 and 24 (the window attributes of 25 are not bound), each at
    its opset, within float32 (1e-5) or 16-bit (1e-2) rounding of the stored outputs."""
    count = 0
    for name, node, inputs, outputs, opset in node_cases_at_opsets("attention"):
        if any(a.name.endswith("window_size") for a in node.attribute):
            continue
        cache = len(node.input) > 4 and node.input[4] != ""
        op = ("onnx_attention_kv_cache" if cache else "onnx_attention") + \
            ("" if opset >= 24 else "_opset23")
        assert_reproduces(op, node, inputs, outputs, FORMALS, evaluate)
        count += 1
    assert count >= 80


def test_the_bound_grows_with_the_scores_and_is_zero_for_copies():
    hook = definition("onnx_attention_kv_cache").error_bound
    q, k, v = (RNG.uniform(-1, 1, (1, 1, 2, 4)), RNG.uniform(-1, 1, (1, 1, 3, 4)),
               RNG.uniform(-1, 1, (1, 1, 3, 2)))
    past = np.zeros((1, 1, 1, 4)), np.zeros((1, 1, 1, 2))
    constants = {f"{f}_ulp_{t}": 3 for f in ("exp", "tanh")
                 for t in ("float16", "bfloat16", "float32", "float64")}

    def bound(scale):
        attrs = {"absent_inputs": ["attn_mask"], "scale": scale}
        outs = evaluate("onnx_attention_kv_cache", [q, k, v, *past], attrs)
        return hook([q, k, v, *past], attrs, outs, out_dtype="float32", u=2.0 ** -24,
                    constants=constants, dtypes=())
    small, large = bound(0.125), bound(8.0)
    assert np.all(small[0] > 0) and np.all(large[0] > small[0])
    assert not small[1].any() and not small[2].any()
    assert np.all(small[0] < 1e-5)   # float32: a few hundred ULPs at most


def test_numpy_passes(specs):
    for name in ("onnx_attention", "onnx_attention_kv_cache_opset23"):
        for dtype in ("float16", "float32", "float64"):
            for case, judgement in judged(specs, numpy_backend(), name, dtype, count=12):
                assert judgement.verdict in ("pass", "impl_defined"), (case.id, judgement.reason)


def _deviation(case, verdict: str, reason: str) -> str | None:
    """Which pinned onnxruntime deviation explains a failing or erring case (None: none)."""
    if "inconsistent q_sequence_length" in reason:
        return "mask_q_broadcast"
    if "inconsistent total_sequence_length" in reason:
        return "short_mask"
    if verdict == "fail" and "qk_matmul_output" in reason \
            and case.attrs.get("qk_matmul_output_mode") == 2:
        return "mode2_lowest"
    if verdict == "fail" and case.attrs.get("is_causal") \
            and case.op.startswith("onnx_attention_kv_cache"):
        q, k = case.inputs[0], case.inputs[1]
        q_seq, kv_seq = (q.shape[1], k.shape[1]) if q.ndim == 3 else (q.shape[2], k.shape[2])
        if q_seq != kv_seq:
            return "causal_offset"
    return None


def _ort_verdicts(spec, backend, dtype, count):
    """(case, verdict, reason) of drawn cases run on onnxruntime (an error: its message)."""
    from conform.harness.backends.models import run_case
    from conform.model_formats import Unsupported

    for case in generate_cases(spec, dtype, count=count, seed=9):
        try:
            outputs = run_case(backend, spec, case)
        except Unsupported:
            continue
        except Exception as exc:   # noqa: BLE001 - onnxruntime refusing the model
            yield case, "error", str(exc)
            continue
        judgement = judge_outputs(spec, case, outputs)
        yield case, judgement.verdict, f"{judgement.worst} {judgement.reason}"


@pytest.mark.parametrize("name,opset", [("onnx_attention_opset23", 23),
                                        ("onnx_attention_kv_cache_opset23", 23),
                                        ("onnx_attention", 24), ("onnx_attention_kv_cache", 24)])
def test_onnxruntime_fails_only_where_a_pinned_deviation_explains_it(
        specs, onnxruntime, monkeypatch, name, opset):
    monkeypatch.setenv("CONFORM_ONNX_OPSET", str(opset))
    passed = 0
    for dtype in ("float16", "float32"):
        for case, verdict, reason in _ort_verdicts(specs[name], onnxruntime, dtype, 12):
            if verdict in ("pass", "impl_defined"):
                passed += 1
                continue
            assert _deviation(case, verdict, reason), (case.id, verdict, reason)
    assert passed


def _model(inputs, node, opset, outputs):
    """A one-node model over float (or bool) ``inputs`` named as the node's inputs."""
    from onnx import TensorProto, helper

    names = [n for n in node.input if n]
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.BOOL if x.dtype == bool
                                                    else TensorProto.FLOAT, x.shape)
                      for n, x in zip(names, inputs)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=10), dict(zip(names, inputs))


def _run_ort(inputs, node, opset, outputs):
    import onnxruntime as ort

    model, feeds = _model(inputs, node, opset, outputs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _floats(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def test_pinned_onnxruntime_causal_offset_with_a_cache_ignores_the_past_length():
    """Deviation 1: q_seq 1, 3 new keys, 2 cached: the text (and onnx.reference) attend keys
    0..2; onnxruntime 1.32 attends all 5."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    q, k, v, pk, pv = _floats(1, 1, 1, 4), _floats(1, 1, 3, 4), _floats(1, 1, 3, 2), \
        _floats(1, 1, 2, 4), _floats(1, 1, 2, 2)
    node = helper.make_node("Attention", ["Q", "K", "V", "", "pk", "pv"], ["Y", "PK", "PV"],
                            is_causal=1)
    (got, *_) = _run_ort([q, k, v, pk, pv], node, 23, ["Y", "PK", "PV"])
    attrs = {"absent_inputs": ["attn_mask"]}
    text = evaluate("onnx_attention_kv_cache_opset23", [q, k, v, pk, pv],
                    {**attrs, "is_causal": 1})[0]
    every_key = evaluate("onnx_attention_kv_cache_opset23", [q, k, v, pk, pv], attrs)[0]
    assert np.allclose(got, every_key, atol=1e-6) and not np.allclose(got, text, atol=1e-3)
    model, feeds = _model([q, k, v, pk, pv], node, 23, ["Y", "PK", "PV"])
    second = ReferenceEvaluator(model).run(None, feeds)[0]   # a second opinion, not the oracle
    assert np.allclose(second, text, atol=1e-6)


def test_pinned_onnxruntime_mode2_output_holds_the_lowest_float_not_minus_inf():
    """Deviation 2: the causal frontier in the mode-2 qk_matmul_output."""
    from onnx import helper

    q, k, v = _floats(1, 1, 2, 2), _floats(1, 1, 2, 2), _floats(1, 1, 2, 2)
    node = helper.make_node("Attention", ["Q", "K", "V", "", "pk", "pv"],
                            ["Y", "PK", "PV", "QK"], is_causal=1, qk_matmul_output_mode=2)
    empty = np.zeros((1, 1, 0, 2), np.float32)
    qk = _run_ort([q, k, v, empty, empty], node, 23, ["Y", "PK", "PV", "QK"])[3]
    assert qk[0, 0, 0, 1] == np.finfo(np.float32).min   # the text: -inf


@pytest.mark.parametrize("opset,mask_shape,message", [
    (23, (1, 3), "inconsistent q_sequence_length"),
    (24, (2, 2), "inconsistent total_sequence_length")])
def test_pinned_onnxruntime_refuses_masks_the_text_allows(opset, mask_shape, message):
    """Deviations 3 and 4: a mask broadcasting over the queries; at opset 24 a mask shorter
    than the keys (padded with -inf by the text)."""
    from onnx import helper

    q, k, v = _floats(1, 1, 2, 2), _floats(1, 1, 3, 2), _floats(1, 1, 3, 2)
    mask = np.ones(mask_shape, bool)
    node = helper.make_node("Attention", ["Q", "K", "V", "M"], ["Y"])
    with pytest.raises(Exception, match=message):
        _run_ort([q, k, v, mask], node, opset, ["Y"])
    (want,) = evaluate(f"onnx_attention{'_opset23' if opset == 23 else ''}", [q, k, v, mask],
                       {"absent_inputs": [] if opset == 23 else ["nonpad_kv_seqlen"]})
    assert np.isfinite(want).all()


def _case(op, inputs, attrs):
    from conform.generators._case import Case

    inputs = [x.astype(np.float32) if x.dtype.kind == "f" else x for x in inputs]
    return Case(id=f"{op}.float32.0", op=op, dtype="float32",
                input_dtypes=tuple(str(x.dtype) for x in inputs), out_dtype="float32",
                inputs=inputs, attrs=attrs, plan="normal", seed=0)


def test_judge_catches_a_modulo_head_mapping(specs):
    """GQA read as query head h -> kv head h % kv_heads (not h // group) fails."""
    q, k, v = _floats(1, 4, 3, 4), _floats(1, 2, 4, 4), _floats(1, 2, 4, 3)
    attrs = {"absent_inputs": ["attn_mask", "nonpad_kv_seqlen"]}
    case = _case("onnx_attention", [q, k, v], attrs)
    spread = np.arange(4) % 2
    (wrong,) = evaluate("onnx_attention", [q, k[:, spread], v[:, spread]], attrs)
    assert judge_outputs(specs["onnx_attention"], case, [wrong.astype(np.float32)]).verdict \
        == "fail"
    (right,) = evaluate("onnx_attention", case.inputs, attrs)
    assert judge_outputs(specs["onnx_attention"], case, [right.astype(np.float32)]).verdict \
        == "pass"


def test_judge_catches_nan_for_a_fully_masked_row(specs):
    spec, caught = specs["onnx_attention_opset23"], 0
    for case in generate_cases(spec, "float32", count=60, seed=3):
        (want,) = evaluate(spec.op, case.inputs, case.attrs)
        empty = np.all(want == 0, axis=-1, keepdims=True)
        if case.plan != "normal" or not empty.any() or empty.all():
            continue
        wrong = np.where(empty, np.nan, want).astype(np.float32)
        assert judge_outputs(spec, case, [wrong]).verdict == "fail", case.id
        caught += 1
    assert caught


def test_judge_catches_a_top_left_causal_frontier_with_a_cache(specs):
    """query i attending keys j <= i (ignoring the 3 cached keys) fails."""
    q, k, v = _floats(1, 1, 2, 4), _floats(1, 1, 2, 4), _floats(1, 1, 2, 3)
    past = _floats(1, 1, 3, 4), _floats(1, 1, 3, 3)
    attrs = {"is_causal": 1, "absent_inputs": ["attn_mask"]}
    case = _case("onnx_attention_kv_cache", [q, k, v, *past], attrs)
    want = evaluate("onnx_attention_kv_cache", case.inputs, attrs)
    top_left = np.tril(np.ones((2, 5), bool))
    wrong = evaluate("onnx_attention_kv_cache", [*case.inputs[:3], top_left, *case.inputs[3:]],
                     {})
    judge = judge_outputs(specs["onnx_attention_kv_cache"], case,
                          [wrong[0].astype(np.float32)] + [w.astype(np.float32) for w in want[1:]])
    assert judge.verdict == "fail"


def test_y_is_fed_by_its_query_row_and_the_attended_keys_values_and_cache():
    """Causal, 2 cached keys, query 0 attends the cache and new key 0; with one key left by
    the mask only that value's feature feeds (its weight is 1 whatever the scores)."""
    from conform.oracles.feeding import feeding_elements

    q, k, v = _floats(1, 2, 2, 3), _floats(1, 1, 3, 3), _floats(1, 1, 3, 2)
    pk, pv = _floats(1, 1, 2, 3), _floats(1, 1, 2, 2)
    fed = feeding_elements("onnx_attention_kv_cache", [q, k, v, pk, pv],
                           {"is_causal": 1, "absent_inputs": ["attn_mask"]}, [0, 1, 0, 1])
    assert [f.tolist() for f in fed] == [q[0, 1, 0].tolist(), k[0, 0, 0].tolist(),
                                         [v[0, 0, 0, 1]], pk[0, 0].ravel().tolist(),
                                         pv[0, 0, :, 1].tolist()]
    mask = np.array([[True, False, True], [False, False, True]])
    flat = [x[0].transpose(1, 0, 2).reshape(1, x.shape[2], -1) for x in (q, k, v)]
    fed = feeding_elements("onnx_attention", [*flat, mask],
                           {"q_num_heads": 2, "kv_num_heads": 1,
                            "absent_inputs": ["nonpad_kv_seqlen"]}, [0, 1, 3])
    assert [f.size for f in fed] == [0, 0, 1, 0] and fed[2][0] == v[0, 0, 2, 1]


def test_pinned_onnxruntime_softcap_of_a_subnormal_score_from_opset_25():
    """Deviation 5: scores -2**-128 (a float32 subnormal), softcap 10: the text's
    10 tanh(s / 10) is s to within a few subnormal ULPs; onnxruntime's opset-25 kernel is
    502 off, its opset-24 one 2."""
    from onnx import helper

    inputs = [np.full((1, 1, 1, 1), 2.0 ** -126, np.float32), -np.ones((1, 1, 1, 1), np.float32),
              np.ones((1, 1, 1, 1), np.float32), np.zeros((1, 1, 0, 1), np.float32),
              np.zeros((1, 1, 0, 1), np.float32)]
    node = helper.make_node("Attention", ["Q", "K", "V", "", "pk", "pv"],
                            ["Y", "PK", "PV", "QK"], scale=0.25, softcap=10.0,
                            qk_matmul_output_mode=1)
    off = {opset: (_run_ort(inputs, node, opset, ["Y", "PK", "PV", "QK"])[3].item()
                   + 2.0 ** -128) / 2.0 ** -149 for opset in (24, 25)}
    assert abs(off[24]) <= 4 and abs(off[25]) == 502


def test_attention_25_window_attends_the_keys_of_the_texts_diagram():
    """Attention-25's sliding-window diagram (S_q=4, S_k=6, left_window_size=2,
    right_window_size=1, offset 0): q0 attends {k0,k1}, q1 {k0,k1,k2}, q2 {k0..k3}, q3
    {k1..k4}; -1 leaves a side unbounded."""
    from conform.ops.onnx_attention_stages import attention_bias

    bias = attention_bias({}, {"left_window_size": 2, "right_window_size": 1}, (1, 1, 4, 6))
    attended = [set(np.flatnonzero(row == 0)) for row in bias[0, 0]]
    assert attended == [{0, 1}, {0, 1, 2}, {0, 1, 2, 3}, {1, 2, 3, 4}]
    open_left = attention_bias({}, {"left_window_size": -1, "right_window_size": 0}, (1, 1, 4, 6))
    assert [set(np.flatnonzero(row == 0)) for row in open_left[0, 0]][3] == {0, 1, 2, 3}


def test_an_integer_mask_row_of_one_value_is_judged_and_a_mixed_row_is_open(specs, monkeypatch):
    """U allows integer masks, which the text does not read (boolean: True takes part; float:
    added). The oracle adds the values; a row of one nonzero value gives the unmasked Y under
    either reading (Softmax ignores a constant added to a row) and is judged, a mixed row is
    the region attention_integer_mask. onnxruntime misreads an int16 mask under is_causal
    (pinned: docs/failures/onnxruntime.yaml ort-attention-integer-mask)."""
    from conform.harness.backends.models import run_case
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend
    from conform.ops.regions import RegionContext, region_mask

    op, causal = "onnx_attention_integer_mask_opset23", {"is_causal": 1}
    q, k, v = _floats(1, 1, 2, 4), _floats(1, 1, 3, 4), _floats(1, 1, 3, 2)
    mask = np.int16([[2, 2, 2], [0, 1, 2]])
    (y,) = evaluate(op, [q, k, v, mask], causal)
    plain = evaluate("onnx_attention_opset23", [q, k, v],
                     {**causal, "absent_inputs": ["attn_mask"]})[0]
    assert np.allclose(y[0, 0, 0], plain[0, 0, 0], rtol=1e-12)
    assert not np.allclose(y[0, 0, 1], plain[0, 0, 1])
    case = _case(op, [q, k, v, mask], causal)
    context = RegionContext(inputs=case.inputs, expected=y, out_dtype="float32",
                            float_oracle=None, attrs=causal)
    assert region_mask(["attention_integer_mask"], context)[0, 0].tolist() == [[False] * 2,
                                                                               [True] * 2]
    result = judge_outputs(specs[op], case, [y.astype(np.float32)])   # row 0 judged, row 1 open
    assert (result.verdict, result.checked, result.impl_defined) == ("pass", 2, 2)
    monkeypatch.setenv("CONFORM_ONNX_OPSET", "23")
    got = run_case(OnnxRuntimeBackend(), specs[op], case)
    assert judge_outputs(specs[op], case, got).verdict == "fail"


def _moving(spec, inputs, attrs, index, steps):
    """Per input, the values of the elements whose change by its step (None: not changed)
    moves ``Y[index]``."""
    base = evaluate(spec.oracle, inputs, attrs)[0][index]
    found = []
    for k, (x, step) in enumerate(zip(inputs, steps)):
        moved = set()
        for j in range(x.size if step else 0):
            changed = x.copy()
            changed.flat[j] += step
            if evaluate(spec.oracle, [*inputs[:k], changed, *inputs[k + 1:]], attrs)[0][index] \
                    != base:
                moved.add(x.flat[j].item())
        found.append(moved)
    return found


@pytest.mark.parametrize("op", ["onnx_attention_integer_mask",
                                "onnx_attention_integer_mask_opset23"])
def test_an_integer_mask_case_is_fed_by_the_elements_that_move_y(specs, op):
    """The feeding rule (query row, the attended keys' rows and mask entries where more than one
    key is attended, the attended values' feature) against small changes of distinct small
    values (0.01, 0.02, ...: no softcap or Softmax saturates, which the feeding test's 1e9
    changes do) and of the integer mask (distinct integers, each changed by 1: a term added)."""
    from conform.oracles.feeding import feeding_elements

    spec, rng = specs[op], np.random.default_rng(0)
    for case in generate_cases(spec, "float64", count=6, seed=5):
        offsets = np.cumsum([0, *(x.size for x in case.inputs)])
        inputs = [((o + 1 + np.arange(x.size)) * (0.01 if k < 3 else 1)).reshape(x.shape)
                  .astype(np.float64 if k < 3 else np.int64) if k < 4 else x
                  for k, (o, x) in enumerate(zip(offsets, case.inputs))]
        y = evaluate(spec.oracle, inputs, case.attrs)[0]
        index = tuple(int(i) for i in np.unravel_index(rng.integers(y.size), y.shape))
        fed = feeding_elements(op, inputs, case.attrs, list(index))
        want = _moving(spec, inputs, case.attrs, index, [0.37] * 3 + [1, None][:len(inputs) - 3])
        assert [set() if f is None else set(f.tolist()) for f in fed] == want, (case.id, index)
