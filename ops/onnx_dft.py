"""ONNX DFT at opset 17 (axis an attribute, default 1) and opset 20 (axis an optional int64
input, default -2), written from the operator texts (``onnx.defs.get_schema("DFT", v)``).

Opset 20's text defines ``y[m, k] = sum_n exp(-2 pi j k n / N) x[m, n]`` and the inverse
``x[m, n] = 1/N sum_k exp(2 pi j k n / N) y[m, k]``; opset 17's says only 'Computes the discrete
Fourier transform of input' and shares every other sentence. The input's last dimension holds
the real part (1) or the real and imaginary parts (2). ``dft_length`` pads with zeros or
truncates the signal along the axis (default its length; for IRFFT, onesided=1 and inverse=1,
``2 * (signal_dim_axis - 1)``). onesided=1 forward takes real input and returns the
``floor(dft_length / 2) + 1`` first bins (RFFT); onesided=1 inverse takes the one-sided complex
spectrum, completed by the conjugate symmetry ``X[k] = X[n_fft - k]*``, and returns the real
signal of dft_length points (IRFFT, last dimension 1).

The oracle evaluates the text's sum directly: twiddles cos and sin of 2 pi (k j mod N) / N
correctly rounded to float64 (Arb, python-flint), exact products and a double-double sum
(:mod:`conform.ops._double_double`). The bound is :func:`dft_bound`.
"""
from __future__ import annotations

import functools

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.op_registry import op
from conform.ops._double_double import sum_of_products
from conform.ops._lowering import unsupported
from conform.ops.optional_inputs import by_name, onnx_operands

INPUTS_17 = ("input", "dft_length")
INPUTS_20 = ("input", "dft_length", "axis")
MAX_SIDE = 12   # the longest signal axis drawn (dft_length up to twice it)


@functools.lru_cache(maxsize=256)
def twiddles(n: int) -> tuple[np.ndarray, np.ndarray]:
    """cos(2 pi m / n) and sin(2 pi m / n) for m < n, each correctly rounded to float64."""
    from flint import arb, ctx, fmpq

    saved, ctx.prec = ctx.prec, 160
    try:
        turns = [arb(fmpq(2 * m, n)) for m in range(n)]
        return (np.array([float(t.cos_pi().mid()) for t in turns]),
                np.array([float(t.sin_pi().mid()) for t in turns]))
    finally:
        ctx.prec = saved


