"""One token of ONNX LinearAttention's recurrence (ops/onnx_linear_attention.py): the exact
update in float64 and, beside it, the bound on the error an evaluation carries."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from conform.ops.error_bounds import gamma, grown, underflow_term


class Token(NamedTuple):
    """One token's operands, per head: q (B, Hq, d_k), k (B, Hkv, d_k), v (B, Hkv, d_v),
    the gate exp(g) (B, Hkv, d_k or 1, 1) or None, beta (B, Hkv or 1, 1, 1) or None."""
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    gate: np.ndarray | None
    beta: np.ndarray | None


class Sequence(NamedTuple):
    initial: np.ndarray
    steps: list
    d_k: int


def _heads(x: np.ndarray, heads: int) -> np.ndarray:
    """(B, T, H * d) as (T, B, H, d)."""
    return x.reshape(x.shape[0], x.shape[1], heads, -1).transpose(1, 0, 2, 3)


def tokens(given: dict, attrs: dict, dtype=np.float64) -> Sequence:
    """The initial state (in ``dtype``) and the tokens' operands, as the body's Reshape and
    Transpose give them (decay and beta broadcast per head, or per key dimension for decay)."""
    hq, hkv = attrs["q_num_heads"], attrs["kv_num_heads"]
    q, k, v = _heads(given["query"], hq), _heads(given["key"], hkv), _heads(given["value"], hkv)
    b, d_k, d_v = q.shape[1], q.shape[-1], v.shape[-1]
    initial = given.get("past_state", np.zeros((b, hkv, d_k, d_v))).astype(dtype)
    gates = np.exp(_heads(given["decay"], hkv))[..., None] if "decay" in given else None
    betas = _heads(given["beta"], given["beta"].shape[-1])[..., None] \
        if "beta" in given else None
    steps = [Token(q[t], k[t], v[t], None if gates is None else gates[t],
                   None if betas is None else betas[t]) for t in range(q.shape[0])]
    return Sequence(initial, steps, d_k)


def step(state: np.ndarray, token: Token, rule: str) -> np.ndarray:
    """S_t from S_(t-1) by the text's update rule."""
    decayed = state * token.gate if "gated" in rule else state
    write = token.v
    if "delta" in rule:
        retrieved = np.einsum("bhkv,bhk->bhv", decayed, token.k)
        write = token.beta[..., 0] * (token.v - retrieved)
    return decayed + token.k[..., :, None] * write[..., None, :]


def step_errors(state, error, token: Token, rule: str, u: float, exp_ulp: float, dtype: str):
    """(S_t, its error bound, the largest intermediate magnitude per batch row) from
    (S_(t-1), its bound): the gate's exp within ``exp_ulp`` ULP
    and its product (``grown(2 exp_ulp + 1)`` relative); the retrieval ``S^T k``, d_k
    products summed in any order (``gamma_(d_k)``, Higham 2002 Lemma 3.1); the difference,
    the beta scaling, the outer product and the sum one rounding each; underflow per product
    (§2.1) in ``dtype``, T (its underflow is no finer than float32's). Errors are carried on the exact magnitudes plus their bounds (no first-order
    dropping)."""
    k, v = np.abs(token.k), np.abs(token.v)
    new = step(state, token, rule)
    decayed, derr = np.abs(state), error
    if "gated" in rule:
        rel = grown(2 * exp_ulp + 1, u)
        derr = token.gate * (error * (1 + rel) + rel * np.abs(state))
        decayed = token.gate * np.abs(state)
    write, werr, partial = v, np.zeros(v.shape), np.zeros(state.shape[0])
    if "delta" in rule:
        d_k = k.shape[-1]
        exact = state * token.gate if "gated" in rule else state
        retrieved = np.einsum("bhkv,bhk->bhv", exact, token.k)
        rerr = (np.einsum("bhkv,bhk->bhv", derr, k)
                + gamma(d_k, u) * np.einsum("bhkv,bhk->bhv", decayed + derr, k)
                + underflow_term(d_k, dtype))
        diff = np.abs(token.v - retrieved)
        partial = np.max(np.einsum("bhkv,bhk->bhv", decayed + derr, k) + v, axis=(1, 2))
        derr_diff = rerr + u * (diff + rerr)
        beta = token.beta[..., 0]
        write = beta * diff
        werr = beta * derr_diff + u * (write + beta * derr_diff) + underflow_term(1, dtype)
    outer = k[..., :, None] * (write + werr)[..., None, :]
    oerr = k[..., :, None] * werr[..., None, :] + u * outer + underflow_term(1, dtype)
    total = derr + oerr
    error = total + u * (np.abs(new) + total)
    largest = np.maximum(np.max(np.maximum(np.maximum(decayed + derr, outer),
                                           np.abs(new) + error), axis=(1, 2, 3)), partial)
    return new, error, largest
