"""Implementation-defined regions: per-element masks of outputs whose value the standard leaves open.

A spec names regions in ``implementation_defined``; elements inside them get the verdict
``impl_defined`` (value recorded, never judged). Each region is a function of a
:class:`RegionContext` returning a boolean mask shaped like the output.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from conform.dtypes import FLOAT_FORMATS, dtype_name, int_info, is_integer
from conform.op_registry import region, regions
from conform.ops.error_bounds import gamma, reaches_max_finite


@dataclass
class RegionContext:
    inputs: Sequence[np.ndarray]          # the case's inputs, in their own dtypes
    expected: np.ndarray                  # the oracle's result
    out_dtype: str
    float_oracle: Callable                # evaluates the op's oracle on float64 arrays
    accumulation_length: int | None = None
    shapes: str = "equal"                 # how the inputs' shapes relate (the spec's signature.shapes)
    attrs: dict = field(default_factory=dict)   # the case's attributes
    # evaluates the op's oracle on float64 arrays with attributes added to the case's (or None)
    oracle_with: Callable | None = None
    # evaluates the op's oracle on float64 arrays: every output (or None)
    all_outputs: Callable | None = None
    # the output's per-element bound under the derived error model (its op's error_bound hook)
    error_bound: np.ndarray | None = None

    def none(self) -> np.ndarray:
        return np.zeros(self.expected.shape, bool)

    def aligned(self, mask: np.ndarray) -> np.ndarray:
        """A per-element ``mask`` of an element-aligned input, broadcast to the output's shape
        as the spec's shape relation broadcasts that input."""
        return broadcast_aligned(mask, self.expected.shape, self.shapes, self.attrs)


def broadcast_aligned(array: np.ndarray, shape: tuple, shapes: str, attrs: dict) -> np.ndarray:
    """An element-aligned input (or a per-element mask of one) broadcast to the output's
    ``shape`` as the spec's shape relation ``shapes`` broadcasts it (``attrs``: the case's,
    for XLA's ``broadcast_dimensions``).

    >>> broadcast_aligned(np.array([1, 2]), (2, 3), "nnef_broadcast", {}).tolist()
    [[1, 1, 1], [2, 2, 2]]
    """
    rank = len(shape)
    if shapes == "nnef_broadcast":   # NNEF aligns leading dimensions: pad trailing
        array = array.reshape(array.shape + (1,) * (rank - array.ndim))
    elif shapes == "xla_broadcast" and array.ndim < rank:
        sizes = [1] * rank   # XLA maps the lower rank's dimensions by broadcast_dimensions
        for k, dim in enumerate(attrs.get("broadcast_dimensions", range(array.ndim))):
            sizes[dim] = array.shape[k]
        array = array.reshape(sizes)
    return np.broadcast_to(array, shape)


def floating(array: np.ndarray) -> bool:
    """Whether ``array`` holds floats (bfloat16 too, whose NumPy kind is 'V')."""
    return array.dtype.kind == "f" or dtype_name(array.dtype) in FLOAT_FORMATS


def int_operands(ctx):
    """Whether every input is an integer array (int2/int4/uint2/uint4 too: NumPy kind 'V')."""
    return all(x.dtype.kind in "iu" or is_integer(x.dtype.name) for x in ctx.inputs)


@region
def int_div_by_zero(ctx: RegionContext) -> np.ndarray:
    """Integer division or remainder with a zero divisor."""
    if not int_operands(ctx):
        return ctx.none()
    return ctx.aligned(ctx.inputs[1] == 0)


@region
def int_min_div_neg1(ctx: RegionContext) -> np.ndarray:
    """Signed INT_MIN / -1 (and its remainder), which overflows."""
    if not int_operands(ctx) or not is_integer(ctx.out_dtype) or int_info(ctx.out_dtype).min >= 0:
        return ctx.none()
    lhs, rhs = (x.astype(np.int64) for x in ctx.inputs)
    return ctx.aligned(lhs == int_info(ctx.out_dtype).min) & ctx.aligned(rhs == -1)


@region
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


@region
def float_to_int_out_of_range(ctx: RegionContext) -> np.ndarray:
    """float -> integer conversion of NaN, infinities or values whose truncation does not fit
    (the operand is the first input)."""
    operand = ctx.inputs[0]
    if not floating(operand) or not is_integer(ctx.out_dtype):
        return ctx.none()
    info = int_info(ctx.out_dtype)
    limit = 2.0 ** (info.bits - 1 if info.min < 0 else info.bits)  # exact; max + 1
    with np.errstate(invalid="ignore", over="ignore"):
        truncated = np.trunc(operand.astype(np.float64))
        return ~np.isfinite(truncated) | (truncated < info.min) | (truncated >= limit)


