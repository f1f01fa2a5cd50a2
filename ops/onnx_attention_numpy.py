"""The numpy backend's ONNX Attention (ops/onnx_attention.py): the text's pattern computed
with NumPy in the inputs' own type, never the oracle."""
from __future__ import annotations

import numpy as np

from conform.dtypes import np_dtype
from conform.ops._lowering import unsupported
from conform.ops.onnx_attention_stages import SOFTMAX_TYPES, heads_with_cache


def _softmax(logits, masked, kind):
    """Softmax along the keys in ``kind`` (x - max, exp, sum, divide), zero on masked rows."""
    x = logits.astype(kind)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - x.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
    return np.where(masked, kind(0), p)


def attention_in_type(given: dict, attrs: dict, bias_of) -> tuple:
    """Y, present key and value, and qk_matmul_output (by its mode) in Q's type; ``bias_of``
    gives the attention bias (0, -inf or the float mask's values: exact in the type)."""
    t = given["Q"].dtype.type
    if t not in (np.float16, np.float32, np.float64):
        raise unsupported(f"numpy computes no {given['Q'].dtype} matmul of its own")
    q, k, v = heads_with_cache(given, attrs)   # data movement, dtype kept
    group = q.shape[1] // k.shape[1]
    keys, values = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = attrs.get("scale")
    scale = np.float32(1) / np.sqrt(np.float32(q.shape[-1])) if scale is None else np.float32(scale)
    root = t(np.sqrt(np.float32(scale)))
    scores = (q * root) @ (np.swapaxes(keys, -1, -2) * root)
    cap = attrs.get("softcap") or 0.0
    capped = np.tanh(scores / t(cap)) * t(cap) if cap else scores
    bias = bias_of(given, attrs, scores.shape)
    logits = capped + bias.astype(t)
    masked = np.all(bias == -np.inf, axis=-1, keepdims=True)
    kind = np_dtype(SOFTMAX_TYPES.get(attrs.get("softmax_precision"), given["Q"].dtype.name))
    if kind.type not in (np.float16, np.float32, np.float64):
        raise unsupported(f"numpy computes no softmax in {kind}")
    probs = _softmax(logits, masked, kind.type).astype(t)
    y = probs @ values
    if given["Q"].ndim == 3:
        b, h, s, d = y.shape
        y = y.transpose(0, 2, 1, 3).reshape(b, s, h * d)
    qk = (scores, capped, logits, probs)[attrs.get("qk_matmul_output_mode") or 0]
    return y, k, v, qk
