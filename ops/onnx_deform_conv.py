"""ONNX DeformConv (19+; 22 adds bfloat16), written from its text
(``onnx.defs.get_schema("DeformConv").doc`` and its inputs' and attributes' descriptions).

'Performs deformable convolution as described in' Dai et al. 2017 (arXiv 1703.06211) and Zhu et
al. 2018 (arXiv 1811.11168): a convolution (strides, pads, dilations, group) whose kernel tap
``k`` at output ``o`` reads X at ``o * stride - pad_begin + k * dilation + offset``, the offset
a pair per tap and offset group ('(N, offset_group * kH * kW * 2, oH, oW)': per group, per tap
in row-major order, the H then the W offset, the papers' layout), the value there by 'linear
interpolation for fractional offset values' (bilinear, X's elements at integer positions, zeros
of the padding around them), each tap's product scaled by the mask ('Default is a tensor of
ones'), plus B. 'Sampling locations outside of the padded input tensor gives zero' (reading 0,
the oracle); reading 1 interpolates there too, with zeros beyond X (the papers' code): the
region ``reading_differs``.
"""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op
from conform.ops._double_double import sum_of_products
from conform.ops._lowering import unsupported
from conform.ops.error_bounds import gamma, judged_bound, reaches_max_finite, underflow_term
from conform.ops.onnx_detection import lower_with
from conform.ops.optional_inputs import by_name

NAMES = ("x", "w", "offset", "b", "mask")
ATTRIBUTES = ("dilations", "group", "kernel_shape", "offset_group", "pads", "strides")


def locations(x_shape, w_shape, offset, attrs: dict) -> tuple:
    """Per axis (H, W): every tap's sampling location ``(N, offset_group, K, oH, oW)``."""
    kernel = w_shape[2:]
    strides, dilations = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    n, og, out = offset.shape[0], int(attrs.get("offset_group", 1)), offset.shape[2:]
    shifts = offset.reshape((n, og, math.prod(kernel), 2) + tuple(out))
    taps = np.stack(np.meshgrid(*[np.arange(k) for k in kernel], indexing="ij"), -1).reshape(-1, 2)
    result = []
    for a in range(2):
        base = (np.arange(out[a]) * strides[a] - pads[a]).reshape((-1, 1) if a == 0 else (1, -1))
        tap = (taps[:, a] * dilations[a]).reshape(-1, 1, 1)
        result.append(base + tap + shifts[:, :, :, a])
    return tuple(result)


def sampled(x, ys, xs, pads, reading: int = 0, magnitudes: bool = False) -> np.ndarray:
    """X bilinearly interpolated at ``(ys, xs)`` (``(N, C, K, oH, oW)``), zeros outside X; under
    reading 0 zero wherever the location leaves the padded tensor."""
    n, c, h, w = x.shape
    y0, x0 = np.floor(ys), np.floor(xs)
    total = np.zeros(ys.shape)
    b = np.arange(n).reshape(-1, 1, 1, 1, 1)
    ch = np.arange(c).reshape(1, -1, 1, 1, 1)
    for dy in (0, 1):
        for dx in (0, 1):
            py, px = y0 + dy, x0 + dx
            weight = (1 - np.abs(ys - py)) * (1 - np.abs(xs - px))
            inside = (py >= 0) & (py < h) & (px >= 0) & (px < w)
            value = x[b, ch, np.clip(py, 0, h - 1).astype(int), np.clip(px, 0, w - 1).astype(int)]
            term = np.where(inside, weight * value, 0.0)
            total = total + (np.abs(term) if magnitudes else term)
    if not reading:
        padded = (ys >= -pads[0]) & (ys <= h - 1 + pads[2]) & (xs >= -pads[1]) & (xs <= w - 1 + pads[3])
        total = np.where(padded, total, 0.0)
    return total