@region
def float_to_int_inexact(ctx: RegionContext) -> np.ndarray:
    """float -> integer conversion of a finite value that is not an integer (where a standard
    names no rounding for it; the operand is the first input)."""
    operand = ctx.inputs[0]
    if not floating(operand) or not is_integer(ctx.out_dtype):
        return ctx.none()
    wide = operand.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return np.isfinite(wide) & (np.trunc(wide) != wide)


@region
def oracle_marked(ctx: RegionContext) -> np.ndarray:
    """Elements the op's oracle marks open itself: evaluated with ``open_elements=True`` on the
    case's inputs, it returns per output a mask of the elements whose value the standard leaves
    open, by a rule that rests on the op's intermediate values (the spec's ``why`` states it)."""
    return np.broadcast_to(ctx.oracle_with(list(ctx.inputs), open_elements=True).astype(bool),
                           ctx.expected.shape)


def _gamma_n(ctx) -> float:
    """``gamma_n`` of the output type for the case's accumulation length (1 without one)."""
    return gamma(ctx.accumulation_length or 1, FLOAT_FORMATS[ctx.out_dtype].unit_roundoff)


@region
def accumulation_overflow(ctx: RegionContext) -> np.ndarray:
    """Sums whose finite terms' magnitudes can overflow the output type in some summation order.

    The standard leaves the order of accumulation open; where ``(1 + gamma_n) * sum|finite terms|``
    reaches the largest finite value, some order overflows (to inf, or to NaN beside an infinite
    term) and another does not, so the value is implementation-defined.
    """
    if ctx.out_dtype not in FLOAT_FORMATS:
        return ctx.none()
    finite_terms = [np.abs(np.where(np.isfinite(x), x, 0.0)).astype(np.float64) for x in ctx.inputs]
    with np.errstate(over="ignore", invalid="ignore"):
        return reaches_max_finite(ctx.float_oracle(finite_terms), ctx.out_dtype, gamma_n=_gamma_n(ctx))


@region
def mean_accumulation_overflow(ctx: RegionContext) -> np.ndarray:
    """Means whose sum of finite terms' magnitudes can overflow the output type before the division.

    A mean is a sum scaled by 1/n; the standard leaves the order (and the accumulator) open, so
    where ``n * (1 + gamma_n) * mean|finite terms|`` reaches the largest finite value, an
    implementation summing in the output type gives inf (or NaN) and one scaling first or
    accumulating wider does not.
    """
    if ctx.out_dtype not in FLOAT_FORMATS:
        return ctx.none()
    n = ctx.accumulation_length or 1
    finite_terms = [np.abs(np.where(np.isfinite(x), x, 0.0)).astype(np.float64) for x in ctx.inputs]
    with np.errstate(over="ignore", invalid="ignore"):
        return reaches_max_finite(n * ctx.float_oracle(finite_terms), ctx.out_dtype,
                                  gamma_n=_gamma_n(ctx))


@region
def partial_product_out_of_range(ctx: RegionContext) -> np.ndarray:
    """Products whose partial products, in some order of the factors, leave the normal range of
    the output type: the product of the finite factors' magnitudes above 1 (times
    ``1 + gamma_n``) reaches the largest finite value, or that of those below 1 (zeros left out)
    falls below the smallest normal. The standard leaves the order open, and some orders
    overflow (or lose bits to underflow) where others do not."""
    if ctx.out_dtype not in FLOAT_FORMATS:
        return ctx.none()
    fmt = FLOAT_FORMATS[ctx.out_dtype]
    with np.errstate(all="ignore"):
        magnitudes = [np.abs(np.where(np.isfinite(x) & (x != 0), x, 1.0)).astype(np.float64)
                      for x in ctx.inputs]
        large = ctx.float_oracle([np.maximum(m, 1.0) for m in magnitudes])
        small = ctx.float_oracle([np.minimum(m, 1.0) for m in magnitudes])
        return reaches_max_finite(large, ctx.out_dtype, gamma_n=_gamma_n(ctx)) \
            | (small < fmt.min_normal)


@region
def sum_of_squares_out_of_range(ctx: RegionContext) -> np.ndarray:
    """Norms sqrt(sum x_i**2) whose sum of squares leaves the normal range of the output type:
    at or above the largest finite value (times ``1 + gamma_n``), where squaring and summing in
    the type overflows though the norm is finite, or below the smallest normal (and not 0),
    where the squares lose bits to underflow though the norm is a normal number. The standard
    defines the norm, and its function body squares in the type; scaling does not overflow."""
    if ctx.out_dtype not in FLOAT_FORMATS:
        return ctx.none()
    fmt = FLOAT_FORMATS[ctx.out_dtype]
    with np.errstate(all="ignore"):
        finite = [np.abs(np.where(np.isfinite(x), x, 0.0)).astype(np.float64) for x in ctx.inputs]
        squares = ctx.float_oracle(finite) ** 2
        return reaches_max_finite(squares, ctx.out_dtype, gamma_n=_gamma_n(ctx)) | \
            ((squares > 0) & (squares < fmt.min_normal))


