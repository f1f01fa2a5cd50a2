"""ONNX MatMulInteger and ConvInteger (opset 10), written from the operators' texts
(``onnx.defs.get_schema("MatMulInteger", 10).doc``, ``...("ConvInteger", 10)``): int8 or uint8
operands less their zero points, multiplied and accumulated exactly into int32.

MatMulInteger 'behaves like numpy.matmul'; a_zero_point is a scalar (per tensor) or, for a 2-D
A [M, K], an M element vector (per row); b_zero_point a scalar or, for a 2-D B [K, N], an N
element vector (per column). ConvInteger is Conv's geometry (pads, strides, dilations, group,
auto_pad as the pooling texts give it: ops/onnx_pooling.py ``window_taps``) over
``x - x_zero_point`` (a scalar) and ``w - w_zero_point`` (a scalar or one per output channel).
'The production MUST never overflow. The accumulation may overflow if and only if in 32 bits':
the drawn sizes keep every sum far inside int32, so the results are exact integers.

The conv helpers (:func:`draw_integer_conv`, :func:`integer_conv`, :func:`onnx_integer_conv`)
serve QLinearConv too (ops/onnx_qlinear.py).
"""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op
from conform.ops.contraction import draw_onnx_matmul, feed_onnx_matmul
from conform.ops.onnx_pooling import gather_windows, window_taps
from conform.ops.optional_inputs import by_name, onnx_operands, present

MATMUL_INPUTS = ("a", "b", "a_zero_point", "b_zero_point")
CONV_INPUTS = ("x", "w", "x_zero_point", "w_zero_point")
QUANTIZED = ("int8", "uint8")


# --- MatMulInteger ------------------------------------------------------------------------------

def zero_point_shape(draw, st, operand: tuple, axis: int) -> tuple:
    """A zero point's (or scale's) shape: per tensor (``()`` or ``(1,)``), or for a 2-D operand
    one per row (``axis`` -2: M elements) or per column (``axis`` -1: N elements)."""
    choices = [(), (1,)] + ([(operand[axis],)] if len(operand) == 2 else [])
    return draw(st.sampled_from(choices))


def draw_matmul_integer(draw, kit, spec, dtype):
    """A and B as ONNX MatMul draws them (broadcast batches, 1-D operands, empty sides); A of
    ``dtype``, B of int8 or uint8; each zero point absent, per tensor, or per row of A and per
    column of B."""
    st = kit.st
    a_shape, b_shape = draw_onnx_matmul(draw, kit, spec, dtype).shapes
    b_type = draw(st.sampled_from(QUANTIZED))
    absent = kit.absent_inputs(draw, spec)
    types = dict(zip(MATMUL_INPUTS, (dtype, b_type, dtype, b_type)))
    shapes = {"a": a_shape, "b": b_shape,
              "a_zero_point": zero_point_shape(draw, st, a_shape, -2),
              "b_zero_point": zero_point_shape(draw, st, b_shape, -1)}
    names = [n for n in MATMUL_INPUTS if n not in absent]
    return kit.Signature(tuple(types[n] for n in names), tuple(shapes[n] for n in names),
                         kit.with_absent({}, absent), "int32")


def row_parameter(value: np.ndarray, operand: np.ndarray) -> np.ndarray:
    """A per-row parameter of a 2-D A (an M element vector) shaped [M, 1]; others unchanged."""
    if operand.ndim == 2 and value.ndim == 1 and value.size == operand.shape[0] != 1:
        return value.reshape(-1, 1)
    return value


def feed_matmul_parts(a, b, a_parameters, b_parameters, index) -> tuple:
    """Row ``m`` of A and column ``n`` of B in the batch of out[index] (as ONNX MatMul), and
    the elements of each parameter of A (per tensor or per row) and of B (per tensor or per
    column) that those rows and columns meet: each parameter's elements are numbered, broadcast
    over their operand and read as the operand is."""
    row, column = feed_onnx_matmul([a, b], {}, index)

    def met(parameter, operand, rows):
        labels = np.arange(parameter.size).reshape(parameter.shape)
        labels = np.broadcast_to(row_parameter(labels, operand) if rows else labels, operand.shape)
        fed = feed_onnx_matmul([labels, b] if rows else [a, labels], {}, index)[0 if rows else 1]
        return parameter.ravel()[np.unique(fed)]

    return (row, column, [met(p, a, True) for p in a_parameters],
            [met(p, b, False) for p in b_parameters])


def feed_matmul_integer(inputs, attrs, index):
    """Row ``m`` of A, column ``n`` of B and the zero points' elements they meet."""
    given = by_name(MATMUL_INPUTS, inputs, attrs.get("absent_inputs", ()))
    zeros = [n for n in MATMUL_INPUTS[2:] if n in given]
    row, column, a_fed, b_fed = feed_matmul_parts(
        given["a"], given["b"], [given[n] for n in zeros if n[0] == "a"],
        [given[n] for n in zeros if n[0] == "b"], index)
    return [row, column, *a_fed, *b_fed]


