"""ONNX's contractions beyond MatMul: Gemm (opset 13), judged by a bound derived from the text's
formula Y = alpha * A' * B' + beta * C (``gemm_bound``). Products accumulate in double-double
(ops/_double_double.py) so float64 targets keep a sound reference on every platform. The specs (ops/onnx_gemm.yaml) give the
types, error models and regions."""
from __future__ import annotations

import numpy as np

from conform.ops._lowering import unsupported
from conform.ops.optional_inputs import ABSENT, onnx_operands
from conform.op_registry import op
from conform.ops._double_double import sum_of_products
from conform.ops.error_bounds import gamma, judged_bound, reaches_max_finite, underflow_term
from conform.dtypes import FLOAT_FORMATS
from conform.ops.movement import mismatched_shapes

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
    """Row m of A', column n of B' and the element of C broadcast to (m, n); none of a term
    whose scaling is zero (finite values there do not move the output)."""
    a, b, *rest = inputs
    a, b, _, alpha, beta = _operands(a, b, None, attrs)
    m, n = index
    fed = [a[m].ravel(), b[:, n].ravel()] if alpha else [np.empty(0, a.dtype)] * 2
    if rest:
        (c,) = rest
        fed.append(np.broadcast_to(c, (a.shape[0], b.shape[1]))[m, n].ravel()[:1 if beta else 0])
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
    # Each output is one sum over the grid (M, K [+ 1], N) of the terms alpha * a_mk * b_kn
    # [and beta * c_mn * 1]. reading 1: a zero scaling leaves its term out (BLAS,
    # onnx.reference for beta); reading 0: IEEE arithmetic on the formula, where 0 * inf is NaN.
    (m, k), n = a.shape, b.shape[1]
    lhs, rhs = [np.broadcast_to(a[:, :, None], (m, k, n))], [np.broadcast_to(b[None], (m, k, n))]
    scale = [np.full((1, k, 1), alpha, np.float64)]
    if reading and alpha == 0:
        lhs, rhs, scale = [np.zeros((m, 0, n))], [np.zeros((m, 0, n))], [np.zeros((1, 0, 1))]
    if c is not None and not (reading and beta == 0):
        lhs.append(np.broadcast_to(c, (m, n))[:, None, :])
        rhs.append(np.ones((m, 1, n)))
        scale.append(np.full((1, 1, 1), beta, np.float64))
    with np.errstate(invalid="ignore"):   # (IEEE: 0 * inf is NaN)
        return sum_of_products([np.concatenate(x, axis=1) for x in (lhs, rhs, scale)], [1])


def gemm_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """|Y - fl(Y)| <= gamma_(K+2) * (|alpha| sum_k |a_mk b_kn| + |beta c_mn|).

    Every term alpha * a_mk * b_kn of the formula goes through at most K + 2 roundings in any
    evaluation order (its product, the alpha scaling, before or after the sum, and K additions
    at most: K - 1 in the sum and the final one, or K with C as the sum's start value), and
    beta * c_mn through at most K + 1 (Higham 2002, Lemma 3.1 and §3.1). A product rounded
    below the normal range adds up to half the smallest subnormal, times the factors applied
    after it (Higham §2.1: the model holds for normal results only). NaN (the region
    ``unbounded_evaluation``) where an order can overflow: the unscaled sum, alpha * a, or the
    whole sum times 1 + gamma reaching the type's largest finite value."""
    a, b, *rest = inputs
    a, b, _, alpha, beta = _operands(a, b, None, attrs)
    g = gamma(a.shape[1] + 2, u)
    finite = [np.abs(np.where(np.isfinite(x), x, 0.0)) for x in (a, b, *rest)]
    products = np.matmul(finite[0], finite[1])
    c_part = abs(beta) * np.broadcast_to(finite[2], products.shape) if rest else 0.0
    magnitude = abs(alpha) * products + c_part
    # a product rounded below the normal range, times the factors multiplied in after it
    # (alpha before or after the sum, then b)
    large = [np.maximum(x, 1.0) for x in finite]
    underflow = underflow_term((1 + g) * (
        2 * max(abs(alpha), 1.0) * np.matmul(large[0], large[1])
        + (max(abs(beta), 1.0) * np.broadcast_to(large[2], products.shape) if rest else 0.0)),
        out_dtype)
    scaled_rows = abs(alpha) * finite[0].max(axis=1, initial=0.0)[:, None]   # alpha * a first
    reach = np.maximum(np.maximum(products, magnitude), scaled_rows)
    return (judged_bound(g * magnitude + underflow, outputs[0],
                         unbounded=reaches_max_finite(reach, out_dtype, gamma_n=g)),)


