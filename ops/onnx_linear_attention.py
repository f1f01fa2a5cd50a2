"""ONNX LinearAttention (opset 27), written from the operator's text
(``onnx.defs.get_schema("LinearAttention", 27).doc`` and its context-dependent function body,
a Scan over the tokens): a recurrent state ``S`` (batch, kv_heads, d_k, d_v), ``past_state``
or zeros, updated per token by the ``update_rule``

* linear: ``S_t = S_(t-1) + k_t (x) v_t``
* gated: ``S_t = exp(g_t) * S_(t-1) + k_t (x) v_t``
* delta: ``S_t = S_(t-1) + beta_t k_t (x) (v_t - S_(t-1)^T k_t)``
* gated_delta (default): ``S_t = exp(g_t) S_(t-1) + beta_t k_t (x) (v_t - exp(g_t) S_(t-1)^T k_t)``

and read by ``o_t = scale q_t^T S_t`` (scale 0 or absent: ``1/sqrt(d_k)``). ``decay`` (log
space) is per key dimension (batch, T, kv_heads * d_k) or per head (batch, T, kv_heads),
``beta`` per head (batch, T, kv_heads) or shared (batch, T, 1); query head h reads the state
of kv head ``h // (q_num_heads / kv_num_heads)`` (the body's Expand and Reshape).
``chunk_size`` is a tuning hint that 'does not affect output correctness'.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op
from conform.ops._lowering import unsupported
from conform.ops.error_bounds import gamma, reaches_max_finite, underflow_term
from conform.ops.onnx_linear_attention_steps import step, step_errors, tokens
from conform.ops.optional_inputs import ABSENT, by_name, onnx_operands

NAMES = ("query", "key", "value", "past_state", "decay", "beta")
RULES = ("linear", "gated", "delta", "gated_delta")


def _scale(attrs: dict, d_k: int) -> float:
    scale = attrs.get("scale") or 0.0
    return 1.0 / np.sqrt(d_k) if scale == 0 else float(np.float32(scale))


def _read(state: np.ndarray, q_heads: int) -> np.ndarray:
    """The state each query head reads: kv head h // group."""
    return np.repeat(state, q_heads // state.shape[1], axis=1)


def linear_attention(given: dict, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    """(output (B, T, Hq * d_v), present_state): the text's recurrence, token by token."""
    rule = attrs.get("update_rule", "gated_delta")
    seq = tokens(given, attrs)
    state = seq.initial
    outputs = []
    for token in seq.steps:
        state = step(state, token, rule)
        read = _read(state, token.q.shape[1])
        outputs.append(_scale(attrs, seq.d_k) * np.einsum("bhk,bhkv->bhv", token.q, read))
    out = np.stack(outputs, 1)
    return out.reshape(out.shape[0], out.shape[1], -1), state


def linear_attention_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """The recurrence's rounding errors carried token by token (see
    :func:`conform.ops.onnx_linear_attention_steps.step_errors`: every product, sum and exp
    of the update in the body's float evaluation, or T's where coarser), then the read-out,
    ``scale q^T S`` over d_k terms (gamma_(d_k + 3): the products, their sum, the scaling and
    the float32 sqrt and reciprocal of the default scale) and the cast to T. NaN (region
    ``unbounded_evaluation``) from the token on where an intermediate magnitude of a batch row
    reaches T's largest finite value (float32's, where the body computes, is no smaller)."""
    given = by_name(NAMES, inputs, attrs.get(ABSENT, ()))
    rule = attrs.get("update_rule", "gated_delta")
    u_c = max(u, FLOAT_FORMATS["float32"].unit_roundoff)
    seq = tokens(given, attrs)
    state, error = seq.initial, np.zeros(seq.initial.shape)
    bounds, spill = [], np.zeros(seq.initial.shape[0], bool)
    for token in seq.steps:
        state, error, largest = step_errors(state, error, token, rule, u_c,
                                            constants["exp_ulp"], out_dtype)
        q = np.abs(token.q)
        read, err = _read(np.abs(state), q.shape[1]), _read(error, q.shape[1])
        scale = _scale(attrs, seq.d_k)
        value = scale * np.einsum("bhk,bhkv->bhv", q, read + err)
        each = (scale * np.einsum("bhk,bhkv->bhv", q, err)
                + gamma(seq.d_k + 3, u_c) * value + underflow_term(seq.d_k, out_dtype))
        unscaled = value.max(axis=(1, 2)) / min(scale, 1.0)   # the sum before the scaling
        spill |= reaches_max_finite(np.maximum(largest, unscaled), out_dtype)
        bounds.append(np.where(spill[:, None, None], np.nan, each))
    out = np.stack(bounds, 1)
    out = out.reshape(out.shape[0], out.shape[1], -1) + u * np.abs(outputs[0])
    present = error + u * np.abs(state) + underflow_term(1, out_dtype)
    return out, np.where(spill[:, None, None, None], np.nan, present)


def draw_linear_attention(draw, kit, spec, dtype):
    """Batch 1-2, T 1-5, heads q/kv 1/1, 2/1, 2/2, 4/2, d_k and d_v 1-4; update_rule absent or
    any; decay (per key dimension or per head) where the rule gates, beta (per head or shared)
    where it is a delta rule; past_state present or absent; scale absent, 0 or 0.5;
    chunk_size absent, 1 or 64."""
    st = kit.st
    b, t = draw(st.integers(1, 2)), draw(st.integers(1, 5))
    hq, hkv = draw(st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 2)]))
    dk, dv = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    rule = draw(st.sampled_from((None,) + RULES))
    attrs = {"q_num_heads": hq, "kv_num_heads": hkv}
    for name, choices in (("update_rule", [rule]), ("scale", [None, 0.0, 0.5]),
                          ("chunk_size", [None, 1, 64])):
        value = draw(st.sampled_from(choices))
        if value is not None:
            attrs[name] = value
    rule = rule or "gated_delta"
    shapes = {"query": (b, t, hq * dk), "key": (b, t, hkv * dk), "value": (b, t, hkv * dv)}
    if draw(st.booleans()):
        shapes["past_state"] = (b, hkv, dk, dv)
    if "gated" in rule:
        shapes["decay"] = (b, t, draw(st.sampled_from([hkv * dk, hkv])))
    if "delta" in rule:
        shapes["beta"] = (b, t, draw(st.sampled_from([hkv, 1])))
    present = [n for n in NAMES if n in shapes]
    absent = [n for n in NAMES if n not in shapes]
    return kit.Signature((dtype,) * len(present), tuple(shapes[n] for n in present),
                         kit.with_absent(attrs, absent), dtype)