def centred_operands(inputs, names, absent_inputs):
    """A - a_zero_point and B - b_zero_point (zero points absent: 0), per row and column."""
    given = by_name(names, inputs, absent_inputs)
    a, b = given[names[0]], given[names[1]]
    a_zero = row_parameter(given.get(names[2], np.zeros((), a.dtype)), a)
    b_zero = given.get(names[3], np.zeros((), b.dtype))
    return a - a_zero, b - b_zero


def numpy_matmul_integer(*inputs, absent_inputs=()):
    """The numpy backend: the operands less their zero points in int32, then ``np.matmul``."""
    given = by_name(MATMUL_INPUTS, inputs, absent_inputs)
    wide = [given[n].astype(np.int32) if n in given else None for n in MATMUL_INPUTS]
    a, b, a_zero, b_zero = wide
    a_zero = np.int32(0) if a_zero is None else row_parameter(a_zero, a)
    b_zero = np.int32(0) if b_zero is None else b_zero
    return (np.matmul(a - a_zero, b - b_zero),)


@op("onnx_mat_mul_integer", version=1, draw=draw_matmul_integer,
    draw_honours=frozenset({"optional"}), numpy=numpy_matmul_integer,
    feeding=feed_matmul_integer)
def oracle_onnx_mat_mul_integer(*inputs, absent_inputs=()):
    """MatMulInteger: ``matmul(A - a_zero_point, B - b_zero_point)``, exact in integers."""
    a, b = centred_operands(inputs, MATMUL_INPUTS, absent_inputs)
    return (np.matmul(a.astype(np.int64), b.astype(np.int64)),)


# --- ConvInteger --------------------------------------------------------------------------------