def _per_channel(array: np.ndarray, channels: int) -> np.ndarray:
    """``(N, offset_group, ...)`` -> ``(N, C, ...)``: each channel its offset group's."""
    return np.repeat(array, channels // array.shape[1], axis=1)


def deform_conv(inputs, attrs: dict, absent_inputs=(), reading: int = 0, magnitudes=False):
    """Y ``(N, oC, oH, oW)`` (with ``magnitudes``: the same sum of every term's magnitude)."""
    given = by_name(NAMES, inputs, absent_inputs)
    x, w, offset = given["x"], given["w"], given["offset"]
    group, og = int(attrs.get("group", 1)), int(attrs.get("offset_group", 1))
    ys, xs = locations(x.shape, w.shape, offset, attrs)
    c, k = x.shape[1], math.prod(w.shape[2:])
    values = sampled(x, _per_channel(ys, c), _per_channel(xs, c),
                     attrs.get("pads", [0, 0, 0, 0]), reading, magnitudes)
    mask = given.get("mask", np.ones((x.shape[0], og * k) + offset.shape[2:]))
    mask = _per_channel(mask.reshape((x.shape[0], og, k) + offset.shape[2:]), c)
    n, oc = x.shape[0], w.shape[0]
    per = c // group
    kernel = w.reshape(group, oc // group, per, k)
    grouped = (mask * values).reshape((n, group, 1, per, k) + offset.shape[2:])
    factors = [kernel[None, :, :, :, :, None, None], grouped]
    if magnitudes:
        factors = [np.abs(f) for f in factors]
    y = sum_of_products(factors, [3, 4]).reshape((n, oc) + offset.shape[2:])
    bias = given.get("b", np.zeros(oc))
    return y + (np.abs(bias) if magnitudes else bias)[None, :, None, None]


def deform_conv_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """|err| <= gamma_(T + 6) S + 2 M sum |W m| d + u |y| (+ the products' underflow).

    T = 4 K C / group + 1 terms (four interpolation terms per tap and input channel, and B),
    each through at most 6 roundings before the sum (the two weights 1 - |d|, their product,
    and the products with X, the mask and W) and the T-term sum in any order (Higham 2002,
    Lemma 3.1), S the sum of their magnitudes; a location's rounding (the text's sum of the tap's
    position and its offset, one rounding of a magnitude |p| + 1 per axis: d = gamma_2 (|p| + 1)
    bounds both axes together) moves the interpolant by at most 2 M d per axis, M the largest
    |X| of the batch. NaN (region unbounded_evaluation) where (1 + gamma) S reaches max_finite."""
    absent = attrs.get("absent_inputs", ())
    given = by_name(NAMES, inputs, absent)
    x, w, offset = given["x"], given["w"], given["offset"]
    (y,) = outputs
    clean = {k: v for k, v in attrs.items() if k != "absent_inputs"}
    magnitude = deform_conv(inputs, clean, absent, magnitudes=True)
    terms = 4 * math.prod(w.shape[1:]) + 1
    g = gamma(terms + 6, u)
    ys, xs = locations(x.shape, w.shape, offset, clean)
    reach = max(float(np.abs(ys).max(initial=0)), float(np.abs(xs).max(initial=0))) + 1
    largest = np.abs(x).max(axis=(1, 2, 3)) if x.size else np.zeros(x.shape[0])
    mask = np.abs(given["mask"]) if "mask" in given else None
    weight_mass = np.abs(w).sum(axis=(1, 2, 3))[None, :, None, None] * (
        1 if mask is None else mask.max(axis=1, initial=0)[:, None])
    drift = 2 * largest[:, None, None, None] * weight_mass * 2 * gamma(2, u) * reach
    bound = g * magnitude + drift + u * np.abs(y) + underflow_term(3 * terms, out_dtype)
    return (judged_bound(bound, y, unbounded=reaches_max_finite(magnitude, out_dtype, gamma_n=g)),)


def draw_deform_conv(draw, kit, spec, dtype):
    """2-D: group and offset_group 1 or 2 (C a multiple of both), oC a multiple of group, a
    kernel of 1 to 3 per axis, strides and dilations 1 or 2, pads 0 to 2, sides giving at least
    one output; kernel_shape given or inferred; B and mask each present or absent."""
    st = kit.st
    group, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    c, oc = group * og * draw(st.integers(1, 2)) // (2 if group == og == 2 else 1), group * draw(st.integers(1, 2))
    kernel = [draw(st.integers(1, 3)) for _ in range(2)]
    strides, dilations = [draw(st.integers(1, 2)) for _ in range(2)], [draw(st.integers(1, 2)) for _ in range(2)]
    pads = [draw(st.integers(0, 2)) for _ in range(4)]
    sides, out = [], []
    for a in range(2):
        reach = (kernel[a] - 1) * dilations[a] + 1
        side = draw(st.integers(max(1, reach - pads[a] - pads[a + 2]), 5))
        sides.append(side)
        out.append((side + pads[a] + pads[a + 2] - reach) // strides[a] + 1)
    n = draw(st.integers(1, 2))
    attrs = {"group": group, "offset_group": og, "strides": strides, "dilations": dilations, "pads": pads}
    if draw(st.booleans()):
        attrs["kernel_shape"] = kernel
    absent = kit.absent_inputs(draw, spec)
    k = math.prod(kernel)
    shapes = {"x": (n, c) + tuple(sides), "w": (oc, c // group) + tuple(kernel),
              "offset": (n, og * k * 2) + tuple(out), "b": (oc,), "mask": (n, og * k) + tuple(out)}
    names = [name for name in NAMES if name not in absent]
    return kit.Signature((dtype,) * len(names), tuple(shapes[name] for name in names),
                         kit.with_absent(attrs, absent), dtype)


def values_deform_conv(rng, inputs, attrs):
    """Finite X, W and B; offsets on a 1/8 grid in [-2, 2] (every location exact: whether it
    leaves the padded tensor is decided exactly); mask in eighths of [0, 1]."""
    given = by_name(NAMES, inputs, attrs.get("absent_inputs", ()))
    for name, array in given.items():
        wide = array.astype(np.float64)
        if name == "offset":
            wide = rng.integers(-16, 17, array.shape) / 8
        elif name == "mask":
            wide = rng.integers(0, 9, array.shape) / 8
        else:
            wide = np.where(np.isfinite(wide), wide, rng.uniform(-4, 4, array.shape))
        given[name] = wide.astype(array.dtype)
    return list(given.values())


def feed_deform_conv(inputs, attrs, index):
    """Y[n, oc, oh, ow] combines W[oc], B[oc] and, per input channel of oc's group and kernel
    tap, the X elements (row-major, each once) its location interpolates (none where it leaves
    the padded tensor, none of the padding), with the offsets and mask of those channels'
    offset groups at (oh, ow)."""
    absent = attrs.get("absent_inputs", ())
    given = by_name(NAMES, inputs, absent)
    x, w, offset = given["x"], given["w"], given["offset"]
    n, oc, oh, ow = index
    c, h, wd = x.shape[1:]
    group, og = int(attrs.get("group", 1)), int(attrs.get("offset_group", 1))
    per, part = c // group, oc // (w.shape[0] // group)   # oc's group reads its per channels
    channels = range(part * per, (part + 1) * per)
    ys, xs = locations(x.shape, w.shape, offset, attrs)
    pads, reads = attrs.get("pads", [0, 0, 0, 0]), set()
    for ch in channels:
        for y, xx in zip(ys[n, ch // (c // og), :, oh, ow], xs[n, ch // (c // og), :, oh, ow]):
            if not -pads[0] <= y <= h - 1 + pads[2] or not -pads[1] <= xx <= wd - 1 + pads[3]:
                continue
            reads |= {(ch, py, px) for py in (math.floor(y), math.floor(y) + 1)
                      for px in (math.floor(xx), math.floor(xx) + 1) if 0 <= py < h and 0 <= px < wd}
    groups = sorted({ch // (c // og) for ch in channels})
    k = math.prod(w.shape[2:])
    picked = {"x": x[n].ravel()[sorted(np.ravel_multi_index(p, x.shape[1:]) for p in reads)],
              "w": w[oc].ravel(), "b": given.get("b", np.zeros(0))[oc:oc + 1],
              "offset": np.concatenate([offset[n, g * 2 * k:(g + 1) * 2 * k, oh, ow] for g in groups]),
              "mask": np.concatenate([given["mask"][n, g * k:(g + 1) * k, oh, ow] for g in groups])
              if "mask" in given else None}
    return [picked[name] for name in given]


def numpy_deform_conv(*inputs, absent_inputs=(), **attrs):
    """The numpy backend: in X's type, per tap the four corners gathered from a zero-padded
    copy of X (``np.pad``), weighted, masked, then ``np.einsum`` per group (which refuses
    bfloat16: unsupported)."""
    given = by_name(NAMES, inputs, absent_inputs)
    x, w, offset = given["x"], given["w"], given["offset"]
    if x.dtype.kind != "f":
        raise unsupported(f"np.einsum refuses {x.dtype}")
    t, (n, c, h, wd), k = x.dtype.type, x.shape, math.prod(w.shape[2:])
    group, og, pads = int(attrs.get("group", 1)), int(attrs.get("offset_group", 1)), attrs.get("pads", [0] * 4)
    margin = 8 + max(pads)
    big = np.pad(x, ((0, 0), (0, 0), (margin, margin), (margin, margin)))
    ys, xs = (a.astype(x.dtype) for a in locations(x.shape, w.shape, offset.astype(np.float64), attrs))
    ys, xs = np.repeat(ys, c // og, axis=1), np.repeat(xs, c // og, axis=1)
    cols = np.zeros(ys.shape, x.dtype)
    nb, cb = np.arange(n)[:, None, None, None, None], np.arange(c)[None, :, None, None, None]
    for corner_y in (np.floor(ys), np.floor(ys) + t(1)):
        for corner_x in (np.floor(xs), np.floor(xs) + t(1)):
            part = (t(1) - np.abs(ys - corner_y)) * (t(1) - np.abs(xs - corner_x))
            cols += part * big[nb, cb, corner_y.astype(int) + margin, corner_x.astype(int) + margin]
    inside = (ys >= -pads[0]) & (ys <= h - 1 + pads[2]) & (xs >= -pads[1]) & (xs <= wd - 1 + pads[3])
    cols = np.where(inside, cols, t(0))
    if "mask" in given:
        cols = cols * np.repeat(given["mask"].reshape((n, og, k) + offset.shape[2:]), c // og, axis=1)
    per, oc = c // group, w.shape[0]
    parts = [np.einsum("ock,nck...->no...", w[i * oc // group:(i + 1) * oc // group].reshape(oc // group, per, k),
                       cols[:, i * per:(i + 1) * per]) for i in range(group)]
    y = np.concatenate(parts, axis=1)
    return (y + given["b"][None, :, None, None] if "b" in given else y).astype(x.dtype)


@op("onnx_deform_conv", version=1, draw=draw_deform_conv, draw_honours=frozenset({"optional"}),
    values=values_deform_conv, feeding=feed_deform_conv, error_bound=deform_conv_bound,
    numpy=numpy_deform_conv, onnx=lower_with(NAMES, *ATTRIBUTES))
def oracle_onnx_deform_conv(*inputs, absent_inputs=(), reading=0, **attrs):
    """ONNX DeformConv-19: each output the sum over its group's channels and the kernel's taps
    of W times the mask times X interpolated at the tap's offset location, plus B."""
    return (deform_conv(inputs, attrs, absent_inputs, reading),)
