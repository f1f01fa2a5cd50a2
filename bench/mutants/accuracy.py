"""Mutants of accuracy: drift in one sub-range, naive formulas that overflow or cancel,
subnormals flushed, and accumulation in too low a precision."""
from __future__ import annotations

import numpy as np

from bench.mutants.base import OrtMutant, _finfo, _flushed, _search, ORT, XLA, TVM, OV


# ---- sub-range accuracy drift ------------------------------------------------------------------

class ExpDriftInOneBinade(OrtMutant):
    """float32 exp 16 ulp high for x in [2, 4) only (a polynomial table wrong in one interval)."""

    targets, affects = ("exp",), ("float32",)
    bug = "sub-range accuracy drift"
    resembles = _search(ORT, "Exp accuracy float32 range")

    def mutate(self, program, inputs, outputs):
        x, out = inputs[0], outputs[0]
        hit = (x >= 2) & (x < 4)
        return [np.where(hit, out * np.float32(1 + 2**-19), out).astype(np.float32)]


class SinLargeArgumentReduction(OrtMutant):
    """float32 sin reducing its argument by a float32 pi (Cody-Waite without the extra terms): the
    error grows with |x|; wrong for |x| >= 1024."""

    targets, affects = ("sin",), ("float32",)
    bug = "argument reduction loses accuracy for large inputs"
    resembles = _search(XLA, "sin large input inaccurate")

    def mutate(self, program, inputs, outputs):
        x = inputs[0].astype(np.float64)
        big = np.isfinite(x) & (np.abs(x) >= 1024)
        xs = np.where(big, x, 0.0)
        k = np.round(xs / np.pi)
        naive = np.where(k % 2 == 0, 1.0, -1.0) * np.sin(xs - k * np.float64(np.float32(np.pi)))
        return [np.where(big, naive.astype(np.float32), outputs[0])]


class ReciprocalApproximate(OrtMutant):
    """float32 reciprocal from a hardware estimate (rcpps, 12 bits) without its Newton step."""

    targets, affects = ("reciprocal",), ("float32",)
    bug = "fast-math approximation left in an ieee op"
    resembles = _search(TVM, "fast math reciprocal precision")

    def mutate(self, program, inputs, outputs):
        out = outputs[0]
        return [np.where(np.isfinite(out) & (out != 0), out * np.float32(1 + 2**-13), out)
                .astype(np.float32)]


# ---- naive formulas: overflow, cancellation ----------------------------------------------------

class LogisticNaiveFormula(OrtMutant):
    """logistic as exp(x) / (1 + exp(x)): NaN (inf/inf) once exp(x) overflows."""

    targets, affects = ("logistic",), ("float32", "float16")
    bug = "naive formula overflows (sigmoid NaN for large inputs)"
    resembles = _search(ORT, "Sigmoid nan large input")

    def mutate(self, program, inputs, outputs):
        x = inputs[0]
        with np.errstate(all="ignore"):
            e = np.exp(x)
            naive = (e / (x.dtype.type(1) + e)).astype(x.dtype)
        return [np.where(np.isnan(naive) & ~np.isnan(x), naive, outputs[0])]


class SoftmaxWithoutMaxSubtraction(OrtMutant):
    """Softmax as exp(x) / sum(exp(x)) in the input type, without subtracting the max first."""

    targets, affects = ("onnx_softmax",), ("float32", "float16")
    bug = "softmax without max subtraction"
    resembles = _search(ORT, "Softmax nan large values overflow")

    def mutate(self, program, inputs, outputs):
        x, axis = inputs[0], program.attrs.get("axis", -1)
        with np.errstate(all="ignore"):
            e = np.exp(x)
            return [(e / np.sum(e, axis=axis, keepdims=True, dtype=x.dtype)).astype(x.dtype)]


class LogSoftmaxAsLogOfSoftmax(OrtMutant):
    """LogSoftmax as log(softmax(x)): -inf where a probability underflows."""

    targets, affects = ("onnx_log_softmax",), ("float32", "float16")
    bug = "log of an underflowed softmax (-inf instead of a finite log-probability)"
    resembles = _search(ORT, "LogSoftmax -inf")

    def mutate(self, program, inputs, outputs):
        x, axis = inputs[0], program.attrs.get("axis", -1)
        with np.errstate(all="ignore"):
            e = np.exp(x - np.max(x, axis=axis, keepdims=True))
            p = (e / np.sum(e, axis=axis, keepdims=True, dtype=x.dtype)).astype(x.dtype)
            return [np.log(p).astype(x.dtype)]


class LogSumExpNaive(OrtMutant):
    """ReduceLogSumExp as log(sum(exp(x))): inf once the sum of exponentials overflows."""

    targets, affects = ("onnx_reduce_log_sum_exp",), ("float32", "float16")
    bug = "log-sum-exp without max subtraction"
    resembles = _search(ORT, "ReduceLogSumExp overflow inf")

    def mutate(self, program, inputs, outputs):
        out = outputs[0]
        limit = np.log(float(_finfo(out.dtype).max))
        return [np.where(np.isfinite(out) & (out > limit), np.inf, out).astype(out.dtype)]


class ReduceL2WithoutScaling(OrtMutant):
    """float16 ReduceL2 squaring in float16: inf once the sum of squares passes 65504."""

    targets, affects = ("onnx_reduce_l2",), ("float16",)
    bug = "intermediate overflow in a low-precision norm"
    equivalent = ("ONNX ReduceL2's function body squares and sums in the input type: inf where the "
                  "sum of squares overflows is what the standard's own definition computes "
                  "(ops/onnx_reduce_l2.yaml, region sum_of_squares_out_of_range)")
    resembles = _search(ORT, "ReduceL2 float16 inf overflow")

    def mutate(self, program, inputs, outputs):
        out = outputs[0]
        return [np.where(np.isfinite(out) & (out.astype(np.float64) ** 2 > 65504), np.inf, out)
                .astype(np.float16)]


