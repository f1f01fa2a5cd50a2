"""NNEF's activation fragments gelu, silu, selu, softabs and prelu (NNEF 1.0 standard library,
the compound fragments as the ``nnef`` package ships them in ``stdlib_source.h``):

    fragment silu( x ) { y = x * sigmoid(x); }
    fragment gelu( x ) { y = x * sigmoid(1.702 * x); }   # 'the exact definition of gelu is
        # x * Phi(x) ... which can be approximated for example by sigmoid(1.702 * x)'
    fragment selu( x, alpha = 1.67326319, lambda = 1.05070102 )
        { y = lambda * select(x < 0.0, alpha * (exp(x) - 1.0), x); }
    fragment softabs( x, epsilon ) { y = sqrt(sqr(x) + epsilon); }
    fragment prelu( x, alpha: tensor<scalar> ) { y = select(x < 0.0, alpha * x, x); }

with ``sigmoid(x) = 1.0 / (1.0 + exp(-x))``. The oracles compute the real functions these
formulas denote (the decimal literals 1.702, 1.67326319 and 1.05070102 as exact decimals; float64
targets in Arb ball arithmetic, to ~2**-106), evaluated so that float64 keeps them accurate.
The bounds (the specs' ``why``) are those of the fragments evaluated in the output type.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op
from conform.ops._midpoints import negative_product_midpoints
from conform.ops.multiprecision import refined, with_residual
from conform.ops._rounded import exact_multiply, rounded_elementwise
from conform.ops.nnef_elementwise import _aligned
from conform.ops.onnx_softmax import grown

#: gelu's slope, 1.702 = 1702 / 1000 (the fragment's literal, as an exact decimal)
GELU_SLOPE = (1702, 1000)


def _decimal(pair) -> float:
    """The float64 nearest the decimal ``numerator / denominator``."""
    return pair[0] / pair[1]


def _exact_decimal(value: float) -> tuple:
    """``value``'s shortest round-trip decimal (the literal it was written as) as a
    ``(numerator, denominator)`` pair."""
    exact = Fraction(repr(float(value)))
    return exact.numerator, exact.denominator


def _sigmoid(t):
    """1 / (1 + e**-t) in float64, as e**t / (1 + e**t) for t < 0 (no overflow)."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(-np.abs(t))
        return np.where(t >= 0, 1 / (1 + e), e / (1 + e))


def _x_sigmoid(slope, x, dtypes):
    """x * sigmoid(slope * x), ``slope`` an exact decimal ``(numerator, denominator)``
    (float64 operands: Arb)."""
    num, den = slope

    def fast(v):
        with np.errstate(invalid="ignore"):
            return np.where(np.isnan(v), v, v * _sigmoid(v * (num / den)))

    return refined(fast, lambda v: v / (1 + (-(v * num / den)).exp()), x, dtypes=dtypes)


def sigmoid_product_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                          slope=None) -> tuple:
    """``y = x * sigmoid(t)``'s absolute error bound per element, ``t = slope * x`` (or x).

    The fragment in the output type: ``t`` from the slope literal rounded to the type and one
    product (``|dt| <= |t| gamma_2 + eta``, eta a smallest subnormal), which moves
    ``ln sigmoid`` by at most ``(1 - sigmoid(t - |dt|)) |dt|`` (its derivative is ``1 -
    sigmoid``, decreasing); ``exp(-t)`` within ``b`` ULP (relative ``2 b u``; ``2 b eta`` where
    subnormal), which moves ``sigmoid`` by ``1 - sigmoid`` of that; the addition and the
    division (or a reciprocal) two roundings, the product with ``x`` one: relative
    ``gamma_3`` beside them. Where ``sigmoid`` is subnormal the division adds ``eta`` and the
    exp's ``2 b eta`` passes through, both times ``|x|``; the product adds ``eta``. The same
    bound holds for ``x * e**t / (1 + e**t)`` at ``t < 0``. NaN (region
    ``unbounded_evaluation``) where ``exp(-t)`` can overflow the type and the exact result does
    not round to zero in it: the fragment gives 0 there."""
    (x,), (y,) = inputs, outputs
    fmt = FLOAT_FORMATS[out_dtype]
    b, eta = constants["exp_ulp"], fmt.min_subnormal   # (its half in float64 is 0)
    with np.errstate(all="ignore"):
        t = x if slope is None else x * _decimal(slope)
        dt = 0.0 if slope is None else np.abs(t) * grown(2, u) + eta
        rel_arg = np.expm1((1 - _sigmoid(t - dt)) * dt)
        rel_exp = (1 - _sigmoid(t - dt)) * grown(2 * b, u)
        rel = (1 + rel_arg) * (1 + rel_exp) * (1 + grown(3, u)) - 1
        tiny = _sigmoid(t - dt) < fmt.min_normal   # sigmoid may be subnormal
        bound = np.abs(y) * rel + np.where(tiny, np.abs(x) * (2 * b + 1) * eta * (1 + rel), 0.0) \
            + eta
        bound = np.where(np.isfinite(y), bound, 0.0)
        # exp(-t) within its b ULP of an argument within dt of -t: it may overflow, and the
        # fragment gives x * 0, which only a result that rounds to zero in the type admits
        overflows = np.isfinite(t) & (-t + dt + grown(2 * b, u) >= np.log(fmt.max_finite))
        return (np.where(overflows, np.where(np.abs(y) > eta, np.nan, eta), bound),)


