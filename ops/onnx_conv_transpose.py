"""ONNX ConvTranspose, written from the operator's text
(``onnx.defs.get_schema("ConvTranspose").doc`` and its attributes).

X is ``N x C x D1..Dn``, W ``C x M/group x k1..kn``; the output has ``M = W.shape[1] * group``
channels, input channel group ``g`` feeding output channel group ``g``. The transpose of a
convolution places input element ``i`` through kernel tap ``k`` at ``i * stride + k *
dilation`` of a full output of ``stride * (in - 1) + output_padding + (kernel - 1) * dilation
+ 1`` elements per axis (the text's output_shape formula before the pads; output_padding's
'additional elements added to the side with higher coordinate indices' receive no term), sums
what lands on each position, adds the bias B[m], and removes ``pads[start]`` elements at the
start and ``pads[end]`` at the end. The pads: the attribute (NOTSET); none (VALID); with
SAME_UPPER or SAME_LOWER those giving ``output_shape[i] = input_shape[i] * strides[i]``, 'the
extra padding ... at the end for SAME_UPPER and at the beginning for SAME_LOWER'; with the
attribute output_shape, the text's equations: ``total = full - output_shape``, SAME_UPPER
``start = total / 2``, otherwise ``start = total - total / 2`` (integer division). An output_shape past the full size makes
the total negative: negative pads widen the output by elements with no term (the node test
example test_convtranspose_output_shape). For an odd negative total the text's ``/ 2`` does not
say which way it rounds: toward -inf (reading 0, the oracle's: the node test example, whose
extra element is at the end) or toward 0 (reading 1, C's ``/``: at the start); the region
``reading_differs``.
"""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op
from conform.ops._double_double import sum_of_products

