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
padded with -inf; from opset 25 ``left_window_size`` and ``right_window_size`` (not drawn: the
examples of the onnx package give them) add -inf outside ``[p - left, p + right]``, ``p =
offset + i``, each side where it is not -1. A query row whose bias is -inf for every key gives a zero row (in ``Y`` and
in the mode-3 ``qk_matmul_output``), not NaN. ``qk_matmul_output`` is, by
``qk_matmul_output_mode``, the scaled product (0), after softcap (1), after the bias (2) or
after Softmax (3).

The oracle computes every stage in float64, the two products from exact double-double dot
products (:func:`conform.ops._double_double.accurate_matmul`); the bound is
:mod:`conform.ops.onnx_attention_bound`.
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op, region
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
              "softcap", "softmax_precision", "left_window_size", "right_window_size")


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


def _mask_at(given: dict, shape: tuple, at: tuple, keys) -> np.ndarray | None:
    """The attn_mask elements that broadcast to (b, h, i, j) for the keys ``keys``."""
    if "attn_mask" not in given:
        return None
    mask = given["attn_mask"]
    full = np.broadcast_to(np.arange(mask.size).reshape(mask.shape), shape[:-1] + (mask.shape[-1],))
    picked = full[at][keys[keys < mask.shape[-1]]]
    return mask.ravel()[picked]


def feed_attention(names: tuple):
    """Y[b, h, i, d] (3-D: Y[b, i, h v + d]) reads query row (b, h, i), and, where more than
    one key is attended (one key alone gets weight 1 whatever the scores), the attended keys'
    rows and mask entries; always the attended values' feature d (past ones included)."""
    def feed(inputs, attrs, index, output=0):
        given = by_name(names, inputs, attrs.get(ABSENT, ()))
        at = stages({k: np.asarray(v) for k, v in given.items()}, attrs)
        q_heads, v_size = at["q"].shape[1], at["values"].shape[-1]
        if len(index) == 3:
            b, i, h, d = index[0], index[1], index[2] // v_size, index[2] % v_size
        else:
            b, h, i, d = index
        kv = h // (q_heads // at["present_key"].shape[1])
        keys = np.flatnonzero(np.isfinite(at["bias"][b, h, i]))
        scored = keys if keys.size > 1 else keys[:0]
        past = given["past_key"].shape[2] if "past_key" in given else 0
        q = given["Q"][b, h, i] if given["Q"].ndim == 4 else \
            given["Q"][b, i].reshape(q_heads, -1)[h]
        fed = {"Q": q if scored.size else q[:0],
               "attn_mask": _mask_at(given, at["bias"].shape, (b, h, i), scored)}
        for name, whole, cut in (("K", at["present_key"], slice(None)),
                                 ("V", at["present_value"], d)):
            fed[f"past_{'key' if name == 'K' else 'value'}"] = \
                whole[b, kv, scored if name == "K" else keys][:, cut][
                    (scored if name == "K" else keys) < past].ravel()
            chosen = scored if name == "K" else keys
            fed[name] = whole[b, kv, chosen[chosen >= past]][:, cut].ravel()
        fed["nonpad_kv_seqlen"] = None
        return [fed[name] for name in names if name in given]
    return feed


def _register(name: str, names: tuple, cache: bool, opset: int, integer_mask: bool = False):
    @op(name, version=1, draw=attention_drawer(names, cache, opset, integer_mask),
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
oracle_attention_integer_mask = _register("onnx_attention_integer_mask", PLAIN_24, False, 24,
                                          integer_mask=True)
oracle_attention_integer_mask_opset23 = _register("onnx_attention_integer_mask_opset23", PLAIN_23,
                                                  False, 23, integer_mask=True)


@region
def attention_integer_mask(ctx) -> np.ndarray:
    """Y's elements of the query rows whose integer attn_mask row (its keys) is not one
    nonzero value: the text reads a boolean mask (True: 'take part in attention') or a float
    mask ('added to the attention score'), not an integer one, and the two readings (the
    oracle adds it; nonzero as True) differ there."""
    mask = ctx.inputs[3] if len(ctx.inputs) > 3 else None
    if mask is None or mask.dtype.kind not in "iu":
        return ctx.none()
    q = ctx.inputs[0]
    three_d = q.ndim == 3
    heads = ctx.attrs["q_num_heads"] if three_d else q.shape[1]
    b, s = q.shape[0], q.shape[1] if three_d else q.shape[2]
    rows = np.broadcast_to(mask, (b, heads, s, mask.shape[-1]))
    same = (rows == rows[..., :1]).all(-1) & (rows[..., 0] != 0)
    open_rows = np.broadcast_to(~same[..., None], (b, heads, s, ctx.expected.shape[-1] // (
        heads if three_d else 1)))
    return y_layout(open_rows, three_d)

