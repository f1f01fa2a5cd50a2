"""ONNX Col2Im, written from the operator's text (``onnx.defs.get_schema("Col2Im").doc``).

'The operator rearranges column blocks back into a multidimensional image', as PyTorch's fold
(which the text names: overlapping blocks add up). The input is ``[N, C * prod(block_shape),
L]``: column ``l`` holds block ``l`` ('enumerated in increasing lexicographic-order of their
indices'), and its row ``c * K + k`` the element at kernel offset ``k`` (row-major over
block_shape, ``K = prod(block_shape)``) of channel ``c``. Per spatial axis, block ``l``'s
offset ``k`` lies at ``l * stride - pad_begin + k * dilation`` of the image (block_shape 'is the
block-shape before dilation'); positions in the padding are dropped, and there are
``L_i = floor((image_i + pad_begin + pad_end - dilation * (block_i - 1) - 1) / stride) + 1``
blocks along axis ``i`` (the convolution formulas the text's note refers to), ``L = prod L_i``.
A given image position and kernel offset receive at most one element, so each output is a sum
of at most K terms.
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import complex_array, component_dtype
from conform.ops.error_bounds import gamma, judged_bound, parts_magnitude, reaches_max_finite
from conform.op_registry import op, region
from conform.ops._double_double import accurate_sum
from conform.ops.movement import text_zero


def _geometry(attrs, n):
    strides = attrs.get("strides") or [1] * n
    dilations = attrs.get("dilations") or [1] * n
    pads = attrs.get("pads") or [0] * (2 * n)
    return strides, dilations, pads


def block_counts(image, block, attrs) -> list[int]:
    """``L_i``, the blocks along each spatial axis."""
    strides, dilations, pads = _geometry(attrs, len(image))
    n = len(image)
    return [(size + pads[i] + pads[n + i] - dilations[i] * (b - 1) - 1) // strides[i] + 1
            for i, (size, b) in enumerate(zip(image, block))]


def slots(image, block, attrs):
    """``(position, valid)``: ``[K, L]`` arrays of the flat image position of each (kernel
    offset, block), and whether it lies in the image (not the padding)."""
    strides, dilations, pads = _geometry(attrs, len(image))
    counts = block_counts(image, block, attrs)
    offsets = np.unravel_index(np.arange(math.prod(block)), block)
    blocks = np.unravel_index(np.arange(math.prod(counts)), counts)
    axes = [blocks[i][None, :] * strides[i] - pads[i] + offsets[i][:, None] * dilations[i]
            for i in range(len(image))]
    valid = np.all([(p >= 0) & (p < size) for p, size in zip(axes, image)], axis=0)
    clipped = [np.clip(p, 0, size - 1) for p, size in zip(axes, image)]
    return np.ravel_multi_index(clipped, image), valid


def _terms(x, image, block, attrs, fill):
    """``(N, C, prod(image), K)``: each image position's terms (``fill`` where none)."""
    count = math.prod(block)
    position, valid = slots(image, block, attrs)
    kernel = np.broadcast_to(np.arange(count)[:, None], position.shape)
    cols = x.reshape(x.shape[0], x.shape[1] // count, count, x.shape[2])
    terms = np.full(cols.shape[:2] + (math.prod(image), count), fill, dtype=x.dtype)
    terms[:, :, position[valid], kernel[valid]] = cols[:, :, kernel[valid],
                                                       np.nonzero(valid)[1]]
    return terms


def draw_onnx_col2im(draw, kit, spec, dtype):
    """2 or 3 spatial axes (the text: image_shape and block_shape of 'size of at least 2'),
    per axis a block of 1 to 3 (3-D: 1 to 2), a dilation of 1 to 2, a stride of 1 to 3, pads
    of 0 to 2 and an image large enough for one block; N of 1 to 2, C of 1 to 3. bool and
    string: blocks that do not overlap (stride at least the dilated block): the text sums no
    bools and no text."""
    st = kit.st
    n = draw(st.integers(2, 3))
    block = [draw(st.integers(1, 3 if n == 2 else 2)) for _ in range(n)]
    dilations = [draw(st.integers(1, 2)) for _ in range(n)]
    reach = [d * (b - 1) + 1 for b, d in zip(block, dilations)]
    apart = dtype in ("bool", "string")
    strides = [draw(st.integers(r if apart else 1, max(r, 3))) for r in reach]
    pads = [draw(st.integers(0, 2)) for _ in range(2 * n)]
    image = [max(1, r - pads[i] - pads[n + i]) + draw(st.integers(0, 3)) for i, r in enumerate(reach)]
    attrs = {"strides": strides, "dilations": dilations, "pads": pads,
             "image_shape": image, "block_shape": block}
    outer = [draw(st.integers(1, 2)), draw(st.integers(1, 3))]
    while math.prod(outer) * max(math.prod(image), math.prod(block)
                                 * math.prod(block_counts(image, block, attrs))) > kit.MAX_ARRAY_SIZE:
        image = attrs["image_shape"] = [max(1, r - pads[i] - pads[n + i]) for i, r in enumerate(reach)]
        outer = [1, 1]
        if math.prod(block) * math.prod(block_counts(image, block, attrs)) > kit.MAX_ARRAY_SIZE:
            attrs["pads"], pads = [0] * (2 * n), [0] * (2 * n)
    shape = (outer[0], outer[1] * math.prod(block), math.prod(block_counts(image, block, attrs)))
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def _sources(x, attrs) -> np.ndarray:
    """``(N, C, prod(image), K)``: the flat index into ``x`` of each image position's terms
    (-1 where none)."""
    numbered = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    return _terms(numbered, attrs["image_shape"], attrs["block_shape"], attrs, -1)


def feed_onnx_col2im(inputs, attrs, index):
    """The input elements summed into out[index]."""
    (x,) = inputs
    at = _sources(x, attrs)[index[0], index[1], np.ravel_multi_index(tuple(index[2:]),
                                                                     attrs["image_shape"])]
    return [x.ravel()[at[at >= 0]]]


@region
def col2im_text_zero(ctx) -> np.ndarray:
    """Col2Im of string data: the image elements no block reaches, which fold's zeroed image
    leaves zero, a value the text does not define for text."""
    (x,) = ctx.inputs
    if x.dtype != object:
        return ctx.none()
    return (_sources(x, ctx.attrs) < 0).all(-1).reshape(ctx.expected.shape)


def block_size(shapes, attrs) -> int:
    """At most prod(block_shape) terms are summed into one output element."""
    return math.prod(attrs["block_shape"])


def onnx_col2im(case, graph):
    """Col2Im over the input, image_shape and block_shape as int64 constants."""
    image = graph.const("image_shape", case.attrs["image_shape"])
    block = graph.const("block_shape", case.attrs["block_shape"])
    graph.node(graph.op_type, [graph.inputs[0], image, block],
               **{k: case.attrs[k] for k in ("strides", "dilations", "pads")})


def numpy_onnx_col2im(x, *, image_shape, block_shape, strides, dilations, pads):
    """The numpy backend: ``np.add.at`` of each column's elements into a zeroed image, in x's
    type (bool: ``np.logical_or.at``; text: an image of empty strings, added to)."""
    attrs = {"strides": strides, "dilations": dilations, "pads": pads}
    position, valid = slots(image_shape, block_shape, attrs)
    count = math.prod(block_shape)
    cols = x.reshape(x.shape[0], x.shape[1] // count, count, x.shape[2])
    out = np.full(cols.shape[:2] + (math.prod(image_shape),), text_zero(x), x.dtype)
    kernel, block = np.nonzero(valid)
    combine = np.logical_or if x.dtype == bool else np.add
    combine.at(out, (slice(None), slice(None), position[kernel, block]), cols[:, :, kernel, block])
    return out.reshape(out.shape[:2] + tuple(image_shape))


def from_onnx_col2im(inputs, attrs, opset):
    """A Col2Im node as a case: image_shape and block_shape (inputs) as attributes; 'If not
    present', strides and dilations default to 1 and pads to 0 along each spatial axis (the
    text)."""
    x, image_shape, block_shape = inputs
    axes = len(image_shape)
    return [x], {"image_shape": image_shape.tolist(), "block_shape": block_shape.tolist(),
                 "strides": [1] * axes, "dilations": [1] * axes, "pads": [0] * (2 * axes),
                 **attrs}


def complex_sum_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """A complex image element (the ``derived`` model of complex outputs): each part a float
    sum of at most K = prod(block_shape) terms' parts in an unfixed order, within gamma_K times
    the sum of their magnitudes (Higham 2002, §4.2; a subnormal sum is exact), the modulus of
    the error within the sum of the two parts' bounds (:func:`parts_magnitude`: a part's
    finite terms, so that a finite part beside an infinite or NaN one is still judged); NaN
    (region ``unbounded_evaluation``) where some order of the sum can overflow."""
    (x,) = inputs
    real, imag = (oracle_onnx_col2im(parts_magnitude(part), **attrs)[0]
                  for part in (np.real(x), np.imag(x)))
    g = gamma(math.prod(attrs["block_shape"]), u)
    unbounded = reaches_max_finite(np.maximum(real, imag), component_dtype(out_dtype),
                                   gamma_n=g)
    return (judged_bound(g * (real + imag), unbounded=unbounded),)


@op("onnx_col2im", version=1, draw=draw_onnx_col2im, feeding=feed_onnx_col2im,
    accumulation_length=block_size, error_bound=complex_sum_bound, onnx=onnx_col2im,
    numpy=numpy_onnx_col2im, from_onnx=from_onnx_col2im)
def oracle_onnx_col2im(x, *, image_shape, block_shape, strides, dilations, pads):
    """ONNX Col2Im: each image element the sum of the column elements the blocks place there
    (see the module docstring), 0 where none does; the float sum in double-double (complex:
    each part's); text (blocks never overlap) the one element placed there, or the empty
    string (a region)."""
    attrs = {"strides": strides, "dilations": dilations, "pads": pads}
    shape = (x.shape[0], x.shape[1] // math.prod(block_shape)) + tuple(image_shape)
    terms = _terms(x, image_shape, block_shape, attrs, text_zero(x))
    if x.dtype.kind == "f":
        return (accurate_sum(terms, axis=-1).reshape(shape),)
    if x.dtype.kind == "c":   # complex addition: each part the sum of the terms' parts
        return (complex_array(accurate_sum(terms.real, axis=-1),
                              accurate_sum(terms.imag, axis=-1)).reshape(shape),)
    return ((terms.any(-1) if x.dtype == bool else terms.sum(-1)).reshape(shape),)
