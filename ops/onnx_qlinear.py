"""ONNX QLinearMatMul (opsets 10 and 21) and QLinearConv (opset 10), written from the
operators' texts (``onnx.defs.get_schema("QLinearMatMul", 21).doc``, ``...("QLinearConv", 10)``).

Both dequantize their operands, ``(a - a_zero_point) * a_scale`` and ``(b - b_zero_point) *
b_scale``, contract them (QLinearMatMul 'behaves like numpy.matmul'; QLinearConv is Conv, its
bias B 'quantized using scale = x_scale * w_scale and zero point as 0'), and quantize the real
result x: ``y = saturate((x / y_scale) + y_zero_point)``, 'rounding to nearest ties to even',
saturated to the output type's range (QuantizeLinear's text: [0, 255] for uint8, [-128, 127] for
int8); a float 8 output through Cast's table with saturation (QuantizeLinear's default).

The quotient ``x / y_scale`` is computed here in float64 from the exact integer accumulator (or
a double-double sum of the float 8 products): the text names no precision for it, and the
region ``oracle_marked`` opens every element whose rounding an evaluation in float32 could
change (:func:`requantization_spread`)."""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS, int_info, is_integer
from conform.op_registry import op
from conform.ops._double_double import accurate_matmul
from conform.ops.contraction import draw_onnx_matmul
from conform.ops.error_bounds import gamma
from conform.ops.onnx_cast import float8_table, is_float8, numpy_astype
from conform.ops.onnx_quantize import zero_point_values
from conform.ops.onnx_integer_contraction import (draw_integer_conv, feed_conv_parts,
                                                 feed_matmul_parts, integer_conv,
                                                 onnx_integer_conv, per_channel, row_parameter)
from conform.ops.optional_inputs import by_name

MATMUL_INPUTS = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point",
                 "y_scale", "y_zero_point")
CONV_INPUTS = ("x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point",
               "y_scale", "y_zero_point", "B")
QUANTIZED_8 = ("int8", "uint8", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
               "float8_e5m2fnuz")
SCALES = ("float32", "float16", "bfloat16")
#: The roundings an evaluation of the formula in float32 may make beyond the sum's own: the
#: accumulator's conversion, the two scale products (or the dequantized operands' products)
#: and the division by y_scale (or a product with a rounded multiplier and its rounding).
EXTRA_ROUNDINGS = 4


# --- Requantization ----------------------------------------------------------------------------

def quantized(q, zero, target: str):
    """``saturate(round_half_even(q) + zero)`` into an integer ``target``; into float 8,
    Cast's table with saturation applied to ``q + zero``."""
    if is_float8(target):
        return float8_table(q + zero, target, True)
    info = int_info(target)
    return np.clip(np.rint(q) + zero, int(info.min), int(info.max))


def requantization_spread(magnitude, terms: int, exact: bool):
    """How far an evaluation in float32 of the text's formula may move the quotient: each of
    the ``terms`` products summed and ``EXTRA_ROUNDINGS`` more roundings, so at most
    ``gamma_(terms + 4) * magnitude`` (Higham 2002, Lemma 3.1 and §3.1), ``magnitude`` the sum
    of the terms' magnitudes times the scales over y_scale. 0 where ``exact``: integer operands
    and power-of-two scales, where every float32 step is exact (products of at most 16 bits,
    sums below 2**24, scalings by powers of two)."""
    if exact:
        return np.zeros_like(magnitude)
    return gamma(terms + EXTRA_ROUNDINGS, FLOAT_FORMATS["float32"].unit_roundoff) * magnitude


def open_results(q, spread, zero, target: str, result):
    """Elements whose quantized value moves within ``q +- spread``."""
    moved = [quantized(q + s * spread, zero, target) for s in (-1, 1)]
    with np.errstate(invalid="ignore"):
        return ~(((moved[0] == result) | np.isnan(result)) & ((moved[1] == result) | np.isnan(result)))


