"""ONNX STFT (opset 17), written from the operator's text
(``onnx.defs.get_schema("STFT", 17).doc`` and its inputs' texts): frames of ``frame_length``
samples every ``frame_step`` samples of a real ([batch, length, 1]) or complex
([batch, length, 2]) signal, ``floor((length - frame_length) / frame_step) + 1`` of them, each
multiplied by ``window`` (absent: all ones) and transformed by a ``frame_length``-point DFT;
``onesided`` (default 1, real input and window only) keeps bins 0 .. frame_length // 2.
``frame_length`` absent: the window's length, or without a window the signal's.

Each frame's DFT is :func:`conform.ops.onnx_dft.dft` (the text's sum, twiddles correctly
rounded, double-double sums) of the windowed frame, split exactly into ``hi + lo`` (TwoProduct)
so that float64 windows lose nothing; the bound is the DFT's (:func:`conform.ops.onnx_dft.
dft_bound`) plus the window products' rounding.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import np_dtype
from conform.op_registry import op
from conform.ops._exact import two_product
from conform.ops._lowering import unsupported
from conform.ops.error_bounds import judged_bound, underflow_term
from conform.ops.onnx_dft import dft, dft_bound
from conform.ops.optional_inputs import ABSENT, by_name, onnx_operands

NAMES = ("signal", "frame_step", "window", "frame_length")
MAX_LENGTH = 12


def _frames(given: dict) -> tuple[np.ndarray, np.ndarray, int]:
    """The frames (batch, frames, frame_length, parts), the window (ones where absent) and
    the onesided default's input: frame_length, step and the window as the text infers them."""
    x = given["signal"]
    if "frame_length" in given:
        length = int(given["frame_length"])
    else:
        length = given["window"].shape[0] if "window" in given else x.shape[1]
    step = int(given["frame_step"])
    count = (x.shape[1] - length) // step + 1
    at = np.arange(count)[:, None] * step + np.arange(length)[None, :]
    window = given.get("window", np.ones(length))
    return x[:, at], window, length


def _onesided(attrs: dict) -> int:
    return attrs.get("onesided", 1)


def stft(given: dict, attrs: dict) -> np.ndarray:
    """(batch, frames, bins, 2): each windowed frame's DFT, the window products exact."""
    frames, window, length = _frames(given)
    hi, lo = two_product(frames, window[:, None])
    settings = {"n": length, "axis": 2, "inverse": 0, "onesided": _onesided(attrs)}
    return dft(hi, **settings) + dft(lo, **settings)


def stft_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple:
    """The DFT's bound (``dft_bound``: the larger of the direct sum's and a radix-2 FFT's) of
    the windowed frames, plus each window product's rounding, ``u |w_j x_j|`` (through a
    transform whose twiddles have modulus 1: at most ``u sum_j |w_j x_j|`` per bin), and half
    the smallest subnormal per product rounded below the normal range (Higham 2002, §2.1)."""
    given = by_name(NAMES, inputs, attrs.get(ABSENT, ()))
    frames, window, length = _frames(given)
    windowed = frames * window[:, None]
    hook = dft_bound(("input",), 2)
    (base,) = hook([windowed], {"onesided": _onesided(attrs)}, outputs, out_dtype=out_dtype,
                   u=u, constants=constants, dtypes=dtypes)
    products = np.sum(np.abs(windowed), axis=(2, 3))[:, :, None, None]
    extra = u * products + underflow_term(2 * length, out_dtype)
    return (judged_bound(base + extra),)


def feed_stft(inputs, attrs, index):
    """out[b, f, k, part] reads frame f of row b (both parts) and the whole window."""
    given = by_name(NAMES, inputs, attrs.get(ABSENT, ()))
    frames, _, _ = _frames(given)
    fed = {"signal": frames[index[0], index[1]].ravel()}
    if "window" in given:
        fed["window"] = given["window"].ravel()
    return [fed.get(name) for name in NAMES if name in given]


def draw_stft(draw, kit, spec, dtype):
    """Batch 1-2, a signal of 1-12 samples, real or complex (complex: onesided 0, as the text
    requires), onesided absent (1), 0 or 1; window present or absent, frame_length present or
    absent; the lengths themselves from :func:`values_stft` (the window's shape here)."""
    st = kit.st
    batch, samples = draw(st.integers(1, 2)), draw(st.integers(1, MAX_LENGTH))
    parts = draw(st.sampled_from((1, 2)))
    onesided = 0 if parts == 2 else draw(st.sampled_from((None, 0, 1)))
    attrs = {} if onesided is None else {"onesided": onesided}
    index = draw(st.sampled_from(("int32", "int64")))
    length = draw(st.integers(1, samples))
    with_window, with_length = draw(st.booleans()), draw(st.booleans())
    dtypes, shapes, absent = [dtype, index], [(batch, samples, parts), ()], []
    for name, present, kind, shape in (("window", with_window, dtype, (length,)),
                                       ("frame_length", with_length, index, ())):
        if present:
            dtypes.append(kind)
            shapes.append(shape)
        else:
            absent.append(name)
    return kit.Signature(tuple(dtypes), tuple(shapes), kit.with_absent(attrs, absent), dtype)


def values_stft(rng, inputs, attrs):
    """frame_step in [1, 4]; frame_length the window's length where both are given, else in
    [1, signal length]."""
    given = by_name(NAMES, inputs, attrs.get(ABSENT, ()))
    step = given["frame_step"]
    given["frame_step"] = np.asarray(rng.integers(1, 5), step.dtype)
    if "frame_length" in given:
        top = given["signal"].shape[1]
        length = given["window"].shape[0] if "window" in given else int(rng.integers(1, top + 1))
        given["frame_length"] = np.asarray(length, given["frame_length"].dtype)
    return [given[name] for name in NAMES if name in given]


def onnx_stft(case, graph):
    """One STFT node: absent optional inputs as "", onesided where the case gives it."""
    supplied = dict(zip([n for n in NAMES if n not in case.attrs.get(ABSENT, ())], graph.inputs))
    graph.node(graph.op_type, onnx_operands(supplied.get(name) for name in NAMES),
               **{k: v for k, v in case.attrs.items() if k != ABSENT})


def numpy_stft(*inputs, absent_inputs=(), **attrs):
    """The numpy backend: frames by fancy indexing, times the window, ``np.fft.rfft`` or
    ``np.fft.fft`` along the frame (float32 and float64: NumPy keeps their precision)."""
    given = by_name(NAMES, inputs, absent_inputs)
    x = given["signal"]
    if x.dtype not in (np.float32, np.float64):
        raise unsupported(f"numpy.fft computes no {x.dtype}")
    frames, window, length = _frames(given)
    z = frames[..., 0] + 1j * frames[..., 1] if x.shape[-1] == 2 else frames[..., 0]
    z = z * window.astype(x.dtype)
    y = (np.fft.rfft if _onesided(attrs) else np.fft.fft)(z, n=length, axis=2)
    out = np.stack([y.real, y.imag], -1)
    if out.dtype != np_dtype(str(x.dtype)):
        raise unsupported(f"numpy.fft returns {out.dtype} for {x.dtype}")
    return (out,)


@op("onnx_stft", version=1, draw=draw_stft, draw_honours=frozenset({"optional", "scalar"}),
    values=values_stft, value_dependent_shape=True, onnx=onnx_stft, numpy=numpy_stft,
    error_bound=stft_bound, feeding=feed_stft)
def oracle_stft(*inputs, absent_inputs=(), **attrs):
    """STFT-17 (see :func:`stft`)."""
    return (stft(by_name(NAMES, inputs, absent_inputs), attrs),)
