"""Element-wise oracles (XLA operation semantics: element-wise unary, binary, comparison ops).

Each function takes float64 (or int64 / bool) arrays and returns the exact or float64 result.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from conform.ops._lowering import unsupported
from conform.ops.multiprecision import refined
from conform.op_registry import op
from conform.dtypes import complex_array, int_info
from conform.ops._midpoints import (DIFFERENCE_MIDPOINTS, PRODUCT_MIDPOINTS, QUOTIENT_MIDPOINTS,
                                    SUM_MIDPOINTS)
from conform.ops._rounded import (exact_add, exact_divide, exact_multiply, exact_sqrt,
                                  exact_subtract, rounded_elementwise)
from conform.ops.int_power import exact_int_power, lax_power, numpy_power
from conform.ops.xla_complex_arith import (complex_power_bound, complex_power_reference,
                                           complex_quotient_bound, exact_complex_quotient)
from conform.ops.xla_complex_atan2 import complex_atan2_bound, complex_atan2_reference
from conform.ops.xla_complex_order import lexicographic, lexicographic_pick
from conform.ops.xla_complex import (complex_exp_bound, complex_log_bound, complex_product_bound,
                                     complex_refined, complex_sqrt_bound, complex_tanh_bound,
                                     exact_complex_product, exact_modulus)


def xla_operands(lhs, rhs, broadcast_dimensions=None):
    """XLA's binary element-wise operands brought to one shape (operation semantics, "Element-wise
    binary arithmetic operations"): with ``broadcast_dimensions`` the lower-rank operand's
    dimension k becomes dimension ``broadcast_dimensions[k]`` of the higher rank and the
    unmapped dimensions have size 1; degenerate (size-1) dimensions of either operand then
    broadcast so that both shapes are equal."""
    if broadcast_dimensions is None:
        return lhs, rhs
    low, high = (lhs, rhs) if lhs.ndim < rhs.ndim else (rhs, lhs)
    sizes = [1] * high.ndim
    for k, dim in enumerate(broadcast_dimensions):
        sizes[dim] = low.shape[k]
    low = low.reshape(sizes)
    return np.broadcast_arrays(*((low, high) if lhs.ndim < rhs.ndim else (high, low)))


def lax_xla_binary(lax, attrs, bound):
    """jax.lax's binary ops take no broadcast_dimensions: both operands are first broadcast to
    the result's shape with lax.broadcast_in_dim (the lower-rank one along
    ``broadcast_dimensions``, the other along its own dimensions, expanding size-1 ones)."""
    dims = attrs.get("broadcast_dimensions")
    bound = getattr(bound, "bind", bound)   # a primitive (lax.lt_to_p) is applied by its bind

    def apply(lhs, rhs):
        if dims is None:
            return bound(lhs, rhs)
        low, high = (lhs, rhs) if lhs.ndim < rhs.ndim else (rhs, lhs)
        shape = list(high.shape)
        for k, dim in enumerate(dims):
            shape[dim] = low.shape[k] if shape[dim] == 1 else shape[dim]   # 1 grows, even to 0
        own = tuple(range(high.ndim))
        return bound(*(lax.broadcast_in_dim(x, tuple(shape), tuple(dims) if x is low else own)
                       for x in (lhs, rhs)))
    return apply


def nnef_xla_binary(case, call):
    """NNEF broadcasting aligns leading dimensions (a shape goes on with singletons), so only
    ``broadcast_dimensions`` 0, 1, ..., k-1 are expressible without a reshape."""
    dims = case.attrs.get("broadcast_dimensions")
    if dims is not None and list(dims) != list(range(len(dims))):
        raise unsupported(f"NNEF broadcasting aligns leading dimensions, not broadcast_dimensions={dims}")
    return call(["in0", "in1"], {})


def numpy_xla_binary(lhs, rhs, *, broadcast_dimensions=None, bound):
    """The numpy backend: the binding's NumPy function (``bound``) on the operands brought to
    one shape as XLA does (:func:`xla_operands`), in their own dtype."""
    return bound(*xla_operands(lhs, rhs, broadcast_dimensions))


def unsigned64(arrays, dtypes) -> list:
    """The operands as stored: where the case's dtype is uint64, the int64 the oracle contract
    widened each to (wrapping values of 2**63 and above) read back as uint64, so that sums wrap
    modulo 2**64, quotients divide and comparisons order as the unsigned type's do; any other
    operand (a float64 one evaluated for a region among them) as it is."""
    if not dtypes or dtypes[0] != "uint64":
        return list(arrays)
    return [x.view(np.uint64) if x.dtype == np.int64 else x for x in arrays]


def xla_binary(name: str, **hooks):
    """Declare XLA element-wise binary op ``name`` (version 1): its oracle, written for operands
    of one shape, also serves the variant with ``broadcast_dimensions`` (:func:`xla_operands`),
    and sees uint64 operands as uint64 (:func:`unsigned64`)."""
    def define(oracle):
        takes_dtypes = "dtypes" in inspect.signature(oracle).parameters   # the dtype names

        def broadcasting(lhs, rhs, *, broadcast_dimensions=None, dtypes=None):
            operands = unsigned64(xla_operands(lhs, rhs, broadcast_dimensions), dtypes)
            return oracle(*operands, dtypes=dtypes) if takes_dtypes else oracle(*operands)

        broadcasting.__name__, broadcasting.__qualname__ = oracle.__name__, oracle.__qualname__
        broadcasting.__module__, broadcasting.__doc__ = oracle.__module__, oracle.__doc__
        hooks.setdefault("numpy", numpy_xla_binary)
        hooks.setdefault("lax", lax_xla_binary)
        return op(name, version=1, nnef=nnef_xla_binary, **hooks)(broadcasting)
    return define


def _rounded(function):
    """A ``rounded64`` hook (the correctly_rounded model's float64 reference): ``function``
    (exact arithmetic, :mod:`conform.ops._rounded`) on each element pair, the operands brought
    to one shape as the oracle brings them (NumPy broadcasting serves the ONNX twins)."""
    def rounded64(lhs, rhs, *, broadcast_dimensions=None):
        lhs, rhs = xla_operands(lhs, rhs, broadcast_dimensions)
        if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):   # + and -: part by part
            return (complex_array(rounded_elementwise(function, np.real(lhs), np.real(rhs)),
                                  rounded_elementwise(function, np.imag(lhs), np.imag(rhs))),)
        return (rounded_elementwise(function, lhs, rhs),)

    rounded64.__name__ = f"rounded64_{function.__name__}"
    return rounded64


rounded_add, rounded_subtract = _rounded(exact_add), _rounded(exact_subtract)
rounded_multiply, rounded_divide = _rounded(exact_multiply), _rounded(exact_divide)


def _int_trunc_div(lhs, rhs):
    """Integer division rounding toward zero, exact in int64; division by zero gives 0.

    ``lhs - fmod(lhs, rhs)`` is an exact multiple of ``rhs`` (fmod on integers is C's ``%``), so the
    floor division below is exact and no ``abs(INT_MIN)`` overflow can occur.
    """
    safe = np.where(rhs == 0, 1, rhs)
    return np.where(rhs == 0, 0, (lhs - np.fmod(lhs, safe)) // safe)


@xla_binary("add", rounded64=rounded_add, midpoints=SUM_MIDPOINTS)
def oracle_add(lhs, rhs):
    """lhs + rhs."""
    return (lhs + rhs,)


@xla_binary("subtract", rounded64=rounded_subtract, midpoints=DIFFERENCE_MIDPOINTS)
def oracle_subtract(lhs, rhs):
    """lhs - rhs."""
    return (lhs - rhs,)


@xla_binary("multiply", rounded64=rounded_multiply, midpoints=PRODUCT_MIDPOINTS,
            error_bound=complex_product_bound)
def oracle_multiply(lhs, rhs, *, dtypes=None):
    """lhs * rhs; complex operands: ``(ac - bd) + (ad + bc)i``, each part correctly rounded
    into float64 for complex128 operands (:func:`exact_complex_product`)."""
    if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):
        return (exact_complex_product(lhs, rhs, dtypes=dtypes),)
    return (lhs * rhs,)


@xla_binary("divide", rounded64=rounded_divide, midpoints=QUOTIENT_MIDPOINTS,
            error_bound=complex_quotient_bound)
def oracle_divide(lhs, rhs, *, dtypes=None):
    """lhs / rhs; integers truncate toward zero (XLA Div, C semantics); complex operands:
    ``(ac + bd) / (c**2 + d**2) + (bc - ad) / (c**2 + d**2) i``, each part correctly rounded
    into float64 for complex128 operands (:func:`exact_complex_quotient`)."""
    if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):
        return (exact_complex_quotient(lhs, rhs, dtypes=dtypes),)
    if lhs.dtype.kind in "iu":
        return (_int_trunc_div(lhs, rhs),)
    return (lhs / rhs,)


@xla_binary("remainder")
def oracle_remainder(lhs, rhs):
    """XLA Rem: lhs - rhs * trunc(lhs / rhs); the sign follows the dividend, |result| < |rhs|.
    Complex operands: no value (NaN): the text leaves it TBD (the region complex_remainder)."""
    if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):
        return (np.full(np.broadcast(lhs, rhs).shape, complex(np.nan, np.nan)),)
    return (np.fmod(lhs, rhs),)  # C's % on integers; exact in binary floating point


@xla_binary("maximum")
def oracle_maximum(lhs, rhs):
    """max(lhs, rhs); a NaN operand gives NaN (as IEEE 754-2019 maximum); -0 vs +0 is left open;
    complex operands: the lexicographic maximum of the (real, imag) pairs."""
    if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):
        return (lexicographic_pick(True, lhs, rhs),)
    return (np.maximum(lhs, rhs),)


@xla_binary("minimum")
def oracle_minimum(lhs, rhs):
    """min(lhs, rhs); a NaN operand gives NaN (as IEEE 754-2019 minimum); -0 vs +0 is left open;
    complex operands: the lexicographic minimum of the (real, imag) pairs."""
    if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):
        return (lexicographic_pick(False, lhs, rhs),)
    return (np.minimum(lhs, rhs),)


@xla_binary("power", lax=functools.partial(lax_power, broadcasting=lax_xla_binary),
            numpy=functools.partial(numpy_power, broadcasting=numpy_xla_binary),
            error_bound=complex_power_bound)
def oracle_power(lhs, rhs, *, dtypes=None):
    """lhs ** rhs; the C11 Annex F pow special cases (pow(x, ±0) = 1, pow(+1, y) = 1, ...) are
    the spec's special_values table. float64: Arb (x < 0 only for integer y: |x|**y signed).
    Integers: exact (:func:`conform.ops.int_power.exact_int_power`); complex: e**(rhs log lhs),
    the principal logarithm (:func:`complex_power_reference`)."""
    if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):
        return (complex_power_reference(lhs, rhs, dtypes),)
    if lhs.dtype.kind in "iu":
        return (exact_int_power(lhs, rhs, dtypes),)
    return (refined(np.power, _arb_pow, lhs, rhs, dtypes=dtypes),)


def _arb_pow(x, y):
    """x ** y on Arb balls: for x < 0 only an integer y gives a real number."""
    if x < 0:
        if not y.is_integer():
            return x.nan()
        odd = int(y.unique_fmpz()) % 2
        return -((-x) ** y) if odd else (-x) ** y
    return x ** y


@op("abs", version=1)
def oracle_abs(operand, *, dtypes=None):
    """|x|; for complex x = a + bi the modulus sqrt(a**2 + b**2), of the component float type
    (:func:`conform.ops.xla_complex.exact_modulus`)."""
    if np.iscomplexobj(operand):
        return (exact_modulus(operand, dtypes=dtypes),)
    return (np.abs(operand),)


@op("negate", version=1)
def oracle_negate(operand, *, dtypes=None):
    """-x; an unsigned x as StableHLO's negate defines it (docs/spec.md, negate: "For unsigned
    integers: bitcast to signed integer, integer negation, bitcast back to unsigned integer"):
    2**N - x modulo 2**N for N bits, 0 for 0."""
    if dtypes and dtypes[0].startswith("uint"):
        bits = int_info(dtypes[0]).bits
        wrapped = np.negative(operand.view(np.uint64) if operand.dtype == np.int64 else operand)
        return (wrapped.astype(np.uint64) & np.uint64(2 ** bits - 1),)
    return (np.negative(operand),)


@op("exp", version=1, error_bound=complex_exp_bound)
def oracle_exp(operand, *, dtypes=None):
    """e ** x; for complex x = a + bi, e**a (cos b + i sin b)."""
    if np.iscomplexobj(operand):
        return (complex_refined(np.exp, lambda z: z.exp(), operand, dtypes=dtypes),)
    return (refined(np.exp, lambda x: x.exp(), operand, dtypes=dtypes),)


@op("log", version=1, error_bound=complex_log_bound)
def oracle_log(operand, *, dtypes=None):
    """ln(x); ln(0) = -inf, ln(x < 0) = NaN; for complex x the principal value
    ln|x| + i arg x, arg in [-pi, pi] by the sign of the imaginary part's zero."""
    if np.iscomplexobj(operand):
        return (complex_refined(np.log, lambda z: z.log(), operand, dtypes=dtypes),)
    return (refined(np.log, lambda x: x.log(), operand, dtypes=dtypes),)


@op("tanh", version=1, error_bound=complex_tanh_bound)
def oracle_tanh(operand, *, dtypes=None):
    """tanh(x); complex x: sinh x / cosh x."""
    if np.iscomplexobj(operand):
        return (complex_refined(np.tanh, lambda z: z.tanh(), operand, dtypes=dtypes),)
    return (refined(np.tanh, lambda x: x.tanh(), operand, dtypes=dtypes),)


def rounded_sqrt(operand):
    """sqrt(x) correctly rounded into float64, in exact integer arithmetic.

    (sqrt has no ``midpoints`` hook: no square root of a p-bit number is a midpoint, since
    ``sqrt(x) = M 2**k`` with ``M`` odd of ``p + 1`` bits gives ``x = M**2 2**2k``, ``M**2``
    odd of at least ``2p + 1`` bits; nor subnormal: ``sqrt`` of the smallest subnormal is
    normal.)"""
    return (rounded_elementwise(exact_sqrt, operand),)


@op("sqrt", version=1, rounded64=rounded_sqrt, error_bound=complex_sqrt_bound)
def oracle_sqrt(operand, *, dtypes=None):
    """sqrt(x); sqrt(-0) = -0, sqrt(x < 0) = NaN; for complex x the principal root (real
    part >= 0), its imaginary part's sign that of x's."""
    if np.iscomplexobj(operand):
        return (complex_refined(np.sqrt, lambda z: z.sqrt(), operand, dtypes=dtypes),)
    return (np.sqrt(operand),)


@op("floor", version=1)
def oracle_floor(operand):
    """floor(x), the largest integer <= x."""
    return (np.floor(operand),)


@op("round", version=1)
def oracle_round(operand):
    """XLA Round: to nearest integer, ties away from zero.

    ``x - trunc(x)`` is exact, so the tie test is exact even where ``floor(|x| + 0.5)`` would round.
    """
    truncated = np.trunc(operand)
    away = np.abs(operand - truncated) >= 0.5
    return (np.where(away, truncated + np.sign(operand), truncated),)


@xla_binary("lt")
def oracle_lt(lhs, rhs):
    """lhs < rhs under IEEE 754 comparison (false if either is NaN); complex operands:
    lexicographic (:func:`conform.ops.xla_complex_order.lexicographic`)."""
    if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):
        return (lexicographic("lt", lhs, rhs),)
    return (np.less(lhs, rhs),)


@xla_binary("eq")
def oracle_eq(lhs, rhs):
    """lhs == rhs under IEEE 754 comparison (-0 == +0; NaN != NaN)."""
    return (np.equal(lhs, rhs),)


@xla_binary("atan2", error_bound=complex_atan2_bound)
def oracle_atan2(lhs, rhs, *, dtypes=None):
    """atan2(lhs, rhs): the angle of (rhs, lhs), with the C99/IEEE 754 signed-zero and infinity
    cases (atan2(±0, -0) = ±pi, atan2(±0, +0) = ±0, atan2(±inf, -inf) = ±3pi/4, ...); complex
    operands: -i log((rhs + i lhs) / sqrt(rhs**2 + lhs**2))
    (:func:`conform.ops.xla_complex_atan2.complex_atan2_reference`)."""
    if np.iscomplexobj(lhs) or np.iscomplexobj(rhs):
        return (complex_atan2_reference(lhs, rhs),)
    return (refined(np.arctan2, lambda y, x: type(y).atan2(y, x), lhs, rhs, dtypes=dtypes),)
