"""ONNX's contractions beyond MatMul: Gemm (opset 13), judged by a bound derived from the text's
formula Y = alpha * A' * B' + beta * C (``gemm_bound``). Products accumulate in extended
precision so float64 targets keep a sound reference. The specs (ops/onnx_gemm.yaml) give the
types, error models and regions."""
from __future__ import annotations

import numpy as np

from conform.ops._optional import ABSENT, onnx_operands
from conform.ops._registry import op
from conform.ops.reduction import EXTENDED
from conform.spec.dtypes import FLOAT_FORMATS

# Scalings drawn for alpha and beta: exact in every float type Gemm takes (the attributes are
# float32; how a float16 or bfloat16 Gemm rounds a finer one the text does not say). Integer
# types get integral ones, so that no reading of 'alpha * (integer product)' rounds.
_FLOAT_SCALES = (1.0, -1.0, 0.5, 2.0, -0.75, 1.25, 0.0)
_INT_SCALES = (1.0, -1.0, 2.0, 0.0)
_UNSIGNED_SCALES = (1.0, 2.0, 0.0)


# --- Gemm ----------------------------------------------------------------------------------------

def _size(draw, st, low: int, high: int) -> int:
    """A dimension in [low, high], now and then 0 (an empty matrix: the text excludes none)."""
    return 0 if draw(st.integers(0, 11)) == 0 else draw(st.integers(low, high))


def _c_shape(draw, st, m: int, n: int) -> tuple:
    """A shape unidirectionally broadcastable to (M, N): the trailing dimensions equal or 1."""
    return draw(st.sampled_from([(), (1,), (n,), (1, 1), (1, n), (m, 1), (m, n)]))


def draw_onnx_gemm(draw, kit, spec, dtype):
    """A (M, K) or (K, M), B (K, N) or (N, K), an optional C broadcastable to (M, N); each
    attribute now and then left out (its default)."""
    st = kit.st
    m, n, k = _size(draw, st, 1, 5), _size(draw, st, 1, 5), _size(draw, st, 1, 16)
    scales = (_FLOAT_SCALES if dtype in FLOAT_FORMATS
              else _UNSIGNED_SCALES if dtype.startswith("uint") else _INT_SCALES)
    attrs = {"transA": draw(st.sampled_from([None, 0, 1])),
             "transB": draw(st.sampled_from([None, 0, 1])),
             "alpha": draw(st.sampled_from((None,) + scales)),
             "beta": draw(st.sampled_from((None,) + scales))}
    a = (k, m) if attrs["transA"] else (m, k)
    b = (n, k) if attrs["transB"] else (k, n)
    shapes = [a, b]
    absent = kit.absent_inputs(draw, spec)
    if not absent:
        shapes.append(_c_shape(draw, st, m, n))
    return kit.Signature((dtype,) * len(shapes), tuple(shapes), kit.with_absent(attrs, absent),
                         dtype)


def _operands(a, b, c, attrs):
    """A', B' and C broadcast to (M, N) (zeros where C is absent), and the scalings."""
    a = a.T if attrs.get("transA") else a
    b = b.T if attrs.get("transB") else b
    alpha = 1.0 if attrs.get("alpha") is None else attrs["alpha"]
    beta = 1.0 if attrs.get("beta") is None else attrs["beta"]
    return a, b, c, alpha, beta


def feed_onnx_gemm(inputs, attrs, index):
    """Row m of A', column n of B' and the element of C broadcast to (m, n)."""
    a, b, *rest = inputs
    a, b, _, _, _ = _operands(a, b, None, attrs)
    m, n = index
    fed = [a[m].ravel(), b[:, n].ravel()]
    if rest:
        (c,) = rest
        fed.append(np.broadcast_to(c, (a.shape[0], b.shape[1]))[m, n].ravel())
    return fed


def onnx_gemm(case, graph):
    """One Gemm node; the attributes the case leaves out are left out of the node too."""
    attrs = {name: value for name, value in case.attrs.items()
             if name != ABSENT and value is not None}
    slots = list(graph.inputs) + [None] * (3 - len(graph.inputs))
    graph.node(graph.op_type, onnx_operands(slots), **attrs)


def _gemm(a, b, c, attrs, reading=0):
    """The formula on widened operands (C None where absent), exactly for integers."""
    a, b, c, alpha, beta = _operands(a, b, c, attrs)
    if a.dtype.kind in "iu":
        product = a @ b
        scaled = int(alpha) * product
        return scaled if c is None else scaled + int(beta) * np.broadcast_to(c, product.shape)
    product = np.matmul(a.astype(EXTENDED), b.astype(EXTENDED))
    # reading 1: a zero scaling leaves its term out (BLAS, onnx.reference for beta); reading 0:
    # IEEE arithmetic on the formula, where 0 * inf is NaN
    scaled = np.zeros_like(product) if reading and alpha == 0 else alpha * product
    if c is not None and not (reading and beta == 0):
        scaled = scaled + beta * np.broadcast_to(c.astype(EXTENDED), product.shape)
    return scaled.astype(np.float64)


def gemm_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """|Y - fl(Y)| <= gamma_(K+2) * (|alpha| sum_k |a_mk b_kn| + |beta c_mn|).

    Every term alpha * a_mk * b_kn of the formula goes through at most K + 2 roundings in any
    evaluation order (its product, the alpha scaling, before or after the sum, and K additions
    at most: K - 1 in the sum and the final one, or K with C as the sum's start value), and
    beta * c_mn through at most K + 1 (Higham 2002, Lemma 3.1 and §3.1). NaN (the region
    ``unbounded_evaluation``) where an order can overflow: the unscaled sum or the whole one
    times 1 + gamma reaching the type's largest finite value."""
    a, b, *rest = inputs
    a, b, _, alpha, beta = _operands(a, b, None, attrs)
    k = a.shape[1]
    gamma = (k + 2) * u / (1 - (k + 2) * u)
    finite = [np.abs(np.where(np.isfinite(x), x, 0.0)) for x in (a, b, *rest)]
    products = np.matmul(finite[0], finite[1])
    c_part = abs(beta) * np.broadcast_to(finite[2], products.shape) if rest else 0.0
    magnitude = abs(alpha) * products + c_part
    bound = np.where(np.isfinite(outputs[0]), gamma * magnitude, np.inf)
    largest = FLOAT_FORMATS[out_dtype].max_finite
    overflows = (1 + gamma) * np.maximum(products, magnitude) >= largest
    return (np.where(overflows, np.nan, bound),)


def numpy_gemm(a, b, *c, **attrs):
    a, b, _, alpha, beta = _operands(a, b, None, attrs)
    out = (a @ b) * a.dtype.type(alpha)
    if c:
        out = out + a.dtype.type(beta) * c[0]
    return (out.astype(a.dtype),)


@op("onnx_gemm", version=1, draw=draw_onnx_gemm, draw_honours=frozenset({"optional"}),
    feeding=feed_onnx_gemm, onnx=onnx_gemm, numpy=numpy_gemm, error_bound=gemm_bound)
def oracle_onnx_gemm(a, b, *c, transA=None, transB=None, alpha=None, beta=None,  # noqa: N803
                     absent_inputs=(), reading=0):
    """ONNX Gemm: Y = alpha * A' * B' + beta * C, A' and B' transposed where transA and transB
    are non-zero, C (optional) unidirectionally broadcast to (M, N); alpha and beta default to
    1. ``reading`` 1 leaves out a term whose scaling is zero (see the spec's region)."""
    attrs = {"transA": transA, "transB": transB, "alpha": alpha, "beta": beta}
    return (_gemm(a, b, c[0] if c else None, attrs, reading),)