def numpy_silu(x):
    """The numpy backend: ``x * sigmoid(x)`` in x's type, the sigmoid as ``1 / (1 + exp(-x))``
    for x >= 0 and ``exp(x) / (1 + exp(x))`` for x < 0."""
    return x * _numpy_sigmoid(x)


def _numpy_sigmoid(t):
    """sigmoid(t) in t's type (see :func:`numpy_silu`)."""
    one = t.dtype.type(1)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(-np.abs(t))
        return np.where(t >= 0, one / (one + e), e / (one + e))


@op("nnef_silu", version=1, numpy=numpy_silu, error_bound=sigmoid_product_bound)
def oracle_nnef_silu(x, *, dtypes=None):
    """x * sigmoid(x) = x / (1 + e**-x) (float64: Arb); silu(-inf) is NaN (-inf * 0, the
    fragment in IEEE arithmetic: the spec's special values)."""
    return (_x_sigmoid((1, 1), x, dtypes),)


def numpy_gelu(x):
    """The numpy backend: ``x * sigmoid(1.702 * x)`` in x's type (1.702 rounded to it)."""
    return x * _numpy_sigmoid(x * x.dtype.type(_decimal(GELU_SLOPE)))


@op("nnef_gelu", version=1, numpy=numpy_gelu,
    error_bound=lambda *args, **kw: sigmoid_product_bound(*args, **kw, slope=GELU_SLOPE))
def oracle_nnef_gelu(x, *, dtypes=None):
    """x * sigmoid(1.702 x), 1.702 exact (the fragment's body; float64: Arb)."""
    return (_x_sigmoid(GELU_SLOPE, x, dtypes),)


#: selu's defaults in the fragment's declaration
SELU_DEFAULTS = {"alpha": 1.67326319, "lambda": 1.05070102}


def _nnef_selu(case, call):
    return call(["in0"], {"alpha": float(case.attrs["alpha"]),
                          "lambda": float(case.attrs["lambda"])})


def numpy_selu(x, **attrs):
    """The numpy backend: ``lambda * where(x < 0, alpha * expm1(x), x)`` in x's type."""
    alpha, scale = x.dtype.type(attrs["alpha"]), x.dtype.type(attrs["lambda"])
    return scale * np.where(x < 0, alpha * np.expm1(x), x)


@op("nnef_selu", version=1, numpy=numpy_selu, nnef=_nnef_selu)
def oracle_nnef_selu(x, *, dtypes=None, **attrs):  # (lambda is a keyword of Python's)
    """lambda * (alpha * (e**x - 1) for x < 0, else x), alpha and lambda the decimals the
    attributes are written as (by default the fragment's); e**x - 1 as expm1 (float64: Arb):
    selu(-inf) = -lambda * alpha, -0 stays -0, NaN stays NaN."""
    (an, ad), (ln, ld) = (_exact_decimal(attrs.get(name, default))
                          for name, default in SELU_DEFAULTS.items())
    scale = (an * ln) / (ad * ld)
    negative = refined(lambda v: scale * np.expm1(v), lambda v: v.expm1() * (an * ln) / (ad * ld),
                       np.minimum(x, 0), dtypes=dtypes)
    positive = refined(lambda v: v * (ln / ld), lambda v: v * ln / ld, np.maximum(x, 0),
                       dtypes=dtypes)
    out = np.where(x < 0, negative, np.where(x > 0, positive, x * 1.0))
    lo = [getattr(part, "residual", None) for part in (negative, positive)]
    if lo[0] is None:
        return (out,)
    return (with_residual(out, np.where(x < 0, lo[0], np.where(x > 0, lo[1], 0.0))),)