def numpy_gemm(a, b, *c, **attrs):
    a, b, _, alpha, beta = _operands(a, b, None, attrs)
    out = (a @ b) * a.dtype.type(alpha)
    if c:
        out = out + a.dtype.type(beta) * c[0]
    return (out,)


def invalid_onnx_gemm(kit, spec, dtype):
    """A 2 x 3 times B 4 x 5 (no C, no transposition): the inner dimensions differ."""
    forbids = ("ONNX Gemm: 'input tensor A has shape (M, K) or (K, M), input tensor B has "
               "shape (K, N) or (N, K)'")
    attrs = kit.with_absent({"transA": 0, "transB": 0, "alpha": None, "beta": None},
                            spec.optional_inputs)
    return mismatched_shapes(kit, dtype, forbids, [([(2, 3), (4, 5)], attrs, (2, 5))])


@op("onnx_gemm", version=1, draw=draw_onnx_gemm, draw_honours=frozenset({"optional"}), invalid=invalid_onnx_gemm,
    feeding=feed_onnx_gemm, onnx=onnx_gemm, numpy=numpy_gemm, error_bound=gemm_bound)
def oracle_onnx_gemm(a, b, *c, transA=None, transB=None, alpha=None, beta=None,  # noqa: N803
                     absent_inputs=(), reading=0):
    """ONNX Gemm: Y = alpha * A' * B' + beta * C, A' and B' transposed where transA and transB
    are non-zero, C (optional) unidirectionally broadcast to (M, N); alpha and beta default to
    1. ``reading`` 1 leaves out a term whose scaling is zero (see the spec's region)."""
    attrs = {"transA": transA, "transB": transB, "alpha": alpha, "beta": beta}
    return (_gemm(a, b, c[0] if c else None, attrs, reading),)


# --- Einsum --------------------------------------------------------------------------------------

#: Equations drawn (each operand's term gives its shape): transposes, sums over an index,
#: traces and diagonals, inner, outer and element-wise products, matrix and batch matrix
#: products, a three-operand chain, upper-case letters, spaces, and implicit outputs ('ji' is
#: 'ij' transposed; 'ii' a trace; 'i,j' an outer product).
EINSUM_EQUATIONS = (
    "ij->ji", "ji", "ij->ij", "ij->i", "ij->", "i->", "->", "ii->i", "ii", "iij->j",
    "...ii->...i", "...ij->...ji", "... ij -> ...", "i,i", "i,j", "i,i->i", "ab,ab->",
    "ij,jk", "ij,jk->ki", "ij,kj->ik", "bij, bjk -> bik", "...ij,...jk->...ik", "...ij,...jk",
    "Ab,bA->A", "bn,anm,bm->ba", "ij,jk,kl->il",
)
_ELLIPSIS = "..."


