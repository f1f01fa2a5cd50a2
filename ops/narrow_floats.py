"""Results of element-wise functions in the float types of at most 8 bits (float8, float6,
float4): their ULP bound, and the implementation-defined region of results OCP MX's FP4 E2M1
(``float4_e2m1fn``), FP6 E2M3 and E3M2 (``float6_e2m3fn``, ``float6_e3m2fn``) and E8M0
(``float8_e8m0fnu``) cannot hold.

The bound: the XLA text gives each function and no accuracy, so a result is the function's value
rounded to the type, within 0.5 ULP; a spec admits an evaluation in float16 or a wider type
within the op's float16 bound, rounded once more into the narrow type
(:func:`narrow_ulp_bound`).

The region: E2M1, the FP6 formats and E8M0 lack values every other float type has.

StableHLO lists both among its element types (docs/spec.md, "Types"), and the XLA text gives each
element-wise function's value, not what becomes of a value the result type cannot hold: E2M1 has
no infinity and no NaN (its largest value is 6), nor have E2M3 and E3M2 (largest 7.5 and 28),
E8M0 no zero and no sign (its values are the
powers of two 2**-127 to 2**127, and NaN; OCP MX v1.0 defines both). Neither the XLA text
nor StableHLO's gives a result for a function value the type cannot hold (no saturation, no
rounding into these formats is stated): such results are open. For the float8
formats without infinities (e4m3fn, e4m3fnuz, e5m2fnuz) overflow is NaN, which they hold, and
the judge reads it so (docs/error-models.md): those have no region here.
"""
from __future__ import annotations

import functools

import numpy as np

from conform.dtypes import FLOAT_FORMATS, dtype_name, round_to_format
from conform.op_registry import region
from conform.ops.regions import RegionContext


#: The significant bits (the implicit one included) of a float type of at most 8 bits, the
#: bound of the specs' ``float`` entry: at most E4M3's and E2M3's 4 (E5M2 and E3M2 3, E2M1 2,
#: E8M0 1), but for E3M4's 5 (:data:`WIDEST_NARROW`), whose specs state its bound apart
NARROW_PRECISION = 4
#: The narrow type of the most significant bits, 5 (its own error-model entry in each spec)
WIDEST_NARROW = max((fmt.precision, name) for name, fmt in FLOAT_FORMATS.items()
                    if 0 < fmt.bits <= 8)[1]


def narrow_ulp_bound(float16_ulps: float, precision: int = NARROW_PRECISION) -> float:
    """The ULP bound of a function's result in a float type of at most 8 bits, for an op whose
    float16 results are within ``float16_ulps`` ULP: ``0.5 + float16_ulps * 2**(p - 11)``, p
    the narrow type's significant bits (at most ``precision``: :data:`NARROW_PRECISION` for
    every such type but float8_e3m4, whose p is 5).

    A float16 evaluation ``y`` within ``b`` float16 ULPs of the exact ``f``, rounded once to the
    narrow type, is within ``0.5 ulp(y) + |y - f|`` of ``f``; a float16 ULP is ``2**(p - 11)``
    of the narrow type's in the same binade, and a wider evaluation (float32, as E8M0's range
    beyond float16's needs) errs less. So the narrow result is the correctly rounded one or, within
    ``b * 2**(p - 11)`` ULP of a rounding midpoint, its other neighbour.

    >>> narrow_ulp_bound(2), narrow_ulp_bound(2, FLOAT_FORMATS[WIDEST_NARROW].precision)
    (0.515625, 0.53125)
    """
    return 0.5 + float16_ulps * 2.0 ** (precision - FLOAT_FORMATS["float16"].precision)


