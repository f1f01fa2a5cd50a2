"""ONNX MaxUnpool, written from the operator's text (``onnx.defs.get_schema("MaxUnpool").doc``).

'MaxUnpool essentially computes the partial inverse of the MaxPool op': the output is zero
except where the indices ``I`` point, which receive the elements of ``X`` ('all the
non-maximal values from the original input to MaxPool are set to zero'). The indices 'are
linear, i.e. computed considering the tensor as flattened 1-D tensor, assuming row-major
storage' and 'should not consider padding'. The output's shape is ``output_shape`` where that
input is given ('pads values are ignored'), else per spatial axis the inverse of MaxPool's
output size: ``(in - 1) * stride + kernel - pad_begin - pad_end`` (the attributes 'typically
have the same values as the corresponding pooling op'; the schema's shape inference computes
the same).

Where output_shape differs from that size the text is ambiguous: 'the indices ... computed
considering the tensor as flattened' names no tensor. Reading 0 (the oracle's, and what
MaxPool's Indices mean when output_shape is the pooled tensor's shape, the input the op
inverts): flat positions in the output. Reading 1 (the onnx package's node test example and
``onnx.reference``): flat positions in the tensor of the formula's size, each element put at
the same coordinates of the output ('pads values to be auto generated': the extra size at the
end). The region ``reading_differs`` holds the elements where they differ.
"""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op
from conform.ops.optional_inputs import ABSENT
from conform.ops.onnx_pooling import oracle_onnx_max_pool, window_taps


def unpooled_sizes(spatial, attrs) -> list[int]:
    """The output's spatial sizes without output_shape."""
    n = len(spatial)
    strides = attrs.get("strides") or [1] * n
    pads = attrs.get("pads") or [0] * (2 * n)
    return [(size - 1) * s + k - pads[i] - pads[n + i]
            for i, (size, s, k) in enumerate(zip(spatial, strides, attrs["kernel_shape"]))]


def draw_onnx_max_unpool(draw, kit, spec, dtype):
    """``N x C x D1..Dn`` (n of 1 to 3), per axis a kernel of 1 to 3, a stride of 1 to 3 and
    pads of 0 to kernel - 1 (set to 0 where they would leave an output size below 1 or a
    pooling window of padding alone), and output_shape present or absent."""
    st = kit.st
    n = draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 3)) for _ in range(n)]
    strides = [draw(st.integers(1, 3)) for _ in range(n)]
    pads = [draw(st.integers(0, k - 1)) for k in kernel * 2]
    outer = [draw(st.integers(1, 2)), draw(st.integers(1, 3))]
    spatial = [draw(st.integers(1, 3)) for _ in range(n)]
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads}
    while math.prod(outer) * math.prod(d + s for d, s in zip(unpooled_sizes(spatial, attrs),
                                                           strides)) > kit.MAX_ARRAY_SIZE:
        spatial = [max(1, d - 1) for d in spatial]
        outer = [1, 1]
    sizes = unpooled_sizes(spatial, attrs)
    taps = window_taps(sizes, {**attrs, "auto_pad": "NOTSET", "ceil_mode": 0}) \
        if min(sizes) >= 1 else []
    if min(sizes) < 1 or any(not inside.any(1).all() for _, inside, _ in taps):
        attrs["pads"] = [0] * (2 * n)
    absent = kit.absent_inputs(draw, spec)
    shapes = (tuple(outer + spatial),) * 2 + ((2 + n,),)[:1 - len(absent)]
    return kit.Signature((dtype, "int64", "int64")[:len(shapes)], shapes,
                         kit.with_absent(attrs, absent), dtype)


