"""Contractions of complex operands (XLA Dot, DotGeneral, ConvWithGeneralPadding, Conv on
complex64 and complex128): the reference, the ``derived`` bound and the region of non-finite
operands, shared by ops/contraction.py, ops/xla_linalg.py and ops/xla_conv_shorthand.py.

A sum of complex products ``sum_k a_k b_k`` (StableHLO, docs/spec.md, dot_general and
convolution: sums of products; multiply on complex numbers: complex multiplication
``(ac - bd) + (ad + bc)i``; add: complex addition, part by part) has each part a real inner
product of ``2n`` terms::

    re = sum_k (re a_k re b_k) + (-im a_k im b_k),   im = sum_k (re a_k im b_k) + (im a_k re b_k)

so the reference is each part's sum of exact products in double-double, rounded once to
float64 (ops/_double_double.py ``complex_sum_of_products``, as the real contractions'), and the bound is the real
accumulation model applied to each part: ``|err_part| <= gamma_2n S_part + 2n eta (1 +
gamma_2n)`` (Higham 2002, §3.1 eq. 3.5 and §2.1 eq. 2.8: the products rounded once each, or
not at all with an FMA, and summed in any order: the textbook complex product followed by a
complex accumulation is one such order), ``S_re = sum |re a re b| + |im a im b|``, ``S_im = sum
|re a im b| + |im a re b|``. The judge reads a complex error as the modulus (docs/error-models.md,
"Complex outputs"), so the parts' bounds are joined: ``|err| <= gamma_2n hypot(S_re, S_im) +
sqrt(2) 2n eta (1 + gamma_2n)``, and the spec's ``final_ulp`` (sqrt(2)/2) is the two parts'
half-ULP roundings (of a wider accumulator's result into the output type, or of the float64
reference itself), as the real model's 0.5. A 3-multiplication (Gauss) complex product is not
the text's formula and is not covered.
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import component_dtype
from conform.op_registry import region
from conform.ops.error_bounds import judged_bound, reaches_max_finite, sum_gamma, underflow_term
from conform.ops.regions import RegionContext


def _finite_abs(x: np.ndarray) -> np.ndarray:
    return np.abs(np.where(np.isfinite(x), x, 0.0))


def complex_contraction_bound(contract, length):
    """An ``error_bound`` hook for a contraction of complex operands: ``contract(lhs, rhs,
    attrs)`` the op's real contraction (on float64 arrays), ``length(shapes, attrs)`` its
    products per output element. Per element the bound of the module docstring; NaN (the region
    ``unbounded_evaluation``) where a part's magnitudes ``(1 + gamma_2n) S_part`` reach the
    component type's largest finite value (some order overflows), where the operands it reads
    are finite."""
    def bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes, subnormals="ieee"):
        lhs, rhs = inputs
        part = component_dtype(out_dtype)
        n = 2 * max(int(length([x.shape for x in inputs], attrs)), 1)
        (ar, ai), (br, bi) = ((_finite_abs(x.real), _finite_abs(np.imag(x))) for x in (lhs, rhs))
        s_re = contract(ar, br, attrs) + contract(ai, bi, attrs)
        s_im = contract(ar, bi, attrs) + contract(ai, br, attrs)
        g = sum_gamma(n, u)
        # per part: n products rounded (under ftz the additions' results may flush too)
        eta = underflow_term(n, part) if subnormals == "ieee" else \
            underflow_term(2 * n, part, subnormals=subnormals)
        with np.errstate(over="ignore", invalid="ignore"):
            total = g * np.hypot(s_re, s_im) + math.sqrt(2) * eta * (1 + g)
            overflow = reaches_max_finite(np.maximum(s_re, s_im), part, gamma_n=g)
        return (judged_bound(total, outputs[0], unbounded=overflow),)
    return bound


@region
def complex_nonfinite_term(ctx: RegionContext) -> np.ndarray:
    """Results of a complex contraction one of whose products has an operand with an infinite
    or NaN part: the texts define the product of complex numbers by its formula and are silent
    on these (C11 Annex G's recovery of infinities is not the textbook formula's: ``(inf +
    0i)(1 + 0i)`` is ``inf + NaN i`` by ``(ac - bd) + (ad + bc)i``), so the sum has no one
    value. A padded position (a convolution's zero) is no operand."""
    lhs, rhs = ctx.inputs
    if not (np.iscomplexobj(lhs) and np.iscomplexobj(rhs)):
        return ctx.none()
    touched = ctx.float_oracle([(~np.isfinite(lhs)).astype(np.float64), np.ones(rhs.shape)]) \
        + ctx.float_oracle([np.ones(lhs.shape), (~np.isfinite(rhs)).astype(np.float64)])
    return np.broadcast_to(touched > 0, ctx.expected.shape)


complex_nonfinite_term.only_dtypes = frozenset({"complex64", "complex128"})
