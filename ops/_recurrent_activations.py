"""The activation functions ONNX RNN, GRU and LSTM name (``onnx.defs.get_schema('LSTM',
22).doc``, "Activation functions"), each with its float64 value, the largest slope it has over
an interval (to carry an argument's error through it) and the error of its own evaluation in a
type T (to bound a runtime's evaluation).

The text's list::

    Relu(x) - max(0, x)                Tanh(x) - (1 - e^{-2x})/(1 + e^{-2x})
    Sigmoid(x) - 1/(1 + e^{-x})        Affine(x) - alpha*x + beta
    LeakyRelu(x) - x if x >= 0 else alpha * x
    ThresholdedRelu(x) - x if x >= alpha else 0
    ScaledTanh(x) - alpha*Tanh(beta*x) HardSigmoid(x) - min(max(alpha*x + beta, 0), 1)
    Elu(x) - x if x >= 0 else alpha*(e^x - 1)
    Softsign(x) - x/(1 + |x|)          Softplus(x) - log(1 + e^x)

activation_alpha and activation_beta: "Default values are the same as of corresponding ONNX
operators" (LeakyRelu alpha 0.01, ThresholdedRelu 1.0, HardSigmoid 0.2 and 0.5, Elu 1.0).
Affine and ScaledTanh are no operator of the default domain (they were experimental and removed):
their parameters have no default the text gives, so the suite always writes them.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from conform.ops._activation_bounds import attr_error, f32, ulp

#: name -> (takes alpha, takes beta, default alpha, default beta); None: no default the text gives
PARAMETERS = {
    "Relu": (False, False, None, None), "Tanh": (False, False, None, None),
    "Sigmoid": (False, False, None, None), "Affine": (True, True, None, None),
    "LeakyRelu": (True, False, 0.01, None), "ThresholdedRelu": (True, False, 1.0, None),
    "ScaledTanh": (True, True, None, None), "HardSigmoid": (True, True, 0.2, 0.5),
    "Elu": (True, False, 1.0, None), "Softsign": (False, False, None, None),
    "Softplus": (False, False, None, None),
}


def sigmoid(x):
    """1 / (1 + e^-x), without cancellation or overflow in float64."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


_VALUES = {
    "Relu": lambda x, a, b: np.maximum(x, 0.0),
    "Tanh": lambda x, a, b: np.tanh(x),
    "Sigmoid": lambda x, a, b: sigmoid(x),
    "Affine": lambda x, a, b: a * x + b,
    "LeakyRelu": lambda x, a, b: np.where(x >= 0, x, a * x),
    "ThresholdedRelu": lambda x, a, b: np.where(x >= a, x, 0.0),
    "ScaledTanh": lambda x, a, b: a * np.tanh(b * x),
    "HardSigmoid": lambda x, a, b: np.clip(a * x + b, 0.0, 1.0),
    "Elu": lambda x, a, b: np.where(x >= 0, x, a * np.expm1(np.minimum(x, 0.0))),
    "Softsign": lambda x, a, b: x / (1 + np.abs(x)),
    "Softplus": lambda x, a, b: np.logaddexp(0.0, x),
}


def _tanh_slope(m):
    return 1 - np.tanh(m) ** 2


def _slope(name, a, e, alpha, beta):
    """The largest ``|f'|`` over ``[a - e, a + e]`` (a Lipschitz constant there)."""
    m = np.maximum(np.abs(a) - e, 0.0)          # the smallest |x| of the interval
    right = a + e
    table = {
        "Relu": lambda: 1.0, "Tanh": lambda: _tanh_slope(m),
        "Sigmoid": lambda: sigmoid(m) * (1 - sigmoid(m)), "Affine": lambda: abs(alpha),
        "LeakyRelu": lambda: max(1.0, abs(alpha)), "ThresholdedRelu": lambda: 1.0,
        "ScaledTanh": lambda: abs(alpha * beta) * _tanh_slope(abs(beta) * m),
        "HardSigmoid": lambda: abs(alpha),
        "Elu": lambda: np.maximum(np.where(right >= 0, 1.0, 0.0),
                                  abs(alpha) * np.exp(np.minimum(right, 0.0))),
        "Softsign": lambda: 1 / (1 + m) ** 2, "Softplus": lambda: sigmoid(right),
    }
    return table[name]()


