"""XLA Dot (its vector and matrix forms), Cholesky and TriangularSolve (operation semantics,
seeds/004_c11ff90b720ca9d5.txt: "Dot", "Cholesky", "TriangularSolve").

Dot sums exact products in double-double (ops/_double_double.py) and is judged like DotGeneral.
Cholesky and TriangularSolve are judged under ``derived`` bounds from the standard backward
error results (N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., 2002):

* TriangularSolve, Theorem 8.5: substitution in any order of the inner products gives
  ``(T + dT) x^ = b`` with ``|dT| <= gamma_n |T|``, so ``|x - x^| <= gamma_n |T^-1| |T| |x^|``
  (§7.2); with ``|x^| <= |x| + E`` and ``E`` the infinity-norm of the error, ``E <= gamma_n
  || |T^-1||T||x| || / (1 - gamma_n cond(T))``, ``cond(T) = || |T^-1||T| ||`` (Skeel's).
* Cholesky, Theorem 10.3: ``R^T R = A + dA`` with ``|dA| <= gamma_(n+1) |R^T||R|``, so
  ``||dA||_F <= gamma_(n+1) trace(A) / (1 - gamma_(n+1))``; Theorem 10.8 (Sun's perturbation
  bound): ``||dR||_F <= 2**-0.5 kappa_2(A) eps / (1 - kappa_2(A) eps) ||R||_2`` with ``eps =
  ||dA||_F / ||A||_2`` and ``||R||_2 = ||A||_2**0.5``; every element's error is at most
  ``||dR||_F``.

Complex operands (complex64, complex128; Hermitian positive definite for Cholesky, its read
triangle's diagonal real), the same results with complex constants, the errors in the modulus:

* Cholesky: each step is per part a real recurrence of twice the products (the diagonal's
  ``a_ii - sum |r_ki|**2`` and its square root are real; an off-diagonal element's parts are
  each a real sum of ``2(i - 1)`` products divided by the real ``r_ii``), so Lemma 8.4 gives
  each part ``gamma_(2n+1)`` of its own sum of magnitudes, and joined in the modulus (each
  term's two parts' magnitudes at most ``sqrt(2) |r_ki||r_kj|``) ``|dA| <= sqrt(2)
  gamma_(2n+1) |R^*||R|``; the Frobenius and Sun's bounds follow as for reals (Sun's theorem,
  BIT 31, 1991, is stated for Hermitian matrices).
* TriangularSolve: a complex product is within ``sqrt(2) gamma_2 <= gamma_3`` of itself and a
  complex sum within ``u`` (Higham Lemma 3.5), the division by ``t_ii`` within ``gamma_8``
  (the textbook quotient, ``sqrt(2) gamma_4``, or a product by a reciprocal formed by the
  textbook formula or Smith's), so Lemma 8.4's argument gives ``|dT| <= gamma_(max(2n + 1, n +
  8)) |T|`` and the same normwise step.

Where the denominator is not at least 1/2 the matrix is too ill-conditioned to judge: its bound
is NaN, the region ``unbounded_evaluation``. The drawn matrices are diagonally dominant (well
conditioned), so that rarely happens; the unread triangle keeps the value plan's values (NaN and
infinities included), which the text says are ignored.
"""
from __future__ import annotations

import math

import mpmath
import numpy as np

from conform.dtypes import FLOAT_FORMATS, component_dtype
from conform.op_registry import op, region
from conform.ops._double_double import accurate_matmul
from conform.ops._lowering import unsupported
from conform.ops.complex_contraction import complex_contraction_bound
from conform.ops.error_bounds import gamma
from conform.ops.narrow_floats import xla_cpu_six_bit_refusal
from conform.ops.contraction import dot_general_length, fitting_ints, matmul_contraction

# ---------------------------------------------------------------------------------------- Dot


def draw_dot(draw, kit, spec, dtype):
    """One of Dot's forms: vector [k] . vector [k], matrix [m, k] . vector [k], vector [k] .
    matrix [k, n] (the text contracts lhs's only dimension with rhs's first) and matrix [m, k] .
    matrix [k, n]."""
    st = kit.st
    m, n, k = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 24))
    lhs = draw(st.sampled_from([(k,), (m, k)]))
    rhs = draw(st.sampled_from([(k,), (k, n)]))
    return kit.Signature((dtype, dtype), (lhs, rhs), {}, dtype)


