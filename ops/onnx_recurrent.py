"""ONNX RNN, GRU and LSTM (ai.onnx opsets 7, 14 and 22), written from the operators' texts
(``onnx.defs.get_schema('LSTM', 22).doc`` and its inputs, outputs and attributes; the
equations are in :mod:`conform.ops._recurrent_cells`, the activations in
:mod:`conform.ops._recurrent_activations`).

Shapes (layout 0): X [seq_length, batch_size, input_size]; W [num_directions, G*hidden_size,
input_size]; R [num_directions, G*hidden_size, hidden_size]; B [num_directions, 2*G*hidden_size]
(``[Wb, Rb]``); sequence_lens [batch_size] (int32); initial_h, initial_c [num_directions,
batch_size, hidden_size]; P [num_directions, 3*hidden_size]; Y [seq_length, num_directions,
batch_size, hidden_size]; Y_h, Y_c [num_directions, batch_size, hidden_size]. Layout 1 (opset
14 on): X [batch_size, seq_length, input_size], Y [batch_size, seq_length, num_directions,
hidden_size], the states [batch_size, num_directions, hidden_size]. Absent B, P, initial_h and
initial_c are 0; an absent sequence_lens is seq_length for every batch entry.

Every output is optional: a case's attribute ``omitted_outputs`` names those its node leaves
out (written ``""``, trailing ones dropped). The model still has one graph output per spec
output: an omitted one is an empty tensor of T from a Constant node, which the oracle gives
too, so only the node's present outputs carry values to judge.

The text says nothing of Y past a batch entry's sequence length ('packed (and potentially
padded)'): those elements are open (region ``oracle_marked``); the state is the one after the
entry's last step (its first, in reverse), which Y_h and Y_c hold.
"""
from __future__ import annotations

import numpy as np
from onnx import helper

from conform.dtypes import np_dtype
from conform.model_formats import onnx_opset
from conform.op_registry import op
from conform.ops._recurrent_activations import PARAMETERS, activation_list
from conform.ops._recurrent_cells import (GATES, Cell, State, precision, run_direction,
                                          stored)
from conform.ops.error_bounds import judged_bound
from conform.ops.optional_inputs import ABSENT, by_name, onnx_operands, present

INPUTS = {"rnn": ("x", "w", "r", "b", "sequence_lens", "initial_h"),
          "gru": ("x", "w", "r", "b", "sequence_lens", "initial_h"),
          "lstm": ("x", "w", "r", "b", "sequence_lens", "initial_h", "initial_c", "p")}
OUTPUTS = {"rnn": ("y", "y_h"), "gru": ("y", "y_h"), "lstm": ("y", "y_h", "y_c")}
DEFAULT_ACTIVATIONS = {"rnn": ("Tanh",), "gru": ("Sigmoid", "Tanh"),
                       "lstm": ("Sigmoid", "Tanh", "Tanh")}
OP_TYPES = {"rnn": "RNN", "gru": "GRU", "lstm": "LSTM"}
#: the node attributes a case carries (the rest are conform's: absent inputs, omitted outputs)
NODE_ATTRIBUTES = ("hidden_size", "direction", "layout", "activations", "activation_alpha",
                   "activation_beta", "clip", "linear_before_reset")


def _directions(attrs) -> int:
    return 2 if attrs.get("direction", "forward") == "bidirectional" else 1


def _cells(kind, named, attrs, reading):
    """Per direction, its :class:`Cell`."""
    dirs, hidden, gates = _directions(attrs), attrs["hidden_size"], GATES[kind]
    w, r = named["w"], named["r"]
    b = named.get("b", np.zeros((dirs, 2 * gates * hidden)))
    p = named.get("p", np.zeros((dirs, 3 * hidden)))
    names = attrs.get("activations") or DEFAULT_ACTIVATIONS[kind] * dirs
    acts = activation_list(names, attrs.get("activation_alpha"), attrs.get("activation_beta"))
    per = len(acts) // dirs
    return [Cell(w[d].reshape(gates, hidden, -1), r[d].reshape(gates, hidden, hidden),
                 b[d].reshape(2, gates, hidden)[0], b[d].reshape(2, gates, hidden)[1],
                 p[d].reshape(3, hidden), acts[d * per:(d + 1) * per], stored(attrs.get("clip")),
                 attrs.get("linear_before_reset", 0), reading) for d in range(dirs)]


