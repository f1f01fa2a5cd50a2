"""Contractions: dot products and convolution (XLA DotGeneral, ConvGeneralDilated; ONNX MatMul,
Conv; NNEF matmul, conv). Sums of exact products accumulate in double-double
(ops/_double_double.py) so float64 targets keep a sound reference on every platform."""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from conform.dtypes import dtype_name, int_info, is_integer
from conform.op_registry import op
from conform.ops._double_double import accurate_matmul, complex_sum_of_products, sum_of_products
from conform.ops.complex_contraction import complex_contraction_bound
from conform.ops._lowering import unsupported
from conform.ops.movement import mismatched_shapes
from conform.ops.onnx_pooling import axis_pads


# --- DotGeneral as batched matrix multiply -----------------------------------------------------

def span(start: int, length: int, step: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``start + k * step`` (k < length) that fall inside ``[0, size)``, and their
    ``k``: the rest lie in padding, which no input element fills (for windows and patches).

    >>> span(-1, 3, 1, 4)
    (array([0, 1]), array([1, 2]))
    """
    taps = np.arange(length)
    positions = start + step * taps
    inside = (positions >= 0) & (positions < size)
    return positions[inside], taps[inside]


def fitting_ints(length):
    """A ``values`` hook: integer operands of at most 16 bits brought within ``[-r, r]``, ``r``
    the largest with ``length * r**2`` inside the type (at least 1), so that a sum of
    ``length(shapes, attrs)`` products fits the type in any order and is judged exactly (a sum
    past the type is the spec's int_overflow region: a plan's values of a narrow type, as
    100 * 100 in int8, would put nearly every element there). Each value keeps its sign and its
    magnitude modulo ``r + 1``; other types are left as the value plan filled them.

    >>> fitting_ints(lambda shapes, attrs: 4)(None, [np.int8([100, -7, 3])], {})[0].tolist()
    [4, -1, 3]
    """
    def values(rng, inputs, attrs):
        n = max(length([x.shape for x in inputs], attrs), 1)
        fitted = []
        for x in inputs:
            name = dtype_name(x.dtype)
            if not is_integer(name) or int_info(name).bits > 16:
                fitted.append(x)
                continue
            r = max(1, math.isqrt(int(int_info(name).max) // n))
            wide = x.astype(np.int64)
            fitted.append((np.sign(wide) * (np.abs(wide) % (r + 1))).astype(x.dtype))
        return fitted
    return values


def dot_general_length(shapes, attrs):
    """The products summed into one element: lhs's last dimension."""
    return shapes[0][-1]


def conv_length(shapes, attrs):
    """The products summed into one element: the kernel's C * KH * KW."""
    return math.prod(shapes[1][1:])


def draw_dot_general(draw, kit, spec, dtype):
    """Batched matmul: lhs [B..., M, K] x rhs [B..., K, N]."""
    st = kit.st
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    m, n = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    k = draw(st.integers(1, 24))
    lhs, rhs = (*batch, m, k), (*batch, k, n)
    return kit.Signature((dtype, dtype), (tuple(lhs), tuple(rhs)), {}, dtype)


def feed_dot_general(inputs, attrs, index):
    """Row ``m`` of lhs and column ``n`` of rhs (in the batch of out[index])."""
    lhs, rhs = inputs   # out[b..., m, n] = sum_k lhs[b..., m, k] * rhs[b..., k, n]
    *batch, m, n = index
    return [lhs[(*batch, m)].ravel(), rhs[(*batch, slice(None), n)].ravel()]


def lax_dot_general(lax, attrs):
    def dot_general(lhs, rhs):
        batch = (tuple(range(lhs.ndim - 2)), tuple(range(rhs.ndim - 2)))
        return lax.dot_general(lhs, rhs, (((lhs.ndim - 1,), (rhs.ndim - 2,)), batch))
    return dot_general


def numpy_dot_general(lhs, rhs):
    return (np.matmul(lhs, rhs),)


def matmul_contraction(lhs, rhs, attrs):
    """A real Dot or DotGeneral (matmul) of float64 operands, for the complex bound."""
    return accurate_matmul(lhs, rhs)


@op("dot_general", version=1, draw=draw_dot_general, feeding=feed_dot_general,
    accumulation_length=dot_general_length, values=fitting_ints(dot_general_length),
    lax=lax_dot_general, numpy=numpy_dot_general,
    error_bound=complex_contraction_bound(matmul_contraction, dot_general_length))
def oracle_dot_general(lhs, rhs):
    """DotGeneral as batched matmul: out[b..., m, n] = sum_k lhs[b..., m, k] * rhs[b..., k, n]
    (complex operands: each part's sum, ops/complex_contraction.py)."""
    if lhs.dtype.kind not in "fc":
        return (np.einsum("...mk,...kn->...mn", lhs, rhs),)
    return (accurate_matmul(lhs, rhs),)


# --- 2-D convolution ------------------------------------------------------------------------------

def draw_conv(draw, kit, spec, dtype):
    """2-D convolution, NCHW input and OIHW kernel, with strides, padding and kernel dilation."""
    st = kit.st
    n, c, o = draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    kernel = [draw(st.integers(1, 3)) for _ in range(2)]
    dilation = [draw(st.integers(1, 2)) for _ in range(2)]
    strides = [draw(st.integers(1, 2)) for _ in range(2)]
    padding = [[draw(st.integers(0, 2)), draw(st.integers(0, 2))] for _ in range(2)]
    spatial = []
    for axis in range(2):
        extent = (kernel[axis] - 1) * dilation[axis] + 1 - sum(padding[axis])
        spatial.append(draw(st.integers(max(extent, 1), max(extent, 1) + 5)))
    attrs = {"window_strides": strides, "padding": padding, "rhs_dilation": dilation}
    return kit.Signature((dtype, dtype), ((n, c, *spatial), (o, c, *kernel)), attrs, dtype)


def feed_conv(inputs, attrs, index):
    """The input patch and the kernel taps over it that make out[index] (padding left out)."""
    lhs, rhs = inputs   # NCHW x OIHW -> NCHW; a negative padding crops
    batch, feature, y, x = index
    (low_h, _), (low_w, _) = attrs["padding"]
    (stride_h, stride_w), (dilation_h, dilation_w) = attrs["window_strides"], attrs["rhs_dilation"]
    kernel_h, kernel_w = rhs.shape[2:]
    rows, kernel_rows = span(y * stride_h - low_h, kernel_h, dilation_h, lhs.shape[2])
    cols, kernel_cols = span(x * stride_w - low_w, kernel_w, dilation_w, lhs.shape[3])
    channels = np.arange(lhs.shape[1])
    # the kernel taps over padding multiply zeros: only those over the operand take part
    return [lhs[batch][np.ix_(channels, rows, cols)].ravel(),
            rhs[feature][np.ix_(channels, kernel_rows, kernel_cols)].ravel()]


def onnx_conv(case, graph):
    """One Conv node; ONNX's pads 'can take any value greater than or equal to 0': XLA's
    negative (cropping) padding has no ONNX spelling."""
    (pad_h, pad_w) = case.attrs["padding"]   # kernel_shape: inferred from W
    if min(pad_h + pad_w) < 0:
        raise unsupported("ONNX Conv's pads 'can take any value greater than or equal to 0': "
                          f"the negative padding {case.attrs['padding']} has no ONNX spelling")
    kernel, dilation = case.inputs[1].shape[2:], case.attrs["rhs_dilation"]
    if any(size + sum(pad) < (k - 1) * d + 1 for size, pad, k, d in
           zip(case.inputs[0].shape[2:], (pad_h, pad_w), kernel, dilation)):
        raise unsupported("no valid placement of the window: XLA's text defines an empty "
                          "result, but the ONNX Conv text gives no output size to say so")
    graph.node(graph.op_type, graph.inputs, strides=case.attrs["window_strides"],
               dilations=case.attrs["rhs_dilation"], pads=[pad_h[0], pad_w[0], pad_h[1], pad_w[1]])


def from_onnx_conv(inputs, attrs, opset):
    """A 2-D ONNX Conv node without bias or groups as a case: strides and dilations 1 and pads
    0 where absent (the text's defaults), auto_pad SAME_UPPER/SAME_LOWER/VALID as the text's
    padding ('output_shape[i] = ceil(input_shape[i] / strides[i])', the odd one at the end
    for SAME_UPPER, at the beginning for SAME_LOWER); kernel_shape must be W's."""
    x, w = inputs[0], inputs[1]
    if (len(inputs) > 2 and inputs[2] is not None) or attrs.get("group", 1) != 1 or w.ndim != 4:
        raise ValueError("the conv spec draws 2-D convolutions without bias or groups")
    kernel = list(w.shape[2:])
    if attrs.get("kernel_shape") not in (None, kernel):
        raise ValueError(f"kernel_shape {attrs['kernel_shape']} is not W's {kernel}")
    strides, dilations = attrs.get("strides") or [1, 1], attrs.get("dilations") or [1, 1]
    pads = attrs.get("pads") or [0, 0, 0, 0]
    padding = [list(axis_pads(size, k, s, d, attrs.get("auto_pad", "NOTSET"), pads[i],
                              pads[i + 2])[:2])
               for i, (size, k, s, d) in enumerate(zip(x.shape[2:], kernel, strides, dilations))]
    return [x, w], {"window_strides": strides, "padding": padding, "rhs_dilation": dilations}


def nnef_conv(case, call):
    attrs = {"padding": [tuple(int(p) for p in pair[:2]) for pair in case.attrs["padding"]],
             "stride": case.attrs["window_strides"], "dilation": case.attrs["rhs_dilation"]}
    return call(["in0", "in1"], attrs)


def lax_conv(lax, attrs):
    return lambda lhs, rhs: lax.conv_general_dilated(
        lhs, rhs, attrs["window_strides"], [tuple(p) for p in attrs["padding"]],
        rhs_dilation=attrs["rhs_dilation"], dimension_numbers=("NCHW", "OIHW", "NCHW"))


def _pad_or_crop(x, padding):
    """Zero-pad the spatial dims; a negative amount removes that many elements instead."""
    grow = [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    padded = np.pad(x, grow)
    crop = tuple(slice(max(-lo, 0), padded.shape[2 + i] - max(-hi, 0))
                 for i, (lo, hi) in enumerate(padding))
    return padded[(slice(None), slice(None), *crop)]


def conv_windows(padded, kernel, window_strides, rhs_dilation):
    """The (n, c, y, x, i, j) taps of each valid placement of the dilated window over the
    padded (NCHW) input: 'one value for each valid placement', none on an axis the window
    does not fit."""
    reach = [(k - 1) * d + 1 for k, d in zip(kernel, rhs_dilation)]
    short = [max(r - size, 0) for r, size in zip(reach, padded.shape[2:])]
    grown = np.pad(padded, [(0, 0), (0, 0)] + [(0, gap) for gap in short])
    windows = sliding_window_view(grown, reach, axis=(2, 3))
    (sy, sx), (dh, dw) = window_strides, rhs_dilation
    windows = windows[:, :, ::sy, ::sx, ::dh, ::dw]
    return windows[:, :, :0 if short[0] else None, :0 if short[1] else None]


def numpy_conv(lhs, rhs, *, window_strides, padding, rhs_dilation):
    """The numpy backend: ``np.einsum`` over the windows in lhs's type (a negative padding
    crops, as the text says; NumPy's einsum has no loop of ml_dtypes' types, bfloat16, float8
    and the sub-byte ones: unsupported)."""
    if lhs.dtype.kind not in "fiubc" or lhs.dtype.type.__module__ != "numpy":
        raise unsupported(f"NumPy's einsum has no {lhs.dtype} loop")
    padded = _pad_or_crop(lhs, padding)
    windows = conv_windows(padded, rhs.shape[2:], window_strides, rhs_dilation)
    return (np.einsum("ncyxij,ocij->noyx", windows, rhs, dtype=lhs.dtype),)


#: (input height, padding, stride) with a 3-tap kernel of dilation 2 (5 rows) at the edges of
#: the count of valid placements: exactly one, one row too few (none: an empty output), the
#: same after negative padding removed rows, and a stride past the last row.
CONV_BOUNDARIES = ((3, [1, 1], 1), (3, [1, 0], 1), (7, [-1, -1], 2), (6, [-1, -1], 1),
                   (6, [0, 0], 2))


def boundaries_conv(kit, spec, dtype):
    """A 1 x 2 x H x 4 input, a 2 x 2 x 3 x 2 kernel: each row of :data:`CONV_BOUNDARIES` on
    the height, the width ordinary (3 placements)."""
    return [kit.Signature((dtype, dtype), ((1, 2, height, 4), (2, 2, 3, 2)),
                          {"window_strides": [stride, 1], "padding": [list(pad), [0, 0]],
                           "rhs_dilation": [2, 1]}, dtype)
            for height, pad, stride in CONV_BOUNDARIES]


def conv_contraction(lhs, rhs, attrs):
    """A real ConvWithGeneralPadding of float64 operands, for the complex bound."""
    return oracle_conv(lhs, rhs, **attrs)[0]


@op("conv", version=1, draw=draw_conv, feeding=feed_conv, onnx=onnx_conv, nnef=nnef_conv, boundaries=boundaries_conv,
    from_onnx=from_onnx_conv,
    onnx_shape_dependent=True,
    lax=lax_conv, numpy=numpy_conv, accumulation_length=conv_length,
    values=fitting_ints(conv_length),
    error_bound=complex_contraction_bound(conv_contraction, conv_length))
def oracle_conv(lhs, rhs, *, window_strides, padding, rhs_dilation):
    """2-D ConvGeneralDilated, NCHW x OIHW -> NCHW (cross-correlation, no kernel flip).

    out[n, o, y, x] = sum_{c, i, j} lhs_pad[n, c, y*sy + i*dy, x*sx + j*dx] * rhs[o, c, i, j]

    Integers are summed exactly (uint64 modulo 2**64, as widened: the spec's int_overflow
    region covers a sum past the type); PRED operands (StableHLO: add is OR, multiply AND)
    give true where some product is true; complex operands each part's sum
    (ops/complex_contraction.py).
    """
    floating = lhs.dtype.kind in "fc"
    exact = np.uint64 if lhs.dtype == np.uint64 else np.int64
    padded = _pad_or_crop(lhs if floating else lhs.astype(exact), padding)
    windows = conv_windows(padded, rhs.shape[2:], window_strides, rhs_dilation)
    if not floating:
        total = np.einsum("ncyxij,ocij->noyx", windows, rhs.astype(exact))
        return (total > 0 if lhs.dtype == np.bool_ else total,)
    # the grid (n, o, y, x, c, i, j), summed over c, i, j
    patches = windows.transpose(0, 2, 3, 1, 4, 5)[:, None]
    if lhs.dtype.kind == "c":
        return (complex_sum_of_products(patches, rhs[None, :, None, None], [-3, -2, -1]),)
    return (sum_of_products([patches, rhs[None, :, None, None]], [-3, -2, -1]),)


# --- ONNX MatMul: numpy.matmul, batch dimensions broadcast, 1-D operands promoted -----------------

def draw_onnx_matmul(draw, kit, spec, dtype):
    """A [..., M, K] x B [..., K, N] with batch dimensions that broadcast (either side may have
    fewer, or size 1 where the other is larger), now and then a 1-D A [K] or B [K] (or both: a
    0-d dot product), and now and then an empty dimension (batch, M, N or K)."""
    st = kit.st

    def dim(high):   # now and then 0: the text excludes no empty dimension
        return 0 if draw(st.integers(0, 11)) == 0 else draw(st.integers(1, high))

    batch = [dim(3) for _ in range(draw(st.integers(0, 2)))]
    m, n, k = dim(5), dim(5), dim(16)

    def side(rows_or_cols):
        keep = batch[draw(st.integers(0, len(batch))):]
        return tuple(1 if size > 1 and draw(st.integers(0, 3)) == 0 else size for size in keep) \
            + rows_or_cols

    vector = draw(st.integers(0, 6))   # 0: A is 1-D, 1: B is 1-D, 2: both, else both matrices
    lhs = (k,) if vector in (0, 2) else side((m, k))
    rhs = (k,) if vector in (1, 2) else side((k, n))
    return kit.Signature((dtype, dtype), (lhs, rhs), {}, dtype)


def _as_matrices(lhs, rhs):
    """numpy.matmul's promotion: a 1-D A is [1, K], a 1-D B is [K, 1]."""
    return (lhs[None, :] if lhs.ndim == 1 else lhs), (rhs[:, None] if rhs.ndim == 1 else rhs)


def feed_onnx_matmul(inputs, attrs, index):
    """Row ``m`` of A and column ``n`` of B in the (broadcast) batch of out[index]."""
    lhs, rhs = inputs
    index = list(index) + ([0] if rhs.ndim == 1 else [])
    if lhs.ndim == 1:
        index.insert(len(index) - 1, 0)
    a, b = _as_matrices(lhs, rhs)
    *batch, m, n = index

    def at(matrix):
        own = batch[len(batch) - (matrix.ndim - 2):] if matrix.ndim > 2 else []
        return tuple(0 if size == 1 else i for size, i in zip(matrix.shape[:-2], own))

    return [a[(*at(a), m)].ravel(), b[(*at(b), slice(None), n)].ravel()]


def invalid_onnx_matmul(kit, spec, dtype):
    """A 2 x 3 times B 4 x 5: the inner dimensions differ."""
    forbids = ("ONNX MatMul: 'Matrix product that behaves like numpy.matmul', whose text says "
               "'ValueError: If the last dimension of x1 is not the same size as the "
               "second-to-last dimension of x2.'")
    return mismatched_shapes(kit, dtype, forbids, [([(2, 3), (4, 5)], {}, (2, 5))])


@op("onnx_matmul", version=1, draw=draw_onnx_matmul, feeding=feed_onnx_matmul, invalid=invalid_onnx_matmul,
    accumulation_length=lambda shapes, attrs: shapes[0][-1])
def oracle_onnx_matmul(a, b):
    """ONNX MatMul, which 'behaves like numpy.matmul': sum_k A[..., m, k] * B[..., k, n] over
    broadcast batch dimensions, a 1-D A or B promoted to a matrix and the added dimension removed."""
    if a.dtype.kind != "f":
        return (np.matmul(a, b),)
    return (accurate_matmul(a, b),)
