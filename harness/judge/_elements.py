"""Per-element error figures under each error model (the arithmetic behind
:func:`conform.harness.judge.compare.compare`, whose docstring states the models): the ULP of a
reference, rounding into a dtype, the accumulator's format, and each element's error, bound and
special-value failure.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS, component_dtype, is_complex, np_dtype, round_to_format
from conform.ops.error_bounds import sum_gamma

#: Elements per block of :func:`blockwise`: a block's float64 temporaries (512 KiB) stay in
#: the cache and their memory is reused, where a 2**22-element chunk's are each a fresh 32 MiB
#: mapping, faulted in page by page and walked from main memory.
BLOCK = 1 << 16


def blockwise(function, arguments: tuple, size: int, block: int | None = None) -> tuple:
    """``function(*arguments)`` for an element-wise ``function`` of flat arrays of ``size``
    elements that returns a tuple of such arrays, computed ``block`` elements at a time
    (default :data:`BLOCK`): each array of ``size`` elements among the arguments (in tuples and
    lists too) is sliced, anything else (None, a scalar) passed whole, and the blocks' results
    are written into arrays of the full size (a None result stays None). Each element's result depends on that element
    alone, so it is the one call's result, bit for bit.

    >>> blockwise(lambda a, b: (a + b,), (np.arange(5.0), 1.0), 5, block=2)[0].tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0]
    """
    block = block or BLOCK
    if size <= block:
        return function(*arguments)
    out = None
    for low in range(0, size, block):
        high = min(low + block, size)
        part = function(*_sliced(arguments, low, high, size))
        if out is None:   # (a None result stays None)
            out = tuple(None if p is None else np.empty(size, np.asarray(p).dtype) for p in part)
        for whole, piece in zip(out, part):
            if whole is not None:
                whole[low:high] = piece
    return out


def block_ranges(size: int) -> list:
    """``(low, high)`` of each block of :data:`BLOCK` elements of ``size`` (one, empty, for 0).

    >>> block_ranges(0)
    [(0, 0)]
    """
    return [(low, min(low + BLOCK, size)) for low in range(0, max(size, 1), BLOCK)]


def _sliced(value, low: int, high: int, size: int):
    if isinstance(value, (tuple, list)):
        return type(value)(_sliced(v, low, high, size) for v in value)
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.size == size:
        return value[low:high]
    return value


_EXPONENT_BITS = 0x7FF << 52


def ulp_of(reference: np.ndarray, dtype: str) -> np.ndarray:
    """ULP of ``dtype`` in the binade of each float64 reference value, clamped at the smallest normal.

    >>> float(ulp_of(np.array(1.0), "float32"))
    1.1920928955078125e-07
    >>> float(ulp_of(np.array(0.0), "float16")) == 2.0 ** -24
    True
    """
    fmt = FLOAT_FORMATS[dtype]
    reference = np.asarray(reference, np.float64)
    # the binade's power of two, 2**exponent, from the float64 bits with the sign and the
    # fraction cleared (|x| in [2**exponent, 2**(exponent + 1))): a subnormal or zero float64
    # reads as 0, below any format's emin (raised to it), an infinity or NaN as inf (the
    # format's emax is taken); scaled by 2**(1 - p) (a power of two times a power of two:
    # exact, float64's subnormal ULPs included)
    binade = np.maximum((reference.view(np.int64) & _EXPONENT_BITS).view(np.float64),
                        2.0 ** fmt.emin)
    if binade.size and binade.max() == np.inf:
        binade = np.where(binade == np.inf, 2.0 ** fmt.emax, binade)
    return binade * 2.0 ** (1 - fmt.precision)


#: Formats NumPy itself rounds into, once and correctly (float64 -> float16/float32 casts)
_NUMPY_ROUNDED = ("float16", "float32", "float64")


def round_to_dtype(values: np.ndarray, dtype: str, *, saturate: bool = False) -> np.ndarray:
    """``values`` rounded once, to nearest even, into ``dtype``; on overflow, the format's
    :attr:`~conform.dtypes.FloatFormat.overflow_value` (inf, or NaN in a format without
    infinities), or ``±max_finite`` under ``saturate``.

    NumPy's float64 -> float16/float32 casts round once; ml_dtypes' float64 -> bfloat16 (and
    -> float8) goes through float32 and can round twice, so those are rounded here explicitly
    (:func:`~conform.dtypes.round_to_format`).

    >>> float(round_to_dtype(np.array(1.0 + 2.0 ** -8 + 2.0 ** -30), "bfloat16")[()])
    1.0078125
    """
    if is_complex(dtype):   # each part into the component type
        values = np.asarray(values)
        out = np.empty(values.shape, np_dtype(dtype))
        part = component_dtype(dtype)
        with np.errstate(over="ignore"):
            out.real = round_to_dtype(values.real, part, saturate=saturate)
            out.imag = round_to_dtype(values.imag, part, saturate=saturate)
        return out
    fmt = FLOAT_FORMATS.get(dtype)
    if fmt is None or (dtype in _NUMPY_ROUNDED and not saturate):
        with np.errstate(over="ignore", invalid="ignore"):   # overflow: ±inf is the answer
            return np.asarray(values).astype(np_dtype(dtype))
    # exactly representable now: the cast does not round a second time
    return round_to_format(values, fmt, saturate=saturate).astype(np_dtype(dtype))


def accumulator_roundoff(out_dtype: str, params: dict) -> float:
    """Unit roundoff of the accumulator: the output type's, or finer if the model requires
    ``accumulator_at_least`` a wider type (e.g. float16 results accumulated in float32)."""
    return accumulator_format(out_dtype, params).unit_roundoff


def accumulator_format(out_dtype: str, params: dict):
    """The accumulator's :class:`~conform.dtypes.FloatFormat`: the output type's, or that of
    ``accumulator_at_least`` where it is finer."""
    fmt = FLOAT_FORMATS[out_dtype]
    wider = params.get("accumulator_at_least")
    if wider and FLOAT_FORMATS[wider].unit_roundoff < fmt.unit_roundoff:
        return FLOAT_FORMATS[wider]
    return fmt


def _exact(actual, expected, out_dtype, strict_zero, saturate=False):
    """Per element: does ``actual`` differ from the reference rounded once to ``out_dtype``?
    (A complex element differs where either part does.)"""
    if is_complex(out_dtype):
        part = component_dtype(out_dtype)
        expected = np.asarray(expected)
        return (_exact(actual.real, expected.real, part, strict_zero, saturate)
                | _exact(actual.imag, expected.imag, part, strict_zero, saturate))
    with np.errstate(all="ignore"):
        want = round_to_dtype(expected, out_dtype, saturate=saturate)
    if out_dtype not in FLOAT_FORMATS:
        return actual != want
    if actual.dtype == want.dtype and actual.dtype.kind == "f":   # NumPy's own: compared as is
        a, w = actual, want
    else:   # (ml_dtypes' formats: compared in float64, each value exact there)
        a, w = actual.astype(np.float64), want.astype(np.float64)
    # (each step taken only where the rounded reference has a NaN, or a zero: a NaN pair
    # matches, a zero pair must have one sign)
    bad = a != w
    if np.isnan(w).any():
        bad &= ~(np.isnan(a) & np.isnan(w))
    if strict_zero:
        zero = w == 0
        if zero.any():
            bad |= zero & (a == 0) & (np.signbit(a) != np.signbit(w))
    return bad


def _rounding_error(actual, expected, out_dtype, strict_zero, saturate):
    """Per element (error, bound, special_failure) under the correctly_rounded model: the
    distance of ``actual`` from the correctly rounded reference in ULPs of the reference's
    binade (any non-zero distance fails: the bound is 0), or a special-value failure (a NaN,
    infinity or zero where the rounded reference has another value or sign)."""
    bad = _exact(actual, expected, out_dtype, strict_zero, saturate)
    a = actual.astype(np.float64)
    want = round_to_dtype(expected, out_dtype, saturate=saturate).astype(np.float64)
    special = bad & (~np.isfinite(a) | ~np.isfinite(want) | ((a == 0) & (want == 0)))
    distance = np.where(bad & ~special, np.abs(a - want), 0.0)
    return distance / ulp_of(np.where(np.isfinite(want), want, 0.0), out_dtype), \
        np.zeros(want.shape), special


def _numeric_error(actual, expected, out_dtype, model, accumulation, residual=None):
    """Per-element (error, bound, special_failure) in the model's unit; ``residual``: the rest
    of the reference beyond float64, or None."""
    diff, special_bad, a_measured, e = _difference(actual, expected, out_dtype, model, residual)
    return (*_error_and_bound(diff, e, a_measured, out_dtype, model, accumulation), special_bad)


def _difference(actual, expected, out_dtype, model, residual=None):
    """Per element ``(|a - e|, special_failure, a_measured, e)``: the distance of the actual
    from the reference (0 where the special values settle the element), with an infinite (or,
    in a format without infinities, NaN) actual for a finite reference measured as the value
    past the largest finite one, and the reference as the model reads it (clamped under
    ``saturate``)."""
    fmt = FLOAT_FORMATS[out_dtype]
    a = actual.astype(np.float64)
    e = np.asarray(expected, np.float64)
    if fmt.has_inf and not model.get("saturate") and np.isfinite(a).all() and np.isfinite(e).all():
        # every value finite (most blocks of a sweep): no special value, every element measured
        diff = np.abs(a - e) if residual is None else np.abs((a - e) - residual)
        return diff, np.zeros(a.shape, bool), a, e
    if model.get("saturate"):
        e = np.where(np.isnan(e), e, np.clip(e, -fmt.max_finite, fmt.max_finite))
    if fmt.has_inf or model.get("saturate"):
        with np.errstate(over="ignore"):
            overflow_value = np.ldexp(1.0, fmt.emax + 1)  # inf for float64: no finite stand-in
        special_bad = np.isnan(e) != np.isnan(a)
        infinite, infinite_e = np.isinf(a), np.isinf(e)
        if infinite_e.any():   # (each step skipped where no element needs it: a sweep's chunk)
            special_bad |= infinite_e & (a != e)
        a_measured, beyond = a, None
        if infinite.any():
            a_measured = np.where(infinite, np.copysign(overflow_value, a), a)
            beyond = infinite & np.isfinite(e) & (np.abs(e) >= overflow_value) \
                & (np.sign(a) == np.sign(e))
    else:   # overflow gives NaN: a NaN actual stands for the value after max_finite
        a_measured, special_bad, beyond = _nan_overflow(a, e, fmt)
        a = a_measured
    measured = np.isfinite(e) & ~np.isnan(a)
    if beyond is not None:
        measured &= ~beyond
    if residual is None:
        diff = np.abs(a_measured - e)
        if not measured.all():
            diff = np.where(measured, diff, 0.0)
    else:   # a - e is exact near e (Sterbenz), so the rest of the reference can be taken off
        diff = np.where(measured, np.abs((a_measured - e) - np.where(measured, residual, 0.0)), 0.0)
    return diff, special_bad, a_measured, e


def _error_and_bound(diff, e, a_measured, out_dtype, model, accumulation):
    """Per element (error, bound) in the model's unit for the distance ``diff`` from the
    reference ``e`` (measured in the ULPs of ``e``'s binade)."""
    finite = np.isfinite(e)
    ulp = ulp_of(e if finite.all() else np.where(finite, e, 0.0), out_dtype)
    if "ulp" in model:
        bound = model["ulp"]
        if isinstance(bound, dict):  # asymmetric: how far below / above the reference
            if a_measured is None:   # a complex modulus: no side of the reference
                return diff / ulp, np.full(e.shape, float(max(bound.values())))
            return diff / ulp, np.where(a_measured < e, bound["below"], bound["above"])
        return diff / ulp, np.full(e.shape, float(bound))
    if "abs_rel" in model:
        tol = model["abs_rel"]["atol"] + model["abs_rel"]["rtol"] * np.abs(np.where(np.isfinite(e), e, 0))
        return diff, tol
    if "derived" in model:   # the op's own bound B per element (its error_bound hook)
        derived, _ = accumulation   # inf: the computation the text defines bounds nothing there
        with np.errstate(invalid="ignore"):   # in ULPs: final_ulp * ulp(e) can underflow
            bound = np.where(np.isnan(derived), 0.0, derived) / ulp \
                + model["derived"].get("final_ulp", 0.5)
        return diff / ulp, bound
    magnitude_sum, length = accumulation
    params = model["accumulation"]
    u = accumulator_roundoff(out_dtype, params)
    gamma_n = sum_gamma(length, u)
    acc = accumulator_format(out_dtype, params)
    # eta / ulp(e) as a power of two (eta = 2**(emin - p) is not a float64 for a float64
    # accumulator: it is half the smallest subnormal)
    eta_in_ulps = np.ldexp(1.0, acc.emin - acc.precision - (np.frexp(ulp)[1] - 1))
    underflow = params.get("product_roundings", 0) * length * eta_in_ulps * (1 + gamma_n)
    with np.errstate(invalid="ignore", over="ignore"):   # in ULPs: nothing underflows
        s = np.where(np.isfinite(magnitude_sum), magnitude_sum, 0.0)
        spread = np.where(s > 1, (gamma_n * s) / ulp, gamma_n * (s / ulp))
        bound = spread + underflow + params.get("final_ulp", 0.5)
    return diff / ulp, bound


def _nan_overflow(a, e, fmt):
    """:func:`_numeric_error`'s ``(a_measured, special_bad, beyond)`` for a format whose
    overflow is NaN: a NaN or infinite reference wants NaN; a NaN actual for a finite
    reference is measured as ``beyond_max`` with the reference's sign (so it passes only where
    the bound reaches past ``max_finite``), and passes outright at or past it."""
    overflowed = np.isnan(a) & np.isfinite(e)
    special_bad = ~np.isfinite(e) & ~np.isnan(a)
    beyond = overflowed & (np.abs(e) >= fmt.beyond_max)
    return np.where(overflowed, np.copysign(fmt.beyond_max, e), a), special_bad, beyond


def _strict_zero(model: dict, out_dtype: str) -> bool:
    """Whether a zero of the wrong sign fails: under ``signed_zero: strict``, in a format that
    has -0 (in one without, the fnuz float8 formats, -0 is +0: there is no other zero)."""
    fmt = FLOAT_FORMATS.get(out_dtype)
    return model.get("signed_zero", "strict") == "strict" and (fmt is None or fmt.has_negative_zero)


def _element_figures(actual, expected, out_dtype, model, accumulation, flush_out,
                     flushed_reference=False, residual=None):
    """Per element: error, bound, special-value failure, error / bound (inf for failures), and
    which failures the flushing of subnormal results excused (all False without ``flush_out``).
    ``flushed_reference``: ``expected`` was computed from inputs with subnormals read as zeros.
    A complex output is judged by :func:`_complex_figures`."""
    if is_complex(out_dtype):
        return _complex_figures(actual, expected, out_dtype, model, accumulation, flush_out,
                                flushed_reference)
    strict_zero = _strict_zero(model, out_dtype)
    if model.get("correctly_rounded"):
        error, bound, special_bad = _rounding_error(actual, expected, out_dtype, strict_zero,
                                                    model.get("saturate", False))
    elif model.get("exact"):
        bad = _exact(actual, expected, out_dtype, strict_zero, model.get("saturate", False))
        if flush_out and flushed_reference:
            # an exact result is a copy of an input element (a selection, a move): where the
            # backend read a subnormal input as zero, the copy it returns keeps its bits
            a = actual.astype(np.float64)
            bad = bad & ~((expected == 0) & (np.abs(a) < FLOAT_FORMATS[out_dtype].min_normal))
        error, bound = bad.astype(np.float64), np.zeros(expected.shape)
        special_bad = np.zeros(bad.shape, bool)
    else:
        error, bound, special_bad = _numeric_error(actual, expected, out_dtype, model, accumulation,
                                                   residual)
        # (NumPy's own floats compared as they are: a zero and its sign are those of the float64)
        a = actual if actual.dtype.kind == "f" else actual.astype(np.float64)
        zero = a == 0
        if strict_zero and zero.any():
            special_bad = special_bad | (zero & (expected == 0)
                                         & (np.signbit(a) != np.signbit(expected)))
    flush_excused = np.zeros(error.shape, bool)
    if flush_out:  # a subnormal result may come out as a zero of either sign
        fmt = FLOAT_FORMATS[out_dtype]
        reference = expected.astype(np.float64)
        flushed_out = (actual.astype(np.float64) == 0) & (np.abs(reference) < fmt.min_normal)
        flush_excused = flushed_out & (special_bad | (error > bound))
        error = np.where(flushed_out, 0.0, error)
        special_bad = special_bad & ~flushed_out
    return error, bound, special_bad, _ratio(error, bound, special_bad), flush_excused


def _ratio(error, bound, special_bad):
    """Per element error / bound (where the bound is 0: inf for an error, else 0), inf for a
    special-value failure."""
    positive = bound > 0
    ratio = error / bound if positive.all() else \
        np.where(positive, error / bound, np.where(error > 0, np.inf, 0.0))
    return np.where(special_bad, np.inf, ratio) if special_bad.any() else ratio


def _complex_figures(actual, expected, out_dtype, model, accumulation, flush_out,
                     flushed_reference):
    """:func:`_element_figures` for a complex output (docs/error-models.md, "Complex outputs").

    Under ``exact`` and ``correctly_rounded`` each part is judged as a value of the component
    type (each part of a complex sum is one IEEE addition) and an element takes the figures of
    its worse part. Under the numeric models the special values are settled part by part, and
    the error is the modulus ``|a - e|`` of the complex difference, measured against the model's
    bound in ULPs of the component type in the binade of ``|e|`` (of the finite parts of ``e``,
    where a part is infinite or NaN): the normwise error the complex error analyses bound
    (Higham 2002, §3.6; Brent, Percival and Zimmermann 2007). Under ``ftz`` a part whose
    reference is subnormal may come out as a zero of either sign."""
    part = component_dtype(out_dtype)
    expected = np.asarray(expected).astype(np.complex128)
    parts = ((actual.real, expected.real), (actual.imag, expected.imag))
    if model.get("exact") or model.get("correctly_rounded"):
        real, imag = (_element_figures(a, e, part, model, None, flush_out, flushed_reference)
                      for a, e in parts)
        worse = imag[3] > real[3]
        return (*(np.where(worse, i, r) for r, i in zip(real[:4], imag[:4])), real[4] | imag[4])
    strict_zero = _strict_zero(model, part)
    diffs, specials, flushed = [], [], []
    for a, e in parts:
        diff, special_bad, _, _ = _difference(a, e, part, model)
        a = a.astype(np.float64)
        if strict_zero:
            special_bad = special_bad | ((a == 0) & (e == 0) & (np.signbit(a) != np.signbit(e)))
        flushed.append(flush_out & (a == 0) & (np.abs(e) < FLOAT_FORMATS[part].min_normal))
        diffs.append(diff)
        specials.append(special_bad)
    magnitude = np.hypot(*(np.where(np.isfinite(e), e, 0.0) for _, e in parts))
    error, bound = _error_and_bound(np.hypot(*diffs), magnitude, None, part, model, accumulation)
    special = specials[0] | specials[1]
    flush_excused = np.zeros(error.shape, bool)
    if flush_out:   # each flushed part read as exact, and as either zero
        kept = [np.where(f, 0.0, d) for f, d in zip(flushed, diffs)]
        flushed_error, _ = _error_and_bound(np.hypot(*kept), magnitude, None, part, model,
                                            accumulation)
        flushed_special = (specials[0] & ~flushed[0]) | (specials[1] & ~flushed[1])
        any_flushed = flushed[0] | flushed[1]
        flush_excused = any_flushed & (special | (error > bound)) \
            & ~(flushed_special | (flushed_error > bound))
        error, special = np.where(any_flushed, flushed_error, error), flushed_special
    return error, bound, special, _ratio(error, bound, special), flush_excused
