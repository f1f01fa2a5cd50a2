"""Injected bugs ("mutants") for measuring the judge: each wraps the built-in onnxruntime backend
through the public adapter API (:class:`conform.harness.backends.Wrapping`) and changes the
outputs it returns, or the inputs it forwards, only for its own ops and only under the condition
of its bug, as a real runtime bug would. ``bench/mutation_score.py`` runs each one on its ops
(``--backend bench.mutants:ClassName``) and counts it detected when some case fails, errors,
crashes or times out that a clean onnxruntime run of the same ops passes.

Each class says the bug class it models (``bug``) and what in the public record it resembles
(``resembles``: a search of the runtime's issue tracker, not a particular issue).
"""
from __future__ import annotations

import numpy as np

from conform.harness.backends import Wrapping


def _search(repo: str, words: str) -> str:
    return f"https://github.com/{repo}/issues?q={words.replace(' ', '+')}"


ORT, XLA, TVM, OV = "microsoft/onnxruntime", "openxla/xla", "apache/tvm", "openvinotoolkit/openvino"


class Mutant(Wrapping):
    """A built-in backend with one injected bug. A subclass (of :class:`OrtMutant` or
    :class:`JaxMutant`, which name the backend wrapped) names its ``targets`` (the ops the bug
    lives in), the ``affects`` dtype labels (empty: all), and overrides :meth:`forward` (the
    inputs handed to the wrapped backend) and/or :meth:`mutate` (the outputs returned)."""

    targets: tuple = ()
    affects: tuple = ()     # program.dtype labels the bug lives in; () = every dtype
    bug = ""
    resembles = ""
    #: Set (to the standard's words that allow it) for an *equivalent* mutant: one whose
    #: behaviour, bug-like as it is in practice, the op's standard permits, so that no correct
    #: judge may fail it. The score leaves these out of its denominator and lists them apart.
    equivalent = ""
    #: Set (to what the clean backend gets wrong) for a mutant whose bug the wrapped backend
    #: already has under the same condition: no case can fail only in the mutant's run. It
    #: counts as detected when every case whose outputs it changes fails in both runs (the
    #: suite catches the bug on the real runtime); once the backend is fixed, the usual rule.
    shared = ""

    def applies(self, program) -> bool:
        return program.op in self.targets and (not self.affects or program.dtype in self.affects)

    def forward(self, program, inputs):
        return inputs

    def mutate(self, program, inputs, outputs):
        return outputs

    def prepare(self, *, program, inputs, model=None):
        if not self.applies(program):
            return super().prepare(program=program, inputs=inputs, model=model)
        inputs = [np.asarray(a) for a in inputs]
        forwarded = [np.asarray(a, order="C") for a in self.forward(program, inputs)]
        compute = super().prepare(program=program, inputs=forwarded, model=model)

        def mutated():
            outs = [np.asarray(o) for o in compute()]
            return [np.asarray(o, order="C") for o in self.mutate(program, inputs, outs)]

        return mutated


class OrtMutant(Mutant):
    wraps = "onnxruntime"


class JaxMutant(Mutant):
    wraps = "jax"


class NumpyMutant(Mutant):
    wraps = "numpy"   # for ops only the numpy (and nnef) backends run: NNEF's fragments


def _named(program, inputs) -> dict:
    return dict(zip(program.input_names, inputs))


def _dt(program, i=0):
    from conform.dtypes import np_dtype

    return np_dtype(program.out_dtypes[i])


def _finfo(dtype):
    import ml_dtypes

    return ml_dtypes.finfo(dtype)


def _subnormal(a):
    a = np.asarray(a)
    tiny = _finfo(a.dtype).smallest_normal
    return (a != 0) & (np.abs(a.astype(np.float64)) < float(tiny))


def _flushed(a):
    """``a`` with its subnormals replaced by zeros of their sign (DAZ / FTZ)."""
    return np.where(_subnormal(a), np.copysign(np.zeros_like(a), a), a)


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


# ---- ties and indices --------------------------------------------------------------------------

class TopKTiesByDescendingIndex(OrtMutant):
    """TopK ordering equal values by descending index (an unstable sort) instead of ascending."""

    targets = ("onnx_top_k",)
    bug = "wrong tie-break order in TopK"
    resembles = _search(ORT, "TopK tie order index")

    def mutate(self, program, inputs, outputs):
        values, indices = outputs
        axis = program.attrs.get("axis", -1)
        v, i = np.moveaxis(values, axis, -1).copy(), np.moveaxis(indices, axis, -1).copy()
        vf, iflat = v.reshape(-1, v.shape[-1] if v.ndim else 1), i.reshape(-1, i.shape[-1] if i.ndim else 1)
        for row in range(vf.shape[0]):
            start = 0
            n = vf.shape[1]
            while start < n:
                end = start + 1
                while end < n and vf[row, end] == vf[row, start]:
                    end += 1
                iflat[row, start:end] = iflat[row, start:end][::-1]
                start = end
        return [values, np.moveaxis(iflat.reshape(i.shape), -1, axis)]


class ArgMaxLastOnTies(OrtMutant):
    """ArgMax returning the last of equal maxima when select_last_index = 0 asks for the first."""

    targets = ("onnx_arg_max",)
    bug = "wrong tie-break in ArgMax"
    resembles = _search(ORT, "ArgMax select_last_index ties")

    def mutate(self, program, inputs, outputs):
        if program.attrs.get("select_last_index", 0):
            return outputs
        data = inputs[0]
        axis = program.attrs.get("axis", 0)
        flipped = np.flip(data, axis=axis)
        idx = data.shape[axis] - 1 - np.argmax(flipped, axis=axis)
        if program.attrs.get("keepdims", 1):
            idx = np.expand_dims(idx, axis)
        return [idx.astype(np.int64)]