@region
def narrow_float_unrepresentable(ctx: RegionContext) -> np.ndarray:
    """Results in float4_e2m1fn, float6_e2m3fn, float6_e3m2fn or float8_e8m0fnu whose reference
    the type cannot hold: NaN, an infinity or a value rounding past 6 in E2M1 (past 7.5 in E2M3,
    28 in E3M2: no NaN, no infinity); a negative value, a
    zero or one rounding below 2**-127, or one rounding past 2**127 in E8M0 (no sign, no zero,
    and only NaN above its range). Empty for every other type."""
    fmt = FLOAT_FORMATS.get(ctx.out_dtype)
    if fmt is None or (fmt.has_nan and fmt.has_zero):
        return ctx.none()
    reference = np.asarray(ctx.expected, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        rounded = round_to_format(reference, fmt)
    return np.isnan(rounded) & ~(np.isnan(reference) & fmt.has_nan)


#: The only output types the region can hold elements of: other cells need no consistency case
#: for it (generators/_consistency.py)
narrow_float_unrepresentable.only_dtypes = frozenset(
    name for name, fmt in FLOAT_FORMATS.items() if not (fmt.has_nan and fmt.has_zero))


@region
def scale_format_tie(ctx: RegionContext) -> np.ndarray:
    """Results in float8_e8m0fnu whose reference lies midway between two of its values, 1.5 *
    2**k (a sum 2**k + 2**(k-1), a difference 2**(k+1) - 2**(k-1)), where the op's text asks
    for the correctly rounded result. IEEE 754-2019 §4.3.1's roundTiesToEven takes 'the one
    with an even least significant digit'; E8M0's significand is its implicit 1 alone, so both
    neighbours' digit is odd and the rule picks neither, and OCP MX v1.0 defines conversions
    into E8M0 for scales only (ONNX Cast's round_mode shows three choices). Empty for every
    other type."""
    fmt = FLOAT_FORMATS.get(ctx.out_dtype)
    if fmt is None or fmt.has_zero:
        return ctx.none()
    significand, _ = np.frexp(np.asarray(ctx.expected, np.float64))
    return np.abs(significand) == 0.75


scale_format_tie.only_dtypes = frozenset(
    name for name, fmt in FLOAT_FORMATS.items() if not fmt.has_zero)


@region
def no_additive_identity(ctx: RegionContext) -> np.ndarray:
    """Every result in float8_e8m0fnu of a sum whose init value must be the identity of its Add
    computation (the XLA text, Reduce: 'all initial values must form an identity under the
    computation'; ReduceWindow's init values are Reduce's): E8M0 has no zero, so no value of
    the type is that identity and the sum's init value 0 is none of its values: the text's
    precondition cannot hold, and it gives no result without it. Empty for every other type."""
    fmt = FLOAT_FORMATS.get(ctx.out_dtype)
    if fmt is None or fmt.has_zero:
        return ctx.none()
    return ~ctx.none()


no_additive_identity.only_dtypes = frozenset(
    name for name, fmt in FLOAT_FORMATS.items() if not fmt.has_zero)


def xla_cpu_six_bit_refusal(inputs, op_name: str) -> str | None:
    """A ``lax_refuses`` reason for an operand of a 6-bit float type (float6_e2m3fn,
    float6_e3m2fn), None for another: XLA:CPU does not legalize arithmetic in them (a
    composite op's rsqrt, divf, addf: 'failed to legalize operation ... that was explicitly
    marked illegal'), so refusing before tracing spares each case a failed compilation."""
    dtype = dtype_name(inputs[0].dtype)
    if not dtype.startswith("float6_"):
        return None
    return (f"{op_name} in {dtype}: XLA:CPU does not legalize the arithmetic of its evaluation "
            "(math.rsqrt, arith.divf, arith.addf) for the 6-bit float types ('failed to "
            "legalize operation ... that was explicitly marked illegal')")


def wider_type(dtype: str) -> str:
    """The type a float of at most 8 bits is evaluated in when not in itself: float16, which
    holds all of its values, or float32 for float8_e8m0fnu (2**-127 to 2**127)."""
    fmt, half = FLOAT_FORMATS[dtype], FLOAT_FORMATS["float16"]
    holds = fmt.max_finite <= half.max_finite and fmt.min_subnormal >= half.min_subnormal
    return "float16" if holds else "float32"


def admitting_wider_evaluation(hook):
    """A ``derived`` ``error_bound`` hook that bounds an evaluation in the operand type T (its
    ``dtypes[0]``), extended for a float T of at most 8 bits to also admit an evaluation in a
    wider type W (:func:`wider_type`) rounded once into T, as narrow_ulp_bound's reasoning
    does: per element the larger of the two bounds, the wider one ``B_W + ulp_T(|f| + B_W) /
    2`` (the value computed in W, within B_W of the exact f, rounded to nearest in T: half an
    ULP of T where it lies, at most at ``|f| + B_W``). NaN (unbounded) where either is, and
    everywhere in a type without zero and sign (float8_e8m0fnu): a formula's differences (x -
    mean) are zero or negative there for most inputs, which the type cannot hold, so its
    evaluation in T has no value the text gives."""
    @functools.wraps(hook)   # (its signature too: a ``subnormals`` keyword is seen)
    def bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes, **more):
        in_t = hook(inputs, attrs, outputs, out_dtype=out_dtype, u=u, constants=constants,
                    dtypes=dtypes, **more)
        fmt = FLOAT_FORMATS.get(dtypes[0])
        if fmt is None or fmt.bits > 8:
            return in_t
        if not fmt.has_zero:
            return tuple(np.full(np.shape(f), np.nan) for f in outputs)
        wide = wider_type(dtypes[0])
        in_w = hook(inputs, attrs, outputs, out_dtype=wide, u=FLOAT_FORMATS[wide].unit_roundoff,
                    constants=constants, dtypes=(wide,) * len(dtypes), **more)
        joined = []
        for t, w, f in zip(in_t, in_w, outputs):
            with np.errstate(invalid="ignore", over="ignore"):
                reach = np.abs(np.asarray(f, np.float64)) + w
                exponent = np.frexp(np.where(np.isfinite(reach), reach, 0.0))[1] - 1
                ulp = np.ldexp(1.0, np.maximum(exponent, fmt.emin) - fmt.precision + 1)
                joined.append(np.maximum(t, w + ulp / 2))
        return tuple(joined)
    return bound
