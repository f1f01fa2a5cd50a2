"""XLA Fft (operation semantics, "Fft"): forward and inverse Fourier transforms of real and
complex data over the innermost 1 to 3 axes, their time-domain lengths ``fft_length``.

FFT: complex to complex, forward, shape kept. IFFT: its inverse. RFFT: real to complex, the
innermost axis cut to ``fft_length[-1] // 2 + 1`` (the conjugate-symmetric bins past the
Nyquist frequency omitted). IRFFT: complex to real, the innermost axis grown to
``fft_length[-1]``, the bins past the Nyquist frequency inferred as the conjugates of the given
ones. Several lengths: 'equivalent to applying a sequence of FFT operations to each of the
innermost axes'; the real-complex transform of the innermost axis comes first for RFFT and last
for IRFFT, the other axes being complex to complex.

The text names the DFT without writing its sum; the oracle is the standard one (the sum ONNX
DFT's text writes): ``y[k] = sum_n x[n] exp(-2 pi i sum_j k_j n_j / N_j)``, the inverse with
``+`` and divided by ``N = prod N_j``. The multidimensional sum is evaluated in one pass (the
passes the text describes compose into it: each is linear), each twiddle
``exp(2 pi i m / N)`` correctly rounded (Arb: :func:`conform.ops.onnx_dft.twiddles`), exact
products and a double-double sum. IRFFT, the inner axis last: after the inverse transform of
the other axes, the innermost bins k > n/2 are the conjugates of bins n - k, so the real result
is ``(1/N) sum w_k Re(X[k'..., k] exp(...))`` over the given bins, w 1 at bin 0 and at the
Nyquist bin (even n), 2 elsewhere: the imaginary parts of those two bins do not reach it.
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import component_dtype
from conform.op_registry import op
from conform.ops._double_double import sum_of_products
from conform.ops._lowering import unsupported
from conform.ops.error_bounds import judged_bound, underflow_term
from conform.ops.onnx_dft import direct_factor, fft_factor, twiddle_error, twiddles

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")
MAX_SIDES = {1: 16, 2: 8, 3: 4}   # the longest transformed side drawn, by transformed axes


def _given_sizes(fft_type: str, lengths) -> list[int]:
    """The operand's transformed sides: the lengths, or for IRFFT the innermost n // 2 + 1."""
    sizes = list(lengths)
    if fft_type == "IRFFT":
        sizes[-1] = sizes[-1] // 2 + 1
    return sizes


def _result_sizes(fft_type: str, lengths) -> list[int]:
    sizes = list(lengths)
    if fft_type == "RFFT":
        sizes[-1] = sizes[-1] // 2 + 1
    return sizes


def _grid(sizes) -> np.ndarray:
    """Every multi-index of ``sizes``, row-major, as rows."""
    return np.indices(sizes).reshape(len(sizes), -1).T


def _weights(fft_type: str, lengths) -> np.ndarray:
    """Per given element, its weight in the sum: 1, or for IRFFT 2 at the innermost bins whose
    conjugates complete the spectrum (0 < k < n / 2)."""
    given = _grid(_given_sizes(fft_type, lengths))
    if fft_type != "IRFFT":
        return np.ones(len(given))
    k, n = given[:, -1], lengths[-1]
    return np.where((k == 0) | (2 * k == n), 1.0, 2.0)


def transform(x: np.ndarray, *, fft_type: str, fft_length) -> np.ndarray:
    """The transform the text defines of ``x`` (complex128, or float64 for RFFT) over its
    ``len(fft_length)`` innermost axes, evaluated directly (see the module docstring)."""
    lengths = [int(n) for n in fft_length]
    d, total = len(lengths), math.prod(lengths)
    batch = x.shape[:x.ndim - d]
    out_sizes = _result_sizes(fft_type, lengths)
    strides = np.array([total // n for n in lengths])
    turns = (_grid(out_sizes) * strides) @ _grid(_given_sizes(fft_type, lengths)).T % total
    cos, sin = twiddles(total)
    c, s = cos[turns], sin[turns] * (1 if fft_type in ("IFFT", "IRFFT") else -1)
    w = _weights(fft_type, lengths)
    flat = x.reshape(batch + (-1,))[..., None, :]
    values = np.concatenate([np.real(flat), np.imag(flat)], -1)
    divisor = total if fft_type in ("IFFT", "IRFFT") else 1
    real = sum_of_products([np.concatenate([c * w, -s * w], -1), values], [-1], divisor=divisor)
    if fft_type == "IRFFT":
        return real.reshape(batch + tuple(out_sizes))
    imag = sum_of_products([np.concatenate([s * w, c * w], -1), values], [-1], divisor=divisor)
    out = np.empty(real.shape, np.complex128)
    out.real, out.imag = real, imag
    return out.reshape(batch + tuple(out_sizes))


# ---- drawing -------------------------------------------------------------------------------

def draw_fft(draw, kit, spec, dtype):
    """``dtype`` is the complex type: a transform type, 1 to 3 transformed axes of 1 to
    MAX_SIDES points (odd and prime lengths and 1 included), 0 to 2 batch axes."""
    st = kit.st
    fft_type = draw(st.sampled_from(FFT_TYPES))
    d = draw(st.integers(1, 3))
    lengths = [draw(st.integers(1, MAX_SIDES[d])) for _ in range(d)]
    batch = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2))))
    part = component_dtype(dtype)
    operand = part if fft_type == "RFFT" else dtype
    result = part if fft_type == "IRFFT" else dtype
    shape = batch + tuple(_given_sizes(fft_type, lengths))
    return kit.Signature((operand,), (shape,), {"fft_type": fft_type, "fft_length": lengths},
                         result)


