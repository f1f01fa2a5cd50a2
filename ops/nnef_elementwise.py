"""NNEF's binary element-wise operations, select and the logical and, or and not (NNEF 1.0),
judged by NNEF's semantics.

They differ from the XLA ops of the same arithmetic in their signature: NNEF takes a tensor's
shape to go on with singleton dimensions (NNEF 1.0, ch. 2: 'dimensions not explicitly described
are treated as singletons'), so operands broadcast with their *leading* dimensions aligned, where
NumPy and ONNX align the trailing ones. The oracles are the XLA ops', given the operands padded
with trailing singleton dimensions; the specs (ops/nnef_*.yaml) give NNEF's types and regions.
"""
from __future__ import annotations

import numpy as np

from conform.ops._midpoints import (DIFFERENCE_MIDPOINTS, PRODUCT_MIDPOINTS, QUOTIENT_MIDPOINTS,
                                    SUM_MIDPOINTS)
from conform.op_registry import op
from conform.ops.elementwise import (oracle_add, oracle_divide, oracle_eq, oracle_lt,
                                     oracle_maximum, oracle_minimum, oracle_multiply,
                                     oracle_power, oracle_subtract, rounded_add, rounded_divide,
                                     rounded_multiply, rounded_subtract)
from conform.ops.logical import (oracle_bitwise_and, oracle_bitwise_not, oracle_bitwise_or,
                                 oracle_ge, oracle_gt, oracle_le, oracle_ne)
from conform.ops.selection import oracle_select
from conform.ops.unary_math import oracle_sign


def _aligned(*operands) -> list:
    """The operands with trailing singleton dimensions up to the largest rank (NNEF's shapes)."""
    rank = max(x.ndim for x in operands)
    return [np.reshape(x, x.shape + (1,) * (rank - x.ndim)) for x in operands]


def numpy_nnef_binary(*operands, bound):
    """The numpy backend: the binding's NumPy function (``bound``) on the operands with NNEF's
    leading-aligned shapes (:func:`_aligned`), in their own dtype."""
    return bound(*_aligned(*operands))


def _nnef(name: str, oracle, doc: str, rounded=None, midpoints=None):
    """Op ``name``: ``oracle`` (and its ``rounded64`` hook ``rounded``) on NNEF's shapes."""
    if oracle.takes_dtypes:   # (the inputs' dtype names: float64 ones get a reference beyond)
        def nnef_oracle(*operands, dtypes=None):
            return oracle(*_aligned(*operands), dtypes=dtypes)
    else:
        def nnef_oracle(*operands):
            return oracle(*_aligned(*operands))

    def rounded64(*operands):
        return rounded(*_aligned(*operands))

    nnef_oracle.__doc__ = doc
    nnef_oracle.__name__ = f"oracle_{name}"
    nnef_oracle.__module__ = __name__
    return op(name, version=1, rounded64=rounded and rounded64, midpoints=midpoints,
              numpy=numpy_nnef_binary)(nnef_oracle)


oracle_nnef_add = _nnef("nnef_add", oracle_add, "x + y.", rounded_add,
                        SUM_MIDPOINTS)
oracle_nnef_sub = _nnef("nnef_sub", oracle_subtract, "x - y.", rounded_subtract,
                        DIFFERENCE_MIDPOINTS)
oracle_nnef_mul = _nnef("nnef_mul", oracle_multiply, "x * y.", rounded_multiply,
                        PRODUCT_MIDPOINTS)
oracle_nnef_div = _nnef("nnef_div", oracle_divide, "x / y.", rounded_divide,
                        QUOTIENT_MIDPOINTS)
oracle_nnef_pow = _nnef("nnef_pow", oracle_power, "x ** y.")
oracle_nnef_min = _nnef("nnef_min", oracle_minimum, "select(x < y, x, y) on the reals.")
oracle_nnef_max = _nnef("nnef_max", oracle_maximum, "select(x > y, x, y) on the reals.")
oracle_nnef_lt = _nnef("nnef_lt", oracle_lt, "x < y.")
oracle_nnef_le = _nnef("nnef_le", oracle_le, "x <= y.")
oracle_nnef_gt = _nnef("nnef_gt", oracle_gt, "x > y.")
oracle_nnef_ge = _nnef("nnef_ge", oracle_ge, "x >= y.")
oracle_nnef_eq = _nnef("nnef_eq", oracle_eq, "x == y.")
oracle_nnef_ne = _nnef("nnef_ne", oracle_ne, "x != y.")
oracle_nnef_select = _nnef("nnef_select", oracle_select, "true_value where condition, else false_value.")
oracle_nnef_sign = _nnef("nnef_sign", oracle_sign, "sign(x) on the reals: -1, 0 or 1.")
oracle_nnef_and = _nnef("nnef_and", oracle_bitwise_and, "x && y on logical tensors.")
oracle_nnef_or = _nnef("nnef_or", oracle_bitwise_or, "x || y on logical tensors.")


@op("nnef_not", version=1)
def oracle_nnef_not(x):
    """!x on a logical tensor."""
    return oracle_bitwise_not(x)
