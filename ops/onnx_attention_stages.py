"""The stages of ONNX Attention's pattern (opsets 23, 24 and 25's windows) in float64, as the operator texts
and the context-dependent function body define them: the oracle of ops/onnx_attention.py and
what its bound (ops/onnx_attention_bound.py) and the numpy backend's bias read."""
from __future__ import annotations

import numpy as np

from conform.ops._double_double import accurate_matmul
from conform.ops.onnx_softmax import softmax

#: softmax_precision (a TensorProto data type) -> the type Softmax is computed in.
SOFTMAX_TYPES = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16"}


def split_heads(x: np.ndarray, heads) -> np.ndarray:
    """A 3-D (batch, seq, heads * size) input as (batch, heads, seq, size); 4-D as it is."""
    if x.ndim == 4:
        return x
    return x.reshape(x.shape[0], x.shape[1], heads, -1).transpose(0, 2, 1, 3)


def heads_with_cache(given: dict, attrs: dict):
    """Q, K and V as (batch, heads, seq, size), K and V with the past prepended (the present)."""
    q = split_heads(given["Q"], attrs.get("q_num_heads"))
    k = split_heads(given["K"], attrs.get("kv_num_heads"))
    v = split_heads(given["V"], attrs.get("kv_num_heads"))
    if "past_key" in given:
        k = np.concatenate([given["past_key"], k], axis=2)
        v = np.concatenate([given["past_value"], v], axis=2)
    return q, k, v


def scale_of(attrs: dict, head_size: int) -> float:
    """The scale attribute (a float32 value), or the text's default 1/sqrt(head_size)."""
    scale = attrs.get("scale")
    return 1.0 / np.sqrt(head_size) if scale is None else float(np.float32(scale))


def attention_bias(given: dict, attrs: dict, shape: tuple) -> np.ndarray:
    """The additive bias shaped (batch, q_heads, q_seq, total): the mask (boolean: 0 or -inf;
    float: as given; shorter than total: padded with -inf), the causal frontier and the padding
    of keys at or beyond nonpad_kv_seqlen, summed."""
    batch, _, q_seq, total = shape
    bias = np.zeros(shape)
    if "attn_mask" in given:
        mask = given["attn_mask"]
        mask = np.where(mask, 0.0, -np.inf) if mask.dtype == bool else mask.astype(np.float64)
        pad = [(0, 0)] * (mask.ndim - 1) + [(0, total - mask.shape[-1])]
        bias = bias + np.pad(mask, pad, constant_values=-np.inf)
    keys = np.arange(total)
    if "nonpad_kv_seqlen" in given:
        valid = given["nonpad_kv_seqlen"].astype(np.int64).reshape(batch, 1, 1, 1)
        bias = bias + np.where(keys < valid, 0.0, -np.inf)
        offset = valid - q_seq
    else:
        past = given["past_key"].shape[2] if "past_key" in given else 0
        offset = np.full((batch, 1, 1, 1), past)
    rows = np.arange(q_seq).reshape(1, 1, -1, 1)
    if attrs.get("is_causal"):
        bias = bias + np.where(keys > rows + offset, -np.inf, 0.0)
    return bias + window_bias(attrs, keys, rows + offset)


def window_bias(attrs: dict, keys, position) -> np.ndarray | float:
    """Attention-25's windows: 'A query at absolute position p = offset + query_index attends
    keys j satisfying p - left_window_size <= j <= p + right_window_size for each nonnegative
    bound. A value of -1 leaves that side unbounded' (-1 the default; no window before 25)."""
    left, right = attrs.get("left_window_size"), attrs.get("right_window_size")
    outside = np.zeros(np.broadcast_shapes(np.shape(keys), np.shape(position)), bool)
    if left is not None and left >= 0:
        outside |= keys < position - left
    if right is not None and right >= 0:
        outside |= keys > position + right
    return np.where(outside, -np.inf, 0.0)


def stages(given: dict, attrs: dict) -> dict:
    """Every stage of the text's pattern in float64: ``scores`` (the scaled product),
    ``capped`` (after softcap), ``bias``, ``logits`` (capped + bias), ``probs`` (Softmax, zero
    rows where the bias is -inf throughout), ``y`` (4-D), and the present key and value."""
    q, k, v = heads_with_cache(given, attrs)
    group = q.shape[1] // k.shape[1]
    keys, values = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = accurate_matmul(q, np.swapaxes(keys, -1, -2)) * scale_of(attrs, q.shape[-1])
    cap = attrs.get("softcap") or 0.0
    capped = cap * np.tanh(scores / cap) if cap else scores
    bias = attention_bias(given, attrs, scores.shape)
    logits = capped + bias
    masked = np.all(bias == -np.inf, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        probs = np.where(masked, 0.0, softmax(np.where(masked, 0.0, logits), (3,)))
    y = accurate_matmul(probs, values)
    return {"scores": scores, "capped": capped, "bias": bias, "logits": logits,
            "probs": probs, "masked": masked, "y": y, "present_key": k, "present_value": v,
            "values": values, "keys": keys, "q": q}


def y_layout(y4: np.ndarray, three_d: bool) -> np.ndarray:
    """Y as the text lays it out: 4-D as computed, or (batch, q_seq, q_heads * v_size)."""
    if not three_d:
        return y4
    b, h, s, d = y4.shape
    return y4.transpose(0, 2, 1, 3).reshape(b, s, h * d)


QK_STAGE = {0: "scores", 1: "capped", 2: "logits", 3: "probs"}