def _terms(equation: str) -> tuple[list[str], str | None]:
    """The operands' terms and the output term (None in the implicit form), spaces removed."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    return lhs.split(","), (rhs if arrow else None)


def _labels(term: str, rank: int, ellipsis_rank: int) -> list[str]:
    """A term's label per dimension: its letters, and '0', '1', ... for the dimensions '...'
    stands for (right-aligned, so that the ellipsis dimensions of all operands line up)."""
    if _ELLIPSIS not in term:
        return list(term)
    before, _, after = term.partition(_ELLIPSIS)
    count = rank - len(before) - len(after)
    return list(before) + [str(ellipsis_rank - count + i) for i in range(count)] + list(after)


def einsum_layout(equation: str, shapes) -> tuple[list[list[str]], list[str], dict]:
    """Per operand its labels, the output's labels, and every label's size. The implicit output
    is the ellipsis dimensions first, then the letters occurring exactly once in the equation in
    increasing ASCII order; an explicit '...' on the right stands for every ellipsis dimension."""
    terms, out = _terms(equation)
    ellipsis_rank = max((len(shape) - len(term) + len(_ELLIPSIS) for term, shape in
                         zip(terms, shapes) if _ELLIPSIS in term), default=0)
    labels = [_labels(term, len(shape), ellipsis_rank) for term, shape in zip(terms, shapes)]
    dots = [str(i) for i in range(ellipsis_rank)]
    if out is None:
        letters = "".join(term.replace(_ELLIPSIS, "") for term in terms)
        out_labels = dots + sorted(c for c in set(letters) if letters.count(c) == 1)
    else:
        before, dotted, after = out.partition(_ELLIPSIS)
        out_labels = list(before) + (dots if dotted else []) + list(after)
    sizes: dict = {}
    for own, shape in zip(labels, shapes):
        for label, size in zip(own, shape):
            sizes[label] = size if sizes.get(label, 1) == 1 else sizes[label]  # 1 broadcasts
    return labels, out_labels, sizes


def _on_grid(operand, own, grid_labels, sizes):
    """``operand`` indexed over the grid of ``grid_labels``: a repeated label reads its
    diagonal, a label it lacks (or holds with size 1) broadcasts."""
    rank = len(grid_labels)
    index = []
    for label, size in zip(own, operand.shape):
        at = np.arange(sizes[label]) if size == sizes[label] else np.zeros(sizes[label], int)
        shape = [1] * rank
        shape[grid_labels.index(label)] = sizes[label]
        index.append(at.reshape(shape))
    picked = operand[tuple(index)] if index else operand
    return np.broadcast_to(picked, [sizes[label] for label in grid_labels])


def _einsum_terms(operands, equation):
    """The products of the operands over the grid of the output's labels then the summed ones,
    and how many leading grid axes are the output's."""
    labels, out_labels, sizes = einsum_layout(equation, [x.shape for x in operands])
    summed = [label for label in sizes if label not in out_labels]
    grid = out_labels + summed
    terms = _on_grid(operands[0], labels[0], grid, sizes)
    for operand, own in zip(operands[1:], labels[1:]):
        terms = terms * _on_grid(operand, own, grid, sizes)
    return terms, len(out_labels)


def draw_onnx_einsum(draw, kit, spec, dtype):
    """An equation of :data:`EINSUM_EQUATIONS`, its letters' sizes drawn (now and then 0, the
    ellipsis standing for 0 to 2 dimensions, of size 1 in some operands: it broadcasts)."""
    st = kit.st
    equation = draw(st.sampled_from(EINSUM_EQUATIONS))
    terms, _ = _terms(equation)
    letters = sorted(set("".join(terms).replace(_ELLIPSIS, "")))
    sizes = {c: _size(draw, st, 1, 4) for c in letters}
    dots = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))]
    shapes = []
    for term in terms:
        head, dotted, tail = term.partition(_ELLIPSIS)
        own_dots = [1 if draw(st.integers(0, 3)) == 0 else d for d in dots] if dotted else []
        shapes.append(tuple(sizes[c] for c in head) + tuple(own_dots)
                      + tuple(sizes[c] for c in tail))
    names = spec.inputs
    attrs = kit.with_absent({"equation": equation}, names[len(terms):])
    return kit.Signature((dtype,) * len(terms), tuple(shapes), attrs, dtype)