def values_onnx_max_unpool(rng, inputs, attrs):
    """X and I as MaxPool makes them, the op's typical input: MaxPool (the same kernel,
    strides and pads; ``ops/onnx_pooling.py``'s oracle) of a tensor of the output's shape whose
    elements are drawn from X's value plan; with output_shape, each spatial size 0 to
    stride - 1 past the formula's (MaxPool gives X's shape back from any of them)."""
    x, _, *given = inputs
    sizes = unpooled_sizes(x.shape[2:], attrs)
    if given:
        sizes = [size + int(rng.integers(0, s)) for size, s in zip(sizes, attrs["strides"])]
    shape = x.shape[:2] + tuple(sizes)
    source = rng.choice(x.ravel(), size=shape) if x.size else np.zeros(shape, x.dtype)
    pooled, indices = oracle_onnx_max_pool(
        source.astype(np.float64), kernel_shape=attrs["kernel_shape"], strides=attrs["strides"],
        pads=attrs["pads"], auto_pad="NOTSET", ceil_mode=0, storage_order=0)
    out = [pooled.astype(x.dtype), indices.astype(np.int64)]
    return out + [np.asarray(shape, np.int64)] if given else out


def _output_shape(x, output_shape, attrs):
    if output_shape:
        return tuple(int(d) for d in output_shape[0])
    return x.shape[:2] + tuple(unpooled_sizes(x.shape[2:], attrs))


def feed_onnx_max_unpool(inputs, attrs, index):
    """The elements of X whose index names out[index] (none: the output is 0 there)."""
    x, indices, *given = inputs
    shape = _output_shape(x, given, attrs)
    at = np.ravel_multi_index(tuple(index), shape)
    return [x[indices == at].ravel(), None] + [None] * len(given)


def onnx_max_unpool(case, graph):
    """One MaxUnpool node with the case's kernel_shape, strides and pads."""
    graph.node(graph.op_type, graph.inputs,
               **{k: case.attrs[k] for k in ("kernel_shape", "strides", "pads")})


def numpy_onnx_max_unpool(x, indices, *output_shape, kernel_shape, strides, pads,
                          absent_inputs=()):
    """The numpy backend: ``np.zeros`` of the output's shape and ``np.put`` of X at I."""
    attrs = {"kernel_shape": kernel_shape, "strides": strides, "pads": pads}
    out = np.zeros(_output_shape(x, output_shape, attrs), x.dtype)
    np.put(out, indices, x)
    return out


def from_onnx_max_unpool(inputs, attrs, opset):
    """A MaxUnpool node as a case: 'If not present, the stride defaults to 1 along each
    spatial axis', and 'the padding defaults to 0 along start and end of each' (the text);
    output_shape omitted: an absent input."""
    x, indices, *given = inputs
    axes, shape = len(attrs["kernel_shape"]), [s for s in given if s is not None]
    return [x, indices, *shape], {"strides": [1] * axes, "pads": [0] * (2 * axes), **attrs,
                                  **({} if shape else {ABSENT: ["output_shape"]})}


@op("onnx_max_unpool", version=1, draw=draw_onnx_max_unpool,
    draw_honours=frozenset({"optional"}), values=values_onnx_max_unpool,
    feeding=feed_onnx_max_unpool, onnx=onnx_max_unpool, numpy=numpy_onnx_max_unpool,
    value_dependent_shape=True, from_onnx=from_onnx_max_unpool)
def oracle_onnx_max_unpool(x, indices, *output_shape, kernel_shape, strides, pads,
                           absent_inputs=(), reading=0):
    """ONNX MaxUnpool: zeros of the output's shape (output_shape, or the inverse of MaxPool's
    size formula), with out.flat[I] = X, or (``reading`` 1) X at the coordinates I names in a
    tensor of the formula's size (see the module docstring)."""
    attrs = {"kernel_shape": kernel_shape, "strides": strides, "pads": pads}
    shape = _output_shape(x, output_shape, attrs)
    out = np.zeros(shape)
    flat = np.asarray(indices, np.int64).ravel()
    if reading:
        formula = _output_shape(x, (), attrs)
        within = flat < math.prod(formula)   # (an index past that tensor: nowhere)
        coords = np.unravel_index(np.where(within, flat, 0), formula)
        kept = within & np.all([c < n for c, n in zip(coords, shape)], axis=0)
        out[tuple(c[kept] for c in coords)] = x.ravel()[kept]
        return (out,)
    out.ravel()[flat] = x.ravel()
    return (out,)
