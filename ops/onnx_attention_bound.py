"""The error bound of ONNX Attention (ops/onnx_attention.py), derived stage by stage from the
text's pattern evaluated in the output type T (unit roundoff ``u``), Softmax in the
``softmax_precision`` type where it is given (unit roundoff ``u_s``).

1. Scores ``s = (q sqrt(scale)) . (k sqrt(scale))`` over ``d`` features: each term goes
   through at most ``d + 2`` roundings in T in any order (the two scalings, the product,
   ``d - 1`` additions; or the product and a final scaling), and ``sqrt(scale)`` is computed in
   float32 (the function body's Sqrt of a float constant; for the default ``1/sqrt(d)`` its
   Sqrt and Div too: 3 roundings, 6 once squared, else 2) and cast to T, so
   ``|ds| <= (gamma_(d+2) + grown_k (1 + gamma_(d+2))) scale sum |q k|`` with ``grown_k`` of
   ``max(u, u_float32)`` (Higham 2002, Lemma 3.1, §3.1), plus half the
   smallest subnormal per scaled operand and product rounded below the normal range
   (``eta (sqrt(scale) (sum |q| + sum |k|) + d)``, §2.1).
2. Softcap ``t = c tanh(s / c)``: tanh is 1-Lipschitz, so the argument's error
   ``ds / c (1 + u) + u |s| / c`` passes through, tanh adds ``2 b_tanh u`` relative (within
   ``b_tanh`` ULP), the product one rounding: ``|dt| <= c (1 + u) darg' + u |t|``.
3. Bias: ``l = t + m``, one rounding (``u |l|``; the bias's -inf entries are exact), and
   ``u_s |l|`` more where the Softmax type is narrower than T (the cast).
4. Softmax of perturbed logits: ``P'_i / P_i`` lies in ``[e^-(dl_i + D), e^(dl_i + D)]``,
   ``D = max_j dl_j`` over the row's attended keys, so the input errors give
   ``rho_i = expm1(dl_i + D)`` relative; the evaluation's own error is ``softmax_bound``
   (ops/onnx_softmax.py) in the Softmax type. ``|dP| <= (P + e_sm)(1 + rho) - P``, plus ``u``
   relative and half T's smallest subnormal for a cast back to a narrower T; never more than ``1 + gamma_(n+2)`` (both results
   lie in [0, 1] up to their rounding).
5. ``Y = sum_j P_j v_j`` over ``n`` keys: ``|dY| <= sum_j |dP_j| |v_j| + gamma_n sum_j
   (P_j + |dP_j|) |v_j|`` (Lemma 3.1), plus ``n`` products' underflow.

A fully-masked row is zero in Y and in the mode-3 output (bound: the underflow floor). NaN
(the region ``unbounded_evaluation``) on a row where some evaluation order can overflow T: the
scores' magnitudes, the logits' (in T or in a narrower Softmax type) or the values' sum
reaching the largest finite value.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.ops._double_double import accurate_matmul
from conform.ops.error_bounds import gamma, grown, reaches_max_finite, underflow_term
from conform.ops.onnx_softmax import softmax_bound
from conform.ops.onnx_attention_stages import (QK_STAGE, SOFTMAX_TYPES, scale_of, stages,
                                               y_layout)
from conform.ops.optional_inputs import by_name


def _unit(dtype: str) -> float:
    return FLOAT_FORMATS[dtype].unit_roundoff


def _score_error(at: dict, scale: float, default: bool, u: float, dtype: str):
    """Stage 1: the scores' absolute error bound and their magnitudes."""
    q, keys = np.abs(at["q"]), np.abs(at["keys"])
    size = q.shape[-1]
    magnitude = accurate_matmul(q, np.swapaxes(keys, -1, -2)) * scale
    spread = np.sqrt(scale) * (q.sum(-1)[..., :, None] + keys.sum(-1)[..., None, :]) + size
    # sqrt(scale) from float32 roundings (the body's Sqrt of a float constant, and for the
    # default its Sqrt and Div), squared by the two scalings
    factor = grown(6 if default else 2, max(u, FLOAT_FORMATS["float32"].unit_roundoff))
    relative = gamma(size + 2, u) + factor * (1 + gamma(size + 2, u))
    return relative * magnitude + underflow_term(spread, dtype), magnitude


