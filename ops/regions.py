"""Implementation-defined regions: per-element masks of outputs whose value the standard leaves open.

A spec names regions in ``implementation_defined``; elements inside them get the verdict
``impl_defined`` (value recorded, never judged). Each region is a function of a
:class:`RegionContext` returning a boolean mask shaped like the output.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from conform.spec.dtypes import FLOAT_FORMATS, int_info, is_integer, np_dtype


@dataclass
class RegionContext:
    inputs: Sequence[np.ndarray]          # the case's inputs, in their own dtypes
    expected: np.ndarray                  # the oracle's result
    out_dtype: str
    float_oracle: Callable                # evaluates the op's oracle on float64 arrays
    accumulation_length: int | None = None
    shapes: str = "equal"                 # how the inputs' shapes relate (the spec's signature.shapes)

    def none(self) -> np.ndarray:
        return np.zeros(self.expected.shape, bool)


def _floating(array: np.ndarray) -> bool:
    """Whether ``array`` holds floats (bfloat16 too, whose NumPy kind is 'V')."""
    return array.dtype.kind == "f" or str(array.dtype) in FLOAT_FORMATS


def _int_operands(ctx):
    return all(x.dtype.kind in "iu" for x in ctx.inputs)


def int_div_by_zero(ctx: RegionContext) -> np.ndarray:
    """Integer division or remainder with a zero divisor."""
    if not _int_operands(ctx):
        return ctx.none()
    return np.broadcast_to(ctx.inputs[1] == 0, ctx.expected.shape)


def int_min_div_neg1(ctx: RegionContext) -> np.ndarray:
    """Signed INT_MIN / -1 (and its remainder), which overflows."""
    dtype = np_dtype(ctx.out_dtype)
    if not _int_operands(ctx) or dtype.kind != "i":
        return ctx.none()
    lhs, rhs = ctx.inputs
    return np.broadcast_to((lhs == np.iinfo(dtype).min) & (rhs == -1), ctx.expected.shape)


def int_overflow(ctx: RegionContext) -> np.ndarray:
    """An integer result outside the range of the output type (wrap-around is not specified)."""
    if not is_integer(ctx.out_dtype):
        return ctx.none()
    info = int_info(ctx.out_dtype)
    if info.bits < 64:
        return (ctx.expected < info.min) | (ctx.expected > info.max)
    # The int64 oracle itself may have wrapped. A float64 evaluation is off by far less than
    # 2**62, while a wrapped result is off by a multiple of 2**64: compare the two.
    approx = ctx.float_oracle([x.astype(np.float64) for x in ctx.inputs])
    with np.errstate(invalid="ignore"):
        return np.abs(approx - ctx.expected.astype(np.float64)) >= 2.0 ** 62


def float_to_int_out_of_range(ctx: RegionContext) -> np.ndarray:
    """float -> integer conversion of NaN, infinities or values whose truncation does not fit."""
    (operand,) = ctx.inputs
    if not _floating(operand) or not is_integer(ctx.out_dtype):
        return ctx.none()
    info = int_info(ctx.out_dtype)
    limit = 2.0 ** (info.bits - 1 if info.min < 0 else info.bits)  # exact; max + 1
    with np.errstate(invalid="ignore", over="ignore"):
        truncated = np.trunc(operand.astype(np.float64))
        return ~np.isfinite(truncated) | (truncated < info.min) | (truncated >= limit)


def accumulation_overflow(ctx: RegionContext) -> np.ndarray:
    """Sums whose finite terms' magnitudes can overflow the output type in some summation order.

    The standard leaves the order of accumulation open; where ``(1 + gamma_n) * sum|finite terms|``
    reaches the largest finite value, some order overflows (to inf, or to NaN beside an infinite
    term) and another does not, so the value is implementation-defined.
    """
    if ctx.out_dtype not in FLOAT_FORMATS:
        return ctx.none()
    fmt = FLOAT_FORMATS[ctx.out_dtype]
    finite_terms = [np.abs(np.where(np.isfinite(x), x, 0.0)).astype(np.float64) for x in ctx.inputs]
    with np.errstate(over="ignore", invalid="ignore"):
        magnitude = ctx.float_oracle(finite_terms)
        nu = (ctx.accumulation_length or 1) * fmt.unit_roundoff
        return magnitude * (1 + nu / (1 - nu)) >= fmt.max_finite


def mean_accumulation_overflow(ctx: RegionContext) -> np.ndarray:
    """Means whose sum of finite terms' magnitudes can overflow the output type before the division.

    A mean is a sum scaled by 1/n; the standard leaves the order (and the accumulator) open, so
    where ``n * (1 + gamma_n) * mean|finite terms|`` reaches the largest finite value, an
    implementation summing in the output type gives inf (or NaN) and one scaling first or
    accumulating wider does not.
    """
    if ctx.out_dtype not in FLOAT_FORMATS:
        return ctx.none()
    fmt = FLOAT_FORMATS[ctx.out_dtype]
    n = ctx.accumulation_length or 1
    finite_terms = [np.abs(np.where(np.isfinite(x), x, 0.0)).astype(np.float64) for x in ctx.inputs]
    with np.errstate(over="ignore", invalid="ignore"):
        nu = n * fmt.unit_roundoff
        return n * ctx.float_oracle(finite_terms) * (1 + nu / (1 - nu)) >= fmt.max_finite


def nan_operand(ctx: RegionContext) -> np.ndarray:
    """Element-wise results with a NaN operand, where the standards define the op over the reals
    only and say nothing of NaN (e.g. relu = max(x, 0): NNEF spells it select(x > 0, x, 0), which
    gives 0, while IEEE 754-2019 maximum propagates NaN)."""
    mask = ctx.none()
    rank = ctx.expected.ndim
    for operand in ctx.inputs:
        if _floating(operand):
            nan = np.isnan(operand)
            if ctx.shapes == "nnef_broadcast":   # NNEF aligns leading dimensions: pad trailing
                nan = nan.reshape(nan.shape + (1,) * (rank - nan.ndim))
            mask = mask | np.broadcast_to(nan, ctx.expected.shape)
    return mask


def nan_in_reduction(ctx: RegionContext) -> np.ndarray:
    """Results of a max or min reduction whose reduced slice holds a NaN (there, and only there,
    the reference propagating NaN is NaN), where the standard's text says nothing of NaN."""
    if ctx.expected.dtype.kind != "f":
        return ctx.none()
    return np.isnan(ctx.expected)