def powers_of_two(*scales) -> bool:
    """Whether every scale is a power of two."""
    return all(np.all(np.frexp(np.asarray(s, np.float64))[0] == 0.5) for s in scales)


def _scale_values(rng, like, size_hint=1.0, power=False):
    """Positive scales of ``like``'s shape and type around ``size_hint``: powers of two, or
    uniform within a factor 4 either side; the hint kept within 2**-12 to 2**12 (float16
    holds every scale then)."""
    size_hint = float(np.clip(size_hint, 2.0 ** -12, 2.0 ** 12))
    exponents = np.round(np.log2(size_hint)) + rng.integers(-2, 3, like.shape)
    if power:
        return np.ldexp(1.0, exponents.astype(int)).astype(like.dtype)
    return (size_hint * rng.uniform(0.25, 4, like.shape)).astype(like.dtype)


def _near_zero_point(rng, operand, zero):
    """Integer operand values within 6 of their zero point (small sums: ties appear)."""
    if not is_integer(str(operand.dtype)):
        return operand
    info = int_info(str(operand.dtype))
    shifted = np.asarray(zero, np.int64) + rng.integers(-6, 7, operand.shape)
    return np.clip(shifted, int(info.min), int(info.max)).astype(operand.dtype)


def requantization_values(names, contract, aligned):
    """The values hook: zero points in range, positive scales (in half the cases powers of two,
    with integer operands near their zero points, so that exact ties of x / y_scale occur), and
    y_scale sized to the accumulator so that results spread over the output's range.
    ``contract(given, attrs)`` gives the accumulator's magnitude, ``aligned(given)`` the two
    zero points shaped to broadcast against their operands."""
    def values(rng, inputs, attrs):
        given = dict(zip(names, inputs))
        a, b = names[0], names[3]
        power = bool(rng.integers(0, 2))
        for k in (2, 5, 7):
            given[names[k]] = zero_point_values(rng, given[names[k]])
        for k in (1, 4):
            given[names[k]] = _scale_values(rng, given[names[k]], 1.0, power)
        if power:
            zeros = aligned(given)
            given[a] = _near_zero_point(rng, given[a], zeros[0])
            given[b] = _near_zero_point(rng, given[b], zeros[1])
        magnitude, _ = contract(given, attrs)
        finite = np.where(np.isfinite(magnitude), magnitude, 0.0)
        scale_hint = max(float(np.max(finite, initial=0.0)), 1.0) / 64
        given[names[6]] = _scale_values(rng, given[names[6]], scale_hint, power)
        return [given[n] for n in names if n in given]
    return values


def _per_tensor(parameter):
    """A 1-element parameter as a scalar: per tensor, it leaves the result's shape alone (a
    0-d matmul of two 1-D operands stays 0-d)."""
    parameter = np.asarray(parameter)
    return parameter.reshape(()) if parameter.size == 1 else parameter


def requantize(acc, magnitude, terms, scales, zero, target, open_elements, *, exact, integer):
    """The quantized result of the accumulator ``acc`` (the sum over the centred operands'
    products) scaled by ``scales`` = (input scale, weight scale, y_scale), or with
    ``open_elements`` the mask of the elements an evaluation in float32 could change or an
    int32 accumulation could overflow (``integer``: integer operands; ``exact``: and every
    scale a power of two)."""
    in_scale, weight_scale, y_scale, zero = (_per_tensor(p) for p in (*scales, zero))
    q = acc * in_scale * weight_scale / y_scale
    result = quantized(q, zero, target)
    if not open_elements:
        return result
    spread = requantization_spread(magnitude * in_scale * weight_scale / y_scale, terms, exact)
    # 'The accumulation may overflow if and only if in 32 bits': an integer sum some order of
    # which leaves int32 (a bias near its limits) is open
    overflows = integer & (magnitude > np.iinfo(np.int32).max)
    return open_results(q, spread, zero, target, result) | overflows


