"""Signature families: Hypothesis strategies that draw dtypes, shapes and attributes for one op.

A spec names its family in ``signature.family``; the family knows the shape relations and the
attribute constraints of that kind of op (e.g. ``axis < rank``, output sizes >= 0).
Each strategy yields a :class:`Signature`.
"""
from __future__ import annotations

import math
import os

from hypothesis import strategies as st

from conform.generators._signature import Signature, fixed_attrs

MAX_ARRAY_SIZE = int(os.environ.get("CONFORM_MAX_ARRAY_SIZE", "256"))


def _shape(*, min_rank=0, max_rank=4, min_side=1, max_side=6):
    return st.lists(st.integers(min_side, max_side), min_size=min_rank, max_size=max_rank).map(
        tuple).filter(lambda s: math.prod(s) <= MAX_ARRAY_SIZE)


def _ranks(spec, default_min=0, default_max=4):
    sig = spec.signature
    return sig.get("min_rank", default_min), sig.get("max_rank", default_max)


def _out_dtype(spec, dtype):
    return "bool" if spec.output_dtype == "bool" else dtype


@st.composite
def elementwise(draw, spec, dtype):
    """All inputs share one shape (0-d, empty and >= 8-element shapes included)."""
    lo, hi = _ranks(spec)
    shape = draw(_shape(min_rank=lo, max_rank=hi, min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    n = len(spec.inputs)
    return Signature((dtype,) * n, (shape,) * n, fixed_attrs(spec), _out_dtype(spec, dtype))


@st.composite
def select(draw, spec, dtype):
    """pred (bool), on_true, on_false: one shape."""
    shape = draw(_shape())
    return Signature(("bool", dtype, dtype), (shape,) * 3, {}, dtype)


@st.composite
def clamp(draw, spec, dtype):
    """min, operand, max: min and max are scalars or have the operand's shape.

    Half the signatures have scalar bounds both, the only ones ONNX Clip takes."""
    shape = draw(_shape())
    scalar_bounds = draw(st.booleans())
    bound_shapes = [() if scalar_bounds else draw(st.sampled_from([(), shape])) for _ in range(2)]
    return Signature((dtype,) * 3, (bound_shapes[0], shape, bound_shapes[1]), {}, dtype)


@st.composite
def convert(draw, spec, dtype):
    """dtype is 'SRC->DST'; the operand is SRC and the result DST."""
    src, dst = dtype.split("->")
    shape = draw(_shape())
    return Signature((src,), (shape,), {"new_dtype": dst}, dst)


@st.composite
def reduce(draw, spec, dtype):
    """A non-empty, sorted set of reduced dimensions."""
    shape = draw(_shape(min_rank=1, max_rank=4, max_side=8))
    dims = draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))
    return Signature((dtype,), (shape,), {"dimensions": sorted(dims)}, dtype)


@st.composite
def dot_general(draw, spec, dtype):
    """Batched matmul: lhs [B..., M, K] x rhs [B..., K, N]."""
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    m, n = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    k = draw(st.integers(1, 24))
    lhs, rhs = (*batch, m, k), (*batch, k, n)
    return Signature((dtype, dtype), (tuple(lhs), tuple(rhs)), {}, dtype)


def _window_extent(size, dilation):
    return (size - 1) * dilation + 1


@st.composite
def conv(draw, spec, dtype):
    """2-D convolution, NCHW input and OIHW kernel, with strides, padding and kernel dilation."""
    n, c, o = draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    kernel = [draw(st.integers(1, 3)) for _ in range(2)]
    dilation = [draw(st.integers(1, 2)) for _ in range(2)]
    strides = [draw(st.integers(1, 2)) for _ in range(2)]
    padding = [[draw(st.integers(0, 2)), draw(st.integers(0, 2))] for _ in range(2)]
    spatial = []
    for axis in range(2):
        extent = _window_extent(kernel[axis], dilation[axis]) - sum(padding[axis])
        spatial.append(draw(st.integers(max(extent, 1), max(extent, 1) + 5)))
    attrs = {"window_strides": strides, "padding": padding, "rhs_dilation": dilation}
    return Signature((dtype, dtype), ((n, c, *spatial), (o, c, *kernel)), attrs, dtype)


@st.composite
def reduce_window(draw, spec, dtype):
    """Window dimensions, strides and explicit (low, high) padding per dimension.

    Half the signatures are pooling-shaped: rank 3 or 4 with a window of 1, stride 1 and no
    padding on the first two dimensions (batch and channels), the only windows ONNX MaxPool
    expresses; drawn freely, hardly any window is."""
    pooling = draw(st.booleans())
    shape = draw(_shape(min_rank=3 if pooling else 1, max_rank=4, max_side=7))
    window, strides, padding = [], [], []
    for axis, size in enumerate(shape):
        if pooling and axis < 2:
            window.append(1)
            strides.append(1)
            padding.append([0, 0])
            continue
        w = draw(st.integers(1, min(size + 1, 3)))
        low, high = draw(st.integers(0, w - 1)), draw(st.integers(0, w - 1))
        window.append(max(1, min(w, size + low + high)))
        strides.append(draw(st.integers(1, 2)))
        padding.append([low, high])
    attrs = {"window_dimensions": window, "window_strides": strides, "padding": padding}
    return Signature((dtype,), (shape,), attrs, dtype)


@st.composite
def transpose(draw, spec, dtype):
    shape = draw(_shape(max_rank=5))
    permutation = draw(st.permutations(range(len(shape))))
    return Signature((dtype,), (shape,), {"permutation": list(permutation)}, dtype)