def feed_dot(inputs, attrs, index):
    """The row of lhs and the column of rhs whose products make out[index]."""
    lhs, rhs = inputs
    row = lhs[index[0]] if lhs.ndim == 2 else lhs
    column = rhs[:, index[-1]] if rhs.ndim == 2 else rhs
    return [row.ravel(), column.ravel()]


@op("dot", version=1, draw=draw_dot, feeding=feed_dot, accumulation_length=dot_general_length,
    values=fitting_ints(dot_general_length),
    error_bound=complex_contraction_bound(matmul_contraction, dot_general_length))
def oracle_dot(lhs, rhs):
    """Dot(lhs, rhs): the sum of products over lhs's last dimension (its second, or its only
    one) and rhs's first: a scalar, a vector [m] or [n], or a matrix [m, n] (complex operands:
    each part's sum, ops/complex_contraction.py)."""
    if lhs.dtype.kind not in "fc":
        return (np.asarray(np.dot(lhs, rhs)),)
    return (np.asarray(accurate_matmul(lhs, rhs)),)


# ------------------------------------------------------------------------- shared matrix helpers

def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _read_triangle(a: np.ndarray, lower: bool, unit_diagonal: bool = False) -> np.ndarray:
    """The triangle of ``a`` the op reads (the other one zero; a unit diagonal as ones)."""
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:   # the diagonal is not read: whatever it holds (NaN too) is replaced
        t = np.where(np.eye(a.shape[-1], dtype=bool), 1.0, t)
    return t


def _dominant(rng, shape, *, symmetric: bool, complex_: bool = False) -> np.ndarray:
    """Diagonally dominant matrices of ``shape`` (..., n, n): off-diagonal elements in [-1, 1]
    (each part, ``complex_``), each diagonal element's magnitude one to two more than its row's
    other magnitudes (positive for ``symmetric``, the Cholesky case: Hermitian with a real
    diagonal, then positive definite by Gershgorin; else of either sign, or a random phase)."""
    off = rng.uniform(-1.0, 1.0, shape)
    if complex_:
        off = off + 1j * rng.uniform(-1.0, 1.0, shape)
    if symmetric:
        off = np.tril(off, -1) + np.conj(_swap(np.tril(off, -1)))
    off = off - np.tril(np.triu(off))
    size = np.abs(off).sum(axis=-1) + rng.uniform(1.0, 2.0, shape[:-1])
    sign = 1.0 if symmetric else np.exp(2j * np.pi * rng.random(shape[:-1])) if complex_ \
        else rng.choice([-1.0, 1.0], shape[:-1])
    return off + np.eye(shape[-1]) * (sign * size)[..., None]


def _with_triangle(a: np.ndarray, values: np.ndarray, lower: bool) -> np.ndarray:
    """``a`` (its own dtype) with its read triangle replaced by ``values``'."""
    mask = np.broadcast_to(np.tril(np.ones(a.shape[-2:], bool)) if lower
                           else np.triu(np.ones(a.shape[-2:], bool)), a.shape)
    return np.where(mask, values.astype(a.dtype), a)


def _cholesky_gamma(n, u, complex_: bool):
    """Theorem 10.3's constant: ``|dA| <= c |R^*||R|`` with ``c = gamma_(n+1)``; complex (the
    module docstring), each part of each step a real recurrence of twice the products, joined in
    the modulus: ``sqrt(2) gamma_(2n+1)``."""
    return math.sqrt(2) * gamma(2 * n + 1, u) if complex_ else gamma(n + 1, u)


def _substitution_gamma(n, u, complex_: bool):
    """Theorem 8.5's constant: ``|dT| <= c |T|`` with ``c = gamma_n``; complex (the module
    docstring), ``gamma_(max(2n + 1, n + 8))``."""
    return gamma(max(2 * n + 1, n + 8), u) if complex_ else gamma(n, u)


