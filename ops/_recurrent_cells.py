"""The recurrence of ONNX RNN, GRU and LSTM (opsets 7, 14, 22), written from the operators'
texts (``onnx.defs.get_schema(op, 22).doc``), evaluated in float64 together with a bound on
how far an evaluation in T can be from it (the ``derived`` error model).

The bound is a running error analysis (Higham 2002, §3.1 and §3.3): at each time step every
value ``v`` of the text's equations has its exact float64 value and a bound ``e_v`` on
``|v~ - v|``, ``v~`` the value an evaluation in T holds:

* a gate's pre-activation ``Xt*(W^T) + Ht-1*(R^T) [+ P (.) C] + Wb + Rb``, a sum of ``m``
  terms (``m - 2`` or ``m - 3`` of them products), in any order: the previous states' errors
  through ``|R|`` and ``|P|``, plus ``gamma_m`` times the sum of the terms' magnitudes (the
  states' magnitudes widened by their errors), plus half a smallest subnormal per product;
* clip: no amplification (``min``/``max`` are exact and 1-Lipschitz); the threshold's rounding
  into T is added where the argument can reach it;
* an activation: the largest slope over ``[a - e_a, a + e_a]`` times ``e_a``, plus its own
  evaluation's error (``conform.ops._recurrent_activations``);
* a product ``x y``: ``(|x| + e_x) e_y + |y| e_x`` plus its rounding; a sum of two such
  products: ``gamma_2`` of the widened magnitudes (GRU's ``(1 - z) (.) h + z (.) Ht-1``: also
  ``gamma_3`` of ``|z| (|h| + |Ht-1|)``, the same formula evaluated as ``h + z (.) (Ht-1 - h)``).

No term is dropped as second order: every product of two errors is counted (magnitudes are
widened by their errors), so each step's bound holds given the previous step's, whatever the
sequence length. Where some order of a sum can overflow T the bound is NaN (the region
``unbounded_evaluation``), and stays NaN through the later steps.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.ops._activation_bounds import attr_error, f32
from conform.ops.error_bounds import gamma, reaches_max_finite, underflow_term

#: gates per cell in the order W, R and B stack them
GATES = {"rnn": 1, "gru": 3, "lstm": 4}


class Cell(NamedTuple):
    """One direction's parameters, gate by gate: ``w[g]`` (hidden, input), ``r[g]`` (hidden,
    hidden), ``wb[g]`` and ``rb[g]`` (hidden), ``p[k]`` (hidden; LSTM's i, o, f peepholes)."""

    w: np.ndarray
    r: np.ndarray
    wb: np.ndarray
    rb: np.ndarray
    p: np.ndarray
    acts: list
    clip: float | None
    linear_before_reset: int
    reading: int


class State(NamedTuple):
    """A direction's state for the batch, each with its error bound."""

    h: np.ndarray
    c: np.ndarray
    eh: np.ndarray
    ec: np.ndarray


def _eta(count, p) -> float:
    """Half a smallest subnormal of T per product whose result may underflow."""
    return 0.0 if p is None else underflow_term(count, p.dtype)


def linear(terms, p):
    """``(value, error)`` of a sum of terms, each ``(value, magnitude, carried, count,
    products)``: ``carried`` the error its operands bring, ``magnitude`` its size with operands
    widened by their errors, ``count`` the scalar terms it holds, ``products`` how many of them
    are products (each may round below the normal range). ``count`` terms in any order, each
    product rounded once: ``gamma_count`` (Higham 2002, Lemma 3.1 and §3.1)."""
    value = sum(t[0] for t in terms)
    if p is None:
        return value, 0.0
    magnitude = sum(t[1] for t in terms)
    m = sum(t[3] for t in terms)
    g = gamma(m, p.u)
    error = sum(t[2] for t in terms) + g * magnitude + _eta(sum(t[4] for t in terms), p)
    # where some order of the sum overflows T the evaluation bounds nothing: NaN, carried on
    return value, np.where(reaches_max_finite(magnitude, p.dtype, gamma_n=g), np.nan, error)


def _dot(x, w, ex=0.0):
    """The terms of ``x @ w.T``, ``x`` off by ``ex``."""
    aw = np.abs(w)
    carried = ex @ aw.T if np.ndim(ex) else ex * aw.sum(1)
    return (x @ w.T, (np.abs(x) + ex) @ aw.T, carried, w.shape[1], w.shape[1])


def _bias(b):
    return (b, np.abs(b), 0.0, 1, 0)


def _product(x, ex, y, ey, p):
    """``(x y, error)``: both off by their errors, and the product's rounding."""
    value = x * y
    error = (np.abs(x) + ex) * ey + np.abs(y) * ex
    if p is None:
        return value, 0.0
    return value, error + p.u * (np.abs(value) + error) + _eta(1, p)


def activate(cell: Cell, k: int, a, ea, p):
    """Activation ``k`` of ``cell`` on ``a`` (off by ``ea``), clipped first when clip is set:
    'applied to the input of activations'."""
    if cell.clip is not None:
        if p is not None:
            near = np.abs(a) + ea >= cell.clip - attr_error(cell.clip, p.dtype)
            ea = ea + np.where(near, attr_error(cell.clip, p.dtype), 0.0)
        a = np.clip(a, -cell.clip, cell.clip)
    return cell.acts[k].with_error(a, ea, p)


def _gate(cell, g, x, s, p, extra=()):
    """Gate ``g``'s pre-activation ``Xt*(Wg^T) + Ht-1*(Rg^T) + Wbg + Rbg`` (+ ``extra`` terms)."""
    return linear([_dot(x, cell.w[g]), _dot(s.h, cell.r[g], s.eh), _bias(cell.wb[g]),
                   _bias(cell.rb[g]), *extra], p)


def rnn_step(cell: Cell, x, s: State, p) -> State:
    """Ht = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Wbi + Rbi)."""
    h, eh = activate(cell, 0, *_gate(cell, 0, x, s, p), p)
    return State(h, s.c, eh, s.ec)


def gru_step(cell: Cell, x, s: State, p) -> State:
    """zt, rt = f(...); ht = g(Xt*(Wh^T) + (rt (.) Ht-1)*(Rh^T) + Rbh + Wbh) (linear_before_reset
    0) or g(Xt*(Wh^T) + (rt (.) (Ht-1*(Rh^T) + Rbh)) + Wbh); Ht = (1 - zt) (.) ht + zt (.) Ht-1."""
    z, ez = activate(cell, 0, *_gate(cell, 0, x, s, p), p)
    r, er = activate(cell, 0, *_gate(cell, 1, x, s, p), p)
    if cell.linear_before_reset:
        inner, e_inner = linear([_dot(s.h, cell.r[2], s.eh), _bias(cell.rb[2])], p)
        reset, e_reset = _product(r, er, inner, e_inner, p)
        terms = [(reset, np.abs(reset) + e_reset, e_reset, 1, 0)]
        a, ea = linear([_dot(x, cell.w[2]), _bias(cell.wb[2]), *terms], p)
    else:
        rh, e_rh = _product(r, er, s.h, s.eh, p)
        a, ea = linear([_dot(x, cell.w[2]), _dot(rh, cell.r[2], e_rh), _bias(cell.rb[2]),
                        _bias(cell.wb[2])], p)
    h, eh = activate(cell, 1, a, ea, p)
    one_minus = 1 - z
    e_one = ez + (0.0 if p is None else p.u * (np.abs(one_minus) + ez))
    first, e_first = _product(one_minus, e_one, h, eh, p)
    second, e_second = _product(z, ez, s.h, s.eh, p)
    value = first + second
    if p is None:
        return State(value, s.c, 0.0, s.ec)
    # as written: the sum's rounding; as h + z (.) (Ht-1 - h): three roundings of these sizes
    rearranged = gamma(3, p.u) * (np.abs(z) + ez) * (np.abs(h) + eh + np.abs(s.h) + s.eh)
    error = e_first + e_second + p.u * (np.abs(value) + e_first + e_second) + rearranged
    return State(value, s.c, error, s.ec)


def lstm_step(cell: Cell, x, s: State, p) -> State:
    """it, ft = f(... + P (.) Ct-1 ...); ct = g(...); Ct = ft (.) Ct-1 + it (.) ct;
    ot = f(... + Po (.) Ct ...); Ht = ot (.) h(Ct). Gates stacked i, o, f, c; P stacked i, o, f.
    ``cell.reading`` 1: the cell state itself clipped (see :func:`clip_cell`)."""
    def peephole(k, c, ec):
        return (cell.p[k] * c, np.abs(cell.p[k]) * (np.abs(c) + ec), np.abs(cell.p[k]) * ec, 1,
                1)

    i, ei = activate(cell, 0, *_gate(cell, 0, x, s, p, [peephole(0, s.c, s.ec)]), p)
    f, ef = activate(cell, 0, *_gate(cell, 2, x, s, p, [peephole(2, s.c, s.ec)]), p)
    g, eg = activate(cell, 1, *_gate(cell, 3, x, s, p), p)
    kept, e_kept = _product(f, ef, s.c, s.ec, p)
    new, e_new = _product(i, ei, g, eg, p)
    c = clip_cell(cell, kept + new)
    ec = e_kept + e_new + (0.0 if p is None else p.u * (np.abs(c) + e_kept + e_new))
    o, eo = activate(cell, 0, *_gate(cell, 1, x, s, p, [peephole(1, c, ec)]), p)
    hc, ehc = activate(cell, 2, c, ec, p)
    h, eh = _product(o, eo, hc, ehc, p)
    return State(h, c, eh, ec)


def clip_cell(cell: Cell, c):
    """Reading 1 of 'Cell clip threshold ... applied to the input of activations': the cell
    state Ct itself clipped (what the attribute's name says), not only h's argument."""
    return np.clip(c, -cell.clip, cell.clip) if cell.reading and cell.clip is not None else c


STEPS = {"rnn": rnn_step, "gru": gru_step, "lstm": lstm_step}


def run_direction(kind, cell, x, s: State, lens, reverse, p):
    """One direction over ``x`` (seq, batch, input): ``(Y (seq, batch, hidden), its errors,
    the last State)``. A batch entry ``b`` runs over its first ``lens[b]`` steps (from
    ``lens[b] - 1`` down to 0 in reverse), its state kept after them and Y zero there (the
    region of padded steps leaves those open)."""
    seq = x.shape[0]
    y, ey = np.zeros((seq,) + s.h.shape), np.zeros((seq,) + s.h.shape)
    for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
        new = STEPS[kind](cell, x[t], s, p)
        active = (t < lens)[:, None]
        s = State(*(np.where(active, n, o) for n, o in zip(new, s)))
        y[t], ey[t] = np.where(active, s.h, 0.0), np.where(active, s.eh, 0.0)
    return y, ey, s


def precision(dtype: str, constants: dict):
    """The :class:`~conform.ops._recurrent_activations.Precision` of an evaluation in ``dtype``."""
    from conform.ops._recurrent_activations import Precision
    return Precision(dtype, FLOAT_FORMATS[dtype].unit_roundoff, dict(constants))


def stored(value):
    """A float attribute as the node stores it (float32), None staying None."""
    return None if value is None else f32(value)