@st.composite
def reshape(draw, spec, dtype):
    """new_sizes: the operand's element count split into a random number of factors."""
    shape = draw(_shape(max_rank=4))
    factors = [p for p in _prime_factors(math.prod(shape))]
    rank = draw(st.integers(0 if not factors else 1, 4)) if math.prod(shape) != 0 else len(shape)
    if math.prod(shape) == 0:
        return Signature((dtype,), (shape,), {"new_sizes": list(reversed(shape))}, dtype)
    sizes = [1] * rank
    for p in factors:
        sizes[draw(st.integers(0, rank - 1))] *= p
    return Signature((dtype,), (shape,), {"new_sizes": sizes}, dtype)


def _prime_factors(n):
    factor = 2
    while n > 1:
        while n % factor == 0:
            yield factor
            n //= factor
        factor += 1


@st.composite
def broadcast_in_dim(draw, spec, dtype):
    """Operand dims map in increasing order onto output dims; size-1 dims may grow."""
    operand = draw(_shape(max_rank=3, max_side=4))
    out_rank = draw(st.integers(len(operand), min(len(operand) + 2, 4)))
    dims = sorted(draw(st.permutations(range(out_rank)))[:len(operand)])
    out = [draw(st.integers(1, 4)) for _ in range(out_rank)]
    for operand_dim, out_dim in enumerate(dims):
        if operand[operand_dim] != 1 or draw(st.booleans()):
            out[out_dim] = operand[operand_dim]
    attrs = {"shape": out, "broadcast_dimensions": dims}
    return Signature((dtype,), (operand,), attrs, dtype)


@st.composite
def slice_(draw, spec, dtype):
    shape = draw(_shape(min_rank=1, max_rank=4, max_side=8))
    starts, limits, strides = [], [], []
    for size in shape:
        start = draw(st.integers(0, size))
        starts.append(start)
        limits.append(draw(st.integers(start, size)))
        strides.append(draw(st.integers(1, 3)))
    attrs = {"start_indices": starts, "limit_indices": limits, "strides": strides}
    return Signature((dtype,), (shape,), attrs, dtype)


@st.composite
def pad(draw, spec, dtype):
    """(low, high, interior) per dimension; negative edges trim, the result is never negative.

    Half the signatures have no interior padding, which ONNX Pad and NNEF pad lack."""
    shape = draw(_shape(min_rank=1, max_rank=3, max_side=5))
    edges_only = draw(st.booleans())
    config = []
    for size in shape:
        interior = 0 if edges_only else draw(st.sampled_from([0, 0, 1, 2]))
        grown = size + max(size - 1, 0) * interior
        low = draw(st.integers(-min(grown, 2), 3))
        high = draw(st.integers(-min(grown + low, 2), 3)) if grown + low > 0 else draw(st.integers(0, 3))
        config.append([low, high, interior])
    return Signature((dtype, dtype), (shape, ()), {"padding_config": config}, dtype)


@st.composite
def concatenate(draw, spec, dtype):
    """1 to 4 operands equal in every dimension but ``dimension``."""
    shape = draw(_shape(min_rank=1, max_rank=4, max_side=5))
    dimension = draw(st.integers(0, len(shape) - 1))
    count = draw(st.integers(1, 4))
    shapes = []
    for _ in range(count):
        s = list(shape)
        s[dimension] = draw(st.integers(0, 5))
        shapes.append(tuple(s))
    return Signature((dtype,) * count, tuple(shapes), {"dimension": dimension}, dtype)


@st.composite
def tile(draw, spec, dtype):
    """repeats: one count (1 to 3) per dimension of a rank >= 1 operand."""
    shape = draw(_shape(min_rank=1, max_rank=4, max_side=4))
    repeats = [draw(st.integers(1, 3)) for _ in shape]
    if math.prod(shape) * math.prod(repeats) > MAX_ARRAY_SIZE:
        repeats = [1] * len(shape)
    return Signature((dtype,), (shape,), {"repeats": repeats}, dtype)


@st.composite
def squeeze(draw, spec, dtype):
    """axes: a non-empty, sorted set of size-1 dimensions of the operand."""
    shape = list(draw(_shape(min_rank=1, max_rank=5, max_side=4)))
    ones = draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))
    for axis in ones:
        shape[axis] = 1
    return Signature((dtype,), (tuple(shape),), {"axes": sorted(ones)}, dtype)


@st.composite
def unsqueeze(draw, spec, dtype):
    """axes: a non-empty, sorted set of positions in the result where size-1 dimensions appear."""
    shape = draw(_shape(min_rank=0, max_rank=3, max_side=4))
    out_rank = len(shape) + draw(st.integers(1, 2))
    axes = draw(st.lists(st.integers(0, out_rank - 1), min_size=out_rank - len(shape),
                         max_size=out_rank - len(shape), unique=True))
    return Signature((dtype,), (shape,), {"axes": sorted(axes)}, dtype)


FAMILIES = {
    "elementwise": elementwise, "select": select, "clamp": clamp, "convert": convert,
    "reduce": reduce, "dot_general": dot_general, "conv": conv, "reduce_window": reduce_window,
    "transpose": transpose, "reshape": reshape, "broadcast_in_dim": broadcast_in_dim,
    "slice": slice_, "pad": pad, "concatenate": concatenate, "tile": tile, "squeeze": squeeze,
    "unsqueeze": unsqueeze,
}
