"""Mutants of composite formulas: normalisations with epsilon misplaced, clip, mod and pow,
reductions and padding, and StableHLO's NaN propagation in maximum and reduce."""
from __future__ import annotations

import numpy as np

from bench.mutants.base import OrtMutant, JaxMutant, _named, _search, ORT, XLA, TVM, OV


# ---- normalisations, clip, mod, pow ------------------------------------------------------------

class BatchNormEpsilonOutsideSqrt(OrtMutant):
    """BatchNormalization dividing by sqrt(var) + epsilon instead of sqrt(var + epsilon)."""

    targets, affects = ("onnx_batch_normalization",), ("float32", "float16")
    bug = "epsilon placement in a normalisation"
    resembles = _search(ORT, "BatchNormalization epsilon")

    def mutate(self, program, inputs, outputs):
        n = _named(program, inputs)
        x = n["x"].astype(np.float64)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        p = {k: n[k].astype(np.float64).reshape(shape) for k in ("scale", "b", "input_mean",
                                                                   "input_var")}
        eps = float(program.attrs.get("epsilon", 1e-5))
        with np.errstate(all="ignore"):
            y = p["scale"] * (x - p["input_mean"]) / (np.sqrt(p["input_var"]) + eps) + p["b"]
        return [y.astype(outputs[0].dtype)]


class LayerNormEpsilonOutsideSqrt(OrtMutant):
    """LayerNormalization dividing by sqrt(var) + epsilon instead of sqrt(var + epsilon)."""

    targets, affects = ("onnx_layer_normalization",), ("float32",)
    bug = "epsilon placement in a normalisation"
    resembles = _search(OV, "LayerNorm epsilon inside sqrt")

    def mutate(self, program, inputs, outputs):
        n = _named(program, inputs)
        x = n["x"].astype(np.float64)
        if x.ndim == 0:
            return outputs
        axis = program.attrs.get("axis", -1) % x.ndim
        axes = tuple(range(axis, x.ndim))
        eps = float(program.attrs.get("epsilon", 1e-5))
        with np.errstate(all="ignore"):
            mean = x.mean(axis=axes, keepdims=True)
            var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
            y = (x - mean) / (np.sqrt(var) + eps) * n["scale"].astype(np.float64)
            if "b" in n:
                y = y + n["b"].astype(np.float64)
        return [y.astype(outputs[0].dtype), *outputs[1:]]


class ClipMinAboveMax(OrtMutant):
    """Clip with min > max returning min (std::clamp's precondition broken) where the ONNX text,
    Min(max, Max(x, min)), gives max."""

    targets = ("onnx_clip",)
    bug = "wrong order of operations in a clamp"
    resembles = _search(ORT, "Clip min greater than max")

    def mutate(self, program, inputs, outputs):
        n = _named(program, inputs)
        if "min" not in n or "max" not in n:
            return outputs
        lo, hi, out = n["min"], n["max"], outputs[0]
        return [np.where(lo > hi, np.broadcast_to(lo, out.shape), out).astype(out.dtype)]


class ModFmodIgnored(OrtMutant):
    """Mod with fmod = 1 computing the floored remainder (sign of the divisor) instead of C
    fmod's truncated one (sign of the dividend)."""

    targets = ("onnx_mod_fmod",)
    bug = "attribute ignored (floored vs truncated remainder)"
    resembles = _search(ORT, "Mod fmod sign")

    def mutate(self, program, inputs, outputs):
        a, b = (v.astype(np.float64) for v in inputs)
        with np.errstate(all="ignore"):
            return [np.mod(a, b).astype(outputs[0].dtype)]


class PowViaExpLog(OrtMutant):
    """Pow as exp(y * log(x)): pow(x, 0) for x = 0 or NaN, and pow(1, y) for NaN y, are NaN
    instead of 1, and pow(0, y>0) stays right only by luck."""

    targets = ("onnx_pow",)
    bug = "special values of pow lost to a rewrite"
    resembles = _search(TVM, "pow exp log nan zero")

    def mutate(self, program, inputs, outputs):
        out = outputs[0]
        if np.issubdtype(out.dtype, np.integer):   # an integer power has no NaN to lose
            return outputs
        x, y = (v.astype(np.float64) for v in inputs)
        bad = ((y == 0) & ((x == 0) | np.isnan(x))) | ((x == 1) & np.isnan(y))
        return [np.where(np.broadcast_to(bad, out.shape), np.array(np.nan, out.dtype), out)]