def empty_reduction(ctx: RegionContext) -> np.ndarray:
    """Every result of a reduction over an empty set of values (a reduced dimension of size 0),
    where the standard leaves that result undefined (ONNX ReduceMean)."""
    return np.full(ctx.expected.shape, ctx.accumulation_length == 0)


def padding_times_nonfinite(ctx: RegionContext) -> np.ndarray:
    """Convolution outputs where a padded position meets an infinite or NaN kernel weight.

    Padding is described as zeros; whether ``0 * inf`` there contributes NaN (IEEE arithmetic on
    materialised zeros) or nothing (padding treated as absent) is not specified.
    """
    lhs, rhs = ctx.inputs
    if not _floating(lhs):
        return ctx.none()
    nonfinite = (~np.isfinite(rhs)).astype(np.float64)
    inside = ctx.float_oracle([np.ones(lhs.shape), nonfinite])     # padded zeros contribute 0
    everywhere = nonfinite.reshape(nonfinite.shape[0], -1).sum(axis=1)[None, :, None, None]
    return everywhere - inside > 0


def shift_out_of_range(ctx: RegionContext) -> np.ndarray:
    """Integer shifts by an amount outside [0, bits of lhs): negative, or the width or more.

    The XLA text lists ShiftLeft, ShiftRightArithmetic and ShiftRightLogical among the element-wise
    binary ops and says nothing of such amounts (nor does StableHLO; C leaves them undefined, and
    implementations mask the amount, wrap it or saturate the result).
    """
    lhs, rhs = ctx.inputs
    if lhs.dtype.kind not in "iu":
        return ctx.none()
    return np.broadcast_to((rhs < 0) | (rhs >= lhs.dtype.itemsize * 8), ctx.expected.shape)


REGIONS: dict[str, Callable[[RegionContext], np.ndarray]] = {
    fn.__name__: fn
    for fn in (int_div_by_zero, int_min_div_neg1, int_overflow, float_to_int_out_of_range,
               accumulation_overflow, mean_accumulation_overflow, padding_times_nonfinite,
               shift_out_of_range, nan_operand, nan_in_reduction, empty_reduction)
}


def region_mask(names: Sequence[str], ctx: RegionContext) -> np.ndarray:
    """Union of the named regions' masks, shaped like the expected output."""
    mask = ctx.none()
    for name in names:
        mask |= REGIONS[name](ctx)
    return mask
