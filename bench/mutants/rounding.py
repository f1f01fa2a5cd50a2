"""Mutants of rounding: conversions and arithmetic with the wrong tie rule, truncation or
saturation, and signed zeros lost or kept."""
from __future__ import annotations

import numpy as np

from bench.mutants.base import OrtMutant, JaxMutant, _finfo, _search, ORT, XLA, TVM, OV


# ---- rounding and conversions ------------------------------------------------------------------

class RoundHalfAwayFromZero(OrtMutant):
    """Round (ties to even) rounding ties away from zero, as C round() does."""

    targets = ("round_nearest_even",)
    bug = "tie rule: half away from zero instead of to even"
    resembles = _search(TVM, "round half to even")

    def mutate(self, program, inputs, outputs):
        x, out = inputs[0].astype(np.float64), outputs[0]
        t = np.trunc(x)
        tie = np.isfinite(x) & (np.abs(x - t) == 0.5)
        return [np.where(tie, (t + np.sign(x)).astype(out.dtype), out)]


def _truncated(x, out, dtype):
    """``out`` (``x`` correctly rounded into ``dtype``) as truncation toward zero gives it:
    one step toward zero where rounding went away from zero, the largest finite value where
    it overflowed."""
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        over = np.isfinite(x) & np.isfinite(out) & (np.abs(out.astype(np.float64)) > np.abs(x))
        down = np.nextafter(out, np.zeros_like(out))
        over_inf = np.isfinite(x) & np.isinf(out)
        top = np.asarray(_finfo(dtype).max, dtype)
        return [np.where(over, down, np.where(over_inf, np.copysign(top, out), out)).astype(dtype)]


class ConvertTruncatesToFloat16(OrtMutant):
    """ONNX Cast to float16 truncating (toward zero) instead of rounding to nearest even."""

    targets, affects = ("onnx_cast",), ("float32->float16", "float64->float16")
    bug = "conversion truncates instead of rounding"
    resembles = _search(ORT, "Cast float16 rounding truncation")

    def mutate(self, program, inputs, outputs):
        return _truncated(inputs[0], outputs[0], np.float16)


class ConvertTruncatesToBfloat16(OrtMutant):
    """ONNX Cast float32 -> bfloat16 keeping the top 16 bits of the float32 (truncation toward
    zero) instead of rounding to nearest even: the cheap bfloat16 conversion."""

    targets, affects = ("onnx_cast",), ("float32->bfloat16",)
    bug = "a bfloat16 conversion that truncates the float32 bits"
    resembles = _search(ORT, "bfloat16 truncation instead of rounding")

    def mutate(self, program, inputs, outputs):
        import ml_dtypes

        return _truncated(inputs[0], outputs[0], ml_dtypes.bfloat16)


class AddTiesAwayFromZero(OrtMutant):
    """float16 and float32 Add computed in float64 and rounded to the output type with ties away
    from zero (a software rounding helper with the wrong tie rule) instead of to even."""

    targets, affects = ("onnx_add",), ("float16", "float32")
    bug = "an arithmetic op rounding ties away from zero"
    resembles = _search(TVM, "float16 rounding ties away from zero")

    @staticmethod
    def exact(a, b):
        return a + b

    def mutate(self, program, inputs, outputs):
        out = outputs[0]
        with np.errstate(all="ignore"):
            wide = self.exact(*(np.asarray(x, np.float64) for x in inputs))
            even = wide.astype(out.dtype)
            other = np.nextafter(even, np.where(wide > even.astype(np.float64), np.inf, -np.inf)
                                 .astype(out.dtype))
            low, high = even.astype(np.float64), other.astype(np.float64)
            tie = np.isfinite(wide) & np.isfinite(high) & (wide != low) & \
                (wide - low == high - wide)
            away = np.where(np.abs(high) > np.abs(low), other, even)
        return [np.where(tie, away, out).astype(out.dtype)]


class MulTiesAwayFromZero(AddTiesAwayFromZero):
    """float16 and float32 Mul computed in float64 (exact products) and rounded with ties away
    from zero instead of to even."""

    targets = ("onnx_mul",)

    @staticmethod
    def exact(a, b):
        return a * b


class ConvertSaturatesToFloat16(OrtMutant):
    """ONNX Cast float32 -> float16 saturating to +-65504 where it must overflow to +-inf (the
    saturate attribute applies to float 8 targets only)."""

    targets, affects = ("onnx_cast",), ("float32->float16",)
    bug = "saturating instead of inf on overflow"
    resembles = _search(ORT, "Cast saturate float16 inf")

    def mutate(self, program, inputs, outputs):
        x, out = inputs[0], outputs[0]
        return [np.where(np.isfinite(x) & np.isinf(out), np.copysign(np.float16(65504), out), out)
                .astype(np.float16)]


