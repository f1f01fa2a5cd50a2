"""How ONNX Attention's signatures are drawn (ops/onnx_attention.py): small shapes (sequence
lengths up to 6, heads up to 4, head sizes up to 8), every attribute and optional input the
opset's text allows."""
from __future__ import annotations

import numpy as np

from conform.ops.optional_inputs import by_name

#: softmax_precision's values (TensorProto data types) as the text lists them.
PRECISIONS = (1, 10, 11, 16)
HEAD_SPLITS = ((1, 1), (2, 1), (2, 2), (4, 1), (4, 2), (4, 4), (3, 1), (3, 3))


def _attributes(draw, st, cache: bool) -> dict:
    """is_causal, scale, softcap, softmax_precision (and, with the cache,
    qk_matmul_output_mode), each now and then absent (its default)."""
    attrs = {"is_causal": draw(st.sampled_from([None, 0, 1])),
             "scale": draw(st.sampled_from([None, None, 0.5, 0.25, 1.0, 0.125])),
             "softcap": draw(st.sampled_from([None, None, 0.0, 1.0, 2.5, 10.0])),
             "softmax_precision": draw(st.sampled_from((None, None, None) + PRECISIONS))}
    if cache:
        attrs["qk_matmul_output_mode"] = draw(st.sampled_from([None, 0, 1, 2, 3]))
    return {k: v for k, v in attrs.items() if v is not None}


def _mask_shape(draw, st, full: tuple, opset: int) -> tuple:
    """A shape broadcastable to ``full`` (batch, q_heads, q_seq, total): rank 2 to 4, each
    leading dimension its size or 1; at opset 24 the last one now and then shorter."""
    rank = draw(st.integers(2, 4))
    dims = [draw(st.sampled_from([n, 1])) for n in full[4 - rank:-1]]
    total = full[-1]
    if opset >= 24 and draw(st.booleans()):
        total = draw(st.integers(1, total))
    return tuple(dims) + (total,)


#: U's integer types: attn_mask types the schema allows whose reading the text does not give
INTEGER_MASKS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def attention_drawer(names: tuple, cache: bool, opset: int, integer_mask: bool = False):
    """The draw hook of one Attention spec (``names``: its inputs); ``integer_mask``: an
    attn_mask of one of :data:`INTEGER_MASKS` in every case."""
    def draw_attention(draw, kit, spec, dtype):
        st = kit.st
        batch, (q_heads, kv_heads) = draw(st.integers(1, 2)), draw(st.sampled_from(HEAD_SPLITS))
        q_seq, kv_seq = draw(st.integers(1, 6)), draw(st.integers(1, 6))
        size, v_size = draw(st.integers(1, 8)), draw(st.integers(1, 8))
        past = draw(st.integers(0, 4)) if cache else 0
        attrs = _attributes(draw, st, cache)
        three_d = draw(st.booleans())
        if three_d:
            attrs.update(q_num_heads=q_heads, kv_num_heads=kv_heads)
            shapes = {"Q": (batch, q_seq, q_heads * size), "K": (batch, kv_seq, kv_heads * size),
                      "V": (batch, kv_seq, kv_heads * v_size)}
        else:
            shapes = {"Q": (batch, q_heads, q_seq, size), "K": (batch, kv_heads, kv_seq, size),
                      "V": (batch, kv_heads, kv_seq, v_size)}
        dtypes = dict.fromkeys(shapes, dtype)
        if cache:
            shapes["past_key"] = (batch, kv_heads, past, size)
            shapes["past_value"] = (batch, kv_heads, past, v_size)
            dtypes.update(past_key=dtype, past_value=dtype)
        mask = draw(st.sampled_from(INTEGER_MASKS if integer_mask else [None, "bool", dtype]))
        if mask:
            shapes["attn_mask"] = _mask_shape(draw, st, (batch, q_heads, q_seq, past + kv_seq),
                                              opset)
            dtypes["attn_mask"] = mask
        if "nonpad_kv_seqlen" in names and draw(st.booleans()):
            shapes["nonpad_kv_seqlen"], dtypes["nonpad_kv_seqlen"] = (batch,), "int64"
        present = [n for n in names if n in shapes]
        absent = [n for n in names if n not in shapes]
        return kit.Signature(tuple(dtypes[n] for n in present), tuple(shapes[n] for n in present),
                             kit.with_absent(attrs, absent), dtype)
    return draw_attention


def _integer_rows(rng, mask: np.ndarray) -> np.ndarray:
    """An integer attn_mask whose rows (along the keys) are mostly one nonzero value, 1 or 2
    (where adding it and reading it as True agree: Softmax is unchanged by a constant added
    to a row), the others 0 to 2 each (region attention_integer_mask)."""
    rows = mask.shape[:-1]
    constant = rng.integers(1, 3, rows + (1,))
    mixed = rng.integers(0, 3, mask.shape)
    return np.where(rng.random(rows + (1,)) < 0.7, constant, mixed).astype(mask.dtype)


def attention_values(names: tuple):
    """nonpad_kv_seqlen in [0, kv_seq], and, where the mask is shorter than the keys (opset
    24), no larger than the mask's length ('still needs to be at least as long as the maximum
    value of nonpad_kv_seqlen'); an integer mask's rows as :func:`_integer_rows`."""
    def values(rng, inputs, attrs):
        given = by_name(names, inputs, attrs.get("absent_inputs", ()))
        mask = given.get("attn_mask")
        if mask is not None and mask.dtype.kind in "iu":
            given["attn_mask"] = _integer_rows(rng, mask)
        if "nonpad_kv_seqlen" in given:
            k = given["K"]
            top = k.shape[2] if k.ndim == 4 else k.shape[1]
            if "attn_mask" in given:
                top = min(top, given["attn_mask"].shape[-1])
            given["nonpad_kv_seqlen"] = rng.integers(0, top + 1, given["nonpad_kv_seqlen"].shape)
        return [np.asarray(given[name]) for name in names if name in given]
    return values