def recurrence(kind, inputs, attrs, p=None, reading=0):
    """``(outputs, bounds, lens)``: Y, Y_h (and Y_c) in float64 in the case's layout and the
    error bound of each element for an evaluation at precision ``p`` (zeros without one)."""
    named = by_name(INPUTS[kind], inputs, attrs.get(ABSENT, ()))
    layout, dirs, hidden = attrs.get("layout", 0), _directions(attrs), attrs["hidden_size"]
    x = named["x"].swapaxes(0, 1) if layout else named["x"]
    seq, batch = x.shape[:2]
    states = [(named[k].swapaxes(0, 1) if layout else named[k]) if k in named
              else np.zeros((dirs, batch, hidden)) for k in ("initial_h", "initial_c")]
    lens = named.get("sequence_lens", np.full(batch, seq)).astype(np.int64)
    reverse = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}
    found = []
    for d, (cell, back) in enumerate(zip(_cells(kind, named, attrs, reading),
                                         reverse[attrs.get("direction", "forward")])):
        zero = np.zeros((batch, hidden))
        found.append(run_direction(kind, cell, x, State(states[0][d], states[1][d], zero, zero),
                                   lens, back, p))
    y, ey = (np.stack([f[k] for f in found], axis=1) for k in (0, 1))
    last = [np.stack([getattr(f[2], k) for f in found]) for k in ("h", "c", "eh", "ec")]
    values, bounds = [y, last[0], last[1]], [ey, last[2], last[3]]
    if layout:
        values = [np.moveaxis(values[0], 2, 0)] + [v.swapaxes(0, 1) for v in values[1:]]
        bounds = [np.moveaxis(bounds[0], 2, 0)] + [v.swapaxes(0, 1) for v in bounds[1:]]
    keep = [n not in attrs.get("omitted_outputs", ()) for n in OUTPUTS[kind]]
    return (tuple(v if k else np.zeros(0) for v, k in zip(values, keep)),
            tuple(np.broadcast_to(e, v.shape) if k else np.zeros(0)
                  for e, v, k in zip(bounds, values, keep)), lens)


def _open(kind, inputs, attrs, outputs, lens):
    """Per output, the open elements: Y past each batch entry's length and, for LSTM with
    clip, every element the cell clip's two readings (see ``clip_cell``) disagree on."""
    masks = [np.zeros(np.shape(o), bool) for o in outputs]
    if outputs[0].size:
        seq = outputs[0].shape[1 if attrs.get("layout", 0) else 0]
        padded = np.arange(seq)[:, None] >= lens[None, :]          # (seq, batch)
        padded = padded[:, None, :, None] if not attrs.get("layout", 0) \
            else padded.T[:, :, None, None]
        masks[0] = np.broadcast_to(padded, outputs[0].shape).copy()
    if kind == "lstm" and attrs.get("clip") is not None:
        other = recurrence(kind, inputs, attrs, reading=1)[0]
        masks = [m | (o != e) for m, o, e in zip(masks, other, outputs)]
    return tuple(masks)


def _oracle(kind):
    def oracle(*inputs, open_elements=False, reading=0, **attrs):
        outputs, _, lens = recurrence(kind, inputs, attrs, reading=reading)
        return _open(kind, inputs, attrs, outputs, lens) if open_elements else outputs
    return oracle


def _bound(kind):
    def bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
        """Per output, the running error bound of the evaluation in T (NaN where it bounds
        nothing: the region ``unbounded_evaluation``); for float64, twice it: the float64
        oracle is itself such an evaluation, within the same bound."""
        found = recurrence(kind, inputs, attrs, precision(dtypes[0], constants))[1]
        scale = 2.0 if dtypes[0] == "float64" else 1.0
        return tuple(judged_bound(scale * e, o, unbounded=np.isnan(e))
                     for e, o in zip(found, outputs))
    return bound


# --- Drawing -------------------------------------------------------------------------------------

#: activations with a parameter the text gives no default for, and those taking both parameters
NO_DEFAULT = ("Affine", "ScaledTanh")
BOTH_PARAMETERS = ("Affine", "ScaledTanh", "HardSigmoid")
PARAMETER_VALUES = (0.5, 1.0, -0.75, 0.25, 2.0, 1.5)


