"""ONNX Attention at opsets 23 and 24, written from the operator texts
(``onnx.defs.get_schema("Attention", v).doc``, the inputs' and attributes' texts and the
context-dependent function body, which is part of the text).

The text's pattern: ``Q * sqrt(scale)`` and ``K * sqrt(scale)`` (scale default
``1/sqrt(head_size)``), their product ``Q K^T``, ``softcap * tanh(S / softcap)`` where softcap is
not 0, the attention bias added, Softmax along the keys, the product with ``V``. 3-D inputs
``(batch, seq, heads * size)`` are split into ``q_num_heads`` / ``kv_num_heads`` heads;
``past_key`` and ``past_value`` are prepended along the sequence (``present_key``,
``present_value``). With ``kv_num_heads < q_num_heads`` (GQA, MQA) query head ``h`` reads
key/value head ``h // (q_num_heads / kv_num_heads)`` (the function body's Unsqueeze, Expand,
Reshape). The bias: a boolean ``attn_mask`` gives 0 where True and -inf where False, a float
one is added as it is; ``is_causal=1`` adds -inf where key ``j > i + offset`` (``offset`` the
past length, or at opset 24 ``nonpad_kv_seqlen - q_sequence_length`` per batch);
at opset 24 keys ``j >= nonpad_kv_seqlen[b]`` get -inf and a mask shorter than the keys is
padded with -inf. A query row whose bias is -inf for every key gives a zero row (in ``Y`` and
in the mode-3 ``qk_matmul_output``), not NaN. ``qk_matmul_output`` is, by
``qk_matmul_output_mode``, the scaled product (0), after softcap (1), after the bias (2) or
after Softmax (3).

The oracle computes every stage in float64, the two products from exact double-double dot
products (:func:`conform.ops._double_double.accurate_matmul`); the bound is
:mod:`conform.ops.onnx_attention_bound`.
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.onnx_attention_bound import attention_bound
from conform.ops.onnx_attention_draw import attention_drawer, attention_values
from conform.ops.onnx_attention_numpy import attention_in_type
from conform.ops.onnx_attention_stages import QK_STAGE, attention_bias, stages, y_layout
from conform.ops.optional_inputs import ABSENT, by_name, onnx_operands

FORMALS = ("Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen")
PLAIN_24 = ("Q", "K", "V", "attn_mask", "nonpad_kv_seqlen")
PLAIN_23 = ("Q", "K", "V", "attn_mask")
CACHE = ("Q", "K", "V", "attn_mask", "past_key", "past_value")
NODE_ATTRS = ("is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale",
              "softcap", "softmax_precision")


def attention_outputs(names: tuple, cache: bool):
    """The oracle of one spec: Y, and with the cache the present key and value and
    qk_matmul_output (by qk_matmul_output_mode)."""
    def oracle(*inputs, absent_inputs=(), **attrs):
        given = by_name(names, inputs, absent_inputs)
        at = stages(given, attrs)
        y = y_layout(at["y"], given["Q"].ndim == 3)
        if not cache:
            return (y,)
        qk = at[QK_STAGE[attrs.get("qk_matmul_output_mode") or 0]]
        return y, at["present_key"], at["present_value"], qk
    return oracle


def onnx_attention(names: tuple):
    """One Attention node: the case's inputs at their formal positions (absent ones ""), its
    attributes; every output the spec has."""
    def lower(case, graph):
        supplied = dict(zip([n for n in names if n not in case.attrs.get(ABSENT, ())],
                            graph.inputs))
        graph.node(graph.op_type, onnx_operands(supplied.get(name) for name in FORMALS),
                   **{k: case.attrs[k] for k in NODE_ATTRS if case.attrs.get(k) is not None})
    return lower


def numpy_attention(names: tuple, cache: bool):
    """The numpy backend: the text's pattern with NumPy in the inputs' type (Softmax in the
    softmax_precision type where it is given, cast back)."""
    def compute(*inputs, absent_inputs=(), **attrs):
        given = by_name(names, inputs, absent_inputs)
        outputs = attention_in_type(given, attrs, attention_bias)
        return outputs if cache else outputs[:1]
    return compute


def feed_attention(names: tuple):
    """out[index] of Y: the query row it belongs to, every key and value of its head (the
    keys' and values' own elements, the past's included); the other outputs' elements are fed
    the same (a present element is a copy, reported with its head's inputs)."""
    def feed(inputs, attrs, index):
        given = by_name(names, inputs, attrs.get(ABSENT, ()))
        fed = []
        for name in names:
            if name in given:
                fed.append(np.ravel(given[name])[:64])
        return fed
    return feed


def _register(name: str, names: tuple, cache: bool, opset: int):
    @op(name, version=1, draw=attention_drawer(names, cache, opset),
        draw_honours=frozenset({"optional"}), values=attention_values(names),
        onnx=onnx_attention(names), numpy=numpy_attention(names, cache),
        error_bound=attention_bound(names, cache),
        feeding=feed_attention(names))
    def oracle(*inputs, absent_inputs=(), **attrs):
        """Attention's pattern (see :func:`stages`) of the case's inputs."""
        return attention_outputs(names, cache)(*inputs, absent_inputs=absent_inputs, **attrs)
    return oracle


oracle_attention = _register("onnx_attention", PLAIN_24, False, 24)
oracle_attention_kv_cache = _register("onnx_attention_kv_cache", CACHE, True, 24)
oracle_attention_opset23 = _register("onnx_attention_opset23", PLAIN_23, False, 23)
oracle_attention_kv_cache_opset23 = _register("onnx_attention_kv_cache_opset23", CACHE, True, 23)

