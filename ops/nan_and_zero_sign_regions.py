"""Implementation-defined regions about NaN operands and the sign of zero results: where a
standard leaves open which NaN or which zero an op returns (see :mod:`conform.ops.regions` for
the context every region reads)."""
from __future__ import annotations

import numpy as np

from conform.op_registry import region
from conform.ops.regions import RegionContext, floating

@region
def nan_operand(ctx: RegionContext) -> np.ndarray:
    """Element-wise results with a NaN operand, where the standards define the op over the reals
    only and say nothing of NaN (e.g. relu = max(x, 0): NNEF spells it select(x > 0, x, 0), which
    gives 0, while IEEE 754-2019 maximum propagates NaN)."""
    mask = ctx.none()
    for operand in ctx.inputs:
        if floating(operand):
            mask = mask | ctx.aligned(np.isnan(operand))
    return mask


@region
def nan_in_reduction(ctx: RegionContext) -> np.ndarray:
    """Results of a max or min reduction whose reduced slice holds a NaN (there, and only there,
    the reference propagating NaN is NaN), where the standard's text says nothing of NaN."""
    if ctx.expected.dtype.kind != "f":
        return ctx.none()
    return np.isnan(ctx.expected)


@region
def nan_in_sorted_slice(ctx: RegionContext) -> np.ndarray:
    """Results of a sort, top-k, arg-max/min or hardmax whose slice along the ranked axis
    (``attrs['axis']``, else the last) holds a NaN, where the standard orders numbers and says
    nothing of where NaN goes. (A result of lower rank than the operand has dropped that axis.)"""
    operand = ctx.inputs[0]
    if not floating(operand) or operand.ndim == 0:
        return ctx.none()
    axis = ctx.attrs.get("axis", -1) % operand.ndim
    nan = np.isnan(operand.astype(np.float64)).any(axis=axis, keepdims=True)
    if ctx.expected.ndim < operand.ndim:
        nan = np.squeeze(nan, axis)
    return np.broadcast_to(nan, ctx.expected.shape)


@region
def zero_sign_ties(ctx: RegionContext) -> np.ndarray:
    """Top-k positions that rank zeros, in slices (along ``attrs['axis']``, else the last) holding
    zeros of both signs: the standard ranks entries as larger or equal without saying whether
    -0 and +0 are equal (IEEE 754 comparison, then the lower index comes first) or ordered
    -0 < +0 (IEEE 754 totalOrder). The zeros take the ranks after the entries ranked before
    zero; only those positions are open."""
    operand = ctx.inputs[0]
    if not floating(operand) or operand.ndim == 0:
        return ctx.none()
    attrs = ctx.attrs
    axis = attrs.get("axis", -1) % operand.ndim
    wide = operand.astype(np.float64)
    zero = wide == 0
    negative = np.signbit(wide)
    both = (zero & negative).any(axis, keepdims=True) & (zero & ~negative).any(axis, keepdims=True)
    ahead = ((wide > 0) if attrs.get("largest", True) else (wide < 0)).sum(axis, keepdims=True)
    rank = np.arange(ctx.expected.shape[axis]).reshape(
        [-1 if d == axis else 1 for d in range(operand.ndim)])
    open_ranks = both & (rank >= ahead) & (rank < ahead + zero.sum(axis, keepdims=True))
    return np.broadcast_to(open_ranks, ctx.expected.shape)


@region
def zero_sign_extreme(ctx: RegionContext) -> np.ndarray:
    """Arg-max/min results (indices along ``attrs['axis']``, the axis kept or dropped) whose
    extreme is a zero in a slice holding zeros of both signs: the standard does not say whether
    -0 and +0 are equal (IEEE 754 comparison: the tie rule picks among all the zeros) or
    -0 < +0 (IEEE 754 totalOrder: only the zeros of one sign are extreme)."""
    operand = ctx.inputs[0]
    if not floating(operand) or operand.ndim == 0 or operand.size == 0:
        return ctx.none()
    axis = ctx.attrs["axis"] % operand.ndim
    wide = operand.astype(np.float64)
    zero = wide == 0
    negative = np.signbit(wide)
    both = (zero & negative).any(axis, keepdims=True) & (zero & ~negative).any(axis, keepdims=True)
    index = ctx.expected.reshape(both.shape).astype(np.intp)
    at_zero = np.take_along_axis(wide, index, axis=axis) == 0
    return (both & at_zero).reshape(ctx.expected.shape)


