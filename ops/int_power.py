"""Integer power (StableHLO power: "For integers: integer exponentiation"; XLA's text lists Pow
among the element-wise binary operations and says no more), exactly, with the two places the
text gives no value as regions: a negative exponent of a base other than ±1 (its power is no
integer, and the text gives no rounding for it; StableHLO's reference interpreter,
stablehlo/reference/Element.cpp, returns 0 there) and a power outside the type's range
(StableHLO, "Errors": "error conditions are still possible, e.g. through integer overflows
... Unless explicitly called out, all these errors result in implementation-defined
behavior": the region ``int_overflow``).
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import int_info, is_integer
from conform.op_registry import region
from conform.ops._lowering import unsupported
from conform.ops.regions import RegionContext, int_operands

#: a base of magnitude 2 or more to this power leaves every integer type (2**64 and beyond)
_PAST_EVERY_TYPE = 64


def exact_int_power(lhs, rhs, dtypes=None) -> np.ndarray:
    """``lhs ** rhs`` of integer arrays (broadcast together), exactly where the power fits in
    int64 (uint64 for uint64 operands); a power beyond is clipped to that type's limit of its
    sign (past every narrower type's range: the region ``int_overflow``, unjudged). A negative
    exponent: ``1`` and ``(-1) ** rhs`` for a base of ±1, 0 elsewhere (the region
    :func:`int_power_negative_exponent`, unjudged; the reference interpreter's value)."""
    unsigned = bool(dtypes) and dtypes[0] == "uint64"
    limits = (0, 2 ** 64 - 1) if unsigned else (-2 ** 63, 2 ** 63 - 1)
    lhs, rhs = np.broadcast_arrays(lhs, rhs)
    out = np.zeros(lhs.shape, np.uint64 if unsigned else np.int64)
    flat = out.reshape(-1)
    for k, (base, exponent) in enumerate(zip(lhs.reshape(-1).tolist(),
                                             rhs.reshape(-1).tolist())):
        base, exponent = int(base), int(exponent)
        if exponent < 0:
            value = base ** (-exponent) if abs(base) == 1 else 0
        elif abs(base) >= 2 and exponent >= _PAST_EVERY_TYPE:
            value = limits[1] if base > 0 or exponent % 2 == 0 else limits[0]
        else:
            value = base ** exponent
        flat[k] = min(max(value, limits[0]), limits[1])
    return out


@region
def int_power_negative_exponent(ctx: RegionContext) -> np.ndarray:
    """Integer powers with a negative exponent and a base other than 1 and -1 (0 included):
    the power is no integer (or, of 0, none at all), and the text's "integer exponentiation"
    gives no rounding for it."""
    lhs, rhs = ctx.inputs
    if not is_integer(ctx.out_dtype) or int_info(ctx.out_dtype).min >= 0 or not int_operands(ctx):
        return ctx.none()
    base, exponent = (np.asarray(x).astype(np.int64) for x in (lhs, rhs))
    return ctx.aligned(exponent < 0) & ctx.aligned(np.abs(base) != 1)


def lax_power(lax, attrs, *, broadcasting):
    """jax.lax.pow refuses an integer base (its integer_pow takes a static exponent only): an
    integer operand pair is a jax primitive lowered to ``stablehlo.power`` itself, so XLA's own
    integer power runs; other types take ``lax.pow``. ``broadcasting(lax, attrs, function)``
    applies a binary function with the case's ``broadcast_dimensions``. (No ``bound`` lax
    function: a While or Conditional body, which calls the binding's lax function by name,
    cannot take power.)"""
    import jax
    from jax.extend.core import Primitive
    from jax.extend.mlir.dialects import stablehlo
    from jax.interpreters import mlir

    prim = Primitive("xla_integer_power")
    prim.def_abstract_eval(lambda x, y: jax.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(prim, lambda ctx, x, y: [stablehlo.PowOp(x, y).result])
    lowered = jax.jit(prim.bind)
    floating = broadcasting(lax, attrs, lax.pow)
    integral = broadcasting(lax, attrs, lowered)
    # jax's issubdtype knows ml_dtypes' int2 and int4 as integers, NumPy's does not
    return lambda lhs, rhs: (integral if jax.numpy.issubdtype(lhs.dtype, jax.numpy.integer)
                             else floating)(lhs, rhs)


def numpy_power(lhs, rhs, *, broadcast_dimensions=None, bound, broadcasting):
    """The numpy backend: ``np.power`` (``bound``, applied by ``broadcasting``, the XLA binary
    ops' NumPy hook); NumPy raises for an integer base to a negative integer power, which it
    cannot express: unsupported, with that reason."""
    # by name: int2 and int4 (ml_dtypes) are of NumPy kind 'V'
    if is_integer(np.asarray(lhs).dtype.name) and np.any(np.asarray(rhs) < 0):
        raise unsupported("NumPy's power raises for integers to negative integer powers")
    return broadcasting(lhs, rhs, broadcast_dimensions=broadcast_dimensions, bound=bound)