def feed_onnx_einsum(inputs, attrs, index):
    """Per operand, its elements multiplied into the terms summed into out[index] (an element
    shared by several terms is listed once per term)."""
    labels, out_labels, sizes = einsum_layout(attrs["equation"], [x.shape for x in inputs])
    grid = out_labels + [label for label in sizes if label not in out_labels]
    return [_on_grid(x, own, grid, sizes)[tuple(index)].ravel()
            for x, own in zip(inputs, labels)]


def einsum_length(shapes, attrs):
    """Roundings a term may go through: its p - 1 products and at most n - 1 additions (n terms
    summed, in any grouping: a pairwise contraction regroups the same sum)."""
    labels, out_labels, sizes = einsum_layout(attrs["equation"], shapes)
    summed = int(np.prod([sizes[label] for label in sizes if label not in out_labels]))
    return max(summed + len(shapes) - 2, 0)


def einsum_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """|err| <= gamma_(n+p-2) * sum|terms| (``einsum_length``) plus, for p >= 2 factors, half
    the smallest subnormal per product rounded below the normal range, times the factors
    multiplied in after it (at most L = the sum over the terms of the product of max(|x|, 1)).
    NaN (region ``unbounded_evaluation``) where some order can overflow: the sum of the terms'
    magnitudes, or for p >= 3 (partial products in any order of the factors) L, times
    1 + gamma, reaching the largest finite value."""
    g = gamma(einsum_length([x.shape for x in inputs], attrs), u)
    finite = [np.abs(np.where(np.isfinite(x), x, 0.0)) for x in inputs]
    (magnitude,) = oracle_onnx_einsum(*finite, equation=attrs["equation"])
    (large,) = oracle_onnx_einsum(*[np.maximum(x, 1.0) for x in finite],
                                  equation=attrs["equation"])
    factors = len(inputs)
    underflow = underflow_term((factors - 1) * (1 + g) * large, out_dtype)   # (as gemm's)
    reach = large if factors >= 3 else magnitude
    return (judged_bound(g * magnitude + underflow, outputs[0],
                         unbounded=reaches_max_finite(reach, out_dtype, gamma_n=g)),)


def onnx_einsum(case, graph):
    graph.node(graph.op_type, list(graph.inputs), equation=case.attrs["equation"])


def numpy_einsum(*operands, equation, absent_inputs=()):
    """numpy.einsum in the operands' type; it has no bfloat16 loop (unsupported)."""
    if operands[0].dtype.kind == "V":
        raise unsupported(f"np.einsum has no loop for {operands[0].dtype.name}")
    return (np.asarray(np.einsum(equation, *operands)),)


@op("onnx_einsum", version=1, draw=draw_onnx_einsum, draw_honours=frozenset({"optional"}),
    feeding=feed_onnx_einsum, onnx=onnx_einsum, numpy=numpy_einsum, error_bound=einsum_bound)
def oracle_onnx_einsum(*operands, equation, absent_inputs=()):
    """ONNX Einsum: output[output-term] = reduce-sum(input1[term1] * input2[term2] * ...), the
    sum over every index of the input terms not in the output term (written from the text, not
    numpy.einsum: the terms are products over the grid of all labels)."""
    if operands[0].dtype.kind in "iu":
        terms, kept = _einsum_terms(list(operands), equation)
        return (terms.sum(axis=tuple(range(kept, terms.ndim)), dtype=np.int64),)
    labels, out_labels, sizes = einsum_layout(equation, [x.shape for x in operands])
    grid = out_labels + [label for label in sizes if label not in out_labels]
    factors = [_on_grid(x, own, grid, sizes) for x, own in zip(operands, labels)]
    return (sum_of_products(factors, range(len(out_labels), len(grid))),)
