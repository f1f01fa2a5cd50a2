"""NNEF primitive fragments without a counterpart bound elsewhere: round (NNEF 1.0 §4.1 rounding
operations) and the logical reductions any_reduce and all_reduce (§4.7 reduction operations),
declared in the ``nnef`` package's standard library (``stdlib_source.h``):

    fragment round( x: tensor<scalar> ) -> ( y: tensor<scalar> );
    fragment any_reduce( input: tensor<logical>, axes: integer[] ) -> ( output: tensor<logical> );
    fragment all_reduce( input: tensor<logical>, axes: integer[] ) -> ( output: tensor<logical> );

round gives the nearest integer, which the text does not settle at halves (the spec's region
rounding_tie); the reductions or and and the elements along ``axes``, keeping them as
singleton dimensions (conform's outputs drop them; the nnef lowering reshapes).
"""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op, region
from conform.ops._lowering import unsupported
from conform.ops.elementwise import oracle_round
from conform.ops.reduction import draw_reduce, feed_reduce, nnef_reduce


@op("nnef_round", version=1, numpy=np.rint)
def oracle_nnef_round(x):
    """The nearest integer (halves away from zero: region rounding_tie)."""
    return oracle_round(x)


@region
def rounding_tie(ctx) -> np.ndarray:
    """round's halves: finite x with x - floor(x) = 1/2, equally near two integers (exact:
    a float's fraction is exactly representable)."""
    x = np.asarray(ctx.inputs[0], np.float64)
    with np.errstate(invalid="ignore"):
        return np.isfinite(x) & (x - np.floor(x) == 0.5)


def reduced_count(shapes, attrs):
    """The elements reduced into one output (0: an empty slice, region empty_reduction)."""
    return math.prod(shapes[0][d] for d in attrs["dimensions"])


_LOGICAL = dict(draw=draw_reduce, draw_honours=frozenset(), feeding=feed_reduce,
                nnef=nnef_reduce, accumulation_length=reduced_count)


@op("nnef_any_reduce", version=1, numpy=lambda x, *, dimensions: np.any(x, tuple(dimensions)),
    **_LOGICAL)
def oracle_nnef_any_reduce(x, *, dimensions):
    """Whether any element along ``dimensions`` is true."""
    return (np.any(x, axis=tuple(dimensions)),)


@op("nnef_all_reduce", version=1, numpy=lambda x, *, dimensions: np.all(x, tuple(dimensions)),
    **_LOGICAL)
def oracle_nnef_all_reduce(x, *, dimensions):
    """Whether every element along ``dimensions`` is true."""
    return (np.all(x, axis=tuple(dimensions)),)


# --- constant ----------------------------------------------------------------------------------

def draw_constant(draw, kit, spec, dtype):
    """A shape of rank 1 to 4 (sides 1 to 4) and ``value``: one value (repeated) or one per
    element, drawn in the output type (so that the literal names the value exactly)."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=4, min_side=1, max_side=4))
    count = 1 if draw(st.booleans()) else math.prod(shape)
    if dtype == "bool":
        element = st.booleans()
    elif dtype.startswith("int"):
        element = st.integers(-1000, 1000)
    else:   # finite (NNEF literals have no inf or NaN), of the output type's precision
        width = {"float16": 16, "float32": 32}.get(dtype, 64)
        element = st.floats(-1e4, 1e4, width=width, allow_subnormal=width > 16)
    value = draw(st.lists(element, min_size=count, max_size=count))
    return kit.Signature((), (), {"shape": list(shape), "value": value, "dtype": dtype}, dtype)


def _constant(shape, value, dtype):
    values = np.asarray(value, dtype)
    return np.broadcast_to(values, shape).copy() if values.size == 1 else values.reshape(shape)


def numpy_constant(*, shape, value, dtype):
    """The numpy backend: ``np.asarray`` of the values in the type, broadcast or reshaped."""
    return _constant(shape, value, np.dtype(dtype))


def nnef_constant(case, call):
    """``constant<type>(shape, value)`` with the case's shape and values as literals; the
    document declares an unused parameter, since NNEF's grammar (NNEF 1.0 ch. 3,
    <graph-declaration>: an <identifier-list> of one at least) gives a graph one at least."""
    attrs = case.attrs
    return call([], {"shape": list(attrs["shape"]), "value": list(attrs["value"])}, inputs=[],
                generic=attrs["dtype"])


def feed_nothing(inputs, attrs, index):
    """No input feeds a constant's elements (it has none)."""
    return []


@op("nnef_constant", version=1, draw=draw_constant, draw_honours=frozenset(),
    numpy=numpy_constant, nnef=nnef_constant, feeding=feed_nothing)
def oracle_nnef_constant(*, shape, value, dtype):
    """The tensor of ``shape`` holding ``value``: its one element everywhere, or its elements
    in row-major order."""
    return (_constant(shape, value, None),)