def _draw_activations(draw, st, kind, dirs) -> dict:
    """The activation attributes: the defaults (none written), or a list per direction drawn
    from every activation the text names; alpha and beta written only where every activation
    of the list takes them (so that 'consumed in the order of activation functions' reads one
    way), and always for Affine and ScaledTanh, which have no default."""
    if draw(st.booleans()):
        return {}
    count = len(DEFAULT_ACTIVATIONS[kind]) * dirs
    both = draw(st.booleans())
    pool = BOTH_PARAMETERS if both else tuple(n for n in PARAMETERS if n not in NO_DEFAULT)
    names = [draw(st.sampled_from(pool)) for _ in range(count)]
    attrs = {"activations": names}
    for k, key in enumerate(("activation_alpha", "activation_beta")):
        if all(PARAMETERS[n][k] for n in names) and (both or draw(st.booleans())):
            attrs[key] = [draw(st.sampled_from(PARAMETER_VALUES)) for _ in names]
    return attrs


def _draw_attributes(draw, st, kind) -> dict:
    attrs = {"hidden_size": draw(st.integers(1, 4)),
             "direction": draw(st.sampled_from(("forward", "reverse", "bidirectional"))),
             "layout": draw(st.integers(0, 1))}
    attrs.update(_draw_activations(draw, st, kind, _directions(attrs)))
    if draw(st.booleans()):
        attrs["clip"] = draw(st.sampled_from((0.5, 1.0, 3.0)))
    if kind == "gru":
        attrs["linear_before_reset"] = draw(st.integers(0, 1))
    omitted = [n for n in OUTPUTS[kind] if draw(st.booleans())]
    if len(omitted) < len(OUTPUTS[kind]) and omitted:   # at least one output stays
        attrs["omitted_outputs"] = omitted
    return attrs


def _draw(kind):
    def draw_recurrent(draw, kit, spec, dtype):
        """seq_length <= 5, batch <= 3, hidden and input <= 4, the attributes (see
        :func:`_draw_attributes`), each optional input present or absent."""
        st = kit.st
        seq, batch, size = (draw(st.integers(1, n)) for n in (5, 3, 4))
        attrs = _draw_attributes(draw, st, kind)
        hidden, dirs, gates = attrs["hidden_size"], _directions(attrs), GATES[kind]
        state = (batch, dirs, hidden) if attrs["layout"] else (dirs, batch, hidden)
        shapes = {"x": (batch, seq, size) if attrs["layout"] else (seq, batch, size),
                  "w": (dirs, gates * hidden, size), "r": (dirs, gates * hidden, hidden),
                  "b": (dirs, 2 * gates * hidden), "sequence_lens": (batch,),
                  "initial_h": state, "initial_c": state, "p": (dirs, 3 * hidden)}
        absent = kit.absent_inputs(draw, spec)
        kept = [n for n in INPUTS[kind] if n not in absent]
        types = tuple("int32" if n == "sequence_lens" else dtype for n in kept)
        return kit.Signature(types, tuple(shapes[n] for n in kept),
                             kit.with_absent(attrs, absent), dtype)
    return draw_recurrent


def _values(kind):
    def values(rng, inputs, attrs):
        """sequence_lens in [1, seq_length]: all seq_length in half the cases."""
        names = present(INPUTS[kind], attrs)
        if "sequence_lens" not in names:
            return inputs
        given = dict(zip(names, inputs))
        x = given["x"]
        seq, batch = (x.shape[1], x.shape[0]) if attrs.get("layout", 0) else x.shape[:2]
        lens = np.full(batch, seq) if rng.integers(0, 2) else rng.integers(1, seq + 1, batch)
        given["sequence_lens"] = lens.astype(np.int32)
        return [given[n] for n in names]
    return values


# --- ONNX ----------------------------------------------------------------------------------------

def _node_attributes(case) -> dict:
    attrs = {k: case.attrs[k] for k in NODE_ATTRIBUTES if k in case.attrs}
    for key in ("clip",):
        if key in attrs:
            attrs[key] = float(attrs[key])
    for key in ("activation_alpha", "activation_beta"):
        if key in attrs:
            attrs[key] = [float(v) for v in attrs[key]]
    return attrs


def _onnx(kind):
    def lower(case, graph):
        """One node; absent inputs and omitted outputs written ``""`` (trailing ones dropped);
        an omitted output's graph output an empty Constant of T. Layout 1 needs opset 14."""
        from conform.ops._lowering import unsupported
        attrs = _node_attributes(case)
        if attrs.get("layout") and onnx_opset() < 14:
            raise unsupported(f"{OP_TYPES[kind]} has no layout attribute before opset 14: "
                              "the standard rules this case out")
        if onnx_opset() < 14:
            attrs.pop("layout", None)
        supplied = dict(zip(present(INPUTS[kind], case.attrs), graph.inputs))
        omitted = case.attrs.get("omitted_outputs", ())
        outputs = onnx_operands(None if n in omitted else o
                                for n, o in zip(OUTPUTS[kind], graph.outputs))
        graph.node(graph.op_type, onnx_operands(supplied.get(n) for n in INPUTS[kind]),
                   outputs, **attrs)
        for name, out in zip(OUTPUTS[kind], graph.outputs):
            if name in omitted:
                empty = helper.make_tensor("empty", graph.onnx_type(case.out_dtype), [0], [])
                graph.node("Constant", [], out, value=empty)
    return lower


