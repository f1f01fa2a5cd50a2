"""Mutants at shape boundaries: pooling windows, integer division overflow, vectorised tails,
resize crops and one-pass moments."""
from __future__ import annotations

import numpy as np

from bench.mutants.base import OrtMutant, NumpyMutant, _search, ORT


# ---- shape boundaries and overflowing integer division ----------------------------------------

class PoolWrongWithoutFullWindow(OrtMutant):
    """MaxPool off by one on every output of a case where some spatial axis's
    padded input is shorter than the dilated kernel (no full window fits: with ceil_mode the
    text still gives one window, reaching past the padding)."""

    targets, affects = ("onnx_max_pool",), ("float32",)
    bug = "a pooling kernel wrong only when no full window fits the padded input"
    resembles = _search(ORT, "MaxPool ceil_mode kernel larger than input")

    def mutate(self, program, inputs, outputs):
        attrs, spatial = program.attrs, inputs[0].shape[2:]
        n = len(spatial)
        pads = attrs.get("pads") or [0] * (2 * n)
        dilations = attrs.get("dilations") or [1] * n
        short = attrs.get("auto_pad", "NOTSET") == "NOTSET" and any(
            size + pads[i] + pads[n + i] < (k - 1) * d + 1
            for i, (size, k, d) in enumerate(zip(spatial, attrs["kernel_shape"], dilations)))
        return [outputs[0] + np.float32(1), *outputs[1:]] if short else outputs


class IntDivTrapsOnOverflow(OrtMutant):
    """int32 Div that traps (SIGFPE, as x86's idiv does) when a quotient overflows, INT_MIN /
    -1, and only then: zero divisors are handled as before. The ONNX Div text leaves the
    overflow's value open, but a dead process is no value."""

    targets, affects = ("onnx_div",), ("int32",)
    bug = "an integer division that traps only on INT_MIN / -1"
    resembles = _search(ORT, "Div int32 INT_MIN -1 SIGFPE crash")

    def forward(self, program, inputs):
        import os
        import signal

        lhs, rhs = np.broadcast_arrays(*inputs[:2])
        if np.any((lhs == np.iinfo(np.int32).min) & (rhs == -1)):
            os.kill(os.getpid(), signal.SIGFPE)
        return inputs


class MomentsInOnePass(NumpyMutant):
    """NNEF moments with the variance in one pass, mean(x**2) - mean(x)**2, where the fragment
    fixes two (variance = mean_reduce(sqr(input - mean))): it cancels on a group with a large
    common offset and a small spread."""

    targets = ("nnef_moments",)
    bug = "a one-pass variance where the text requires two passes"
    resembles = _search("pytorch/pytorch", "var numerical instability large mean one pass")

    def mutate(self, program, inputs, outputs):
        x, (mean, variance) = inputs[0], outputs
        axes = tuple(sorted(program.attrs["axes"]))
        one_pass = np.mean(np.square(x), axis=axes, keepdims=True, dtype=x.dtype) \
            - np.square(np.mean(x, axis=axes, keepdims=True, dtype=x.dtype))
        return [mean, one_pass.astype(variance.dtype)]


class VectorisedTailOneUlpWorse(OrtMutant):
    """float32 Erf whose vectorised path (elements 8 and up: the first 8 went through a scalar
    prologue) is 1 ULP worse, toward zero: within erf's 16-ULP bound everywhere, so only the
    position independence of an element-wise result shows it (the same input at element 3 and
    at element 530 gets two results)."""

    targets, affects = ("erf",), ("float32",)
    bug = "a vectorised path 1 ULP worse only on elements 8 and up"
    resembles = _search(ORT, "Erf different result vectorized tail AVX")

    def mutate(self, program, inputs, outputs):
        out = np.array(outputs[0], order="C")
        tail = out.reshape(-1)[8:]
        tail[...] = np.nextafter(tail, np.zeros((), out.dtype))
        return [out]


class ResizeCropOfUnscaledAxisOffByOne(OrtMutant):
    """float32 Resize (tf_crop_and_resize) off by one on every output of a case that crops an
    axis it does not rescale (scale 1, or a size equal to the input's length): a fast path
    that copies unscaled axes mishandles the crop region there, while crops of rescaled axes,
    and unscaled axes without a crop, stay right."""

    targets, affects = ("onnx_resize",), ("float32",)
    bug = "a resize wrong only for a crop region on an unscaled axis"
    shared = ("onnxruntime 1.32's Resize ignores a tf_crop_and_resize crop on every axis whose "
              "length does not change (sizes equal to the input's: that axis comes back uncropped)"
              " and, with scales, gives floor(length * scale) without the crop's extent: the "
              "boundary cases of ops/_resize_shapes.py fail on it unmutated")
    resembles = _search(ORT, "Resize tf_crop_and_resize roi scale 1 wrong")

    def mutate(self, program, inputs, outputs):
        attrs, shape = program.attrs, inputs[0].shape
        if attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize" or not shape:
            return outputs
        axes = [a % len(shape) for a in (attrs.get("axes") or range(len(shape)))]
        roi = attrs.get("roi") or [0.0] * len(axes) + [1.0] * len(axes)
        scales, out_shape = attrs.get("scales"), outputs[0].shape
        unscaled = [float(scales[k]) == 1.0 if scales else out_shape[a] == shape[a]
                    for k, a in enumerate(axes)]
        cropped = [(float(roi[k]), float(roi[len(axes) + k])) != (0.0, 1.0)
                   for k in range(len(axes))]
        if any(u and c for u, c in zip(unscaled, cropped)):
            return [(outputs[0] + np.float32(1)).astype(np.float32), *outputs[1:]]
        return outputs