def values_linear_attention(rng, inputs, attrs):
    """Keys L2-normalised per head for the delta rules ('Should be L2-normalized'), decay in
    [-2, 0] (log of a factor in (0, 1]), beta in [0, 1] (a sigmoid's output); all rounded to
    the input's type."""
    given = by_name(NAMES, inputs, attrs.get(ABSENT, ()))
    kind = given["query"].dtype
    if "delta" in attrs.get("update_rule", "gated_delta"):
        k = given["key"].astype(np.float64)
        heads = k.reshape(k.shape[0], k.shape[1], attrs["kv_num_heads"], -1)
        norm = np.sqrt(np.sum(heads ** 2, -1, keepdims=True))
        given["key"] = np.where(norm > 0, heads / np.where(norm > 0, norm, 1), heads).reshape(
            k.shape).astype(kind)
    if "decay" in given:
        given["decay"] = rng.uniform(-2, 0, given["decay"].shape).astype(kind)
    if "beta" in given:
        given["beta"] = rng.uniform(0, 1, given["beta"].shape).astype(kind)
    return [given[n] for n in NAMES if n in given]


def feed_linear_attention(inputs, attrs, index, output=0):
    """output[b, t, h d_v + d] reads row b's query head h at t, and up to t the keys,
    decays and betas of kv head h // group and its values' feature d, with column d of its
    past state (a state column evolves alone: S^T k mixes rows, never columns);
    present_state[b, kv, i, d] the same of every token."""
    given = by_name(NAMES, inputs, attrs.get(ABSENT, ()))
    hq, hkv = attrs["q_num_heads"], attrs["kv_num_heads"]
    dk, dv = given["query"].shape[-1] // hq, given["value"].shape[-1] // hkv
    if output == 0:
        b, last, j = index[0], index[1] + 1, index[2]
        h, d = j // dv, j % dv
        kv = h // (hq // hkv)
    else:
        (b, kv, _, d), last, h = index, given["key"].shape[1], None
    heads = slice(kv * dk, (kv + 1) * dk)
    fed = {"query": None if h is None else given["query"][b, last - 1, h * dk:(h + 1) * dk],
           "key": given["key"][b, :last, heads].ravel(),
           "value": given["value"][b, :last, kv * dv + d]}
    if "decay" in given:
        per_key = given["decay"].shape[-1] == hkv * dk
        fed["decay"] = given["decay"][b, :last, heads if per_key else kv].ravel()
    if "beta" in given:
        fed["beta"] = given["beta"][b, :last, kv if given["beta"].shape[-1] == hkv else 0]
    if "past_state" in given:
        fed["past_state"] = given["past_state"][b, kv, :, d]
    return [fed[name] for name in NAMES if name in given]


def onnx_linear_attention(case, graph):
    """One LinearAttention node: absent optional inputs as "", the case's attributes."""
    supplied = dict(zip([n for n in NAMES if n not in case.attrs.get(ABSENT, ())], graph.inputs))
    graph.node(graph.op_type, onnx_operands(supplied.get(name) for name in NAMES),
               **{k: v for k, v in case.attrs.items() if k != ABSENT})


def numpy_linear_attention(*inputs, absent_inputs=(), **attrs):
    """The numpy backend: the text's recurrence token by token with NumPy in the inputs' type
    (float16 and float32; ``np.exp`` of the decay, ``np.einsum`` for S^T k and q^T S)."""
    given = by_name(NAMES, inputs, absent_inputs)
    kind = given["query"].dtype.type
    if kind not in (np.float16, np.float32):
        raise unsupported(f"numpy computes no {given['query'].dtype} recurrence of its own")
    rule = attrs.get("update_rule", "gated_delta")
    seq = tokens(given, attrs, dtype=kind)
    state, outputs = seq.initial, []
    scale = kind(_scale(attrs, seq.d_k))
    for token in seq.steps:
        state = step(state, token, rule)
        outputs.append(scale * np.einsum("bhk,bhkv->bhv", token.q, _read(state, token.q.shape[1])))
    out = np.stack(outputs, 1)
    return out.reshape(out.shape[0], out.shape[1], -1).astype(kind), state.astype(kind)


@op("onnx_linear_attention", version=1, draw=draw_linear_attention,
    draw_honours=frozenset({"optional"}), values=values_linear_attention,
    onnx=onnx_linear_attention, numpy=numpy_linear_attention,
    error_bound=linear_attention_bound, feeding=feed_linear_attention)
def oracle_linear_attention(*inputs, absent_inputs=(), **attrs):
    """LinearAttention-27 (see :func:`linear_attention`)."""
    return linear_attention(by_name(NAMES, inputs, absent_inputs), attrs)

