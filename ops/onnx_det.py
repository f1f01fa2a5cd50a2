"""ONNX Det (opset 11 and 22): the determinant of each [M, M] matrix of a [*, M, M] input.

The text names the determinant, not an evaluation. The oracle computes it exactly (the Leibniz
sum over permutations in rational arithmetic, rounded once to float64). The ``derived`` bound
admits the two evaluations in use, whichever is larger per matrix:

* LU with partial pivoting (LAPACK's getrf, Eigen's PartialPivLU), the product of U's diagonal:
  the computed factors are those of ``A + dA`` with ``|dA| <= gamma_3n |L||U|`` (Higham 2002,
  Thm 9.3), ``|L| <= 1`` and ``|U| <= 2**(n-1) max|A|`` (the growth bound, Thm 9.7), so every
  ``|dA_ij| <= e = gamma_3n n 2**(n-1) max|A|``; then ``|det(A + dA) - det A| <=
  perm(|A| + e) - perm(|A|)`` (each term of the Leibniz sum moves at most that much), and the
  product of the n pivots adds ``gamma_n``.
* The Leibniz sum or a cofactor expansion: ``gamma_(n + n!) perm(|A|)``.

A matrix holding an infinity or NaN is open (``oracle_marked``): the text defines the
determinant of real matrices, and the evaluations give inf, -inf or NaN there."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
from conform.ops.onnx_normalization import _judged_where
from conform.ops.onnx_softmax import grown

from conform.dtypes import FLOAT_FORMATS
from conform.model_formats import Unsupported
from conform.op_registry import op


def _permutations(n: int):
    """Every permutation of range(n) with its sign (+1 or -1)."""
    for perm in itertools.permutations(range(n)):
        inversions = sum(perm[i] > perm[j] for i in range(n) for j in range(i + 1, n))
        yield perm, -1 if inversions % 2 else 1


def permanent(a: np.ndarray) -> np.ndarray:
    """perm(a) over the last two axes: the Leibniz sum without signs (float64)."""
    n = a.shape[-1]
    total = np.zeros(a.shape[:-2])
    for perm, _ in _permutations(n):
        total = total + math.prod((a[..., i, perm[i]] for i in range(n)), start=np.ones(a.shape[:-2]))
    return total


def _exact_det(matrix: np.ndarray) -> float:
    """The determinant of one finite float64 matrix, exact (rational), rounded once."""
    n = matrix.shape[0]
    entries = [[Fraction(float(v)) for v in row] for row in matrix]
    total = sum((sign * math.prod((entries[i][perm[i]] for i in range(n)), start=Fraction(1))
                 for perm, sign in _permutations(n)), start=Fraction(0))
    try:
        return float(total)
    except OverflowError:   # beyond float64: an infinity of the determinant's sign
        return math.inf if total > 0 else -math.inf


def draw_onnx_det(draw, kit, spec, dtype):
    """[*, M, M]: M from 1 to 4, up to two batch dimensions."""
    st = kit.st
    m = draw(st.integers(1, 4))
    batch = draw(kit.shape(min_rank=0, max_rank=2, max_side=3))
    return kit.Signature((dtype,), (tuple(batch) + (m, m),), {}, dtype)


def det_bound(x, expected, dtype: str) -> tuple:
    """The larger of the LU and the Leibniz bounds (see the module's text) per matrix, plus
    half a subnormal for a subnormal result; NaN where perm(|A| + e) overflows T."""
    fmt = FLOAT_FORMATS[dtype]
    u = fmt.unit_roundoff
    n = x.shape[-1]
    with np.errstate(all="ignore"):
        magnitude = np.abs(np.where(np.isfinite(x), x, 0.0))
        base = permanent(magnitude)
        spread = grown(3 * n, u) * n * 2.0 ** (n - 1) * np.max(magnitude, axis=(-2, -1),
                                                                  initial=0.0)
        lu = (permanent(magnitude + spread[..., None, None]) - base) * (1 + grown(n, u)) \
            + grown(n, u) * np.abs(expected)
        bound = np.maximum(lu, grown(n + math.factorial(n), u) * base) + fmt.min_subnormal / 2
        big = permanent(magnitude + spread[..., None, None]) >= fmt.max_finite
    return (_judged_where(bound, expected, big),)


def numpy_onnx_det(x):
    """The numpy backend: unsupported. ``np.linalg.det`` is sign * exp(log|det|) from
    LAPACK's LU, not a faithful evaluation in x's type (the determinant of the 1 x 1 matrix
    [-7.615076188133763e+244] comes out 162 ULP off), and its linalg takes no 16-bit floats."""
    raise Unsupported("np.linalg.det computes sign * exp(log|det|): not a faithful evaluation "
                      "in the input's type")


@op("onnx_det", version=1, draw=draw_onnx_det, numpy=numpy_onnx_det,
    feeding=lambda inputs, attrs, index: [inputs[0][tuple(index)].ravel()],
    error_bound=lambda inputs, attrs, outputs, *, dtypes, **_: det_bound(
        inputs[0], outputs[0], dtypes[0]))
def oracle_onnx_det(x, *, open_elements=False):
    """Det: the determinant of each inner [M, M] matrix (shape [*]), exact and rounded once;
    with ``open_elements``, the matrices holding an infinity or NaN (see the module's text)."""
    finite = np.all(np.isfinite(x), axis=(-2, -1))
    if open_elements:
        return (~finite,)
    flat = x.reshape((-1,) + x.shape[-2:])
    values = [_exact_det(m) if np.all(np.isfinite(m)) else math.nan for m in flat]
    return (np.array(values, np.float64).reshape(x.shape[:-2]),)
