"""NNEF compound fragments of the simplifier and misc groups: rsqr, clamp, add_n and copy_n, as
the ``nnef`` package's standard library (``stdlib_source.h``; NNEF 1.0 §4.1 element-wise and §4.9
miscellaneous operations) writes them:

    rsqr(x) = x ^ -2.0
    clamp(x, a, b) = max(min(x, b), a), with min(x, y) = select(x < y, x, y) and
                     max(x, y) = select(x > y, x, y)
    add_n(x) = x[0] + add_n(x[1:]) if length_of(x) > 0 else constant(shape = [1], value = [0.0])
    copy_n(x, times) = [x] * times

clamp is NNEF's own op: where a > b it gives a, XLA's Clamp b. Operands broadcast with their
leading dimensions aligned (NNEF 1.0 ch. 2: a shape goes on with singleton dimensions).
"""
from __future__ import annotations

import functools

import numpy as np

from conform.op_registry import op
from conform.ops._double_double import accurate_sum
from conform.ops.multiprecision import refined
from conform.ops.nnef_elementwise import _aligned, numpy_nnef_binary

#: the outputs of copy_n (its spec's ``signature.outputs``): ``times``
TIMES = 3


def _inverse_square(x):
    return 1 / (x * x)


@op("nnef_rsqr", version=1, numpy=lambda x: np.power(x, x.dtype.type(-2)))
def oracle_nnef_rsqr(x, *, dtypes=None):
    """x ^ -2.0 = 1 / x**2 (to ~2**-106 for float64): rsqr(±0) = +inf, rsqr(±inf) = +0."""
    return (refined(_inverse_square, _inverse_square, x, dtypes=dtypes),)


def numpy_nnef_clamp(x, a, b):
    """The numpy backend: ``np.maximum(np.minimum(x, b), a)`` on NNEF's shapes."""
    return numpy_nnef_binary(x, a, b, bound=lambda x, a, b: np.maximum(np.minimum(x, b), a))


@op("nnef_clamp", version=1, numpy=numpy_nnef_clamp)
def oracle_nnef_clamp(x, a, b):
    """max(min(x, b), a) on the reals: a where a > b (NaN operands: region nan_operand)."""
    x, a, b = _aligned(x, a, b)
    return (np.maximum(np.minimum(x, b), a),)


def draw_add_n(draw, kit, spec, dtype):
    """1 to 4 tensors of one shape (rank 1 to 4, empty too; the body's last term, constant(shape = [1]), would make a 0-d sum one of shape [1])."""
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=5,
                           min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))
    count = draw(kit.st.integers(1, 4))
    return kit.Signature((dtype,) * count, (shape,) * count, {}, dtype)


def _nnef_array(case, call):
    values = "[" + ", ".join(f"in{i}" for i in range(len(case.inputs))) + "]"
    return call([values], {})


def numpy_add_n(*x):
    """The numpy backend: the tensors added in order with ``np.add`` in their type."""
    return functools.reduce(np.add, x)


@op("nnef_add_n", version=1, draw=draw_add_n, draw_honours=frozenset(), nnef=_nnef_array,
    accumulation_length=lambda shapes, attrs: len(shapes) + 1, numpy=numpy_add_n)
def oracle_nnef_add_n(*x):
    """x[0] + (x[1] + (... + (x[n-1] + 0.0))): the sum of the tensors (double-double)."""
    return (accurate_sum(np.stack(np.broadcast_arrays(*x), axis=-1), axis=-1),)


def numpy_copy_n(x, *, times):
    """The numpy backend: ``np.copy`` ``times`` times."""
    return tuple(np.copy(x) for _ in range(times))


@op("nnef_copy_n", version=1, feeding="moved", numpy=numpy_copy_n,
    nnef=lambda case, call: call(["in0"], {"times": case.attrs["times"]}, generic=case.input_dtypes[0],
                                 array_result=True))
def oracle_nnef_copy_n(x, *, times):
    """[x] * times: ``times`` copies of x."""
    return tuple(x for _ in range(times))
