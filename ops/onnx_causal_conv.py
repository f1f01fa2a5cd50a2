"""ONNX CausalConvWithState (opset 27), written from the operator's text
(``onnx.defs.get_schema("CausalConvWithState", 27).doc`` and its context-dependent function
body): ``past_state`` (zeros where absent) and ``input`` concatenated along the length, a
depthwise Conv (group = channels, weight (channels, 1, k), optional bias) over it, so that
``output[b, c, t] = sum_i weight[c, 0, i] * padded[b, c, t + i] + bias[c]``, SiLU
(``y * sigmoid(y)``, computed in float by the body) where ``activation`` is silu or swish, and
``present_state`` the last ``k - 1`` positions of the padded sequence.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op
from conform.ops._double_double import sum_of_products
from conform.ops._lowering import unsupported
from conform.ops.error_bounds import gamma, judged_bound, reaches_max_finite, underflow_term
from conform.ops.optional_inputs import ABSENT, by_name, onnx_operands

NAMES = ("input", "weight", "bias", "past_state")


def _padded(given: dict) -> np.ndarray:
    """past_state (zeros where absent) followed by the input along the length."""
    x, k = given["input"], given["weight"].shape[-1]
    past = given.get("past_state", np.zeros(x.shape[:2] + (k - 1,), x.dtype))
    return np.concatenate([past.astype(x.dtype), x], axis=2)


def _windows(padded: np.ndarray, k: int, length: int) -> np.ndarray:
    """(batch, channels, length, k): the k padded values each output position reads."""
    return padded[:, :, np.arange(length)[:, None] + np.arange(k)[None, :]]


def _silu(attrs: dict) -> bool:
    return attrs.get("activation", "none") in ("silu", "swish")


def causal_conv(given: dict, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    """(output, present_state) as the text defines them (the sums in double-double)."""
    x, w = given["input"], given["weight"]
    k, length = w.shape[-1], x.shape[2]
    padded = _padded(given)
    windows = _windows(padded, k, length)
    weights = np.broadcast_to(w[None, :, None, 0, :], windows.shape)
    if "bias" in given:
        windows = np.concatenate([windows, np.ones(windows.shape[:3] + (1,))], -1)
        weights = np.concatenate([weights, np.broadcast_to(given["bias"][None, :, None, None],
                                                           windows.shape[:3] + (1,))], -1)
    y = sum_of_products([windows, weights], [-1])
    if _silu(attrs):
        with np.errstate(over="ignore"):
            y = y / (1 + np.exp(-y))
    return y, padded[:, :, length:]


def causal_conv_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """The convolution: ``k`` products and the bias, ``k + 1`` terms summed in any order,
    ``|dy| <= gamma_(k+1) (sum_i |w_i x_i| + |b|)`` (Higham 2002, Lemma 3.1, §3.1) plus half
    the smallest subnormal per product below the normal range (§2.1). SiLU (the body's float
    evaluation, or T's, whichever is coarser: ``u_s = max(u, u_float32)``): its derivative lies
    in [-0.1, 1.1], so ``1.1 |dy|`` passes through; sigmoid within ``sigmoid_ulp`` ULP
    (relative ``2 sigmoid_ulp u_s``), the product one rounding and the cast back to T one more
    (``u``), plus their underflow. NaN (region ``unbounded_evaluation``) where a sum can
    overflow T. present_state is a copy (bound 0)."""
    given = by_name(NAMES, inputs, attrs.get(ABSENT, ()))
    k = given["weight"].shape[-1]
    magnitude = {name: np.abs(v) for name, v in given.items()}
    (terms, _) = causal_conv(magnitude, {})
    dy = gamma(k + 1, u) * terms + underflow_term(k, out_dtype)
    if _silu(attrs):
        u_s = max(u, FLOAT_FORMATS["float32"].unit_roundoff)
        relative = (2 * constants["sigmoid_ulp"] + 1) * u_s + u
        dy = 1.1 * dy + relative * (np.abs(outputs[0]) + 1.1 * dy) + underflow_term(3, out_dtype)
    unbounded = reaches_max_finite(terms, out_dtype, gamma_n=gamma(k + 1, u))
    return judged_bound(dy, unbounded=unbounded), np.zeros(outputs[1].shape)


def feed_causal_conv(inputs, attrs, index, output=0):
    """output[b, c, t] reads padded positions t .. t + k - 1 of channel c (past_state, or the
    zero padding, which is no term, then input), the kernel taps facing a term and the bias;
    present_state[b, c, j] is a copy of padded position L + j."""
    given = by_name(NAMES, inputs, attrs.get(ABSENT, ()))
    b, c, t = index
    x, k = given["input"], given["weight"].shape[-1]
    if output == 1:
        t, k = x.shape[2] + t, 1
    real = np.arange(t, t + k) >= (0 if "past_state" in given else given["weight"].shape[-1] - 1)
    fed = {"input": x[b, c, max(t - (given["weight"].shape[-1] - 1), 0):
                      t + k - (given["weight"].shape[-1] - 1)].ravel(),
           "weight": given["weight"][c, 0][real] if output == 0 else None,
           "bias": given["bias"][c].reshape(1) if "bias" in given and output == 0 else None}
    if "past_state" in given:
        fed["past_state"] = given["past_state"][b, c, t:t + k].ravel()
    return [fed[name] for name in NAMES if name in given]


def draw_causal_conv(draw, kit, spec, dtype):
    """Batch 1-2, channels 1-4, length 1-6, kernel 1-4 (k = 1: an empty state); bias and
    past_state each present or absent; activation absent, none, silu or swish."""
    st = kit.st
    batch, channels = draw(st.integers(1, 2)), draw(st.integers(1, 4))
    length, k = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    activation = draw(st.sampled_from([None, "none", "silu", "swish"]))
    attrs = {} if activation is None else {"activation": activation}
    dtypes, shapes, absent = [dtype, dtype], [(batch, channels, length), (channels, 1, k)], []
    for name, shape in (("bias", (channels,)), ("past_state", (batch, channels, k - 1))):
        if draw(st.booleans()):
            dtypes.append(dtype)
            shapes.append(shape)
        else:
            absent.append(name)
    return kit.Signature(tuple(dtypes), tuple(shapes), kit.with_absent(attrs, absent), dtype)


def onnx_causal_conv(case, graph):
    """One CausalConvWithState node: absent optional inputs as "", the activation if given."""
    supplied = dict(zip([n for n in NAMES if n not in case.attrs.get(ABSENT, ())], graph.inputs))
    graph.node(graph.op_type, onnx_operands(supplied.get(name) for name in NAMES),
               **{k: v for k, v in case.attrs.items() if k != ABSENT})


def numpy_causal_conv(*inputs, absent_inputs=(), **attrs):
    """The numpy backend: the padded windows times the kernel, summed with ``np.sum`` in the
    input's type, the bias added, ``y / (1 + np.exp(-y))`` for SiLU."""
    given = by_name(NAMES, inputs, absent_inputs)
    x, w = given["input"], given["weight"]
    if x.dtype.type not in (np.float16, np.float32):
        raise unsupported(f"numpy computes no {x.dtype} convolution of its own")
    padded = _padded(given)
    y = np.sum(_windows(padded, w.shape[-1], x.shape[2]) * w[None, :, None, 0, :], axis=-1)
    if "bias" in given:
        y = y + given["bias"][None, :, None]
    if _silu(attrs):
        with np.errstate(over="ignore"):
            y = y / (x.dtype.type(1) + np.exp(-y))
    return y.astype(x.dtype), padded[:, :, x.shape[2]:]


@op("onnx_causal_conv_with_state", version=1, draw=draw_causal_conv,
    draw_honours=frozenset({"optional"}), onnx=onnx_causal_conv, numpy=numpy_causal_conv,
    error_bound=causal_conv_bound, feeding=feed_causal_conv)
def oracle_causal_conv_with_state(*inputs, absent_inputs=(), **attrs):
    """CausalConvWithState-27 (see :func:`causal_conv`)."""
    return causal_conv(by_name(NAMES, inputs, absent_inputs), attrs)
