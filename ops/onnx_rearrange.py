"""ONNX's rearranging operators (ai.onnx): DepthToSpace and SpaceToDepth (DCR and CRD
modes), ReverseSequence and Trilu. Each output element is a copy of one input element (Trilu's
other elements are zeros), so every output is judged exactly.

The oracles compute each output element's source by index arithmetic from the texts; the numpy
backend follows DepthToSpace's reshape-transpose-reshape spelling, so the two are independent
readings of the same text."""
from __future__ import annotations

import numpy as np
from conform.ops.optional_inputs import by_name
from conform.ops.indexing import traced_feeding
from conform.ops.movement import moved, text_zero

from conform.model_formats import Unsupported, onnx_opset
from conform.op_registry import op, region

MODES = ("DCR", "CRD")
#: SpaceToDepth has the mode attribute from opset 28 (before it: DCR's order only).
SPACE_TO_DEPTH_MODE_SINCE = 28


# -- DepthToSpace and SpaceToDepth ----------------------------------------------------------------

def _draw_blocks(draw, kit, dtype, *, to_space: bool):
    """[N, C, H, W] with C (DepthToSpace) or H and W (SpaceToDepth) multiples of ``blocksize``
    (1 to 3), and a mode."""
    st = kit.st
    block = draw(st.integers(1, 3))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    h, w = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    shape = (n, c * block * block, h, w) if to_space else (n, c, h * block, w * block)
    attrs = {"blocksize": block, "mode": draw(st.sampled_from(MODES))}
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def _depth_index(c, i, j, channels: int, block: int, mode: str):
    """The depth (channel) index holding block offset (i, j) of output channel ``c``: DCR reads
    the depth as [blocksize, blocksize, C'] (depth, column, row: the offsets outermost), CRD as
    [C', blocksize, blocksize] (column, row, depth)."""
    if mode == "DCR":
        return (i * block + j) * channels + c
    return (c * block + i) * block + j


def _to_space_source(shape, block: int, mode: str):
    """Per element of DepthToSpace's output [N, C / b**2, H * b, W * b], its input index."""
    n, c, h, w = shape
    channels = c // (block * block)
    b, ch, y, x = np.indices((n, channels, h * block, w * block), sparse=True)
    return b, _depth_index(ch, y % block, x % block, channels, block, mode), y // block, x // block