class ConvertFloatToIntRounds(JaxMutant):
    """StableHLO convert float -> int32 rounding to nearest instead of truncating toward zero (the
    XLA text's static_cast). (ONNX Cast leaves a non-integral value's rounding open.)"""

    targets, affects = ("convert_element_type",), ("float32->int32", "float64->int32",
                                                   "float16->int32")
    bug = "conversion rounds instead of truncating"
    resembles = _search(ORT, "Cast float to int rounding")

    def mutate(self, program, inputs, outputs):
        x, out = inputs[0].astype(np.float64), outputs[0]
        inside = np.isfinite(x) & (np.abs(x) < 2**31 - 1)
        return [np.where(inside, np.rint(np.where(inside, x, 0)).astype(out.dtype), out)]


class CastToBfloat16TiesAway(OrtMutant):
    """ONNX Cast float32 -> bfloat16 rounding ties away from zero (adding 0x8000 to the bits and
    truncating) instead of to nearest even."""

    targets, affects = ("onnx_cast",), ("float32->bfloat16",)
    bug = "a bfloat16 conversion that rounds ties away from zero"
    resembles = _search(ORT, "bfloat16 cast rounding")

    def mutate(self, program, inputs, outputs):
        import ml_dtypes

        x = np.asarray(inputs[0], np.float32)
        bits = x.view(np.uint32).astype(np.uint64)
        away = (((bits + 0x8000) >> 16) & 0xFFFF).astype(np.uint16).view(ml_dtypes.bfloat16)
        tie = np.isfinite(x) & ((bits & 0xFFFF) == 0x8000)
        return [np.where(tie, away, outputs[0]).astype(ml_dtypes.bfloat16)]


class ExpSaturatesFloat16(OrtMutant):
    """float16 exp returning 65504 where the result overflows to inf."""

    targets, affects = ("exp",), ("float16",)
    bug = "saturating instead of inf on overflow"
    resembles = _search(ORT, "fp16 exp overflow")

    def mutate(self, program, inputs, outputs):
        x, out = inputs[0], outputs[0]
        return [np.where(np.isfinite(x) & np.isinf(out), np.float16(65504), out).astype(np.float16)]


class MulSaturatesFloat32(OrtMutant):
    """float32 Mul clamping an overflowing product to +-max_finite instead of +-inf."""

    targets, affects = ("onnx_mul",), ("float32",)
    bug = "saturating instead of inf on overflow"
    resembles = _search(OV, "Multiply overflow saturate inf")

    def mutate(self, program, inputs, outputs):
        a, b = inputs
        out = outputs[0]
        finite = np.isfinite(a) & np.isfinite(b)
        big = np.float32(np.finfo(np.float32).max)
        return [np.where(finite & np.isinf(out), np.copysign(big, out), out).astype(np.float32)]


class IntAddSaturates(OrtMutant):
    """int32 Add saturating on overflow where two's-complement wrapping is expected."""

    targets, affects = ("onnx_add",), ("int32",)
    bug = "integer overflow: saturation instead of wrapping"
    equivalent = ("the ONNX Add text does not specify integer overflow (wrap-around is not "
                  "promised): ops/onnx_add.yaml, region int_overflow")
    resembles = _search(TVM, "int32 overflow saturate wrap")

    def mutate(self, program, inputs, outputs):
        a, b = (np.asarray(v, np.int64) for v in inputs)
        s = np.broadcast_arrays(a + b)[0]
        return [np.clip(s, -2**31, 2**31 - 1).astype(np.int32)]


# ---- signed zero -------------------------------------------------------------------------------

class NegateAsZeroMinusX(OrtMutant):
    """Neg computed as 0 - x: Neg(+0) gives +0 instead of -0."""

    targets = ("negate",)
    bug = "wrong sign of zero"
    resembles = _search(TVM, "negative zero neg sign")

    def mutate(self, program, inputs, outputs):
        x, out = inputs[0], outputs[0]
        if out.dtype.kind != "f" and "float" not in str(out.dtype):
            return outputs
        return [np.where(x == 0, np.zeros_like(out), out)]


class AbsKeepsNegativeZero(OrtMutant):
    """Abs as (x < 0 ? -x : x): Abs(-0) gives -0."""

    targets = ("abs",)
    affects = ("float16", "bfloat16", "float32", "float64")
    bug = "wrong sign of zero"
    resembles = _search(ORT, "Abs negative zero")

    def mutate(self, program, inputs, outputs):
        x, out = inputs[0], outputs[0]
        return [np.where(x == 0, x.astype(out.dtype), out)]


class CeilLosesNegativeZero(OrtMutant):
    """Ceil through an integer conversion: ceil(x) for -1 < x <= -0 gives +0 instead of -0."""

    targets = ("ceil",)
    bug = "wrong sign of zero"
    resembles = _search(OV, "Ceiling negative zero")

    def mutate(self, program, inputs, outputs):
        out = outputs[0]
        return [np.where(out == 0, np.zeros_like(out), out)]
