"""XLA Conv with the padding shorthand SAME or VALID (operation semantics,
seeds/004_c11ff90b720ca9d5.txt, "Conv": "the same as ConvWithGeneralPadding, but the padding is
given in shorthand as SAME or VALID. SAME padding pads the input (lhs) with zeros so that the
output has the same shape as the input when striding is not taken into account. VALID padding
simply means no padding").

Read: VALID is padding (0, 0); SAME pads each spatial dimension by ``(k - 1) * dilation`` zeros
in total (the dilated kernel's extent less one: a stride-1 output then has the input's size).
The text does not say how SAME splits an odd total between the two sides, nor, for a stride
above 1, whether the padding stays the stride-1 amount (its words) or is recomputed for the
strided output size (the TensorFlow convention, ceil(n / s) outputs, which can pad less); where
those readings differ the case is not drawn: SAME is drawn only with an even total, split evenly
(as the ReduceWindow section's kSame example pads one on each side of a window of 3), and with a
stride above 1 only where ``(n - 1)`` is a multiple of it (the two readings then coincide).

The oracle is ConvWithGeneralPadding's (ops/contraction.py) with that explicit padding; the jax
binding passes the shorthand string itself to ``lax.conv_general_dilated``, which computes the
padding.
"""
from __future__ import annotations

from conform.op_registry import op
from conform.ops.complex_contraction import complex_contraction_bound
from conform.ops.contraction import (conv_length, draw_conv, feed_conv, fitting_ints, numpy_conv,
                                     oracle_conv)


def explicit_padding(rhs_shape, attrs):
    """The (low, high) zero padding per spatial dimension that ``attrs["padding"]`` names."""
    if attrs["padding"] == "VALID":
        return [[0, 0], [0, 0]]
    return [[(k - 1) * d // 2] * 2 for k, d in zip(rhs_shape[2:], attrs["rhs_dilation"])]


def draw_conv_shorthand(draw, kit, spec, dtype):
    """ConvWithGeneralPadding's draw with the padding replaced by SAME or VALID: under SAME a
    dilation of 2 where ``(k - 1) * dilation`` would be odd and an odd size where the stride is
    2; under VALID a size at least the dilated kernel's extent."""
    signature = draw_conv(draw, kit, spec, dtype)
    (batch, channels, *sizes), kernel = signature.shapes
    attrs = dict(signature.attrs, padding=draw(kit.st.sampled_from(["SAME", "VALID"])))
    dilation = list(attrs["rhs_dilation"])
    for axis in range(2):
        k = kernel[2 + axis]
        if attrs["padding"] == "SAME":
            dilation[axis] = 2 if (k - 1) * dilation[axis] % 2 else dilation[axis]
            stride = attrs["window_strides"][axis]
            sizes[axis] += (sizes[axis] - 1) % stride and stride - (sizes[axis] - 1) % stride
        else:
            sizes[axis] = max(sizes[axis], (k - 1) * dilation[axis] + 1)
    attrs["rhs_dilation"] = dilation
    return signature._replace(shapes=((batch, channels, *sizes), kernel), attrs=attrs)


def lax_conv_shorthand(lax, attrs):
    """``lax.conv_general_dilated`` given the shorthand string: jax computes the padding."""
    return lambda lhs, rhs: lax.conv_general_dilated(
        lhs, rhs, attrs["window_strides"], attrs["padding"], rhs_dilation=attrs["rhs_dilation"],
        dimension_numbers=("NCHW", "OIHW", "NCHW"))


def numpy_conv_shorthand(lhs, rhs, *, window_strides, padding, rhs_dilation):
    """The numpy backend: ConvWithGeneralPadding's with the explicit padding."""
    explicit = explicit_padding(rhs.shape, {"padding": padding, "rhs_dilation": rhs_dilation})
    return numpy_conv(lhs, rhs, window_strides=window_strides, padding=explicit,
                      rhs_dilation=rhs_dilation)


def feed_conv_shorthand(inputs, attrs, index):
    """ConvWithGeneralPadding's feeding with the explicit padding."""
    return feed_conv(inputs, dict(attrs, padding=explicit_padding(inputs[1].shape, attrs)),
                     index)


@op("conv_shorthand", version=1, draw=draw_conv_shorthand, feeding=feed_conv_shorthand,
    lax=lax_conv_shorthand, numpy=numpy_conv_shorthand, accumulation_length=conv_length,
    values=fitting_ints(conv_length),
    error_bound=complex_contraction_bound(
        lambda lhs, rhs, attrs: oracle_conv_shorthand(lhs, rhs, **attrs)[0], conv_length))
def oracle_conv_shorthand(lhs, rhs, *, window_strides, padding, rhs_dilation):
    """Conv with SAME or VALID: ConvWithGeneralPadding with the padding the shorthand names."""
    explicit = explicit_padding(rhs.shape, {"padding": padding, "rhs_dilation": rhs_dilation})
    return oracle_conv(lhs, rhs, window_strides=window_strides, padding=explicit,
                       rhs_dilation=rhs_dilation)