class MatMulFloat32InputsRoundedToBfloat16(OrtMutant):
    """float32 MatMul rounding its operands to bfloat16 before multiplying (a "default precision"
    or TF32-like fast path left on for float32), accumulating in float32."""

    targets, affects = ("onnx_matmul",), ("float32",)
    bug = "low-precision products in a float32 matmul"
    resembles = _search("jax-ml/jax", "default precision float32 matmul bfloat16")

    def forward(self, program, inputs):
        import ml_dtypes

        return [a.astype(ml_dtypes.bfloat16).astype(np.float32) for a in inputs]


class ReduceSumIgnoresNaN(OrtMutant):
    """float32 ReduceSum skipping NaN terms (a NaN-unaware vectorised path) instead of
    propagating them."""

    targets, affects = ("onnx_reduce_sum",), ("float32",)
    bug = "a reduction ignoring NaN"
    resembles = _search(ORT, "ReduceSum NaN ignored")

    def mutate(self, program, inputs, outputs):
        x, out = inputs[0], outputs[0]
        axes = program.attrs.get("axes")
        if not axes:
            if program.attrs.get("noop_with_empty_axes", 0):
                return outputs
            axes = range(x.ndim)
        axes = tuple(a % x.ndim for a in axes) if x.ndim else None
        with np.errstate(all="ignore"):
            skipped = np.nansum(x.astype(np.float64), axis=axes,
                                keepdims=bool(program.attrs.get("keepdims", 1)))
        return [np.where(np.isnan(out), skipped.astype(np.float32), out)]


class PadReflectAsSymmetric(OrtMutant):
    """Pad mode "reflect" repeating the edge element (numpy's "symmetric"): an off-by-one in the
    mirrored index."""

    targets = ("onnx_pad",)
    bug = "off-by-one in a mirrored index"
    resembles = _search(ORT, "Pad reflect mode wrong")

    def mutate(self, program, inputs, outputs):
        attrs = program.attrs
        x = inputs[0]
        pads = list(attrs.get("pads") or [])
        if attrs.get("mode") != "reflect" or x.ndim == 0 or min(pads, default=0) < 0:
            return outputs
        axes = [a % x.ndim for a in (attrs.get("axes") or range(x.ndim))]
        width = [(0, 0)] * x.ndim
        for k, axis in enumerate(axes):
            width[axis] = (pads[k], pads[k + len(axes)])
        if any((b or e) and x.shape[axis] < 2 for axis, (b, e) in enumerate(width)) or any(
                b > x.shape[axis] or e > x.shape[axis] for axis, (b, e) in enumerate(width)):
            return outputs
        return [np.pad(x, width, mode="symmetric").astype(outputs[0].dtype)]


def _stablehlo_broadcast(program, a, b):
    """rhs broadcast into lhs's shape by broadcast_dimensions (or numpy's rules without it)."""
    dims = program.attrs.get("broadcast_dimensions")
    if dims is not None and b.ndim < a.ndim:
        shape = [1] * a.ndim
        for axis, d in zip(dims, b.shape):
            shape[axis] = d
        b = b.reshape(shape)
    return np.broadcast_arrays(a, b)


class MaximumAsCompareSelect(JaxMutant):
    """StableHLO maximum computed as (a > b ? a : b): a NaN in lhs is dropped (the result is rhs)
    where IEEE 754-2019 maximum propagates it."""

    targets = ("maximum",)
    affects = ("float16", "bfloat16", "float32", "float64")
    bug = "max dropping NaN"
    resembles = _search(XLA, "max NaN propagation")

    def mutate(self, program, inputs, outputs):
        a, b = _stablehlo_broadcast(program, *inputs)
        out = outputs[0]
        if a.shape != out.shape:
            return outputs
        return [np.where(a > b, a, b).astype(out.dtype)]


class ReduceMaxIgnoresNaN(JaxMutant):
    """StableHLO reduce_max skipping NaN elements (a maxNum-based kernel) instead of
    propagating them."""

    targets = ("reduce_max",)
    affects = ("float16", "bfloat16", "float32", "float64")
    bug = "a reduction ignoring NaN"
    resembles = _search(XLA, "reduce max NaN ignored")

    def mutate(self, program, inputs, outputs):
        x, out = inputs[0], outputs[0]
        dims = program.attrs.get("dimensions")
        axes = tuple(dims) if dims is not None else None
        with np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                skipped = np.nanmax(x.astype(np.float64), axis=axes) if x.size else None
        if skipped is None:
            return outputs
        return [np.where(np.isnan(out), np.asarray(skipped).astype(out.dtype), out)]