def _matrix_draw(draw, kit, spec, dtype, *, side_b: bool):
    """Batch dimensions (0 to 2 of size 1 to 3), n in [1, 6], the spec's attributes; for
    TriangularSolve also b's other size k in [1, 5], on the side ``left_side`` says."""
    st = kit.st
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    n = draw(st.integers(1, 6))
    attrs = kit.attributes(draw, spec, {name: len(batch) + 2 for name in spec.inputs})
    shapes = [batch + (n, n)]
    if side_b:
        k = draw(st.integers(1, 5))
        shapes.append(batch + ((n, k) if attrs["left_side"] else (k, n)))
    return kit.Signature((dtype,) * len(shapes), tuple(shapes), attrs, dtype)


# ----------------------------------------------------------------------------------- Cholesky

def values_cholesky(rng, inputs, attrs):
    """The read triangle: a symmetric diagonally dominant (positive definite) matrix; in one case
    in eight the first matrix has a negative diagonal element instead (not positive definite:
    the text's implementation-defined case)."""
    (a,) = inputs
    spd = _dominant(rng, a.shape, symmetric=True, complex_=np.iscomplexobj(a))
    if rng.random() < 1 / 8:
        spd[(0,) * (a.ndim - 2) + (0, 0)] *= -1
    return [_with_triangle(a, spd, attrs["lower"])]


def _symmetric(a: np.ndarray, lower: bool) -> np.ndarray:
    """The symmetric (complex: Hermitian) matrix the read triangle gives."""
    t = _read_triangle(a, lower)
    return t + np.conj(_swap(t)) - np.tril(np.triu(t))


def _cholesky_lower(s: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of each symmetric (Hermitian) matrix of ``s``, at 113 bits
    (mpmath), rounded to float64; NaN for a matrix that is not positive definite or not finite
    (or, complex, whose diagonal as read is not real: not Hermitian)."""
    out = np.full(s.shape, np.nan, s.dtype)
    with mpmath.mp.workprec(113):
        for index in np.ndindex(*s.shape[:-2]):
            if not np.isfinite(s[index]).all() or np.imag(np.diagonal(s[index])).any():
                continue
            try:
                factor = mpmath.cholesky(mpmath.matrix(s[index].tolist()))
            except ValueError:   # mpmath: "matrix is not positive-definite"
                continue
            out[index] = np.array(factor.tolist(), dtype=s.dtype)
    return out


def cholesky_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """Per matrix, every element's bound ``||dR||_F`` (module docstring, Higham Theorems 10.3 and
    10.8); NaN where ``kappa_2(A) eps >= 1/2`` or the matrix is not positive definite."""
    s = _symmetric(inputs[0], attrs["lower"])
    n = s.shape[-1]
    g = _cholesky_gamma(n, u, np.iscomplexobj(s))
    bound = np.full(s.shape[:-2], np.nan)
    for index in np.ndindex(*s.shape[:-2]):
        hermitian = np.isfinite(s[index]).all() and not np.imag(np.diagonal(s[index])).any()
        eigen = np.linalg.eigvalsh(s[index]) if hermitian else [-1.0]
        if eigen[0] <= 0:
            continue
        norm, kappa = eigen[-1], eigen[-1] / eigen[0]
        eps = g * np.trace(s[index]).real / ((1 - g) * norm)
        if kappa * eps < 0.5:
            bound[index] = 2 ** -0.5 * kappa * eps / (1 - kappa * eps) * math.sqrt(norm)
    return (np.broadcast_to(bound[..., None, None], outputs[0].shape).copy(),)


def canonical_cholesky(outputs, case):
    """The text leaves the triangle opposite the factor open ("may be anything"): a backend's
    values there are replaced by the oracle's zeros. The factor's own triangle (the diagonal
    included) is left as it is, so a wrong value there still fails."""
    (factor,) = outputs
    ones = np.ones(factor.shape[-2:], bool)
    kept = np.tril(ones) if case.attrs["lower"] else np.triu(ones)
    return [np.where(kept, factor, np.zeros((), factor.dtype))]


#: the element types of LAPACK's kernels (jax's CPU linear algebra, NumPy's linalg)
_LAPACK_TYPES = (np.float32, np.float64, np.complex64, np.complex128)


def lax_cholesky_refuses(inputs, attrs):
    """jax's CPU Cholesky is LAPACK potrf, float32, float64, complex64 and complex128 only: a
    16-bit operand (which the text allows) is refused before tracing, so that its pack of cases
    keeps one compilation (a refusal while tracing splits the pack)."""
    if inputs[0].dtype not in _LAPACK_TYPES:
        return (f"jax.lax.linalg.cholesky has no {inputs[0].dtype} kernel on this platform (the "
                "CPU's LAPACK potrf: float32, float64, complex64 and complex128)")
    return None


def lax_cholesky(lax, attrs):
    """``lax.linalg.cholesky`` (lower, reading the lower triangle: LAPACK potrf 'L' on the CPU);
    for ``lower=False`` it factors the transposed operand and transposes the factor back
    (exact data movement: a = u^T u with u = l^T)."""
    def cholesky(a):
        if attrs["lower"]:
            return lax.linalg.cholesky(a, symmetrize_input=False)
        perm = (*range(a.ndim - 2), a.ndim - 1, a.ndim - 2)
        factor = lax.linalg.cholesky(lax.transpose(a, perm), symmetrize_input=False)
        return lax.transpose(factor, perm)
    return cholesky


def numpy_cholesky(a, *, lower):
    """The numpy backend: ``np.linalg.cholesky`` in a's type, reading the lower triangle (or the
    upper one, ``upper=True``); NumPy's linalg has no 16-bit float types."""
    if a.dtype not in _LAPACK_TYPES:
        raise unsupported(f"np.linalg.cholesky does not take {a.dtype}")
    return np.linalg.cholesky(a, upper=not lower)