# ---- bound, lowering, numpy, feeding ---------------------------------------------------------

def fft_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes, subnormals="ieee"):
    """Per element, the larger of two bounds, the text fixing no algorithm (the 1-D terms of
    ops/onnx_dft.py, composed over the axes):

    * the passes of the text evaluated directly, axis by axis: each pass of ``N_j`` terms within
      ``c_j = direct_factor(N_j)`` relative to the sum of its terms' magnitudes, so the result
      within ``(prod_j (1 + c_j) - 1) S``, ``S`` the weighted sum of the operand's magnitudes
      over the transformed axes (the inverse: divided by N, and ``u S / N`` for the scaling);
    * an FFT of ``L = sum_j ceil(log2 N_j)`` butterfly stages (Higham 2002, Theorem 24.2: the
      proof holds for any product of stages): ``fft_factor(L) ||y||_2``, ``||y||_2`` the norm
      of the exact transform over the transformed axes by Parseval (``sqrt(N) ||x||_2``
      forward, ``||X||_2 / sqrt(N)`` inverse, X the spectrum completed for IRFFT);

    plus ``2N + 4LN`` products below the normal range (``underflow_term``). NaN (region
    ``unbounded_evaluation``) where the operand holds a non-finite value or ``4N (1 + p) S``
    reaches the largest finite value (a chirp-z FFT's products can overflow there)."""
    (x,) = inputs
    fft_type, lengths = attrs["fft_type"], [int(n) for n in attrs["fft_length"]]
    d, total = len(lengths), math.prod(lengths)
    part = component_dtype(out_dtype)
    mu, p = twiddle_error(u, constants["trig_ulp"])
    w = _weights(fft_type, lengths)
    magnitudes = np.abs(x).reshape(x.shape[:x.ndim - d] + (-1,))
    s = np.sum(magnitudes * w, axis=-1)
    energy = np.sqrt(np.sum(magnitudes ** 2 * w, axis=-1))
    direct = (math.prod(1 + direct_factor(n, u, p) for n in lengths) - 1) * s
    steps = sum(max(math.ceil(math.log2(n)), 1) for n in lengths)
    inverse = fft_type in ("IFFT", "IRFFT")
    norm = energy / math.sqrt(total) if inverse else energy * math.sqrt(total)
    if inverse:
        direct = direct / total + u * s / total
    each = np.maximum(direct, fft_factor(steps, u, mu) * norm) \
        + underflow_term(2 * total + 4 * steps * total, part, subnormals=subnormals)
    unbounded = ~np.isfinite(s) | ((1 + p) * s * 4 * total >= np.finfo(part).max)
    shaped = np.expand_dims(np.where(unbounded, np.nan, each), tuple(range(-d, 0)))
    return (judged_bound(np.broadcast_to(shaped, np.shape(outputs[0])), outputs[0]),)


def lax_fft(lax, attrs):
    kind, lengths = attrs["fft_type"], tuple(int(n) for n in attrs["fft_length"])
    return lambda x: lax.fft(x, kind, lengths)


def numpy_fft(operand, *, fft_type, fft_length):
    """The numpy backend: ``numpy.fft``'s n-dimensional transforms over the innermost axes."""
    axes = tuple(range(-len(fft_length), 0))
    fn = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn,
          "IRFFT": np.fft.irfftn}[fft_type]
    out = fn(operand, s=list(fft_length), axes=axes)
    if fft_type != "IRFFT" and operand.dtype in (np.float32, np.complex64) \
            and out.dtype != np.complex64:
        raise unsupported(f"numpy.fft returns {out.dtype} for {operand.dtype}")
    return (out,)


def feed_fft(inputs, attrs, index):
    """out[index] combines every operand element of its batch index (the transformed axes)."""
    (x,) = inputs
    d = len(attrs["fft_length"])
    return [np.ravel(x[tuple(index[:len(index) - d])])]


@op("fft", version=1, draw=draw_fft, error_bound=fft_bound, lax=lax_fft, numpy=numpy_fft,
    feeding=feed_fft)
def oracle_fft(operand, *, fft_type, fft_length):
    """XLA Fft of ``fft_type`` over the innermost ``len(fft_length)`` axes: the DFT sum
    (see :func:`transform`)."""
    return (transform(operand, fft_type=fft_type, fft_length=fft_length),)