def _softcap_error(at: dict, ds, cap: float, u: float, b_tanh: float, dtype: str):
    """Stage 2: after softcap (the scores' error where softcap is 0)."""
    if not cap:
        return ds
    s = np.abs(at["scores"])
    arg = ds / cap * (1 + u) + u * s / cap
    tanh = arg + 2 * b_tanh * u * (np.abs(np.tanh(at["scores"] / cap)) + arg)
    return cap * tanh * (1 + u) + u * np.abs(at["capped"]) + underflow_term(2 * cap, dtype)


def _softmax_error(at: dict, dl, sm_dtype: str, u_s: float, exp_ulp: float):
    """Stage 4: the probabilities' absolute error bound, in the Softmax type."""
    masked, probs = at["masked"], at["probs"]
    attended = np.isfinite(at["logits"]) & ~masked
    dl = np.where(attended, dl, 0.0)
    worst = dl.max(-1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        rho = np.where(attended, np.expm1(dl + worst), 0.0)
        logits = np.where(masked, 0.0, at["logits"])
        (own,) = softmax_bound((logits,), {"axis": -1}, (probs,), out_dtype=sm_dtype, u=u_s,
                               constants={"exp_ulp": exp_ulp}, dtypes=())
        dp = (probs + own) * (1 + rho) - probs
    n = probs.shape[-1]
    return np.where(masked, 0.0, np.minimum(dp, 1 + gamma(n + 2, u_s)))


def attention_bound(names: tuple, cache: bool):
    """The ``error_bound`` hook of one Attention spec: per output, the stages above."""
    def bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
        given = by_name(names, inputs, attrs.get("absent_inputs", ()))
        at = stages(given, attrs)
        sm_dtype = SOFTMAX_TYPES.get(attrs.get("softmax_precision"), out_dtype)
        u_s = _unit(sm_dtype)
        ds, magnitude = _score_error(at, scale_of(attrs, at["q"].shape[-1]),
                                     attrs.get("scale") is None, u, out_dtype)
        dt = _softcap_error(at, ds, attrs.get("softcap") or 0.0, u,
                            constants[f"tanh_ulp_{out_dtype}"], out_dtype)
        finite = np.abs(np.where(np.isfinite(at["logits"]), at["logits"], 0.0))
        dl = np.where(np.isfinite(at["logits"]), dt + u * finite, 0.0)
        dl_s = dl + (u_s * finite if u_s > u else 0.0)
        dp = _softmax_error(at, dl_s, sm_dtype, u_s, constants[f"exp_ulp_{sm_dtype}"])
        if u > u_s:   # the cast back to T: one rounding, or a result below its normal range
            dp = dp + u * (at["probs"] + dp) + underflow_term(1, out_dtype)
        values = np.abs(at["values"])
        n = values.shape[-2]
        dy = (dp @ values + gamma(n, u) * ((at["probs"] + dp) @ values)
              + underflow_term(n, out_dtype))
        unbounded = (reaches_max_finite(magnitude, out_dtype, gamma_n=gamma(8, u))
                     | reaches_max_finite(finite + dt, out_dtype)
                     | reaches_max_finite(finite + dl_s, sm_dtype))
        row = np.any(unbounded, -1, keepdims=True)
        spill = row | reaches_max_finite(values.sum(-2, keepdims=True), out_dtype,
                                         gamma_n=gamma(n, u))
        dy = y_layout(np.where(spill, np.nan, dy), given["Q"].ndim == 3)
        if not cache:
            return (dy,)
        mode = attrs.get("qk_matmul_output_mode") or 0
        qk = {"scores": ds, "capped": dt, "logits": dl, "probs": dp}[QK_STAGE[mode]]
        zero = np.zeros(at["present_key"].shape), np.zeros(at["present_value"].shape)
        return dy, zero[0], zero[1], np.where(row if mode == 3 else unbounded, np.nan, qk)
    return bound
