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