class Precision(NamedTuple):
    """How a runtime evaluates in T: its name, unit roundoff and the ULP bounds of its
    elementary functions (the spec's ``constants``: tanh_ulp, sigmoid_ulp, expm1_ulp, softplus_ulp)."""

    dtype: str
    u: float
    constants: dict


def _own_error(name, a, e, ay, alpha, beta, p: Precision):
    """The error of ``f``'s evaluation in T at an argument within ``e`` of ``a`` (``ay`` a
    bound on ``|f|`` there): each operation one rounding, each elementary function within its
    ULP bound of its value (the bounds of the element-wise specs: tanh.yaml, logistic.yaml,
    softplus.yaml, elu.yaml's expm1; a formula that cancels or overflows, as ``e^x - 1`` or
    ``log(1 + e^x)`` written out, is not the value and fails), each float attribute rounded
    into T (``attr_error``)."""
    u, c, dtype = p.u, p.constants, p.dtype
    ax, negative = np.abs(a) + e, a - e < 0
    da = attr_error(alpha, dtype) if alpha is not None else 0.0
    db = attr_error(beta, dtype) if beta is not None else 0.0
    if name in ("Relu", "ThresholdedRelu"):
        return 0.0
    if name == "Tanh":
        return c["tanh_ulp"] * ulp(ay, dtype)
    if name == "Sigmoid":
        return c["sigmoid_ulp"] * ulp(ay, dtype)
    if name in ("Affine", "HardSigmoid"):
        return u * abs(alpha) * ax + u * (abs(alpha) * ax + abs(beta)) + ax * da + db
    if name == "LeakyRelu":
        return np.where(negative, u * abs(alpha) * ax + ax * da, 0.0)
    if name == "ScaledTanh":
        t = np.tanh(abs(beta) * ax)
        inner = c["tanh_ulp"] * ulp(t, dtype) + u * abs(beta) * ax + ax * db
        return abs(alpha) * inner + u * ay + t * da
    if name == "Elu":   # alpha times the value e^x - 1 (expm1), rounded
        m1 = -np.expm1(np.minimum(a - e, 0.0))
        inner = c["expm1_ulp"] * ulp(m1, dtype)
        return np.where(negative, abs(alpha) * inner + u * ay + m1 * da, 0.0)
    if name == "Softsign":
        return 2.5 * u * ay                       # 1 + |x| and the division: gamma(2) and slack
    return c["softplus_ulp"] * ulp(ay, dtype)     # Softplus


class Activation(NamedTuple):
    """One activation of a cell, its alpha and beta as the node carries them (float32)."""

    name: str
    alpha: float | None = None
    beta: float | None = None

    def __call__(self, x):
        """f(x) in float64."""
        return _VALUES[self.name](x, self.alpha, self.beta)

    def with_error(self, a, e, p: Precision | None):
        """``(f(a), bound)``: the bound on ``|f~(a~) - f(a)|`` for an argument ``a~`` within
        ``e`` of ``a`` and ``f~`` the evaluation in T (0 where ``p`` is None: the oracle)."""
        y = self(a)
        if p is None:
            return y, 0.0
        carried = _slope(self.name, a, e, self.alpha, self.beta) * e
        if self.name == "ThresholdedRelu":   # the jump of size ~alpha at x = alpha
            window = e + attr_error(self.alpha, p.dtype)
            carried = carried + np.where(np.abs(a - self.alpha) <= window, np.abs(a) + window, 0.0)
        return y, carried + _own_error(self.name, a, e, np.abs(y) + carried, self.alpha,
                                       self.beta, p)


def activation_list(names, alphas, betas) -> list[Activation]:
    """The node's activations with their parameters: activation_alpha and activation_beta are
    'consumed in the order of activation functions'; the suite writes a list only where every
    activation takes that parameter (so the positional and the consuming reading agree), else
    each takes its operator's default (a float attribute: float32 too)."""
    out = []
    for k, name in enumerate(names):
        takes_a, takes_b, default_a, default_b = PARAMETERS[name]
        alpha = alphas[k] if alphas else default_a
        beta = betas[k] if betas else default_b
        alpha, beta = (None if v is None else f32(v) for v in (alpha, beta))
        out.append(Activation(name, alpha if takes_a else None, beta if takes_b else None))
    return out