@region
def exp_sum_out_of_float64_range(ctx: RegionContext) -> np.ndarray:
    """Log-sum-exps whose sum of exponentials, e**result, leaves float64's normal range (result
    at or above ln(max float64) ~ 709.78, or below ln(smallest normal) ~ -708.40): the operator's
    function body sums Exp of the input cast to float64, with no shift by the maximum, so it
    overflows to inf or underflows there, while the log-sum-exp the text names is finite."""
    info = np.finfo(np.float64)
    with np.errstate(invalid="ignore"):
        value = ctx.expected.astype(np.float64)
        return np.isfinite(value) & ((value >= np.log(info.max)) | (value < np.log(info.tiny)))


@region
def below_narrow_normal_range(ctx: RegionContext) -> np.ndarray:
    """Results of rounding into a narrower float format (``attrs['exponent_bits']``, IEEE-style
    bias) whose operand is nonzero and below that format's smallest normal number, or below the
    operand type's own (its subnormals): the text rounds 'to the nearest value representable
    with the given number of mantissa bits' and clamps overflow, and says nothing of gradual
    underflow (kept as subnormals, flushed to zero, or rounded in the type's bit field)."""
    operand = ctx.inputs[0]
    if not floating(operand):
        return ctx.none()
    fmt = FLOAT_FORMATS[str(operand.dtype)]
    emin = 2 - (1 << (ctx.attrs["exponent_bits"] - 1))
    threshold = max(2.0 ** emin, fmt.min_normal)
    magnitude = np.abs(operand.astype(np.float64))
    return ctx.aligned((magnitude > 0) & (magnitude < threshold))


@region
def power_sum_out_of_range(ctx: RegionContext) -> np.ndarray:
    """Lp norms ``(sum |x_i|**p)**(1/p)`` (``p`` the attribute ``p``) whose power sum over the
    finite terms leaves the output type's normal range: it reaches the largest finite value
    (times ``1 + gamma_n``: some orders overflow), or it is non-zero and below the smallest
    normal (the powers lose their relative precision as subnormals or flush to 0). The
    standard defines the norm, not its evaluation: summing the powers in the output type gives
    inf, 0 or a few significant bits there, a scaled evaluation does not."""
    if ctx.out_dtype not in FLOAT_FORMATS:
        return ctx.none()
    fmt = FLOAT_FORMATS[ctx.out_dtype]
    finite_terms = [np.abs(np.where(np.isfinite(x), x, 0.0)).astype(np.float64) for x in ctx.inputs]
    with np.errstate(over="ignore", invalid="ignore"):
        power_sum = ctx.float_oracle(finite_terms) ** ctx.attrs["p"]
        return (reaches_max_finite(power_sum, ctx.out_dtype, gamma_n=_gamma_n(ctx))
                | ((power_sum > 0) & (power_sum < fmt.min_normal)))


@region
def empty_reduction(ctx: RegionContext) -> np.ndarray:
    """Every result of a reduction over an empty set of values (a reduced dimension of size 0),
    where the standard leaves that result undefined (ONNX ReduceMean)."""
    return np.full(ctx.expected.shape, ctx.accumulation_length == 0)


@region
def padding_times_nonfinite(ctx: RegionContext) -> np.ndarray:
    """Convolution outputs where a padded position meets an infinite or NaN kernel weight.

    Padding is described as zeros; whether ``0 * inf`` there contributes NaN (IEEE arithmetic on
    materialised zeros) or nothing (padding treated as absent) is not specified (a complex
    weight: one with an infinite or NaN part).
    """
    lhs, rhs = ctx.inputs
    if not (floating(lhs) or np.iscomplexobj(lhs)):
        return ctx.none()
    nonfinite = (~np.isfinite(rhs)).astype(np.float64)
    inside = ctx.float_oracle([np.ones(lhs.shape), nonfinite])     # padded zeros contribute 0
    everywhere = nonfinite.reshape(nonfinite.shape[0], -1).sum(axis=1)[None, :, None, None]
    return everywhere - inside > 0