def _zero_sign_maximum(ctx: RegionContext, axes) -> np.ndarray:
    operand = ctx.inputs[0]
    if not floating(operand) or operand.ndim == 0 or operand.size == 0:
        return ctx.none()
    axes = axes(operand.ndim)
    wide = operand.astype(np.float64)
    zero = wide == 0
    both = (zero & np.signbit(wide)).any(axes, keepdims=True) \
        & (zero & ~np.signbit(wide)).any(axes, keepdims=True)
    top = np.max(np.where(np.isnan(wide), -np.inf, wide), axis=axes, keepdims=True)
    return np.broadcast_to(both & (top == 0), ctx.expected.shape)


@region
def zero_sign_maximum(ctx: RegionContext) -> np.ndarray:
    """Every element of a slice (along ``attrs['axis']``) whose maximum is zero and that holds
    zeros of both signs, where the standard picks the first maximum without saying whether -0
    and +0 are equal (IEEE 754 comparison) or -0 is smaller (IEEE 754 totalOrder)."""
    return _zero_sign_maximum(ctx, lambda rank: (ctx.attrs.get("axis", -1) % rank,))


def _from_axis_on(ctx: RegionContext):
    """The dimensions from ``attrs['axis']`` on (an input coerced to 2-D at axis)."""
    return lambda rank: tuple(range(ctx.attrs["axis"] % rank, rank))


@region
def zero_sign_maximum_from_axis(ctx: RegionContext) -> np.ndarray:
    """As :func:`zero_sign_maximum`, the slices being every dimension from ``attrs['axis']``
    on (an input coerced to 2-D at axis, as ONNX's opset-11 Hardmax)."""
    return _zero_sign_maximum(ctx, _from_axis_on(ctx))


@region
def nan_from_axis(ctx: RegionContext) -> np.ndarray:
    """Results whose slice of every dimension from ``attrs['axis']`` on holds a NaN, where the
    standard picks a maximum and says nothing of NaN."""
    operand = ctx.inputs[0]
    if not floating(operand) or operand.ndim == 0:
        return ctx.none()
    nan = np.isnan(operand.astype(np.float64)).any(axis=_from_axis_on(ctx)(operand.ndim),
                                                   keepdims=True)
    return np.broadcast_to(nan, ctx.expected.shape)


@region
def unbounded_evaluation(ctx: RegionContext) -> np.ndarray:
    """Elements where the op's derived bound is undefined (NaN): the evaluation its standard
    defines fails there (a square or a sum overflows the type it is computed in, a variance
    computed in one pass can cancel below zero), so the text gives no value to judge against."""
    if ctx.error_bound is None:
        return ctx.none()
    return np.broadcast_to(np.isnan(ctx.error_bound), ctx.expected.shape)


def _signaling(operand: np.ndarray) -> np.ndarray:
    """Where ``operand`` (in its own IEEE binary format) holds a signalling NaN: a NaN whose
    leading significand bit, the quiet bit (IEEE 754-2019 §6.2.1), is clear."""
    if operand.dtype.kind != "f" or operand.dtype.itemsize not in (2, 4, 8):
        return np.zeros(operand.shape, bool)
    bits = operand.view(f"u{operand.dtype.itemsize}")
    quiet = 1 << (int(np.finfo(operand.dtype).nmant) - 1)
    return np.isnan(operand) & ((bits & quiet) == 0)


@region
def signaling_nan_operand(ctx: RegionContext) -> np.ndarray:
    """Element-wise results with a signalling NaN operand: C11 Annex F 'does not specify the
    behavior of signaling NaNs' (F.2.1), so a special case such as pow(+1, y) = 1 'even for a
    NaN' holds for quiet NaNs only, and IEEE 754-2019 §6.2 makes an operation on a signalling
    NaN deliver a quiet NaN where it delivers a floating-point result."""
    mask = ctx.none()
    for operand in ctx.inputs:
        if floating(operand):
            mask = mask | ctx.aligned(_signaling(np.asarray(operand)))
    return mask