class ArgMaxNaNByPosition(OrtMutant):
    """ArgMax whose answer for a slice holding a NaN depends on where the NaN sits: the NaN's index
    where it is at an odd position, the largest number's elsewhere (a kernel that takes pairs of
    elements and compares them with a NaN-blind max). Either answer alone is the text's open
    region; one or the other by position is not."""

    targets = ("onnx_arg_max",)
    affects = ("float32",)
    bug = "ArgMax NaN answer depending on position"
    resembles = _search(ORT, "ArgMax NaN")

    def mutate(self, program, inputs, outputs):
        data, out = inputs[0].astype(np.float64), outputs[0]
        if data.ndim == 0 or data.size == 0:
            return outputs
        axis = program.attrs.get("axis", 0) % data.ndim
        moved = np.moveaxis(data, axis, -1)
        nan = np.isnan(moved)
        odd = nan & (np.arange(moved.shape[-1]) % 2 == 1)
        numbers = np.where(nan, -np.inf, moved)
        last = program.attrs.get("select_last_index", 0)
        best = moved.shape[-1] - 1 - np.argmax(numbers[..., ::-1], -1) if last else np.argmax(numbers, -1)
        first_odd = np.argmax(odd, -1)
        idx = np.where(odd.any(-1), first_odd, np.where(nan.all(-1), 0, best))
        idx = np.where(nan.any(-1), idx, np.moveaxis(np.asarray(out), axis, -1)[..., 0]
                       if program.attrs.get("keepdims", 1) else out)
        if program.attrs.get("keepdims", 1):
            idx = np.expand_dims(idx, axis)
        return [idx.astype(out.dtype).reshape(out.shape)]


class GatherNegativeIndexOffByOne(OrtMutant):
    """Gather normalising a negative index i as i + s - 1 instead of i + s."""

    targets = ("onnx_gather",)
    bug = "off-by-one in negative index normalisation"
    resembles = _search(ORT, "Gather negative indices wrong")

    def forward(self, program, inputs):
        data, indices = inputs
        if data.ndim == 0:
            return inputs
        s = data.shape[program.attrs.get("axis", 0)]
        return [data, np.where(indices < 0, indices + s - 1, indices).astype(indices.dtype)]


class OneHotIgnoresNegativeIndices(OrtMutant):
    """OneHot treating a negative index as out of range (a row of off values) instead of
    counting from the end."""

    targets = ("onnx_one_hot",)
    bug = "negative indices unsupported"
    resembles = _search(ORT, "OneHot negative indices")

    def forward(self, program, inputs):
        named = _named(program, inputs)
        indices = named["indices"]
        depth = np.asarray(named["depth"]).reshape(-1)[0]
        named["indices"] = np.where(indices < 0, np.asarray(depth).astype(indices.dtype) * 4 + 7,
                                    indices).astype(indices.dtype)
        return [named[n] for n in program.input_names]


class CumSumIgnoresExclusive(OrtMutant):
    """CumSum ignoring exclusive = 1 (returning the inclusive sums)."""

    targets = ("onnx_cum_sum",)
    bug = "attribute ignored (exclusive scan computed inclusive)"
    resembles = _search(ORT, "CumSum exclusive reverse wrong")

    def mutate(self, program, inputs, outputs):
        if not program.attrs.get("exclusive", 0):
            return outputs
        out = outputs[0]
        with np.errstate(all="ignore"):
            return [(out + inputs[0]).astype(out.dtype)]


class TransposeInversePermutation(OrtMutant):
    """Transpose applying the inverse of perm (axes mixed up for non-involutive perms)."""

    targets = ("onnx_transpose",)
    bug = "wrong axis mapping"
    resembles = _search(TVM, "transpose perm wrong")

    def mutate(self, program, inputs, outputs):
        x = inputs[0]
        perm = program.attrs.get("perm")
        perm = list(range(x.ndim))[::-1] if perm is None else list(perm)
        return [np.ascontiguousarray(np.transpose(x, np.argsort(perm)))]


class AddBroadcastsWrongOperand(OrtMutant):
    """float32 Add broadcasting a size-1 dim of one operand by reading the *other* operand's first
    slice too (a zero stride put on the wrong input)."""

    targets, affects = ("onnx_add",), ("float32",)
    bug = "wrong broadcasting of a size-1 dim"
    resembles = _search(ORT, "broadcast wrong result size 1 dimension")

    def mutate(self, program, inputs, outputs):
        a, b = inputs
        if a.ndim != b.ndim or a.ndim == 0:
            return outputs
        sl = tuple(slice(0, 1) if (db == 1 and da > 1) else slice(None)
                   for da, db in zip(a.shape, b.shape))
        bad = (a[sl] + b).astype(np.float32)
        return [np.ascontiguousarray(np.broadcast_to(bad, outputs[0].shape))]


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


# ---- graph-level bugs (conform fuzz): bench/graph_mutants.py ------------------------------------
from bench.graph_mutants import (CastPairDroppedBetweenOps, Clean, ConstantFoldedInHalf,  # noqa: E402,F401
                                 FusionReassociatesSum, GraphMutant,
                                 LayoutTransposesWrongAxes)


ALL = [cls for cls in list(globals().values()) if isinstance(cls, type)
       and issubclass(cls, Mutant)
       and cls not in (Mutant, OrtMutant, JaxMutant, NumpyMutant, GraphMutant)]