def _signal(x: np.ndarray, axis: int, n: int, irfft: bool) -> tuple[np.ndarray, np.ndarray]:
    """The real and imaginary parts of the n-point signal along the last axis: the input
    truncated or zero-padded to n, or for IRFFT the one-sided spectrum completed by symmetry."""
    real = np.moveaxis(x[..., 0], axis, -1)
    imag = np.moveaxis(x[..., 1], axis, -1) if x.shape[-1] == 2 else np.zeros_like(real)
    if irfft:   # bins 0 .. n//2 as given, bin k > n//2 the conjugate of bin n - k
        source = np.array([k if k <= n // 2 else n - k for k in range(n)], dtype=np.intp)
        sign = np.where(np.arange(n) <= n // 2, 1.0, -1.0)
        return real[..., source], imag[..., source] * sign
    length = real.shape[-1]
    if n <= length:
        return real[..., :n], imag[..., :n]
    pad = [(0, 0)] * (real.ndim - 1) + [(0, n - length)]
    return np.pad(real, pad), np.pad(imag, pad)


def dft(x: np.ndarray, *, n: int, axis: int, inverse: int, onesided: int) -> np.ndarray:
    """The DFT the text defines, of input ``x`` (last dimension 1 or 2), over ``axis``
    (non-negative, below x.ndim - 1), of ``n`` points; output laid out as the text says."""
    irfft = bool(onesided and inverse)
    real, imag = _signal(x, axis, n, irfft)
    bins = n // 2 + 1 if onesided and not inverse else n
    cos, sin = twiddles(n)
    turn = np.outer(np.arange(bins), np.arange(n)) % n
    c, s = cos[turn], (sin[turn] if inverse else -sin[turn])   # exp(+-2 pi j k m / n)
    rows = real[..., None, :], imag[..., None, :]
    divisor = n if inverse else 1
    out_real = sum_of_products([np.concatenate([c, -s], -1), np.concatenate(rows, -1)], [-1],
                               divisor=divisor)
    parts = [out_real]
    if not irfft:
        parts.append(sum_of_products([np.concatenate([s, c], -1), np.concatenate(rows, -1)],
                                     [-1], divisor=divisor))
    return np.moveaxis(np.stack(parts, -1), -2, axis)


def _settings(x, given: dict, attrs: dict, default_axis: int) -> dict:
    """n, axis (non-negative), inverse and onesided of a case."""
    inverse, onesided = attrs.get("inverse", 0), attrs.get("onesided", 0)
    axis = int(given["axis"]) if "axis" in given else attrs.get("axis", default_axis)
    axis %= x.ndim
    if "dft_length" in given:
        n = int(given["dft_length"])
    else:
        n = 2 * (x.shape[axis] - 1) if onesided and inverse else x.shape[axis]
    return {"n": n, "axis": axis, "inverse": inverse, "onesided": onesided}


# ---- drawing -----------------------------------------------------------------------------

def _draw_layout(draw, kit, dtype, *, with_axis_input: bool):
    """inverse and onesided (absent or given), real or complex input as they allow, and a
    shape whose signal sides are 1 to MAX_SIDE (2 or more for IRFFT); the axis attribute
    (opset 17) is drawn by the caller."""
    st = kit.st
    inverse, onesided = draw(st.sampled_from((0, 1))), draw(st.sampled_from((0, 1)))
    width = 2 if onesided and inverse else 1 if onesided else draw(st.sampled_from((1, 2)))
    rank = draw(st.integers(2, 4))
    top = {2: MAX_SIDE, 3: 8, 4: 4}[rank]
    low = 2 if onesided and inverse else 1
    shape = tuple(draw(st.integers(low, top)) for _ in range(rank - 1)) + (width,)
    attrs = {}
    for name, value in (("inverse", inverse), ("onesided", onesided)):
        if value or draw(st.booleans()):
            attrs[name] = value
    index = draw(st.sampled_from(("int32", "int64")))
    absent = [name for name in ("dft_length", "axis")[:1 + with_axis_input] if draw(st.booleans())]
    return shape, attrs, index, absent


def draw_dft_20(draw, kit, spec, dtype):
    """Opset 20: dft_length and axis each present or absent (values from ``values_dft``)."""
    shape, attrs, index, absent = _draw_layout(draw, kit, dtype, with_axis_input=True)
    dtypes = [dtype] + [t for name, t in (("dft_length", index), ("axis", "int64"))
                        if name not in absent]
    return kit.Signature(tuple(dtypes), (shape,) + ((),) * (len(dtypes) - 1),
                         kit.with_absent(attrs, absent), dtype)


def draw_dft_17(draw, kit, spec, dtype):
    """Opset 17: the axis attribute absent (1, where the rank allows it) or in
    [-r, -2] u [0, r - 2]; dft_length present or absent."""
    shape, attrs, index, absent = _draw_layout(draw, kit, dtype, with_axis_input=False)
    rank = len(shape)
    if rank == 2 or draw(kit.st.booleans()):
        at = draw(kit.st.integers(0, rank - 2))
        attrs["axis"] = at - rank if draw(kit.st.booleans()) else at
    dtypes = (dtype,) if absent else (dtype, index)
    return kit.Signature(dtypes, (shape,) + ((),) * (len(dtypes) - 1),
                         kit.with_absent(attrs, absent), dtype)


def values_dft(names: tuple, default_axis: int):
    """The index inputs: axis in [-r, -2] u [0, r - 2]; dft_length from 1 to twice the axis'
    length (padding and truncating), or for IRFFT 2 (m - 1) or 2m - 1 for m given bins (the
    lengths whose one-sided spectrum has exactly the m bins given)."""
    def values(rng, inputs, attrs):
        given = by_name(names, inputs, attrs.get("absent_inputs", ()))
        x = given["input"]
        rank = x.ndim
        if "axis" in given:
            at = int(rng.integers(0, rank - 1))
            given["axis"] = np.asarray(at - rank if rng.integers(0, 2) else at, np.int64)
        axis = _settings(x, given, attrs, default_axis)["axis"]
        if "dft_length" in given:
            m = x.shape[axis]
            n = (2 * m - 1 - int(rng.integers(0, 2)) if attrs.get("onesided") and
                 attrs.get("inverse") else int(rng.integers(1, 2 * m + 1)))
            given["dft_length"] = np.asarray(n, given["dft_length"].dtype)
        return [given[name] for name in names if name in given]
    return values


# ---- bound, lowering, numpy ----------------------------------------------------------------

def _gamma(k, u):
    return k * u / (1 - k * u)


def twiddle_error(u: float, trig_ulp: float) -> tuple[float, float]:
    """``(mu, p)`` of a DFT evaluated in unit roundoff ``u``: ``mu = 2 pi gamma_3 + 2 trig_ulp
    u``, a twiddle's relative error (the angle 2 pi m / n in three roundings, cos and sin within
    ``trig_ulp`` ULPs), and ``p = sqrt(2) gamma_2 + mu``, a term's (a complex product with a
    twiddle, Higham 2002 §3.6)."""
    mu = 2 * np.pi * _gamma(3, u) + 2 * trig_ulp * u
    return mu, np.sqrt(2) * _gamma(2, u) + mu


def direct_factor(n: int, u: float, p: float) -> float:
    """The relative factor of the text's sum of ``n`` terms evaluated directly, each term
    within ``p``: ``|err| <= (gamma_(n-1) (1 + p) + p) sum_j |x_j|`` (Higham 2002 Lemma 3.1)."""
    return _gamma(max(n - 1, 0), u) * (1 + p) + p


def fft_factor(steps: int, u: float, mu: float) -> float:
    """The normwise factor of an FFT of ``steps`` butterfly stages (Higham 2002, Theorem 24.2):
    ``||y^ - y||_2 <= steps eta / (1 - steps eta) ||y||_2``, ``eta = mu + gamma_4 (sqrt(2) +
    mu)``."""
    eta = mu + _gamma(4, u) * (np.sqrt(2) + mu)
    return steps * eta / (1 - steps * eta)


def dft_bound(names: tuple, default_axis: int):
    """Per output element, the larger of two bounds, the text fixing no algorithm:

    * the text's sum evaluated directly: each term a complex product with a twiddle of
      relative error mu (|d| <= sqrt(2) gamma_2 + mu, Higham 2002 §3.6), then n - 1 additions
      per component (gamma_(n-1), Lemma 3.1): |err| <= (gamma_(n-1) (1 + p) + p) sum_j |x_j|,
      p = sqrt(2) gamma_2 + mu;
    * a radix-2 FFT (Higham 2002, Theorem 24.2): ||y^ - y||_2 <= L eta / (1 - L eta) ||y||_2,
      L = ceil(log2 n), eta = mu + gamma_4 (sqrt(2) + mu), which bounds each element's error;

    mu = 2 pi gamma_3 + 2 trig_ulp u (the angle 2 pi m / n in three roundings, cos and sin
    within trig_ulp ULP); the inverse's 1/N adds one rounding (u |y| <= u sum / n); products
    rounded below the normal range add half the smallest subnormal each. NaN where the vector
    holds a non-finite value or 4n times its sum of magnitudes reaches the largest finite
    value (a chirp-z FFT's products, of a padded length below 4n, can overflow there)."""
    def bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
        given = by_name(names, inputs, attrs.get("absent_inputs", ()))
        x = given["input"]
        setting = _settings(x, given, attrs, default_axis)
        n, inverse = setting["n"], setting["inverse"]
        real, imag = _signal(x, setting["axis"], n, bool(setting["onesided"] and inverse))
        magnitude = np.sum(np.hypot(real, imag), axis=-1)
        full = dft(x, **{**setting, "onesided": 0}) if not inverse or not setting["onesided"] \
            else outputs[0]
        norm = np.sqrt(np.sum(np.moveaxis(full, setting["axis"], -2) ** 2, axis=(-2, -1)))
        mu, p = twiddle_error(u, constants["trig_ulp"])
        direct = direct_factor(n, u, p) * magnitude
        steps = max(int(np.ceil(np.log2(n))), 1)
        fft = fft_factor(steps, u, mu) * norm
        fmt = FLOAT_FORMATS[out_dtype]
        # each real product rounded below the normal range errs by up to half the smallest
        # subnormal (Higham §2.1): 2n per component in the sum, 4 per butterfly in an FFT
        underflow = (2 * n + 4 * steps * n) * fmt.min_subnormal
        each = np.maximum(direct / n + u * magnitude / n if inverse else direct, fft) + underflow
        # NaN (the region unbounded_evaluation) where a term is not finite or an evaluation
        # can overflow: a chirp-z (Bluestein) FFT of a length that is no power of two forms
        # products up to M sum_j |x_j|, M < 4n its padded length
        each = np.where(np.isfinite(magnitude) & ((1 + p) * magnitude * 4 * n < fmt.max_finite),
                        each, np.nan)
        shaped = np.expand_dims(each, (setting["axis"], -1))
        return (np.broadcast_to(shaped, outputs[0].shape),)
    return bound


def onnx_dft(names: tuple, axis_attribute: bool):
    """One DFT node: absent optional inputs as ""; inverse, onesided (and opset 17's axis)
    as attributes where the case gives them."""
    def lower(case, graph):
        present = iter(graph.inputs)
        missing = case.attrs.get("absent_inputs", ())
        slots = [None if name in missing else next(present) for name in names]
        keys = ("inverse", "onesided", "axis") if axis_attribute else ("inverse", "onesided")
        graph.node(graph.op_type, onnx_operands(slots),
                   **{k: case.attrs[k] for k in keys if k in case.attrs})
    return lower


def numpy_dft(names: tuple, default_axis: int):
    """The numpy backend: ``np.fft.fft``, ``ifft``, ``rfft`` or ``irfft`` with ``n`` and
    ``axis`` on the complex signal (float32 and float64: NumPy's result type is the input's)."""
    def compute(*inputs, absent_inputs=(), **attrs):
        given = by_name(names, inputs, absent_inputs)
        x = given["input"]
        if x.dtype not in (np.float32, np.float64):
            raise unsupported(f"numpy.fft computes no {x.dtype}")
        s = _settings(x, given, attrs, default_axis)
        z = x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0]
        if s["onesided"]:
            fn = np.fft.irfft if s["inverse"] else np.fft.rfft
        else:
            fn = np.fft.ifft if s["inverse"] else np.fft.fft
        y = fn(z, n=s["n"], axis=s["axis"])
        out = y[..., None] if np.isrealobj(y) else np.stack([y.real, y.imag], -1)
        if out.dtype != x.dtype:
            raise unsupported(f"numpy.fft returns {out.dtype} for {x.dtype}")
        return (out,)
    return compute


def feed_dft(names: tuple, default_axis: int):
    """The feeding rule: out[index] sums the signal along the axis at index's other
    coordinates, every element of it the n-point signal reads (the first n, or for IRFFT the
    one-sided bins 0 .. n // 2), both parts; dft_length and axis are no terms."""
    def feed(inputs, attrs, index):
        given = by_name(names, inputs, attrs.get("absent_inputs", ()))
        x = given["input"]
        settings = _settings(x, given, attrs, default_axis)
        n, axis = settings["n"], settings["axis"]
        read = n // 2 + 1 if settings["onesided"] and settings["inverse"] else n
        at = list(index[:-1])
        at[axis] = slice(0, min(read, x.shape[axis]))
        return [x[tuple(at)].ravel()] + [None] * (len(inputs) - 1)
    return feed


def _register(name: str, names: tuple, default_axis: int, draw, axis_attribute: bool):
    @op(name, version=1, draw=draw, draw_honours=frozenset({"optional", "scalar"}),
        values=values_dft(names, default_axis), value_dependent_shape=True,
        onnx=onnx_dft(names, axis_attribute), numpy=numpy_dft(names, default_axis),
        error_bound=dft_bound(names, default_axis), feeding=feed_dft(names, default_axis))
    def oracle(*inputs, absent_inputs=(), **attrs):
        """The text's DFT (see :func:`dft`) of the case's input, dft_length and axis."""
        given = by_name(names, inputs, absent_inputs)
        return (dft(given["input"], **_settings(given["input"], given, attrs, default_axis)),)
    return oracle


oracle_dft = _register("onnx_dft", INPUTS_20, -2, draw_dft_20, axis_attribute=False)
oracle_dft_opset17 = _register("onnx_dft_opset17", INPUTS_17, 1, draw_dft_17,
                               axis_attribute=True)