AUTO_PADS = ("NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def geometry(spatial, kernel, attrs):
    """Per spatial axis ``(full, start, end)``: the full output's size and the elements the
    pads remove at its start and end."""
    n, auto_pad = len(spatial), attrs.get("auto_pad", "NOTSET")
    strides = attrs.get("strides") or [1] * n
    dilations = attrs.get("dilations") or [1] * n
    extra = attrs.get("output_padding") or [0] * n
    pads = attrs.get("pads") or [0] * (2 * n)
    out = []
    for i, size in enumerate(spatial):
        full = strides[i] * (size - 1) + extra[i] + (kernel[i] - 1) * dilations[i] + 1
        wanted = attrs["output_shape"][-n + i] if attrs.get("output_shape") else \
            size * strides[i] if auto_pad.startswith("SAME") else None
        if wanted is None:
            start, end = (0, 0) if auto_pad == "VALID" else (pads[i], pads[n + i])
        else:
            total = full - wanted
            half = -(-total // 2) if attrs.get("reading") and total < 0 else total // 2
            start = half if auto_pad == "SAME_UPPER" else total - half
            end = total - start
        out.append((full, start, end))
    return out


def canvas(spatial, kernel, attrs):
    """Per spatial axis ``(size, lead, cut_start, cut_end)``: the positions computed (the full
    output, widened where a pad is negative: output_shape past the full size, whose extra
    elements have no term, as output_padding's), the full output's offset in them, and the
    elements cut at the start and at the end."""
    return [(full + max(-start, 0) + max(-end, 0), max(-start, 0), max(start, 0), max(end, 0))
            for full, start, end in geometry(spatial, kernel, attrs)]


def _taps(spatial, kernel, attrs):
    """``(index, real)``: for the full output's positions and the kernel taps, ``(F1..Fn,
    K1..Kn)`` arrays per axis of the input element the tap reads (clipped) and whether there is
    one (``(o - k * dilation) / stride`` an integer in range)."""
    n = len(spatial)
    strides = attrs.get("strides") or [1] * n
    dilations = attrs.get("dilations") or [1] * n
    index, real = [], []
    for i, ((full, lead, _, _), size, k) in enumerate(zip(canvas(spatial, kernel, attrs), spatial,
                                                          kernel)):
        raw = np.arange(-lead, full - lead)[:, None] - np.arange(k)[None, :] * dilations[i]
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = full, k
        index.append(np.clip(raw // strides[i], 0, size - 1).reshape(shape))
        real.append(((raw % strides[i] == 0) & (raw >= 0) & (raw // strides[i] < size)).reshape(shape))
    return index, math.prod(real)


def _cropped(full, spatial, kernel, attrs):
    """The full output without the elements the pads remove."""
    spans = tuple(slice(start, f - end) for f, _, start, end in canvas(spatial, kernel, attrs))
    return full[(Ellipsis,) + spans]


def _kernel(w, attrs):
    return attrs.get("kernel_shape") or list(w.shape[2:])


def _open(x, w, attrs, real):
    """Where a non-finite weight meets a tap that reads no input element (see the spec)."""
    groups, kernel = attrs.get("group", 1), _kernel(w, attrs)
    bad = ~np.isfinite(w).reshape(groups, w.shape[0] // groups, w.shape[1], -1).any(1)
    absent = ~real.reshape(real.shape[:len(kernel)] + (-1,))
    hit = (absent[None, None] & bad[:, :, None, None, :].reshape(
        bad.shape[:2] + (1,) * len(kernel) + bad.shape[-1:])).any(-1)
    hit = hit.reshape((1, -1) + hit.shape[2:])
    return _cropped(np.broadcast_to(hit, (x.shape[0],) + hit.shape[1:]), x.shape[2:], kernel, attrs)


def conv_transpose(x, w, bias, attrs, open_elements=False):
    """The output (see the module docstring), each element one double-double sum of its
    products and the bias."""
    groups, kernel, spatial = attrs.get("group", 1), _kernel(w, attrs), x.shape[2:]
    index, real = _taps(spatial, kernel, attrs)
    if open_elements:
        return _open(x, w, attrs, real)
    batch, channels = x.shape[:2]
    per = channels // groups
    full_shape = real.shape[:len(kernel)]
    flat_real = real.reshape(math.prod(full_shape), -1)
    # a tap reading no input element is no term (not 0 * w): both factors 0 there
    taps = np.where(real, x[(slice(None), slice(None), *index)], 0.0)   # (N, C, F.., K..)
    taps = taps.reshape(batch, groups, 1, per, flat_real.shape[0], -1)
    weights = w.reshape(groups, per, w.shape[1], 1, -1).transpose(0, 2, 1, 3, 4)[None]
    weights = np.where(flat_real, weights, 0.0)
    ones = np.zeros(taps.shape[:-1] + (1,))
    ones[:, :, :, 0] = 1.0                                      # the bias: one more term
    b = np.zeros(w.shape[1] * groups) if bias is None else bias
    biases = np.zeros(weights.shape[:-1] + (1,))
    biases[0, :, :, 0, :, 0] = b.reshape(groups, -1)[..., None]
    total = sum_of_products([np.concatenate([taps, ones], -1),
                             np.concatenate([weights, biases], -1)], [3, 5])
    return _cropped(total.reshape((batch, -1) + full_shape), spatial, kernel, attrs)


def draw_onnx_conv_transpose(draw, kit, spec, dtype):
    """1 or 2 spatial axes (3 now and then, small); group 1 or 2, C and M/group 1 or 2 per
    group; per axis a kernel of 1 to 3, a dilation of 1 to 2, a stride of 1 to 3 and an
    output_padding below the stride; auto_pad from the spec's choices; with NOTSET, explicit
    pads (removing less than the full output) or output_shape (up to the full size); under
    SAME the stride at most the dilated kernel plus output_padding (else the text's total
    padding is negative); output_shape up to stride - 1 - output_padding past the full size
    (a Conv of these attributes maps such sizes back to the input's). kernel_shape given now and then, each attribute now and then left
    to its default, the bias B present or absent."""
    st = kit.st
    n = draw(st.sampled_from([1, 1, 2, 2, 3]))
    groups, per, per_out = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kernel = [draw(st.integers(1, 3 if n < 3 else 2)) for _ in range(n)]
    dilations = [draw(st.integers(1, 2)) for _ in range(n)]
    auto_pad = draw(st.sampled_from(spec.signature["attrs"]["auto_pad"]["choice"]))
    reach = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    strides = [draw(st.integers(1, 3)) for _ in range(n)]
    extra = [draw(st.integers(0, s - 1)) for s in strides]
    if auto_pad.startswith("SAME"):
        strides = [min(s, r + e) for s, r, e in zip(strides, reach, extra)]
        extra = [min(e, s - 1) for e, s in zip(extra, strides)]
    spatial = [draw(st.integers(1, 3 if n < 3 else 2)) for _ in range(n)]
    attrs = {"auto_pad": auto_pad, "group": groups, "strides": strides, "dilations": dilations,
             "output_padding": extra}
    full = [s * (i - 1) + e + r for s, i, e, r in zip(strides, spatial, extra, reach)]
    if auto_pad == "NOTSET" and draw(st.booleans()):   # past the full size: negative pads
        attrs["output_shape"] = [draw(st.integers(1, f + max(0, s - 1 - e)))
                                 for f, s, e in zip(full, strides, extra)]
    elif auto_pad == "NOTSET":
        ends = [draw(st.integers(0, min(2, f - 1))) for f in full]
        attrs["pads"] = [draw(st.integers(0, min(2, f - 1 - e))) for f, e in zip(full, ends)] + ends
    if draw(st.booleans()):
        attrs["kernel_shape"] = kernel
    for name in ("strides", "dilations", "output_padding", "group"):
        if attrs[name] in ([1] * n, [0] * n, 1) and draw(st.booleans()):
            del attrs[name]
    channels = groups * per
    absent = kit.absent_inputs(draw, spec)
    shapes = ((1, channels, *spatial), (channels, per_out, *kernel), (groups * per_out,))
    shapes = shapes[:3 - len(absent)]
    return kit.Signature((dtype,) * len(shapes), shapes, kit.with_absent(attrs, absent), dtype)


def feed_onnx_conv_transpose(inputs, attrs, index):
    """The X and W elements whose products land on out[index], and B[m]."""
    x, w, *bias = inputs
    kernel, spatial = _kernel(w, attrs), x.shape[2:]
    per = x.shape[1] // attrs.get("group", 1)
    g, m = divmod(index[1], w.shape[1])
    at = tuple(start + o for o, (_, _, start, _) in zip(index[2:], canvas(spatial, kernel, attrs)))
    taps, real = _taps(spatial, kernel, attrs)
    offsets = np.nonzero(real[at])
    positions = [t.reshape(t.shape[i], t.shape[len(kernel) + i])[p][k]
                 for i, (t, p, k) in enumerate(zip(taps, at, offsets))]
    chans = slice(g * per, (g + 1) * per)
    fed_x = x[index[0], chans][(slice(None), *positions)].ravel()
    fed_w = w[(chans, m, *offsets)].ravel()
    return [fed_x, fed_w] + [b[index[1]:index[1] + 1] for b in bias]


def terms(shapes, attrs) -> int:
    """The products summed into one output element, at most: C / group taps times the
    kernel's, and the bias."""
    groups = attrs.get("group", 1)
    return shapes[0][1] // groups * math.prod(shapes[1][2:]) + (len(shapes) > 2)


def onnx_conv_transpose(case, graph):
    """One ConvTranspose node with the case's attributes (pads only with NOTSET, 'cannot be
    used simultaneously with auto_pad')."""
    graph.node(graph.op_type, graph.inputs,
               **{k: v for k, v in case.attrs.items() if k != "absent_inputs"})


def numpy_onnx_conv_transpose(x, w, *bias, absent_inputs=(), **attrs):
    """The numpy backend: per kernel tap and group, ``np.sum`` of X times the tap's weights
    added into every stride-th element of a zeroed full output, in x's type; the bias added,
    the pads cut."""
    kernel, spatial = _kernel(w, attrs), x.shape[2:]
    n, groups = len(spatial), attrs.get("group", 1)
    strides = attrs.get("strides") or [1] * n
    dilations = attrs.get("dilations") or [1] * n
    sizes, leads = zip(*[(f, lead) for f, lead, _, _ in canvas(spatial, kernel, attrs)])
    per, per_out = x.shape[1] // groups, w.shape[1]
    y = np.zeros((x.shape[0], per_out * groups, *sizes), x.dtype)
    for tap in np.ndindex(*kernel):
        spans = tuple(slice(a + t * d, a + t * d + s * (i - 1) + 1, s)
                      for a, t, d, s, i in zip(leads, tap, dilations, strides, spatial))
        for g in range(groups):
            taps = w[(slice(g * per, (g + 1) * per), slice(None), *tap)]
            part = np.sum(x[:, g * per:(g + 1) * per, None]
                          * taps.reshape(taps.shape + (1,) * n), axis=1, dtype=x.dtype)
            y[(slice(None), slice(g * per_out, (g + 1) * per_out), *spans)] += part
    if bias:
        y += bias[0].reshape((1, -1) + (1,) * n)
    return _cropped(y, spatial, kernel, attrs)


@op("onnx_conv_transpose", version=1, draw=draw_onnx_conv_transpose,
    draw_honours=frozenset({"attrs", "optional"}), feeding=feed_onnx_conv_transpose,
    accumulation_length=terms, onnx=onnx_conv_transpose, numpy=numpy_onnx_conv_transpose)
def oracle_onnx_conv_transpose(x, w, *bias, absent_inputs=(), open_elements=False, reading=0,
                               **attrs):
    """ONNX ConvTranspose (see the module docstring); ``open_elements``: the region's mask;
    ``reading``: how an odd negative total padding halves."""
    attrs = {**attrs, "reading": reading}
    return (conv_transpose(x, w, bias[0] if bias else None, attrs, open_elements),)