AUTO_PADS = ("NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _conv_geometry(draw, st, n: int):
    """Per spatial axis kernel, dilation, stride, pads (begin + end) and the least size."""
    kernel = [draw(st.integers(1, 3)) for _ in range(n)]
    dilations = [draw(st.integers(1, 2)) for _ in range(n)]
    reach = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    auto_pad = draw(st.sampled_from(AUTO_PADS))
    strides = [draw(st.integers(1, 3)) for _ in range(n)]
    if auto_pad.startswith("SAME"):   # beyond the reach the text's total pad goes negative
        strides = [min(s, r) for s, r in zip(strides, reach)]
    pads = ([draw(st.integers(0, r - 1)) for r in reach * 2] if auto_pad == "NOTSET"
            else [0] * 2 * n)
    least = [1 if auto_pad.startswith("SAME") else max(1, r - pads[i] - pads[n + i])
             for i, r in enumerate(reach)]
    return kernel, dilations, strides, auto_pad, pads, least


def _conv_attributes(draw, st, kernel, dilations, strides, auto_pad, pads, group):
    """The node's attributes; each now and then left out where it holds its default."""
    attrs = {"auto_pad": auto_pad, "group": group}
    for name, value in (("kernel_shape", kernel), ("dilations", dilations),
                        ("strides", strides), ("pads", pads)):
        default = name != "kernel_shape" and all(v == (0 if name == "pads" else 1) for v in value)
        if (name == "pads" and auto_pad != "NOTSET") or ((default or name == "kernel_shape")
                                                         and draw(st.booleans())):
            continue
        attrs[name] = list(value)
    if auto_pad == "NOTSET" and draw(st.booleans()):
        del attrs["auto_pad"]
    if group == 1 and draw(st.booleans()):
        del attrs["group"]
    return attrs


def draw_integer_conv(draw, kit, x_type: str):
    """x (N x C x D1..Dn, n of 1 to 3) and w (M x C/group x k1..kn) shapes, w's type and the
    attributes: group of 1 to 3, explicit pads (0 to the dilated kernel - 1 per side) or
    auto_pad, strides, dilations, sizes at least one window."""
    st = kit.st
    n = draw(st.integers(1, 3))
    kernel, dilations, strides, auto_pad, pads, least = _conv_geometry(draw, st, n)
    group, per_group, maps = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    batch = draw(st.integers(1, 2))
    budget = kit.MAX_ARRAY_SIZE // (batch * group * per_group)
    sizes = []
    for i in range(n):
        room = budget // (math.prod(sizes) * math.prod(least[i + 1:]))
        sizes.append(draw(st.integers(least[i], max(least[i], min(least[i] + 4, room)))))
    x_shape = (batch, group * per_group, *sizes)
    w_shape = (group * maps, per_group, *kernel)
    attrs = _conv_attributes(draw, st, kernel, dilations, strides, auto_pad, pads, group)
    return x_shape, w_shape, draw(st.sampled_from(QUANTIZED)), attrs


def draw_conv_integer(draw, kit, spec, dtype):
    """x of ``dtype``, w of int8 or uint8; x_zero_point a scalar, w_zero_point a scalar or one
    per output channel; each now and then absent."""
    x_shape, w_shape, w_type, attrs = draw_integer_conv(draw, kit, dtype)
    absent = kit.absent_inputs(draw, spec)
    w_zero = draw(kit.st.sampled_from([(), (1,), (w_shape[0],)]))
    types = dict(zip(CONV_INPUTS, (dtype, w_type, dtype, w_type)))
    shapes = dict(zip(CONV_INPUTS, (x_shape, w_shape, draw(kit.st.sampled_from([(), (1,)])), w_zero)))
    names = [n for n in CONV_INPUTS if n not in absent]
    return kit.Signature(tuple(types[n] for n in names), tuple(shapes[n] for n in names),
                         kit.with_absent(attrs, absent), "int32")


def integer_conv(x, x_zero, w, w_zero, attrs, reading=0):
    """``sum over c in the group of m, taps t of (x - x_zero)[n, c, o*s - pad + t*d] *
    (w - w_zero)[m, c, t]``, exact in int64. A padding tap holds 0 of ``x - x_zero``
    (``reading`` 0: the padding is zero in the centred values) or ``0 - x_zero`` (``reading``
    1: x itself padded with zeros)."""
    geometry = {**attrs, "kernel_shape": list(w.shape[2:])}
    values, inside, _, _ = gather_windows(x.astype(np.int64), geometry, ignore_right_starts=False)
    x_zero = np.asarray(x_zero, np.int64).reshape(())
    padding = np.int64(0) if reading == 0 else -x_zero
    centred = np.where(inside, values - x_zero, padding)          # (N, C, O1..On, K)
    group = attrs.get("group", 1)
    batch, channels, *outs, taps = centred.shape
    maps = w.shape[0]
    w_zero = np.asarray(w_zero, np.int64).reshape(-1, 1, 1)
    kernel = (w.astype(np.int64).reshape(maps, w.shape[1], -1) - w_zero)
    grouped = centred.reshape(batch, group, channels // group, math.prod(outs), taps)
    kernel = kernel.reshape(group, maps // group, w.shape[1], taps)
    out = np.einsum("ngcok,gmck->ngmo", grouped, kernel)
    return out.reshape(batch, maps, *outs)


def feed_conv_parts(x, w, attrs, index) -> tuple:
    """x's patch under out[index]'s window (the input channels of its group, padding left
    out) and the taps of filter ``m`` over it; with ``m``, the output channel."""
    batch, m, *outs = index
    taps = window_taps(x.shape[2:], {**attrs, "kernel_shape": list(w.shape[2:])},
                       ignore_right_starts=False)
    per_group = w.shape[1]
    first = m // (w.shape[0] // attrs.get("group", 1)) * per_group
    spans = [positions[o][inside[o]] for o, (positions, inside, _) in zip(outs, taps)]
    kernel = [np.flatnonzero(inside[o]) for o, (_, inside, _) in zip(outs, taps)]
    patch = x[batch][np.ix_(np.arange(first, first + per_group), *spans)].ravel()
    return patch, w[m][np.ix_(np.arange(per_group), *kernel)].ravel(), m


def per_channel(parameter: np.ndarray, m: int) -> np.ndarray:
    """The element of a per-tensor or per-output-channel parameter that channel ``m`` uses."""
    at = m if parameter.size > 1 else 0
    return np.ravel(parameter)[at:at + 1]


def feed_conv_integer(inputs, attrs, index):
    """x's patch, filter ``m``'s taps over it, and the zero points (w's per tensor or
    channel ``m``'s), these only where the patch holds an element of x (a window of padding
    is a sum of no term)."""
    given = by_name(CONV_INPUTS, inputs, attrs.get("absent_inputs", ()))
    patch, kernel, m = feed_conv_parts(given["x"], given["w"], attrs, index)
    fed = {"x": patch, "w": kernel}
    if patch.size:
        fed.update(x_zero_point=given.get("x_zero_point"),
                   w_zero_point=per_channel(given["w_zero_point"], m)
                   if "w_zero_point" in given else None)
    return [None if fed.get(n) is None else np.ravel(fed[n]) for n in given]


def onnx_integer_conv(names):
    """The lowering: one node, its absent optional inputs left out or written ``""``."""
    def lower(case, graph):
        attrs = {k: v for k, v in case.attrs.items() if k in _CONV_ATTRIBUTES}
        given = dict(zip(present(names, case.attrs), graph.inputs))
        graph.node(graph.op_type, onnx_operands([given.get(n) for n in names]), **attrs)
    return lower


_CONV_ATTRIBUTES = ("auto_pad", "group", "kernel_shape", "dilations", "strides", "pads")


@op("onnx_conv_integer", version=1, draw=draw_conv_integer, draw_honours=frozenset({"optional"}),
    onnx=onnx_integer_conv(CONV_INPUTS), onnx_shape_dependent=True, feeding=feed_conv_integer)
def oracle_onnx_conv_integer(*inputs, absent_inputs=(), reading=0, **attrs):
    """ConvInteger: Conv of ``x - x_zero_point`` with ``w - w_zero_point``, exact in integers;
    ``reading`` says what a padding tap holds (see the spec's region ``reading_differs``)."""
    given = by_name(CONV_INPUTS, inputs, absent_inputs)
    x, w = given["x"], given["w"]
    return (integer_conv(x, given.get("x_zero_point", 0), w, given.get("w_zero_point", 0),
                         attrs, reading),)