@region
def shift_out_of_range(ctx: RegionContext) -> np.ndarray:
    """Integer shifts by an amount outside [0, bits of lhs): negative, or the width or more.

    The XLA text lists ShiftLeft, ShiftRightArithmetic and ShiftRightLogical among the element-wise
    binary ops and says nothing of such amounts (nor does StableHLO; C leaves them undefined, and
    implementations mask the amount, wrap it or saturate the result).
    """
    lhs, rhs = ctx.inputs
    if not is_integer(str(lhs.dtype)):   # ml_dtypes' int2 and int4 are of kind 'V'
        return ctx.none()
    return ctx.aligned((rhs < 0) | (rhs >= int_info(str(lhs.dtype)).bits))   # int4: 4


@region
def crop_order(ctx: RegionContext) -> np.ndarray:
    """Outputs of a padding op whose source depends on when negative pads remove elements:
    before or after the other side of the same axis is reflected, repeated or wrapped. (ONNX
    Pad's text says negative pads remove elements and defines each mode on 'the vector', not
    which vector.) The op's oracle computes both readings (its keyword ``crop``: ``before``,
    ``after``); each input element is numbered and the two readings' numbers compared."""
    sizes = np.cumsum([0] + [x.size for x in ctx.inputs])
    labels = [np.arange(start, start + x.size, dtype=np.float64).reshape(x.shape)
              for start, x in zip(sizes, ctx.inputs)]
    return ctx.oracle_with(labels, crop="before") != ctx.oracle_with(labels, crop="after")


@region
def max_min_reading(ctx: RegionContext) -> np.ndarray:
    """Results of a max or min whose two operands are a NaN and a number, or zeros of both
    signs, where the standard names max or min and says nothing of NaN (IEEE 754-2019 maximum
    propagates it; maxNum and C's fmax return the number) nor whether -0 < +0. The op's oracle
    computes both readings (its keyword ``selection``: ``ieee``, IEEE 754-2019 maximum and
    minimum, or ``number``, the number over NaN and of -0 and +0 the zero IEEE does not
    choose); the elements where the two differ (NaN equal to NaN, the sign of zero counted)
    are open."""
    if ctx.expected.dtype.kind != "f":
        return ctx.none()
    ieee = ctx.oracle_with(ctx.inputs, selection="ieee")
    number = ctx.oracle_with(ctx.inputs, selection="number")
    same = (ieee == number) & (np.signbit(ieee) == np.signbit(number))
    return ~(same | (np.isnan(ieee) & np.isnan(number)))


@region
def nan_in_window(ctx: RegionContext) -> np.ndarray:
    """Results of a windowed maximum whose window holds a NaN, where the standard's text says
    nothing of NaN: the op's first output is the windowed maximum (other outputs, such as the
    index of the element chosen, share its windows). The windows holding a NaN are those whose
    maximum of the NaN indicator (1 where NaN, else 0) is 1."""
    operand = ctx.inputs[0]
    if not floating(operand) or not np.isnan(operand.astype(np.float64)).any():
        return ctx.none()
    indicator = [np.isnan(x.astype(np.float64)).astype(np.float64) if floating(x) else
                 np.zeros(x.shape) for x in ctx.inputs]
    return np.broadcast_to(ctx.all_outputs(indicator)[0] > 0, ctx.expected.shape)


@region
def empty_window(ctx: RegionContext) -> np.ndarray:
    """Results of a pooling window holding no input element (every tap falls in padding, as a
    dilated window can over a short axis), where the text's value is the maximum or the
    average of no element. The op's first output on all-ones inputs is not finite exactly
    there (a maximum of nothing is -inf, an average of nothing 0/0); where the op's definition
    gives such a window a value (an average counting its padding, a sum) it is finite, and not
    in the region."""
    ones = [np.ones(x.shape) for x in ctx.inputs]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.broadcast_to(~np.isfinite(ctx.all_outputs(ones)[0]), ctx.expected.shape)


@region
def reading_differs(ctx: RegionContext) -> np.ndarray:
    """Results that depend on which of two readings of an ambiguous sentence of the standard is
    taken: the op's oracle computes both (its keyword ``reading``: 0, the oracle's default, or
    1), and the op's spec says in the region's ``why`` what the two readings are."""
    with np.errstate(invalid="ignore"):
        other = ctx.oracle_with(list(ctx.inputs), reading=1)
        same = (other == ctx.expected) | (np.isnan(other) & np.isnan(ctx.expected)
                                          if ctx.expected.dtype.kind == "f" else False)
    return ~same




def region_mask(names: Sequence[str], ctx: RegionContext) -> np.ndarray:
    """Union of the named regions' masks, shaped like the expected output."""
    mask = ctx.none()
    for name in names:
        mask |= regions()[name](ctx)
    return mask