# --- QLinearMatMul -------------------------------------------------------------------------------

def _parameter_shape(draw, st, operand: tuple, axis: int) -> tuple:
    """A scale's and zero point's shape: per tensor, or per row of A (``axis`` -2) and per
    column of B (``axis`` -1): an M or N element vector for a 2-D operand, else the operand's
    shape with the other matrix side 1 ([D1, D2, M, 1] and [D1, D2, 1, N])."""
    choices = [(), (1,)]
    if len(operand) == 2:
        choices.append((operand[axis],))
    elif len(operand) > 2:
        other = -1 if axis == -2 else -2
        choices.append(tuple(1 if k == len(operand) + other else s for k, s in enumerate(operand)))
    return draw(st.sampled_from(choices))


def draw_qlinear_matmul(draw, kit, spec, dtype):
    """A and B as ONNX MatMul draws them; A of ``dtype``, B and y of any type T2 and T3 allow,
    the scales of one type TS (in half the cases B and y of A's type, float32 scales: the
    kernels runtimes have); A's parameters per tensor or per row, B's per tensor or per
    column, y's per tensor."""
    st = kit.st
    a_shape, b_shape = draw_onnx_matmul(draw, kit, spec, dtype).shapes
    b_type, y_type, scale = (draw(st.sampled_from(QUANTIZED_8)), draw(st.sampled_from(QUANTIZED_8)),
                             draw(st.sampled_from(SCALES)))
    if draw(st.booleans()):   # half the cases of one type and float32 scales, as runtimes have
        b_type, y_type, scale = dtype, dtype, "float32"
    # a 1-D operand removes a side of the result: per tensor parameters only then
    matrices = len(a_shape) > 1 and len(b_shape) > 1
    a_param = _parameter_shape(draw, st, a_shape, -2) if matrices else ()
    b_param = _parameter_shape(draw, st, b_shape, -1) if matrices else ()
    y_param = draw(st.sampled_from([(), (1,)]))
    types = (dtype, scale, dtype, b_type, scale, b_type, scale, y_type)
    shapes = (a_shape, a_param, a_param, b_shape, b_param, b_param, y_param, y_param)
    return kit.Signature(types, shapes, {}, y_type)


def _matmul_accumulator(given, attrs):
    """The centred operands' matmul and the matmul of their magnitudes (float64)."""
    a, b = given["a"].astype(np.float64), given["b"].astype(np.float64)
    a_c = a - row_parameter(given["a_zero_point"].astype(np.float64), a)
    b_c = b - given["b_zero_point"].astype(np.float64)
    if all(is_integer(str(given[n].dtype)) for n in ("a", "b")):
        return np.matmul(np.abs(a_c), np.abs(b_c)), np.matmul(a_c, b_c)
    return accurate_matmul(np.abs(a_c), np.abs(b_c)), accurate_matmul(a_c, b_c)


def numpy_qlinear_matmul(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero):
    """The numpy backend: the centred operands' ``np.matmul`` in int32, scaled in float32 by
    the combined scale, ``np.rint``, the zero point added and clipped (integer types only)."""
    if any(is_float8(str(x.dtype)) for x in (a, b, y_zero)):
        from conform.ops._lowering import unsupported
        raise unsupported("NumPy has no float 8 arithmetic")
    a_scale, a_zero, b_scale, b_zero, y_scale, y_zero = (
        _per_tensor(p) for p in (a_scale, a_zero, b_scale, b_zero, y_scale, y_zero))
    acc = np.matmul(a.astype(np.int32) - row_parameter(a_zero.astype(np.int32), a),
                    b.astype(np.int32) - b_zero.astype(np.int32))
    scale = (row_parameter(a_scale.astype(np.float32), a) * b_scale.astype(np.float32)
             / y_scale.astype(np.float32))
    info = int_info(str(y_zero.dtype))
    q = np.rint(acc.astype(np.float32) * scale) + y_zero.astype(np.float32)
    return (numpy_astype(np.clip(q, np.float32(info.min), np.float32(info.max)), str(y_zero.dtype)),)


