"""NNEF matmul and linear (NNEF 1.0; their declarations are the ``nnef`` package's standard
fragments):

    fragment matmul( A: tensor<scalar>, B: tensor<scalar>, transposeA: logical = false,
                     transposeB: logical = false ) -> ( C: tensor<scalar> );
    fragment linear( input: tensor<scalar>, filter: tensor<scalar>, bias: tensor<scalar> = 0.0 )
        -> ( output: tensor<scalar> )
    { output = matmul(input, filter, transposeB = true) + bias; }

matmul multiplies the last two dimensions of A and B, of equal rank >= 2, the leading (batch)
dimensions broadcast (size 1 against n: the shape rule of the package's ``matmul_shape``);
transposeA and transposeB transpose the last two dimensions first. linear takes input [N, C],
filter [O, C] and bias [1, O] (NNEF broadcasting aligns leading dimensions), or no bias (0.0).
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops._double_double import accurate_matmul, sum_of_products


def _last_two_swapped(x):
    return np.swapaxes(x, -1, -2)


def _matrices(a, b, attrs):
    """A and B with the last two dimensions transposed where the attributes say so."""
    a = _last_two_swapped(a) if attrs.get("transposeA") else a
    b = _last_two_swapped(b) if attrs.get("transposeB") else b
    return a, b


# --- matmul --------------------------------------------------------------------------------------

def draw_nnef_matmul(draw, kit, spec, dtype):
    """Equal ranks 2 to 4, batch dimensions equal or 1 on one side, M, N, K from 1 (K up to 16),
    and the two transpose flags."""
    st = kit.st
    batch = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))]
    m, n, k = draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(st.integers(1, 16))
    flags = {"transposeA": draw(st.booleans()), "transposeB": draw(st.booleans())}

    def side():
        return [1 if size > 1 and draw(st.integers(0, 3)) == 0 else size for size in batch]

    a = (*side(), *((k, m) if flags["transposeA"] else (m, k)))
    b = (*side(), *((n, k) if flags["transposeB"] else (k, n)))
    return kit.Signature((dtype, dtype), (a, b), flags, dtype)


def _broadcast_index(x, batch):
    """The batch index of ``x`` (its size-1 batch dimensions read at 0)."""
    return tuple(0 if size == 1 else i for size, i in zip(x.shape[:-2], batch))


def feed_nnef_matmul(inputs, attrs, index):
    """Row m of A' and column n of B' in the broadcast batch of out[index]."""
    a, b = _matrices(*inputs, attrs)
    *batch, m, n = index
    return [a[(*_broadcast_index(a, batch), m)].ravel(),
            b[(*_broadcast_index(b, batch), slice(None), n)].ravel()]


def nnef_matmul(case, call):
    return call(["in0", "in1"], {"transposeA": bool(case.attrs["transposeA"]),
                                 "transposeB": bool(case.attrs["transposeB"])})


def numpy_nnef_matmul(a, b, *, transposeA, transposeB):  # noqa: N803 - NNEF's names
    a, b = _matrices(a, b, {"transposeA": transposeA, "transposeB": transposeB})
    return (np.matmul(a, b),)


@op("nnef_matmul", version=1, draw=draw_nnef_matmul, feeding=feed_nnef_matmul,
    accumulation_length=lambda shapes, attrs: shapes[0][-2 if attrs["transposeA"] else -1],
    nnef=nnef_matmul, numpy=numpy_nnef_matmul)
def oracle_nnef_matmul(a, b, *, transposeA, transposeB):  # noqa: N803 - NNEF's names
    """C[..., m, n] = sum_k A'[..., m, k] * B'[..., k, n] over broadcast batch dimensions."""
    a, b = _matrices(a, b, {"transposeA": transposeA, "transposeB": transposeB})
    return (accurate_matmul(a, b),)


# --- linear --------------------------------------------------------------------------------------

def draw_nnef_linear(draw, kit, spec, dtype):
    """input [N, C], filter [O, C], and bias [1, O] or none (its default, 0.0)."""
    st = kit.st
    n, c, o = draw(st.integers(1, 5)), draw(st.integers(1, 16)), draw(st.integers(1, 5))
    absent = kit.absent_inputs(draw, spec)
    shapes = ((n, c), (o, c)) + (() if absent else ((1, o),))
    return kit.Signature((dtype,) * len(shapes), shapes, kit.with_absent({}, absent), dtype)


def feed_nnef_linear(inputs, attrs, index):
    """Row n of input, row o of filter, and bias[0, o]."""
    x, w, *bias = inputs
    n, o = index
    return [x[n].ravel(), w[o].ravel()] + [b[:, o].ravel() for b in bias]


def nnef_linear(case, call):
    return call([f"in{i}" for i in range(len(case.inputs))], {})


def numpy_nnef_linear(x, w, *bias, absent_inputs=()):
    out = np.matmul(x, w.T)
    return (out + bias[0] if bias else out,)


@op("nnef_linear", version=1, draw=draw_nnef_linear, draw_honours=frozenset({"optional"}),
    feeding=feed_nnef_linear, accumulation_length=lambda shapes, attrs: shapes[0][1] + 1,
    nnef=nnef_linear, numpy=numpy_nnef_linear)
def oracle_nnef_linear(x, w, *bias, absent_inputs=()):
    """output = matmul(input, filter, transposeB = true) + bias (bias 0.0 where absent)."""
    if not bias:
        return (accurate_matmul(x, w.T),)
    # the bias as one more term of each dot product: sum_c x[n, c] * w[o, c] + bias[0, o] * 1
    n = x.shape[0]
    lhs = np.concatenate([np.broadcast_to(x[:, None, :], (n,) + w.shape),
                          np.broadcast_to(bias[0].reshape(1, -1, 1), (n, w.shape[0], 1))], axis=2)
    rhs = np.concatenate([w, np.ones((w.shape[0], 1))], axis=1)[None]
    return (sum_of_products([lhs, rhs], [2]),)