def numpy_onnx_depth_to_space(data, *, blocksize, mode="DCR"):
    """The numpy backend: the text's reshape, transpose, reshape."""
    b, c, h, w = data.shape
    bs = blocksize
    if mode == "DCR":
        tmp = np.reshape(data, [b, bs, bs, c // bs ** 2, h, w]).transpose([0, 3, 4, 1, 5, 2])
    else:
        tmp = np.reshape(data, [b, c // bs ** 2, bs, bs, h, w]).transpose([0, 1, 4, 2, 5, 3])
    return np.reshape(tmp, [b, c // bs ** 2, h * bs, w * bs])


@moved("onnx_depth_to_space", numpy=numpy_onnx_depth_to_space,
       draw=lambda draw, kit, spec, dtype: _draw_blocks(draw, kit, dtype, to_space=True),
       onnx=lambda case, graph: graph.node(graph.op_type, graph.inputs, **case.attrs))
def oracle_onnx_depth_to_space(data, *, blocksize, mode="DCR"):
    """DepthToSpace-13: y[b, c, h * bs + i, w * bs + j] is x[b, depth, h, w] with depth =
    (i * bs + j) * C' + c in DCR mode and c * bs**2 + i * bs + j in CRD mode (the text's
    reshape and transpose, read element by element; C' = C / bs**2)."""
    return (data[_to_space_source(data.shape, blocksize, mode)],)


def onnx_space_to_depth(case, graph):
    """SpaceToDepth; ``mode`` is an attribute from opset 28 only: CRD is ruled out before it,
    DCR (the order without the attribute) is then written without it."""
    mode = case.attrs["mode"]
    if onnx_opset() < SPACE_TO_DEPTH_MODE_SINCE:
        if mode != "DCR":
            raise Unsupported(f"ONNX SpaceToDepth has mode {mode} from opset 28: the standard "
                              f"rules this case out at opset {onnx_opset()}")
        graph.node(graph.op_type, graph.inputs, blocksize=case.attrs["blocksize"])
    else:
        graph.node(graph.op_type, graph.inputs, blocksize=case.attrs["blocksize"], mode=mode)


def numpy_onnx_space_to_depth(data, *, blocksize, mode="DCR"):
    """The numpy backend: DepthToSpace's reshape and transpose run backwards."""
    b, c, h, w = data.shape
    bs = blocksize
    tmp = np.reshape(data, [b, c, h // bs, bs, w // bs, bs])
    if mode == "DCR":   # to [b, bs, bs, c, h', w']
        tmp = tmp.transpose([0, 3, 5, 1, 2, 4])
    else:               # to [b, c, bs, bs, h', w']
        tmp = tmp.transpose([0, 1, 3, 5, 2, 4])
    return np.reshape(tmp, [b, c * bs * bs, h // bs, w // bs])


@moved("onnx_space_to_depth", onnx=onnx_space_to_depth, numpy=numpy_onnx_space_to_depth,
       draw=lambda draw, kit, spec, dtype: _draw_blocks(draw, kit, dtype, to_space=False))
def oracle_onnx_space_to_depth(data, *, blocksize, mode="DCR"):
    """SpaceToDepth: 'the reverse transformation' of DepthToSpace in the same mode (DCR, the
    default, and the only order before opset 28): x[b, c, h * bs + i, w * bs + j] goes to
    y[b, depth, h, w] with depth as DepthToSpace reads it."""
    n, c, h, w = data.shape
    bs = blocksize
    b, depth, y, x = np.indices((n, c * bs * bs, h // bs, w // bs), sparse=True)
    if mode == "DCR":
        offset, ch = np.divmod(depth, c)
        i, j = np.divmod(offset, bs)
    else:
        ch, offset = np.divmod(depth, bs * bs)
        i, j = np.divmod(offset, bs)
    return (data[b, ch, y * bs + i, x * bs + j],)


# -- ReverseSequence ----------------------------------------------------------------------------

def draw_onnx_reverse_sequence(draw, kit, spec, dtype):
    """An input of rank 2 to 4 (the time axis may be empty), batch_axis and time_axis 1 and 0
    or 0 and 1, and int64 sequence_lens of the batch's length."""
    st = kit.st
    shape = list(draw(kit.shape(min_rank=2, max_rank=4, max_side=5)))
    batch_axis = draw(st.integers(0, 1))
    if draw(st.integers(0, 5)) == 0:
        shape[1 - batch_axis] = 0
    attrs = {"batch_axis": batch_axis, "time_axis": 1 - batch_axis}
    return kit.Signature((dtype, "int64"), (tuple(shape), (shape[batch_axis],)), attrs, dtype)


def values_onnx_reverse_sequence(rng, inputs, attrs):
    """Each sequence length in [0, the time axis' size]."""
    data, lens = inputs
    limit = data.shape[attrs["time_axis"]]
    return [data, rng.integers(0, limit + 1, size=lens.shape).astype(np.int64)]


def numpy_onnx_reverse_sequence(data, lens, *, batch_axis, time_axis):
    """The numpy backend: ``np.flip`` of each batch slice's first sequence_lens[i] steps."""
    out = data.copy()
    rows = np.moveaxis(out, (batch_axis, time_axis), (0, 1))   # a view of out
    source = np.moveaxis(data, (batch_axis, time_axis), (0, 1))
    for i, length in enumerate(lens.tolist()):
        rows[i, :length] = np.flip(source[i, :length], axis=0)
    return out


@op("onnx_reverse_sequence", version=1, draw=draw_onnx_reverse_sequence,
    values=values_onnx_reverse_sequence, numpy=numpy_onnx_reverse_sequence,
    feeding=traced_feeding("onnx_reverse_sequence", (0,)),
    onnx=lambda case, graph: graph.node(graph.op_type, graph.inputs, **case.attrs))
def oracle_onnx_reverse_sequence(data, sequence_lens, *, batch_axis, time_axis):
    """ReverseSequence-10: in batch slice i the first sequence_lens[i] elements along the time
    axis reversed (time t < L goes to L - 1 - t), the others copied."""
    shape = data.shape
    t = np.arange(shape[time_axis]).reshape([-1 if k == time_axis else 1 for k in range(data.ndim)])
    lengths = np.asarray(sequence_lens, np.int64).reshape(
        [-1 if k == batch_axis else 1 for k in range(data.ndim)])
    source_t = np.where(t < lengths, lengths - 1 - t, t)
    index = list(np.indices(shape, sparse=True))
    index[time_axis] = np.broadcast_to(source_t, np.broadcast_shapes(t.shape, lengths.shape))
    return (data[tuple(index)],)


# -- Trilu ----------------------------------------------------------------------------------------

def draw_onnx_trilu(draw, kit, spec, dtype):
    """[*, N, M] (N, M from 0 to 6, up to two batch dimensions), ``upper`` 0 or 1, and the 0-d
    int64 ``k`` present or absent (default 0)."""
    st = kit.st
    shape = draw(kit.shape(min_rank=2, max_rank=4, max_side=6,
                           min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    absent = kit.absent_inputs(draw, spec)
    attrs = kit.with_absent({"upper": draw(st.integers(0, 1))}, absent)
    count = 2 - len(absent)
    return kit.Signature((dtype, "int64")[:count], (shape, ())[:count], attrs, dtype)


def values_onnx_trilu(rng, inputs, attrs):
    """``k`` from past the last row below the diagonal to past the last column above it."""
    if len(inputs) == 1:
        return inputs
    data = inputs[0]
    n, m = data.shape[-2:]
    return [data, np.array(rng.integers(-n - 1, m + 2), np.int64)]


def _kept(shape, k: int, upper: int) -> np.ndarray:
    """Where Trilu keeps the element: j - i >= k (upper: 'on and above the given diagonal'),
    else j - i <= k ('on and below')."""
    n, m = shape[-2:]
    offset = np.arange(m)[None, :] - np.arange(n)[:, None]
    return offset >= k if upper else offset <= k


def feed_onnx_trilu(inputs, attrs, index):
    """A kept element is a copy of the input's element there; a zeroed one copies nothing (k,
    an index, is never a term)."""
    named = by_name(("input", "k"), inputs, attrs.get("absent_inputs", ()))
    data = named["input"]
    k = int(named["k"]) if "k" in named else 0
    kept = _kept(data.shape, k, attrs["upper"])[tuple(index[-2:])]
    return [data[tuple(index)].reshape(1) if kept else data.ravel()[:0]] \
        + [None] * (len(inputs) - 1)


def numpy_onnx_trilu(data, *k, upper, absent_inputs=()):
    """The numpy backend: ``np.triu`` or ``np.tril`` (over the last two axes); for text, the
    same of a mask, and the empty string elsewhere (NumPy's zero of an object array is 0)."""
    diagonal = int(k[0]) if k else 0
    keep = np.triu if upper else np.tril
    if data.dtype == object:
        return np.where(keep(np.ones(data.shape[-2:], bool), diagonal), data, "")
    return keep(data, diagonal)


@op("onnx_trilu", version=1, draw=draw_onnx_trilu, values=values_onnx_trilu,
    draw_honours=frozenset({"optional", "scalar"}), numpy=numpy_onnx_trilu,
    feeding=feed_onnx_trilu,
    onnx=lambda case, graph: graph.node(graph.op_type, graph.inputs, upper=case.attrs["upper"]))
def oracle_onnx_trilu(data, *k, upper, absent_inputs=()):
    """Trilu-14: with ``upper`` the elements on and above diagonal k (j - i >= k), else those
    on and below it (j - i <= k), of each [N, M] matrix; 'All other elements in the matrix are
    set to zero'; k defaults to 0."""
    diagonal = int(k[0]) if k else 0
    return (np.where(_kept(data.shape, diagonal, upper), data, text_zero(data)),)


@region
def trilu_text_zero(ctx) -> np.ndarray:
    """Trilu of string data: the elements the text 'set to zero', which it does not define
    for text (no zero string is named: the empty one, "0", or another)."""
    data = ctx.inputs[0]
    if data.dtype != object:
        return ctx.none()
    named = by_name(("input", "k"), ctx.inputs, ctx.attrs.get("absent_inputs", ()))
    k = int(named["k"]) if "k" in named else 0
    return np.broadcast_to(~_kept(data.shape, k, ctx.attrs["upper"]), ctx.expected.shape)
