"""ONNX RotaryEmbedding (opset 23), written from the operator's text
(``onnx.defs.get_schema("RotaryEmbedding", 23).doc``, whose algorithm is given as Python).

The input is ``(batch, num_heads, seq, head_size)`` or ``(batch, seq, hidden)`` with the
``num_heads`` attribute; the first ``rotary_embedding_dim`` (0 or absent: ``head_size``)
features of each head are rotated, the rest copied. ``interleaved=1`` pairs features
``(2k, 2k + 1)``, else ``(k, k + rd/2)``; each pair becomes ``(cos x1 - sin x2, sin x1 + cos x2)``
with ``cos`` and ``sin`` taken from the caches: rows ``position_ids[b, s]`` of
``(max_pos + 1, rd/2)`` caches, or, without ``position_ids``, ``(batch, seq, rd/2)`` caches.
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.error_bounds import (exceeds_max_finite, gamma, judged_bound,
                                      reaches_max_finite, underflow_term)
from conform.ops.optional_inputs import ABSENT, by_name, onnx_operands

NAMES = ("x", "cos_cache", "sin_cache", "position_ids")


def _heads(x: np.ndarray, num_heads) -> np.ndarray:
    """The input as (batch, seq, heads, head_size), as the text's first lines reshape it."""
    if x.ndim == 4:
        return np.transpose(x, (0, 2, 1, 3))
    return x.reshape(x.shape[0], x.shape[1], num_heads, x.shape[2] // num_heads)


def _back(y: np.ndarray, shape: tuple) -> np.ndarray:
    """(batch, seq, heads, head_size) back to the input's layout."""
    return y.reshape(shape) if len(shape) == 3 else np.transpose(y, (0, 2, 1, 3))


def _caches(given: dict) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin as (batch, seq, 1, rd/2): cache rows at position_ids, or the caches as given."""
    cos, sin = given["cos_cache"], given["sin_cache"]
    if "position_ids" in given:
        ids = given["position_ids"].astype(np.intp)
        cos, sin = cos[ids], sin[ids]
    return cos[:, :, None, :], sin[:, :, None, :]


def _pairs(rotated: np.ndarray, interleaved) -> tuple[np.ndarray, np.ndarray]:
    """x1 and x2: the even and odd features (interleaved), else the two halves."""
    if interleaved:
        return rotated[..., 0::2], rotated[..., 1::2]
    half = rotated.shape[-1] // 2
    return rotated[..., :half], rotated[..., half:]


def _joined(real, imag, rest, interleaved) -> np.ndarray:
    """The rotated pairs put back in place, then the features not rotated."""
    if interleaved:
        rotated = np.stack([real, imag], -1).reshape(*real.shape[:-1], 2 * real.shape[-1])
    else:
        rotated = np.concatenate([real, imag], -1)
    return np.concatenate([rotated, rest], -1)


def _split(given: dict, attrs: dict):
    """(x as (b, s, h, d), rd, x1, x2, the rest, cos, sin)."""
    x = _heads(given["x"], attrs.get("num_heads"))
    rd = attrs.get("rotary_embedding_dim") or x.shape[-1]
    x1, x2 = _pairs(x[..., :rd], attrs.get("interleaved"))
    cos, sin = _caches(given)
    return x, rd, x1, x2, x[..., rd:], cos, sin


def rotary_embedding(given: dict, attrs: dict) -> np.ndarray:
    """The text's algorithm: real = cos x1 - sin x2, imag = sin x1 + cos x2 on the rotated
    features, the others unchanged, in the input's layout."""
    x, _, x1, x2, rest, cos, sin = _split(given, attrs)
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    return _back(_joined(real, imag, rest, attrs.get("interleaved")), given["x"].shape)


def _pair_bound(p, q, u, out_dtype) -> np.ndarray:
    """The bound of one two-term sum of products of magnitudes ``p`` and ``q``; NaN where a
    product exceeds the type's range or the sum may overflow in some order."""
    magnitude = p + q
    # an infinite or NaN operand: the result is a special value, settled before any bound
    each = np.where(np.isnan(magnitude), np.inf, gamma(2, u) * magnitude) \
        + underflow_term(2, out_dtype)
    unbounded = (exceeds_max_finite(p, out_dtype) | exceeds_max_finite(q, out_dtype)
                 | (np.isfinite(magnitude) & reaches_max_finite(magnitude, out_dtype,
                                                                 gamma_n=gamma(2, u))))
    return judged_bound(each, unbounded=unbounded)


def rotary_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """Each rotated feature is a two-term sum of products (``cos x1 - sin x2`` or
    ``sin x1 + cos x2``): two products and one addition in any order, or a fused multiply-add,
    err at most ``gamma_2 (|c x1| + |s x2|)`` (Higham 2002, Lemma 3.1 and §3.1), plus half the
    smallest subnormal for each product rounded below the normal range (§2.1). The features
    not rotated are copies: bound 0. NaN (region ``unbounded_evaluation``) where a product
    overflows the type though the float64 result does not, or the sum can."""
    given = by_name(NAMES, inputs, attrs.get("absent_inputs", ()))
    absolute = {k: np.abs(v) if k != "position_ids" else v for k, v in given.items()}
    x, _, x1, x2, rest, cos, sin = _split(absolute, attrs)
    with np.errstate(invalid="ignore"):
        real = _pair_bound(cos * x1, sin * x2, u, out_dtype)
        imag = _pair_bound(sin * x1, cos * x2, u, out_dtype)
    return (_back(_joined(real, imag, np.zeros_like(rest), attrs.get("interleaved")),
                  given["x"].shape),)


def feed_rotary(inputs, attrs, index):
    """out[index] reads its own feature and its partner (rotated features), the cos and sin at
    its pair's position (the position id picks them: an index, no term); a feature not
    rotated only itself."""
    given = by_name(NAMES, inputs, attrs.get("absent_inputs", ()))
    x, heads = given["x"], attrs.get("num_heads")
    flat = np.arange(x.size).reshape(x.shape)
    b, s, h, d = (int(v[0]) for v in np.nonzero(_heads(flat, heads) == flat[tuple(index)]))
    rd = attrs.get("rotary_embedding_dim") or _heads(flat, heads).shape[-1]
    if d >= rd:
        return [x[tuple(index)].reshape(1)] + [None] * (len(inputs) - 1)
    half = rd // 2
    k, partner = (d // 2, d ^ 1) if attrs.get("interleaved") else (d % half, (d + half) % rd)
    row = (int(given["position_ids"][b, s]),) if "position_ids" in given else (b, s)
    fed = [_heads(x, heads)[b, s, h, [d, partner]], given["cos_cache"][row + (k,)].reshape(1),
           given["sin_cache"][row + (k,)].reshape(1)]
    if "position_ids" in given:
        fed.append(None)   # an index, no term
    return fed


def draw_rotary(draw, kit, spec, dtype):
    """Batch 1-2, seq 1-6, heads 1-4, head size 2-8 (even), 3-D (num_heads given) or 4-D;
    rotary_embedding_dim absent, 0, or even up to head size; interleaved absent, 0 or 1;
    position_ids present (caches of 1-8 rows) or absent (caches per batch and token)."""
    st = kit.st
    batch, seq, heads = draw(st.integers(1, 2)), draw(st.integers(1, 6)), draw(st.integers(1, 4))
    head = 2 * draw(st.integers(1, 4))
    attrs = {}
    rd = draw(st.sampled_from([None, 0] + list(range(2, head + 1, 2))))
    if rd is not None:
        attrs["rotary_embedding_dim"] = rd
    interleaved = draw(st.sampled_from([None, 0, 1]))
    if interleaved is not None:
        attrs["interleaved"] = interleaved
    if draw(st.booleans()):
        x_shape = (batch, heads, seq, head)
    else:
        x_shape = (batch, seq, heads * head)
        attrs["num_heads"] = heads
    half = (rd or head) // 2
    with_ids = draw(st.booleans())
    cache = (draw(st.integers(1, 8)), half) if with_ids else (batch, seq, half)
    dtypes, shapes = [dtype] * 3, [x_shape, cache, cache]
    if with_ids:
        dtypes.append("int64")
        shapes.append((batch, seq))
    absent = [] if with_ids else ["position_ids"]
    return kit.Signature(tuple(dtypes), tuple(shapes), kit.with_absent(attrs, absent), dtype)


def values_rotary(rng, inputs, attrs):
    """position_ids in [0, rows of the caches)."""
    given = by_name(NAMES, inputs, attrs.get("absent_inputs", ()))
    if "position_ids" in given:
        rows = given["cos_cache"].shape[0]
        given["position_ids"] = rng.integers(0, rows, given["position_ids"].shape).astype(np.int64)
    return [given[name] for name in NAMES if name in given]


def numpy_rotary(*inputs, absent_inputs=(), **attrs):
    """The numpy backend: the text's steps with NumPy in the input's type (fancy indexing of
    the caches, two products and a sum or difference per rotated feature)."""
    given = by_name(NAMES, inputs, absent_inputs)
    x, _, x1, x2, rest, cos, sin = _split(given, attrs)
    real = np.subtract(cos * x1, sin * x2)
    imag = np.add(sin * x1, cos * x2)
    return (_back(_joined(real, imag, rest, attrs.get("interleaved")), given["x"].shape),)


def onnx_rotary(case, graph):
    """One RotaryEmbedding node with the attributes the case gives (an absent position_ids is
    left out)."""
    slots = list(graph.inputs) + [None] * (4 - len(graph.inputs))
    graph.node(graph.op_type, onnx_operands(slots),
               **{k: v for k, v in case.attrs.items() if k != ABSENT})


@op("onnx_rotary_embedding", version=1, draw=draw_rotary,
    draw_honours=frozenset({"optional"}), values=values_rotary, numpy=numpy_rotary, onnx=onnx_rotary,
    error_bound=rotary_bound, feeding=feed_rotary)
def oracle_rotary_embedding(*inputs, absent_inputs=(), **attrs):
    """RotaryEmbedding-23's algorithm (see :func:`rotary_embedding`)."""
    return (rotary_embedding(by_name(NAMES, inputs, absent_inputs), attrs),)