@op("cholesky", version=1, draw=lambda draw, kit, spec, dtype: _matrix_draw(
        draw, kit, spec, dtype, side_b=False),
    draw_honours=frozenset({"attrs"}), values=values_cholesky, error_bound=cholesky_bound,
    canonical=canonical_cholesky, lax=lax_cholesky, lax_refuses=lax_cholesky_refuses,
    numpy=numpy_cholesky,
    feeding=lambda inputs, attrs, index: [inputs[0][tuple(index[:-2])].ravel()])
def oracle_cholesky(a, *, lower):
    """Cholesky(a, lower): l lower triangular with a = l l^T, or u upper triangular with
    a = u^T u (complex: l l^H and u^H u), reading only that triangle of a (each matrix of the
    batch); the other triangle of
    the result is zero here (the text leaves it open: ``canonical_cholesky``); NaN for a matrix that is not
    symmetric positive definite (the region ``not_positive_definite``)."""
    factor = _cholesky_lower(_symmetric(a, lower))
    return (factor if lower else np.conj(_swap(factor)),)


# ---------------------------------------------------------------------------- TriangularSolve

def values_triangular_solve(rng, inputs, attrs):
    """The read triangle of a: a diagonally dominant matrix (diagonal of either sign); b's finite
    nonzero values of magnitude outside [2**-10, 2**10] redrawn in [-4, 4] (zeros, NaN and
    infinities kept), so that most systems stay in the normal range and are judged."""
    a, b = inputs
    complex_ = np.iscomplexobj(a)
    t = _dominant(rng, a.shape, symmetric=False, complex_=complex_)
    wide = b.astype(np.complex128 if complex_ else np.float64)
    redrawn = rng.uniform(-4.0, 4.0, b.shape) + (1j * rng.uniform(-4.0, 4.0, b.shape) if complex_ else 0)
    with np.errstate(invalid="ignore"):
        extreme = np.isfinite(wide) & (wide != 0) & ((np.abs(wide) < 2.0 ** -10)
                                                     | (np.abs(wide) > 2.0 ** 10))
    b = np.where(extreme, redrawn.astype(b.dtype), b)
    return [_with_triangle(a, t, attrs["lower"]), b]


def _system(a, b, attrs):
    """``(M, rhs, right)``: the system as ``M x = rhs`` (x * op(a) = b is op(a)^T x^T = b^T)."""
    t = _read_triangle(a, attrs["lower"], attrs["unit_diagonal"])
    op_a = t if attrs["transpose_a"] == "NO_TRANSPOSE" else _swap(t)
    if attrs["transpose_a"] == "ADJOINT":   # (of a real matrix, its transpose)
        op_a = np.conj(op_a)
    if attrs["left_side"]:
        return op_a, b, False
    return _swap(op_a), _swap(b), True