def feed_qlinear_matmul(inputs, attrs, index):
    """Row ``m`` of A and column ``n`` of B (as ONNX MatMul), the elements of A's scale and
    zero point (per tensor or per row) and of B's (per tensor or per column) they meet, and
    y's scale and zero point."""
    a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero = inputs
    row, column, (a_scale, a_zero), (b_scale, b_zero) = feed_matmul_parts(
        a, b, [a_scale, a_zero], [b_scale, b_zero], index)
    return [row, a_scale, a_zero, column, b_scale, b_zero, np.ravel(y_scale), np.ravel(y_zero)]


@op("onnx_qlinear_mat_mul", version=1, draw=draw_qlinear_matmul,
    values=requantization_values(MATMUL_INPUTS, lambda g, attrs: _matmul_accumulator(g, attrs),
                                 lambda g: (row_parameter(g["a_zero_point"], g["a"]),
                                            g["b_zero_point"])),
    numpy=numpy_qlinear_matmul, feeding=feed_qlinear_matmul)
def oracle_onnx_qlinear_mat_mul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
                                y_zero_point, dtypes=(), open_elements=False):
    """QLinearMatMul: ``saturate(round_half_even(matmul((a - a_zp) a_scale, (b - b_zp) b_scale)
    / y_scale) + y_zp)``; with ``open_elements``, the elements the text's open precision
    leaves open."""
    given = dict(zip(MATMUL_INPUTS, (a, a_scale, a_zero_point, b, b_scale, b_zero_point,
                                     y_scale, y_zero_point)))
    magnitude, acc = _matmul_accumulator(given, {})
    target = dtypes[-1] if dtypes else "uint8"
    integer = all(is_integer(d) for d in dtypes[:1] + dtypes[3:4]) if dtypes else True
    scales = (row_parameter(a_scale, a), b_scale, y_scale)
    return (requantize(acc, magnitude, a.shape[-1], scales, y_zero_point, target, open_elements,
                       exact=integer and powers_of_two(*scales), integer=integer),)


# --- QLinearConv ---------------------------------------------------------------------------------

def draw_qlinear_conv(draw, kit, spec, dtype):
    """x of ``dtype``, w and y of int8 or uint8 (y in half the cases of x's type), float32
    scales; x's and y's parameters per
    tensor, w's per tensor or per output channel; the bias B now and then absent."""
    st = kit.st
    x_shape, w_shape, w_type, attrs = draw_integer_conv(draw, kit, dtype)
    y_type = dtype if draw(st.booleans()) else draw(st.sampled_from(("int8", "uint8")))
    w_param = draw(st.sampled_from([(), (1,), (w_shape[0],)]))
    x_param, y_param = (draw(st.sampled_from([(), (1,)])) for _ in range(2))
    absent = kit.absent_inputs(draw, spec)
    types = (dtype, "float32", dtype, w_type, "float32", w_type, "float32", y_type, "int32")
    shapes = (x_shape, x_param, x_param, w_shape, w_param, w_param, y_param, y_param,
              (w_shape[0],))
    kept = [k for k, n in enumerate(CONV_INPUTS) if n not in absent]
    return kit.Signature(tuple(types[k] for k in kept), tuple(shapes[k] for k in kept),
                         kit.with_absent(attrs, absent), y_type)


def _conv_accumulator(given, attrs, reading=0):
    """The centred operands' convolution plus the bias, and the convolution of magnitudes."""
    x, w = given["x"], given["w"]
    geometry = {k: v for k, v in attrs.items() if k != "absent_inputs"}
    acc = integer_conv(x, given["x_zero_point"], w, given["w_zero_point"], geometry, reading)
    bias = np.asarray(given.get("B", np.zeros(w.shape[0]))).astype(np.int64)
    acc = acc + bias.reshape((-1,) + (1,) * (acc.ndim - 2))
    return np.abs(acc).astype(np.float64), acc.astype(np.float64)


