"""XLA BatchNormGrad (operation semantics, seeds/004_c11ff90b720ca9d5.txt, "BatchNormGrad").

The text's formulas, for feature l (index ``feature_index``) and the m w h elements of the other
dimensions (the translation's extraction lost the square-root signs and fraction bars; read as
the upstream text writes them, which is also the derivative of BatchNormTraining's formula)::

    c_l = 1/(mwh) sum( dy_ijkl (x_ijkl - mu_l) / (sigma2_l + eps) )
    d_l = 1/(mwh) sum( dy_ijkl )
    grad_operand_ijkl = gamma_l / sqrt(sigma2_l + eps) * (dy_ijkl - d_l - c_l (x_ijkl - mu_l))
    grad_scale_l  = sum( dy_ijkl (x_ijkl - mu_l) / sqrt(sigma2_l + eps) )
    grad_offset_l = sum( dy_ijkl )

with the inputs ``mean`` (mu) and ``variance`` (sigma2) as given. The oracle evaluates them in
float64 with double-double sums.

The bounds (``derived``) cover the formulas evaluated in T, every product and quotient one
rounding (``|err| <= u |result| + eta``, eta half a smallest subnormal, Higham 2002 §2.1 eq.
2.8; ``min_normal`` more under flush-to-zero), the sums in any order (Higham §4.2, ``sum_gamma``),
a three-factor product in any grouping, ``c_l (x - mu)`` as the product of ``sum(dy (x - mu))``,
``1 / (sigma2 + eps)``, ``1 / (mwh)`` and ``x - mu`` in any grouping (each partial product checked
for overflow, its underflow carried), the divisions by m w h as a division or a product with
the rounded reciprocal, ``1 / (sigma2 + eps)`` as a division or the square of the reciprocal
square root, which is a square root and a division or an rsqrt within ``rsqrt_ulp`` ULPs
(ops/xla_batch_norm.py ``rsqrt_relative``). Errors are carried forward through each operation
(first and second order). Where an intermediate can overflow T or ``sigma2 + eps`` is within its
error of zero the bound is NaN: the region ``unbounded_evaluation``.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op
from conform.ops._batch_norm_exact import Refiner, all_float64, feature_rows, q
from conform.ops._double_double import accurate_sum
from conform.ops.error_bounds import grown, reaches_max_finite, sum_gamma, underflow_term
from conform.ops.narrow_floats import admitting_wider_evaluation
from conform.ops.onnx_normalization import _float32
from conform.ops.xla_batch_norm import (_judged_where, _per_feature, _rows, draw_batch_norm,
                                        lax_batch_norm, lax_batch_norm_refuses, rsqrt_relative,
                                        variance_total)


def draw_batch_norm_grad(draw, kit, spec, dtype):
    """As BatchNormInference's operands, grad_output (the last) of the operand's shape."""
    signature = draw_batch_norm(draw, kit, spec, dtype)
    return signature._replace(shapes=signature.shapes[:-1] + (signature.shapes[0],))


class _Figures:
    """Magnitude bounds and absolute error bounds of intermediates evaluated in T."""

    def __init__(self, dtype, subnormals):
        self.u = FLOAT_FORMATS[dtype].unit_roundoff
        self.eta = underflow_term(1, dtype, subnormals=subnormals)
        self.dtype, self.peaks = dtype, []
        self.tiny = FLOAT_FORMATS[dtype].min_normal

    def seen(self, value, error):
        """Record a computed intermediate (magnitude, error) for the overflow check."""
        self.peaks.append(np.abs(value) + error)
        return value, error

    def mul(self, a, ea, b, eb):
        """``fl(a b)``: a off by ea, b by eb."""
        e = np.abs(a) * eb + np.abs(b) * ea + ea * eb
        return self.seen(np.abs(a * b), e + self.u * (np.abs(a * b) + e) + self.eta)

    def mul3(self, a, ea, b, eb, c, ec):
        """A product of three factors in any grouping: the largest error of the three."""
        v, worst = None, 0.0
        for (p, ep), (q, eq), (r, er) in (((a, ea), (b, eb), (c, ec)), ((a, ea), (c, ec), (b, eb)),
                                          ((b, eb), (c, ec), (a, ea))):
            v, e = self.mul(*self.mul(p, ep, q, eq), r, er)
            worst = np.maximum(worst, e)
        return v, worst

    def partials(self, factors):
        """A product of ``factors`` [(magnitude, error)] in any grouping: every partial product
        is recorded for the overflow check; returns the absolute error its underflows can add
        beyond the grouping :meth:`mul` counted (a partial product below the normal range, off
        by ``eta``, times the other factors)."""
        bounded = [np.abs(v) + e for v, e in factors]
        extra = 0.0
        for size in range(2, len(factors)):
            for subset in itertools.combinations(range(len(factors)), size):
                inside = math.prod(bounded[k] for k in subset)
                self.seen(inside, 0.0)
                rest = math.prod(bounded[k] for k in range(len(factors)) if k not in subset)
                exact = math.prod(np.abs(factors[k][0]) for k in subset)
                small = (exact > 0) & (exact < self.tiny)
                extra = extra + np.where(small, self.eta * rest, 0.0)
        return extra

    def total(self, terms, errors, axis, n):
        """A sum of n terms in any order (computed terms off by ``errors``)."""
        magnitude = np.sum(np.abs(terms), axis)
        carried = np.sum(np.broadcast_to(errors, np.shape(terms)), axis)
        return self.seen(magnitude, carried + sum_gamma(n, self.u) * (magnitude + carried))

    def mean(self, sum_magnitude, error, n):
        """A sum divided by n, or multiplied by the rounded 1/n."""
        return self.seen(sum_magnitude / n, error / n * (1 + grown(2, self.u))
                         + grown(2, self.u) * sum_magnitude / n + self.eta)


def _bounds(x, scale, mean, variance, dy, attrs, dtype, rsqrt_ulp, subnormals):
    """Per output the error bound and where the evaluation bounds nothing."""
    f, feature, rank = _Figures(dtype, subnormals), attrs["feature_index"], x.ndim
    per = lambda v: _per_feature(v, rank, feature)   # noqa: E731
    others = tuple(a for a in range(rank) if a != feature)
    n = x.size // max(x.shape[feature], 1)
    total, total_error = variance_total(per(variance), attrs["epsilon"], dtype)
    r, r_rel, s_rel = rsqrt_relative(total, total_error, f.u, rsqrt_ulp)
    q_rel = np.maximum((1 + r_rel) ** 2, 1 / (1 - np.minimum(s_rel, 0.5))) * (1 + f.u) - 1
    q, eq = f.seen(1 / total, q_rel / total)
    r, er = f.seen(r, r * r_rel)
    d, ed = f.seen(x - per(mean), f.u * np.abs(x - per(mean)))
    p, ep = f.mul(dy, 0.0, d, ed)
    offset_bound = f.total(dy, 0.0, others, n)[1]
    # grad_scale: each term's three factors in any grouping, or the sum of dy d times r
    terms = f.mul3(dy, 0.0, d, ed, r, er)
    scale_bound = np.maximum(f.total(*terms, others, n)[1],
                             f.mul(*f.total(p, ep, others, n), r.reshape(-1), er.reshape(-1))[1])
    # c: the mean of dy d divided by (var + eps), or the mean of the quotients
    c, ec = f.mul(*f.mean(*f.total(p, ep, others, n), n), q.reshape(-1), eq.reshape(-1))
    c2, ec2 = f.mean(*f.total(*f.mul(p, ep, q, eq), others, n), n)
    c, ec = per(np.maximum(c, c2)), per(np.maximum(ec, ec2))
    mean_dy, e_mean = (per(v) for v in f.mean(*f.total(dy, 0.0, others, n), n))
    # c (x - mean) is the product of sum(dy d), 1 / (var + eps), 1 / n and d, in any grouping
    sum_p = (per(v) for v in f.total(p, ep, others, n))
    chain = [tuple(sum_p), (q, eq), (1.0 / n, f.u / n)]
    f.partials(chain)
    shared = len(f.peaks)   # the intermediates before this feed every element of the feature
    t3, et3 = f.mul(c, ec, d, ed)
    et3 = et3 + f.partials(chain + [(d, ed)])
    inner = np.abs(dy) + mean_dy + t3 + e_mean + et3
    e, ee = f.seen(inner, e_mean + et3 + grown(2, f.u) * inner)
    operand_bound = f.mul3(per(scale), 0.0, r, er, e, ee)[1]
    overflow = [np.zeros(x.shape, bool), np.zeros(x.shape, bool)]
    # the feature's inputs finite: a magnitude that is itself beyond float64 (a float64 T) is
    # an overflow too, not an infinite input's
    finite = np.all(_rows(np.isfinite(x) & np.isfinite(dy), feature), axis=1) \
        & np.isfinite(scale) & np.isfinite(mean) & np.isfinite(variance)
    for k, peak in enumerate(f.peaks):   # an intermediate beyond T though the inputs are finite
        peak = per(peak) if np.shape(peak) == (x.shape[feature],) else peak
        with np.errstate(invalid="ignore"):
            beyond = reaches_max_finite(peak, dtype) | np.isnan(peak)
        overflow[k >= shared] |= beyond & (np.isfinite(peak) | per(finite))
    feature_wide = overflow[0] | (np.isfinite(total) & ~(np.abs(total) > total_error))
    per_feature = np.any(_rows(np.broadcast_to(feature_wide, x.shape), feature), axis=1)
    unbounded = per(per_feature) | overflow[1]
    return ((operand_bound, unbounded), (scale_bound, per_feature), (offset_bound, per_feature))


def grad_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes, subnormals="ieee"):
    """Per output (grad_operand, grad_scale, grad_offset): the bound of the formulas evaluated
    in T (the module's docstring), NaN where the evaluation bounds nothing."""
    figures = _bounds(*inputs, attrs, dtypes[0], constants["rsqrt_ulp"], subnormals)
    return tuple(_judged_where(np.broadcast_to(bound, np.shape(out)), out, unbounded)
                 for (bound, unbounded), out in zip(figures, outputs))


def numpy_batch_norm_grad(x, scale, mean, variance, grad_output, *, epsilon, feature_index):
    """The numpy backend: the text's formulas in x's type (``np.mean`` and ``np.sum`` with
    ``dtype`` x's)."""
    others = tuple(a for a in range(x.ndim) if a != feature_index)
    per = lambda v: _per_feature(v, x.ndim, feature_index)   # noqa: E731
    total = variance + x.dtype.type(_float32(epsilon))
    d, root = x - per(mean), np.sqrt(per(total))
    c = np.mean(grad_output * d / per(total), axis=others, dtype=x.dtype)
    mean_dy = np.mean(grad_output, axis=others, dtype=x.dtype)
    return (per(scale) / root * (grad_output - per(mean_dy) - per(c) * d),
            np.sum(grad_output * d / root, axis=others, dtype=x.dtype),
            np.sum(grad_output, axis=others, dtype=x.dtype))


def feed_batch_norm_grad(inputs, attrs, index, output=0):
    """out[index]: grad_operand from its feature's operand and grad_output rows and per-feature
    inputs; grad_scale from the rows, mean and variance; grad_offset from grad_output's row."""
    feature = index[attrs["feature_index"]] if output == 0 else index[0]
    x, *params, dy = inputs
    rows = [_rows(v, attrs["feature_index"])[feature] for v in (x, dy)]
    scale, mean, variance = (p[feature:feature + 1] for p in params)
    if output == 2:
        return [None, None, None, None, rows[1]]
    return [rows[0], scale if output == 0 else None, mean, variance, rows[1]]


@op("batch_norm_grad", version=1, error_bound=admitting_wider_evaluation(grad_bound),
    numpy=numpy_batch_norm_grad,
    feeding=feed_batch_norm_grad, draw=draw_batch_norm_grad,
    draw_honours=frozenset({"min_rank", "max_rank", "attrs"}), lax=lax_batch_norm,
    lax_refuses=lax_batch_norm_refuses)
def oracle_batch_norm_grad(x, scale, mean, variance, grad_output, *, epsilon, feature_index,
                           dtypes=None):
    """BatchNormGrad: (grad_operand, grad_scale, grad_offset) by the text's formulas, c_l and
    d_l the means of dy (x - mu) / (sigma2 + eps) and of dy; sums in double-double (float64
    operands: beyond float64, :func:`_exact_grad`)."""
    others = tuple(a for a in range(x.ndim) if a != feature_index)
    per = lambda v: _per_feature(v, x.ndim, feature_index)   # noqa: E731
    n, total = x.size // max(x.shape[feature_index], 1), variance + _float32(epsilon)
    d, dy = x - per(mean), grad_output
    c = accurate_sum(dy * d / per(total), axis=others) / n
    grad_offset = accurate_sum(dy, axis=others)
    grad_operand = per(scale) / np.sqrt(per(total)) * (dy - per(grad_offset / n) - per(c) * d)
    fast = (grad_operand, accurate_sum(dy * d / np.sqrt(per(total)), axis=others), grad_offset)
    if not all_float64(dtypes):
        return fast
    return _exact_grad(fast, x, scale, mean, variance, grad_output, _float32(epsilon),
                       feature_index)


def _exact_grad(fast, x, scale, mean, variance, grad_output, epsilon, feature):
    """The formulas per feature in rationals but for the one reciprocal square root (an Arb
    ball), where the feature's inputs are finite and ``variance + epsilon`` positive."""
    from flint import arb
    refiner = Refiner(*fast)
    rows, positions = feature_rows(x, feature)
    dy_rows, _ = feature_rows(grad_output, feature)
    for l, (row, dy_row) in enumerate(zip(rows, dy_rows)):
        values = np.concatenate([row, dy_row, [scale[l], mean[l], variance[l]]])
        if not (row.size and np.isfinite(values).all()):
            continue
        total = q(variance[l]) + q(epsilon)
        if total <= 0:
            continue
        dy = [q(v) for v in dy_row.tolist()]
        sum_dy = sum(dy)
        sum_dyd = sum(g * (q(v) - q(mean[l])) for g, v in zip(dy, row.tolist()))
        mean_dy, c = sum_dy / len(dy), sum_dyd / total / len(dy)
        refiner.rational(2, l, sum_dy)
        refiner.arb_rows(1, [l], lambda: arb(sum_dyd) / arb(total).sqrt(), [[]])
        refiner.arb_rows(0, [tuple(p) for p in positions[l]],
                         lambda s, g, v, m: s * (g - arb(mean_dy) - arb(c) * (v - m))
                         / arb(total).sqrt(),
                         [[scale[l], g, v, mean[l]] for g, v in zip(dy_row.tolist(), row.tolist())])
    return refiner.outputs()