def _substitute(m: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``m^-1 rhs`` for triangular ``m`` by substitution in float64, row by row (forward for a
    lower ``m``, backward for an upper one): each unknown from the unknowns before it only."""
    n = m.shape[-1]
    lower = not np.triu(m, 1).any()
    y = np.zeros(np.broadcast_shapes(m.shape[:-2], rhs.shape[:-2]) + rhs.shape[-2:],
                 np.result_type(m, rhs))
    with np.errstate(all="ignore"):
        for i in (range(n) if lower else range(n - 1, -1, -1)):
            known = np.einsum("...k,...kc->...c", m[..., i, :], y)   # the others are still 0
            y[..., i, :] = (rhs[..., i, :] - known) / m[..., i, i][..., None]
    return y


def _refined_solve(m: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``m^-1 rhs`` (``m`` triangular) by substitution in float64 with two steps of iterative
    refinement, the residual ``rhs - m x`` from exact products summed in double-double: accurate
    to a few float64 ULPs where the system is well conditioned."""
    x = _substitute(m, rhs)
    joined = np.concatenate([m, np.broadcast_to(np.eye(m.shape[-1]), m.shape)], axis=-1)
    for _ in range(2):
        residual = accurate_matmul(joined, np.concatenate([-x, rhs], axis=-2))
        x = x + _substitute(m, residual)
    return x


def triangular_solve_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """Per element ``gamma_n ((|T^-1||T||x|)_i + (|T^-1||T| 1)_i E)`` (module docstring, Higham
    Theorem 8.5 and §7.2), E the normwise bound of its column; NaN where gamma_n cond(T) >= 1/2."""
    m, rhs, right = _system(*inputs, attrs)
    x = _swap(outputs[0]) if right else outputs[0]
    g = _substitution_gamma(m.shape[-1], u, np.iscomplexobj(m))
    spread = np.abs(np.linalg.inv(m)) @ np.abs(m)                    # |T^-1||T|
    cond = spread.sum(axis=-1).max(axis=-1)[..., None, None]         # Skeel's cond(T)
    reach = spread @ np.abs(x)
    normwise = g * reach.max(axis=-2, keepdims=True) / (1 - g * cond)
    bound = g * (reach + spread.sum(axis=-1, keepdims=True) * normwise)
    judged = (g * cond < 0.5) & _in_normal_range(m, rhs, x, g,
                                                      FLOAT_FORMATS[component_dtype(dtypes[0])])
    bound = np.where(judged, bound, np.nan)
    return (_swap(bound) if right else bound,)


def _in_normal_range(m, rhs, x, g, fmt) -> np.ndarray:
    """Per column of the system (shape ``[..., 1, k]``): whether every value the substitution
    forms stays in the normal range, where Higham's model of a rounding holds (§2.2): no
    nonzero product |t_ij x_j|, right-hand side or solution element below the smallest normal
    (gradual underflow adds absolute errors, a flushing backend loses them), and no partial sum
    that can reach the largest finite value (|b_i| + sum_j |t_ij x_j|, times 1 + gamma_n)."""
    terms = np.abs(m)[..., :, :, None] * np.abs(x)[..., None, :, :]        # [..., i, j, column]
    tiny = False
    for t_part in _parts(m):   # each product of parts (a complex product's four)
        for x_part in _parts(x):
            products = t_part[..., :, :, None] * x_part[..., None, :, :]
            values = np.concatenate([products.reshape(*terms.shape[:-3], -1, terms.shape[-1]),
                                     *_parts(rhs), x_part], axis=-2)
            tiny = tiny | ((values > 0) & (values < fmt.min_normal)).any(axis=-2, keepdims=True)
    reach = (terms.sum(axis=-2) + np.abs(rhs)) * (1 + g)
    huge = ~(reach < fmt.max_finite).all(axis=-2, keepdims=True)
    return ~(tiny | huge)


def _parts(v: np.ndarray) -> list:
    """The magnitudes of ``v``'s parts: ``[|v|]``, or ``[|re v|, |im v|]`` of a complex ``v``."""
    return [np.abs(v.real), np.abs(v.imag)] if np.iscomplexobj(v) else [np.abs(v)]


def lax_triangular_solve_refuses(inputs, attrs):
    """The 6-bit float types are refused before tracing (ops/narrow_floats.py): XLA:CPU
    compiles no division in them and aborts the process on the unit diagonal's constant
    ('xla/literal.cc: Unhandled primitive type F6E2M3FN'), a crash per case."""
    reason = xla_cpu_six_bit_refusal(inputs, "TriangularSolve")
    return reason and reason + "; it aborts on a constant of the type ('Unhandled primitive type', xla/literal.cc)"


def lax_triangular_solve(lax, attrs):
    """``lax.linalg.triangular_solve`` with XLA's attributes (ADJOINT: transpose and conjugate)."""
    transpose = attrs["transpose_a"]
    return lambda a, b: lax.linalg.triangular_solve(
        a, b, left_side=attrs["left_side"], lower=attrs["lower"],
        unit_diagonal=attrs["unit_diagonal"], transpose_a=transpose != "NO_TRANSPOSE",
        conjugate_a=transpose == "ADJOINT")


def feed_triangular_solve(inputs, attrs, index):
    """The elements of a and b that x[index] depends on. As the system ``M y = rhs`` (M = op(a),
    or op(a)^T for the right side; y = x or x^T) the element is ``y[i, c]``, found by
    substitution from the elements of M in the triangle over the unknowns before it (from 0 to
    i for a lower M, from i to n - 1 for an upper one; not the diagonal where it is a unit
    one) and the elements of rhs's column c over those unknowns."""
    a, b = inputs
    batch, (row, col) = tuple(index[:-2]), index[-2:]
    flipped = (attrs["transpose_a"] != "NO_TRANSPOSE") != (not attrs["left_side"])   # M = a^T
    i, c = (row, col) if attrs["left_side"] else (col, row)
    lower_m = attrs["lower"] != flipped
    n = a.shape[-1]
    unknowns = np.zeros(n, bool)
    unknowns[slice(0, i + 1) if lower_m else slice(i, n)] = True
    triangle = np.tril(np.ones((n, n), bool)) if lower_m else np.triu(np.ones((n, n), bool))
    used = triangle & unknowns[:, None] & unknowns[None, :]
    if attrs["unit_diagonal"]:
        used &= ~np.eye(n, dtype=bool)
    rhs = b[batch][:, c] if attrs["left_side"] else b[batch][c, :]
    return [a[batch][used.T if flipped else used], rhs[unknowns]]


@op("triangular_solve", version=1, draw=lambda draw, kit, spec, dtype: _matrix_draw(
        draw, kit, spec, dtype, side_b=True),
    draw_honours=frozenset({"attrs"}), values=values_triangular_solve,
    error_bound=triangular_solve_bound, lax=lax_triangular_solve,
    lax_refuses=lax_triangular_solve_refuses, feeding=feed_triangular_solve)
def oracle_triangular_solve(a, b, *, left_side, lower, unit_diagonal, transpose_a):
    """TriangularSolve: x with op(a) x = b (left_side) or x op(a) = b, op(a) = a, a^T or its
    conjugate transpose, reading only a's ``lower`` (or upper) triangle, its diagonal taken as
    ones where ``unit_diagonal``; batch dimensions lead."""
    attrs = dict(left_side=left_side, lower=lower, unit_diagonal=unit_diagonal,
                 transpose_a=transpose_a)
    m, rhs, right = _system(a, b, attrs)
    x = _refined_solve(m, rhs)
    return (_swap(x) if right else x,)


# ------------------------------------------------------------------------------------ regions

@region
def not_positive_definite(ctx) -> np.ndarray:
    """Every element of a Cholesky factor whose matrix (as read) is not symmetric positive
    definite: the oracle gives NaN for the whole matrix, and the text says the result is
    implementation-defined."""
    nan = np.isnan(ctx.expected).all(axis=(-2, -1)) if ctx.expected.size else \
        np.zeros(ctx.expected.shape[:-2], bool)
    return np.broadcast_to(nan[..., None, None], ctx.expected.shape).copy()