def _nnef_softabs(case, call):
    return call(["in0"], {"epsilon": float(case.attrs["epsilon"])})


def numpy_softabs(x, *, epsilon):
    """The numpy backend: ``sqrt(square(x) + epsilon)`` in x's type."""
    return np.sqrt(np.square(x) + x.dtype.type(epsilon))


@op("nnef_softabs", version=1, numpy=numpy_softabs, nnef=_nnef_softabs)
def oracle_nnef_softabs(x, *, epsilon):
    """sqrt(x**2 + epsilon), as |x| sqrt(1 + epsilon / x**2) where x**2 would overflow float64."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        big = np.abs(x) > 1e150
        scaled = np.abs(x) * np.sqrt(1 + epsilon / np.square(np.where(big, x, 1.0)))
        return (np.where(big, scaled, np.sqrt(np.square(x) + epsilon)),)


def leading_broadcast_shape(draw, kit, shape) -> tuple:
    """A shape that broadcasts to ``shape`` with leading dimensions aligned (NNEF's): some of
    its leading dimensions, each ``shape``'s size or 1 (a per-channel parameter is ``[1, C]``)."""
    rank = draw(kit.st.integers(0, len(shape)))
    return tuple(n if draw(kit.st.booleans()) else 1 for n in shape[:rank])


def draw_prelu(draw, kit, spec, dtype):
    """x of any shape (0-d and empty included, sides up to 8) and alpha broadcasting to it
    (:func:`leading_broadcast_shape`): x's shape is the output's."""
    st = kit.st
    shape = draw(kit.shape(min_rank=0, max_rank=4, min_side=draw(st.sampled_from([0, 1, 1])),
                           max_side=8))
    return kit.Signature((dtype, dtype), (shape, leading_broadcast_shape(draw, kit, shape)), {},
                         dtype)


def feed_prelu(inputs, attrs, index):
    """out[index] is select(x < 0.0, alpha * x, x) at index: x[index], and the alpha element
    it meets (leading dimensions aligned, size-1 dimensions broadcast) only where x[index] < 0
    (elsewhere the select takes x itself, and alpha is no term)."""
    x, alpha = inputs
    at = tuple(i if n > 1 else 0 for i, n in zip(index, alpha.shape))
    value = x[tuple(index)]
    return [value.reshape(1), alpha[at].reshape(1) if value < 0 else None]


def numpy_prelu(x, alpha):
    """The numpy backend: ``where(x < 0, alpha * x, x)`` in x's type, on NNEF's shapes."""
    x, alpha = _aligned(x, alpha)
    return np.where(x < 0, alpha * x, x)


def rounded_prelu(x, alpha):
    """alpha * x for x < 0, else x, correctly rounded into float64 (exact integer arithmetic)."""
    x, alpha = _aligned(x, alpha)
    product = rounded_elementwise(exact_multiply, alpha, x)
    return (np.where(x < 0, product, np.broadcast_to(x, product.shape)),)


@op("nnef_prelu", version=1, numpy=numpy_prelu, rounded64=rounded_prelu,
    midpoints=negative_product_midpoints, draw=draw_prelu, draw_honours=frozenset(), feeding=feed_prelu)
def oracle_nnef_prelu(x, alpha):
    """alpha * x where x < 0, else x, the operands broadcast with leading dimensions aligned:
    -0 and NaN pass through."""
    x, alpha = _aligned(x, alpha)
    return (np.where(x < 0, alpha * x, np.broadcast_to(x, np.broadcast_shapes(x.shape,
                                                                               alpha.shape))),)