def _conv_magnitude(given, attrs):
    """The convolution of |x - x_zp| with |w - w_zp| plus |B|: the sum of the magnitudes of the
    terms of each output (padding holds 0)."""
    x, w = given["x"], given["w"]
    maps = w.shape[0]
    w_zero = np.asarray(given["w_zero_point"], np.int64).reshape(-1, 1)
    centred = np.abs(w.astype(np.int64).reshape(maps, -1) - w_zero).reshape(w.shape)
    x_centred = np.abs(x.astype(np.int64) - np.asarray(given["x_zero_point"], np.int64).reshape(()))
    out = integer_conv(x_centred, 0, centred, 0, attrs)
    bias = np.abs(np.asarray(given.get("B", np.zeros(maps)), np.int64))
    return (out + bias.reshape((-1,) + (1,) * (out.ndim - 2))).astype(np.float64)


def _channel_scale(scale, ndim):
    """w's scale broadcast over the output's channel axis (one per output channel)."""
    scale = np.asarray(scale, np.float64)
    return scale.reshape((-1,) + (1,) * (ndim - 2)) if scale.ndim else scale


def feed_qlinear_conv(inputs, attrs, index):
    """x's patch, filter ``m``'s taps over it, x's and y's scales and zero points, and w's
    scale, zero point and bias B (per tensor or channel ``m``'s); x's and w's zero points only
    where the patch holds an element of x (a window of padding is a sum of no term)."""
    given = by_name(CONV_INPUTS, inputs, attrs.get("absent_inputs", ()))
    patch, kernel, m = feed_conv_parts(given["x"], given["w"], attrs, index)
    fed = {name: np.ravel(given[name]) for name in ("x_scale", "y_scale", "y_zero_point")}
    fed.update(x=patch, w=kernel, w_scale=per_channel(given["w_scale"], m))
    if patch.size:
        fed.update(x_zero_point=np.ravel(given["x_zero_point"]),
                   w_zero_point=per_channel(given["w_zero_point"], m))
    if "B" in given:
        fed["B"] = per_channel(given["B"], m)
    return [fed.get(name) for name in given]


@op("onnx_qlinear_conv", version=1, draw=draw_qlinear_conv, draw_honours=frozenset({"optional"}),
    values=requantization_values(CONV_INPUTS, lambda g, attrs: _conv_accumulator(g, attrs),
                                 lambda g: (g["x_zero_point"].reshape(()), np.reshape(
                                     g["w_zero_point"], (-1,) + (1,) * (g["w"].ndim - 1)))),
    onnx=onnx_integer_conv(CONV_INPUTS), onnx_shape_dependent=True, feeding=feed_qlinear_conv)
def oracle_onnx_qlinear_conv(*inputs, absent_inputs=(), dtypes=(), open_elements=False,
                             reading=0, **attrs):
    """QLinearConv: ``saturate(round_half_even(conv((x - x_zp) x_scale, (w - w_zp) w_scale) +
    B x_scale w_scale) / y_scale) + y_zp)``; ``reading`` and ``open_elements`` as for the
    spec's regions (the bias counts as one more term of the sum)."""
    given = by_name(CONV_INPUTS, inputs, absent_inputs)
    _, acc = _conv_accumulator(given, attrs, reading)
    magnitude = _conv_magnitude(given, attrs)
    scales = (given["x_scale"], _channel_scale(given["w_scale"], acc.ndim), given["y_scale"])
    target = dtypes[7] if len(dtypes) > 7 else "uint8"
    terms = int(np.prod(given["w"].shape[1:])) + 1
    return (requantize(acc, magnitude, terms, scales, given["y_zero_point"], target, open_elements,
                       exact=powers_of_two(*scales), integer=True),)