class SoftplusNaive(OrtMutant):
    """softplus as log(1 + exp(x)) in float32: inf for x > 88.7 (softplus(x) ~ x there)."""

    targets, affects = ("softplus",), ("float32",)
    bug = "naive formula overflows"
    resembles = _search(ORT, "Softplus inf large input")

    def mutate(self, program, inputs, outputs):
        x = inputs[0]
        with np.errstate(all="ignore"):
            naive = np.log1p(np.exp(x)).astype(np.float32)
        return [np.where(np.isinf(naive) & np.isfinite(x), naive, outputs[0])]


class AsinhNaive(OrtMutant):
    """asinh as log(x + sqrt(x*x + 1)) in float32: overflow for |x| > 1.8e19 and cancellation for
    negative x."""

    targets, affects = ("asinh",), ("float32",)
    bug = "naive formula: overflow and cancellation"
    resembles = _search(OV, "Asinh accuracy negative")

    def mutate(self, program, inputs, outputs):
        x = inputs[0]
        with np.errstate(all="ignore"):
            naive = np.log(x + np.sqrt(x * x + np.float32(1))).astype(np.float32)
        return [np.where(np.isfinite(x), naive, outputs[0])]


class TanhOvershootsInSaturation(OrtMutant):
    """Tanh returning +-(1 + eps) where it saturates (a polynomial or rational approximation whose
    result is not clamped to [-1, 1]): 2 ULP of 1 in float32, inside the 5-ULP bound, outside the
    function's range."""

    targets = ("tanh",)
    affects = ("float32",)   # (float64 alike; one dtype keeps the mutation score's run short)
    bug = "tanh leaving [-1, 1] in saturation"
    resembles = _search(ORT, "Tanh greater than 1")

    def mutate(self, program, inputs, outputs):
        out = outputs[0]
        over = np.nextafter(np.ones((), out.dtype), np.full((), 2, out.dtype))
        return [np.where(np.abs(out) == 1, np.copysign(over, out), out).astype(out.dtype)]


class CoshOverflowsEarly(OrtMutant):
    """float32 cosh as (exp(x) + exp(-x)) / 2: inf for 88.72 < |x| <= 89.41, where cosh is
    finite."""

    targets, affects = ("cosh",), ("float32",)
    bug = "intermediate overflow near the overflow threshold"
    resembles = _search(ORT, "Cosh overflow inf")

    def mutate(self, program, inputs, outputs):
        x = inputs[0]
        with np.errstate(all="ignore"):
            naive = ((np.exp(x) + np.exp(-x)) / np.float32(2)).astype(np.float32)
        return [np.where(np.isfinite(x), naive, outputs[0])]


class SqrtAsXTimesRsqrt(OrtMutant):
    """sqrt as x * rsqrt(x) (a fast-math rewrite): NaN at +-0 (0 * inf) and at +inf."""

    targets, affects = ("sqrt",), ("float32", "float16", "float64")
    bug = "fast-math rewrite breaks special values"
    resembles = _search(XLA, "sqrt rsqrt zero nan")

    def mutate(self, program, inputs, outputs):
        x, out = inputs[0], outputs[0]
        return [np.where((x == 0) | (x == np.inf), np.array(np.nan, out.dtype), out)]


# ---- subnormals --------------------------------------------------------------------------------

class FlushSubnormalInputsAdd(OrtMutant):
    """float32 Add reading subnormal inputs as zero (DAZ) while declaring ieee."""

    targets, affects = ("onnx_add",), ("float32",)
    bug = "denormals-are-zero on inputs in an ieee backend"
    resembles = _search(ORT, "denormal flush to zero")

    def forward(self, program, inputs):
        return [_flushed(a) for a in inputs]


class FlushSubnormalResultsMul(OrtMutant):
    """float32 Mul flushing subnormal results to zero (FTZ) while declaring ieee."""

    targets, affects = ("onnx_mul",), ("float32",)
    bug = "flush-to-zero of results in an ieee backend"
    resembles = _search(ORT, "flush to zero subnormal result")

    def mutate(self, program, inputs, outputs):
        return [_flushed(outputs[0])]


class FlushSubnormalResultsDivFloat64(FlushSubnormalResultsMul):
    """float64 Div flushing subnormal results to zero (FTZ) while declaring ieee."""

    targets, affects = ("onnx_div",), ("float64",)
    resembles = _search(XLA, "xla_cpu flush denormal")


# ---- low-precision accumulation ----------------------------------------------------------------

class MatMulFloat16Accumulation(OrtMutant):
    """float16 MatMul accumulating in float16, one product at a time."""

    targets, affects = ("onnx_matmul",), ("float16",)
    bug = "low-precision accumulation"
    equivalent = ("ONNX MatMul fixes neither the order nor the accumulator's precision: "
                  "accumulating in the output type (float16) is allowed, and the judge's bound "
                  "gamma_n * sum|a_k b_k| covers it (ops/onnx_matmul.yaml)")
    resembles = _search(ORT, "MatMul float16 accumulation precision")

    def mutate(self, program, inputs, outputs):
        a, b = inputs
        if a.ndim < 2 or b.ndim < 2 or a.shape[-1] == 0:
            return outputs
        acc = np.zeros(outputs[0].shape, np.float16)
        with np.errstate(all="ignore"):
            for k in range(a.shape[-1]):
                acc = (acc + (a[..., :, k:k + 1] * b[..., k:k + 1, :]).astype(np.float16)
                       ).astype(np.float16)
        return [acc]