# --- NumPy ---------------------------------------------------------------------------------------

def _numpy_activation(name, alpha, beta, t):
    """Activation ``name`` in NumPy's type ``t``: the text's functions, evaluated without
    cancellation or overflow (expm1, logaddexp, e^x / (1 + e^x) for x < 0)."""
    a, b = (None if v is None else t(np.float32(v)) for v in (alpha, beta))
    one, zero = t(1), t(0)
    def sigmoid(x):   # e^x / (1 + e^x) for x < 0: no overflow
        e = np.exp(-np.abs(x))
        return np.where(x >= zero, one / (one + e), e / (one + e))
    return {"Relu": lambda x: np.maximum(x, zero), "Tanh": np.tanh,
            "Sigmoid": sigmoid, "Affine": lambda x: a * x + b,
            "LeakyRelu": lambda x: np.where(x >= zero, x, a * x),
            "ThresholdedRelu": lambda x: np.where(x >= a, x, zero),
            "ScaledTanh": lambda x: a * np.tanh(b * x),
            "HardSigmoid": lambda x: np.minimum(np.maximum(a * x + b, zero), one),
            "Elu": lambda x: np.where(x >= zero, x, a * np.expm1(np.minimum(x, zero))),
            "Softsign": lambda x: x / (one + np.abs(x)),
            "Softplus": lambda x: np.logaddexp(zero, x)}[name]


def _numpy_step(kind, x_t, h, c, weights, f, clip, lbr):
    """One step of the text's equations in T; ``weights`` = (W, R, Wb, Rb, P) gate by gate."""
    w, r, wb, rb, p = weights

    def lin(g):
        return x_t @ w[g].T + h @ r[g].T + wb[g] + rb[g]
    if kind == "rnn":
        return f[0](clip(lin(0))), c
    if kind == "gru":
        z, reset = f[0](clip(lin(0))), f[0](clip(lin(1)))
        recurrent = reset * (h @ r[2].T + rb[2]) if lbr else (reset * h) @ r[2].T + rb[2]
        hidden = f[1](clip(x_t @ w[2].T + recurrent + wb[2]))
        return (1 - z) * hidden + z * h, c
    i, forget = f[0](clip(lin(0) + p[0] * c)), f[0](clip(lin(2) + p[2] * c))
    c = forget * c + i * f[1](clip(lin(3)))
    return f[0](clip(lin(1) + p[1] * c)) * f[2](clip(c)), c


def _numpy(kind):
    def compute(*inputs, hidden_size, direction="forward", layout=0, activations=None,
                activation_alpha=None, activation_beta=None, clip=None, linear_before_reset=0,
                absent_inputs=(), omitted_outputs=()):
        """The text's equations step by step in T (NumPy); bfloat16 is unsupported."""
        named = by_name(INPUTS[kind], inputs, absent_inputs)
        x = named["x"]
        if str(x.dtype) == "bfloat16":
            from conform.ops._lowering import unsupported
            raise unsupported("NumPy has no bfloat16 matrix product")
        t, dirs, n, g = x.dtype.type, _directions({"direction": direction}), hidden_size, GATES[kind]
        x = x.swapaxes(0, 1) if layout else x
        seq, batch = x.shape[:2]
        init = [(named[k].swapaxes(0, 1) if layout else named[k]) if k in named
                else np.zeros((dirs, batch, n), x.dtype) for k in ("initial_h", "initial_c")]
        b = named.get("b", np.zeros((dirs, 2 * g * n), x.dtype)).reshape(dirs, 2, g, n)
        peep = named.get("p", np.zeros((dirs, 3 * n), x.dtype)).reshape(dirs, 3, n)
        names = activations or DEFAULT_ACTIVATIONS[kind] * dirs
        acts = [_numpy_activation(a.name, a.alpha, a.beta, t)
                for a in activation_list(names, activation_alpha, activation_beta)]
        limit = None if clip is None else t(np.float32(clip))
        clipped = (lambda v: v) if limit is None else (lambda v: np.clip(v, -limit, limit))
        lens = named.get("sequence_lens", np.full(batch, seq))
        y = np.zeros((seq, dirs, batch, n), x.dtype)
        last = [np.array(s) for s in init]
        with np.errstate(all="ignore"):
            for d in range(dirs):
                weights = (named["w"][d].reshape(g, n, -1), named["r"][d].reshape(g, n, n),
                           b[d, 0], b[d, 1], peep[d])
                back = direction == "reverse" or d == 1
                h, c = init[0][d], init[1][d]
                for step in (range(seq - 1, -1, -1) if back else range(seq)):
                    nh, nc = _numpy_step(kind, x[step], h, c, weights,
                                         acts[d * len(acts) // dirs:], clipped, linear_before_reset)
                    active = (step < lens)[:, None]
                    h, c = np.where(active, nh, h), np.where(active, nc, c)
                    y[step, d] = np.where(active, h, 0)
                last[0][d], last[1][d] = h, c
        found = [np.moveaxis(y, 2, 0) if layout else y] + [s.swapaxes(0, 1) if layout else s for s in last]
        return tuple(v if name not in omitted_outputs else np.zeros(0, x.dtype)
                     for v, name in zip(found, OUTPUTS[kind]))
    return compute


# --- The ops -------------------------------------------------------------------------------------

def _feeding(kind):
    def feeding(inputs, attrs, index, output=0):
        """Y[t, d, b, :] (Y_h, Y_c [d, b, :]): batch entry b's X over the steps direction d has
        taken by then (all its sequence for Y_h and Y_c), d's weights and b's initial states
        (its length chooses the steps, a term of none)."""
        named = by_name(INPUTS[kind], inputs, attrs.get(ABSENT, ()))
        layout = attrs.get("layout", 0)
        x = named["x"].swapaxes(0, 1) if layout else named["x"]
        if output == 0:
            t, d, b = (index[1], index[2], index[0]) if layout else index[:3]
        else:
            (b, d), t = (index[:2] if layout else index[1::-1]), None
        seq = x.shape[0]
        length = int(named["sequence_lens"][b]) if "sequence_lens" in named else seq
        back = attrs.get("direction", "forward") == "reverse" or d == 1
        steps = range(length if t is None else min(t + 1, length)) if not back \
            else range(0 if t is None else t, length)
        fed = {"x": x[list(steps), b].ravel(), "sequence_lens": None}   # a length, no term
        fed.update({k: np.ravel(named[k][d]) for k in ("w", "r", "b", "p") if k in named})
        for k in ("initial_h", "initial_c"):
            if k in named:
                fed[k] = np.ravel(named[k][b, d] if layout else named[k][d, b])
        return [fed[n] for n in INPUTS[kind] if n in named]
    return feeding


def _hooks(kind) -> dict:
    return dict(draw=_draw(kind), draw_honours=frozenset({"optional"}), values=_values(kind),
                onnx=_onnx(kind), numpy=_numpy(kind), feeding=_feeding(kind),
                error_bound=_bound(kind))


@op("onnx_rnn", version=1, **_hooks("rnn"))
def oracle_onnx_rnn(*inputs, open_elements=False, reading=0, **attrs):
    """RNN: Ht = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Wbi + Rbi), f = Tanh by default; outputs Y, Y_h
    (or, with ``open_elements``, their open elements)."""
    return _oracle("rnn")(*inputs, open_elements=open_elements, reading=reading, **attrs)


@op("onnx_gru", version=1, **_hooks("gru"))
def oracle_onnx_gru(*inputs, open_elements=False, reading=0, **attrs):
    """GRU: zt, rt = f(...), ht = g(...) (linear_before_reset 0 or 1), Ht = (1 - zt) (.) ht +
    zt (.) Ht-1, f = Sigmoid and g = Tanh by default; outputs Y, Y_h."""
    return _oracle("gru")(*inputs, open_elements=open_elements, reading=reading, **attrs)


@op("onnx_lstm", version=1, **_hooks("lstm"))
def oracle_onnx_lstm(*inputs, open_elements=False, reading=0, **attrs):
    """LSTM: it, ft, ot = f(... + P (.) C ...), ct = g(...), Ct = ft (.) Ct-1 + it (.) ct,
    Ht = ot (.) h(Ct), f = Sigmoid, g = h = Tanh by default; outputs Y, Y_h, Y_c."""
    return _oracle("lstm")(*inputs, open_elements=open_elements, reading=reading, **attrs)
