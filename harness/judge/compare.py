"""Error models: how an actual output is judged against the float64 oracle.

One engine, :func:`compare`, serves every model. Special values are settled before any numeric
error is computed:

* a NaN reference accepts any NaN; a NaN where the reference is a number fails;
* an infinite reference must be matched exactly (sign included);
* an infinite actual for a finite reference is measured as if it were ``2**(emax+1)`` (the value
  IEEE 754 rounding treats as the overflow threshold), so overflow passes only where the bound
  reaches past the largest finite value; a reference at or beyond ``2**(emax+1)`` accepts it;
* signed zeros: under ``signed_zero: strict`` a zero of the wrong sign fails (in a format
  without -0, the fnuz float8 formats, every zero is +0: the sign of a reference zero is moot);
* formats without infinities (float8 e4m3fn, e4m3fnuz, e5m2fnuz): a correctly rounded result
  beyond the largest finite value is NaN (non-saturating rounding, OCP OFP8 §5; ONNX Cast with
  saturate=0), so a NaN actual for a finite reference is measured as if it were the value after
  the largest finite one (``FloatFormat.beyond_max``), as an infinity is in IEEE formats; a
  reference at or beyond it, or infinite, accepts NaN;
* ``saturate: true`` in a model (an op that saturates): the reference is clamped to
  ``±max_finite`` (infinities too) before it is judged.

Models (``error_model`` entries in a spec):

* ``exact``: ``actual == round_to_dtype(expected)`` (NaN matches NaN).
* ``correctly_rounded``: for ops whose standard demands correct rounding (IEEE 754 §5.4.1
  basic operations, §5.4.2 conversions): the expected value is the correct rounding (to
  nearest, ties to even) of the exact result into the output type, and the actual must equal
  it bit for bit (NaN matches NaN; signed zeros strict; overflow is what the rounding gives:
  an infinity, NaN in a format without one, ``±max_finite`` under ``saturate``). The reference
  is the op's float64 value rounded once (:func:`round_to_dtype`), float64 targets being the
  op's own correctly rounded ``rounded64`` hook. The error reported is the distance from that
  value in ULPs of its binade, against a bound of 0. Under ``ftz`` a flushed input or a
  subnormal reference's zero passes, as for the numeric models.
* ``ulp: b`` (or ``ulp: {below: b1, above: b2}`` for asymmetric bounds, ``b1`` applying where
  ``a < e``): ``|a - e| / ulp(e) <= b`` where ``ulp(e) = 2**(max(floor(log2|e|), emin) - p + 1)``,
  measured in the float64 reference's binade and clamped at the smallest normal.
* ``abs_rel: {atol, rtol}``: ``|a - e| <= atol + rtol * |e|``.
* ``derived: {final_ulp, accumulator_at_least, constants}``: ``|a - e| <= B + final_ulp * ulp(e)``,
  where ``B`` is the per-element bound a composite op's ``error_bound`` hook derives from the
  rounding errors of the computation its standard defines (given ``u``, the unit roundoff of the
  output type or the finer ``accumulator_at_least``, and the model's named ``constants``, such
  as the ULP bound assumed for an exp). An infinite ``B`` (the computation bounds nothing there)
  accepts any number; special values are still settled first.
* ``accumulation: {final_ulp, accumulator_at_least, product_roundings}``:
  ``|a - e| <= gamma_n * S + r * n * eta * (1 + gamma_n) + final_ulp * ulp(e)``,
  where ``gamma_n = n u / (1 - n u)`` (Higham, *Accuracy and Stability of Numerical Algorithms*,
  2nd ed., Lemma 3.1 and eq. 3.5), ``n`` the accumulation length, ``S`` the oracle evaluated on
  ``|inputs|`` (the sum of the magnitudes of the terms) and ``u`` the unit roundoff of the
  accumulator: the output type's, or that of ``accumulator_at_least`` where it is finer. The
  underflow term: with gradual underflow a rounding is ``fl(x op y) = (x op y)(1 + d) + h`` with
  ``|d| <= u``, ``|h| <= eta = 2**(emin - p + 1) / 2`` (half the accumulator's smallest
  subnormal) and ``h = 0`` for additions (Higham §2.1, eq. 2.8: a subnormal sum is exact), so
  each of the ``r`` product roundings of each of the ``n`` terms (``product_roundings``: 1 for a
  dot product, 0 for a sum, the default) adds at most ``eta``, then carried through at most
  ``n`` additions (the factor ``1 + gamma_n``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from conform.harness.judge._elements import (_element_figures, _exact, _sliced, _strict_zero,
                                             accumulator_format, accumulator_roundoff,
                                             block_ranges, blockwise, round_to_dtype, ulp_of)
from conform.dtypes import FLOAT_FORMATS, component_dtype, is_complex, np_dtype

__all__ = ["Judgement", "RATIO_BINS", "accumulator_format", "accumulator_roundoff", "compare",
           "compare_many", "describe_model", "ratio_bins", "round_to_dtype", "ulp_of"]


@dataclass
class Judgement:
    """The verdict on one output, with the figures that justify it."""

    verdict: str                 # pass | fail | impl_defined (every element open)
    model: str                   # e.g. "ulp(0.5)", "exact", "accumulation(final_ulp=0.5)"
    unit: str                    # unit of error and bound: "ulp", "abs" or "mismatch"
    checked: int = 0             # elements judged (outside implementation-defined regions)
    mismatched: int = 0
    impl_defined: int = 0        # elements in implementation-defined regions (not judged)
    max_error: float = 0.0       # error of the worst element, in ``unit``
    bound: float = 0.0           # the bound at the worst element, in ``unit``
    worst: dict | None = None    # index, expected, actual, error, bound (+ inputs, added by caller)
    reason: str = ""             # why the worst element failed, when it is not a numeric excess
    observed: list = field(default_factory=list)   # sample of values in impl-defined regions
    histogram: list = field(default_factory=list)  # judged elements per RATIO_BINS bin
    outputs: list = field(default_factory=list)    # (name, Judgement) per output, for several
    # flat indices of the elements that failed (an array; failing judgements only): what a
    # manifest condition is checked against (harness/judge/profile.py)
    failing: object = field(default=None, repr=False, compare=False)
    # per-element errors in ``unit`` (inf: a special-value failure), flat; only when asked
    # (compare_many's keep_errors)
    errors: object = field(default=None, repr=False, compare=False)
    # elements that pass only because the ftz subnormal policy was applied (a flushed input or
    # result accepted): under ieee they would fail
    subnormal_excused: int = 0
    # what the failing elements have in common (harness/judge/profile.py), for a failing case
    profile: dict | None = field(default=None, repr=False, compare=False)
    # the property (harness/judge/properties.py) the outputs break, if that failed the case
    broken: str = ""


# Edges of the per-element histogram of error / bound. Bins are [0, 1/16], (1/16, 1/8], ...,
# (1/2, 1], (1, 2], ..., (256, inf]: the first five bins pass, the rest exceed the bound.
RATIO_BINS = (0.0, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0, 16.0, 256.0, float("inf"))


def ratio_bins(ratio: np.ndarray) -> np.ndarray:
    """The RATIO_BINS bin of each ``ratio`` (error / bound, per element); special-value
    failures (ratio inf) fall in the last bin.

    >>> ratio_bins(np.array([0.0, 0.75, 1.0, 3.0, np.inf])).tolist()
    [0, 4, 4, 6, 9]
    """
    # (as np.searchsorted(RATIO_BINS, ratio, "left") - 1 clipped to the bins, a NaN in the last,
    # read from the float64 bits: the inner edges are powers of two, so a ratio's bin is that
    # of k = ceil(log2 ratio), its exponent plus one where its fraction is not zero; a zero, a
    # subnormal or a negative number falls in the first bin)
    bits = np.asarray(ratio, np.float64).view(np.int64)
    k = (bits >> 52) + ((bits & _FRACTION) != 0) - (1023 + _LOWEST_K)
    where = _BIN_OF_K[np.clip(k, 0, len(_BIN_OF_K) - 1)]
    nan = np.isnan(ratio)
    if nan.any():
        where[nan] = len(RATIO_BINS) - 2
    return where


def ratio_histogram(ratio: np.ndarray) -> np.ndarray:
    """The count of ``ratio`` in each RATIO_BINS bin (``np.bincount`` of :func:`ratio_bins`),
    counted by comparing with each inner edge below the largest ratio (the edges at or above
    it hold every element): a block of a sweep, whose ratios are mostly small, is compared with
    a few edges, and no element's bin is computed.

    >>> ratio_histogram(np.array([0.0, 0.75, 1.0, 3.0, np.inf])).tolist()
    [1, 0, 0, 0, 2, 0, 1, 0, 0, 1]
    """
    size = ratio.size
    largest = ratio.max() if size else 0.0   # (NaN where one is: every edge is compared)
    at_most = [size if largest <= edge else np.count_nonzero(ratio <= edge) for edge in _INNER]
    return np.diff(np.array([0, *at_most, size], np.int64))


_FRACTION = (1 << 52) - 1
_LOWEST_K = int(np.log2(RATIO_BINS[1]))   # ratios up to 2**_LOWEST_K fall in the first bin
#: The bin of a ratio in (2**(k - 1), 2**k], indexed by k - _LOWEST_K (clipped): how many inner
#: edges lie below 2**k
_BIN_OF_K = np.array([sum(edge < 2.0 ** k for edge in RATIO_BINS[1:-1])
                      for k in range(_LOWEST_K, int(np.log2(RATIO_BINS[-2])) + 2)], np.uint8)
assert all(float(np.log2(edge)).is_integer() for edge in RATIO_BINS[1:-1])
_INNER = tuple(np.float64(edge) for edge in RATIO_BINS[1:-1])


def describe_model(model: dict) -> str:
    """The model's name as reports show it.

    >>> describe_model({"correctly_rounded": True, "why": "IEEE 754 §5.4.1"})
    'correctly_rounded'
    """
    if model.get("exact"):
        return "exact"
    if model.get("correctly_rounded"):
        return "correctly_rounded"
    if "ulp" in model:
        bound = model["ulp"]
        if isinstance(bound, dict):
            return f"ulp(-{bound['below']:g}/+{bound['above']:g})"
        return f"ulp({bound:g})"
    if "abs_rel" in model:
        return f"abs_rel(atol={model['abs_rel']['atol']:g}, rtol={model['abs_rel']['rtol']:g})"
    if "accumulation" in model:
        return f"accumulation(final_ulp={model['accumulation'].get('final_ulp', 0.5):g})"
    if "derived" in model:
        return f"derived(final_ulp={model['derived'].get('final_ulp', 0.5):g})"
    if "statistical" in model:
        return f"statistical(alpha={model['statistical']['alpha']:.3g})"
    raise ValueError(f"unknown error model {model!r}")


def compare(actual: np.ndarray, expected: np.ndarray, *, out_dtype: str, model: dict,
            impl_mask: np.ndarray | None = None, accumulation=None, subnormals: str = "ieee",
            flushed: tuple | None = None, residual: np.ndarray | None = None) -> Judgement:
    """Judge ``actual`` (in ``out_dtype``) against the float64/int64 ``expected`` under ``model``.

    ``accumulation`` is ``(S, n)`` for the accumulation model, ``(B, 0)`` for the derived model
    (see the module docstring).
    Under ``subnormals="ftz"``, ``flushed`` is ``(expected, accumulation)`` computed from the
    inputs with subnormals read as zeros; an element passes against either reference, and a
    subnormal reference also accepts a zero of either sign. Under the exact model, whose results
    are copies of input elements, a zero of the flushed reference also accepts a subnormal (the
    copy of an input the backend read as zero). Nothing else is excused.
    ``residual`` is the rest of a reference computed beyond float64 (``expected + residual``):
    the error is then measured as ``|(actual - expected) - residual|`` (``actual - expected``
    is exact near the reference, by Sterbenz's lemma).
    Elements where ``impl_mask`` is set lie in a region the standard leaves open: they are
    counted (``impl_defined``), not judged. The verdict is the other elements' (``pass`` or
    ``fail``); ``impl_defined`` only where every element is open (nothing left to judge).

    >>> compare(np.float32([1.0]), np.array([1.0]), out_dtype="float32",
    ...         model={"ulp": 0.5, "why": "IEEE"}).verdict
    'pass'
    """
    return compare_many([(actual, expected, impl_mask, accumulation, flushed, residual)],
                        out_dtype=out_dtype, model=model, subnormals=subnormals)[0]


def compare_many(items, *, out_dtype: str, model: dict, subnormals: str = "ieee",
                 keep_errors: bool = False) -> list[Judgement]:
    """:func:`compare` for several outputs judged under one model: ``items`` holds
    ``(actual, expected, impl_mask, accumulation, flushed[, residual])`` per output. The
    judgements are those
    :func:`compare` gives one by one (every figure is an element-wise IEEE operation, so it does
    not depend on its neighbours), computed over the outputs' concatenation: one pass of NumPy
    calls for all of them instead of one per output. With ``keep_errors`` each judgement's
    ``errors`` holds its elements' errors in the model's unit (inf for a special-value failure),
    where it computed them (not where every element matched exactly)."""
    name = describe_model(model)
    unit = "mismatch" if model.get("exact") else "abs" if "abs_rel" in model else "ulp"
    judgements: list = [None] * len(items)
    together: dict = {}   # outputs that can be concatenated: same dtypes, same references
    wanted = np_dtype(out_dtype)
    for i, (actual, expected, impl_mask, accumulation, flushed, *rest) in enumerate(items):
        residual = rest[0] if rest else None
        actual, expected = np.asarray(actual), np.asarray(expected)
        if actual.shape != expected.shape or actual.dtype != wanted:
            judgements[i] = Judgement("fail", name, unit, checked=expected.size,
                                      mismatched=expected.size, max_error=float("inf"), reason=(
                                          f"output is {actual.dtype}{list(actual.shape)}, expected "
                                          f"{out_dtype}{list(expected.shape)}"))
            continue
        flushed = flushed if subnormals == "ftz" else None
        if expected.size == 0:
            judgements[i] = _empty(model, name, unit, impl_mask)
            continue
        key = (expected.dtype, flushed is not None, residual is not None)
        together.setdefault(key, []).append((i, actual, expected, impl_mask, accumulation, flushed,
                                             residual))
    for group in together.values():
        for i, judgement in zip([g[0] for g in group],
                                _compare_segments(group, out_dtype, model, subnormals, name, unit,
                                                  keep_errors)):
            judgements[i] = judgement
    return judgements


def _empty(model, name, unit, impl_mask) -> Judgement:
    if model.get("exact") and (impl_mask is None or not impl_mask.any()):
        return Judgement("pass", name, unit, histogram=[0] * (len(RATIO_BINS) - 1))
    return Judgement("pass", name, unit, impl_defined=0 if impl_mask is None else int(impl_mask.sum()))


def _compare_segments(group, out_dtype, model, subnormals, name, unit,
                      keep_errors: bool = False) -> list[Judgement]:
    """Judge non-empty outputs of equal dtypes concatenated, each output a segment."""
    sizes = np.array([g[2].size for g in group])
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    actual, expected = _join([g[1] for g in group]), _join([g[2] for g in group])
    if all(g[3] is None for g in group):   # None: no implementation-defined element
        impl = np.zeros(int(sizes.sum()), bool)
    else:
        impl = _join([np.zeros(g[2].shape, bool) if g[3] is None else np.asarray(g[3], bool)
                      for g in group])
    impl_any = _segment_counts(impl, offsets) > 0
    with np.errstate(all="ignore"):
        quick = np.zeros(len(group), bool)
        if model.get("exact") or model.get("correctly_rounded"):  # the common case: every element matches, no per-element figures
            differs, = blockwise(lambda a, e: (_exact(a, e, out_dtype, _strict_zero(model, out_dtype),
                                                      model.get("saturate", False)),),
                                 (actual, expected), actual.size)
            quick = (_segment_counts(differs, offsets) == 0) & ~impl_any
            if quick.all():
                return [_all_matched(name, unit, n) for n in sizes.tolist()]
        figures = _segment_figures(group, actual, expected, impl, sizes, offsets, out_dtype,
                                   model, subnormals)
    judgements = _segment_judgements(group, figures, quick.tolist(), impl_any.tolist(), actual,
                                     expected, sizes, offsets, out_dtype, model, name, unit)
    if keep_errors:
        errors = np.where(figures["special_bad"], np.inf, figures["error"]) \
            if figures["special_bad"].any() else figures["error"]
        for judgement, start, size in zip(judgements, offsets.tolist(), sizes.tolist()):
            judgement.errors = errors[start:start + size]
    return judgements


def _segment_figures(group, actual, expected, impl, sizes, offsets, out_dtype, model,
                     subnormals) -> dict:
    """Per element the error, bound and whether it fails, against the closest reference (the
    ``ftz`` one too where there is one), and per segment the counts, histograms and worst
    element's flat index."""
    single = len(group) == 1   # e.g. a chunk of a sweep: no segment bookkeeping, no copies
    segment = None if single else np.repeat(np.arange(len(group)), sizes)
    accumulation = _joined([g[4] for g in group], sizes)
    residual = None if group[0][6] is None else _join([np.asarray(g[6], np.float64) for g in group])
    references = [(expected, accumulation, residual)]
    if group[0][5] is not None:
        references.append((_join([g[5][0] for g in group]), _joined([g[5][1] for g in group], sizes),
                           None))
    flush_out = subnormals == "ftz" and component_dtype(out_dtype) in FLOAT_FORMATS
    ftz = flush_out or len(references) > 1   # (only an ftz judgement can excuse a failure)
    if single:
        return _one_segment_figures(actual, references, impl, out_dtype, model, flush_out, ftz)
    error, bound, special_bad, ratio, ieee_failing, where = blockwise(
        lambda a, refs: _binned(_closest_figures(a, refs, out_dtype, model, flush_out)),
        (actual, references), actual.size)
    judged = ~impl
    some_impl = bool(impl.any())
    bad = (ratio > 1) & judged if some_impl else ratio > 1
    bins = len(RATIO_BINS) - 1
    ranked = np.where(judged, ratio, -1.0) if some_impl else ratio
    histograms = np.bincount(segment[judged] * bins + where[judged],
                             minlength=len(group) * bins).reshape(len(group), bins)
    worst = _first_maximum(ranked, offsets, sizes, segment)
    return {"error": error, "worst_bounds": bound[offsets + np.asarray(worst, np.int64)].tolist(),
            "special_bad": special_bad, "bad": bad,
            "excused": _segment_counts(ieee_failing & ~bad & judged, offsets).tolist()
            if ftz else None,
            "checked": _segment_counts(judged, offsets).tolist(),
            "mismatched": _segment_counts(bad, offsets).tolist(),
            "impl": _segment_counts(impl, offsets).tolist(),
            "histograms": histograms.tolist(), "worst": worst}


def _one_segment_figures(actual, references, impl, out_dtype, model, flush_out, ftz) -> dict:
    """:func:`_segment_figures` of one output (a sweep's chunk), reduced block by block
    (:data:`~conform.harness.judge._elements.BLOCK` elements, in the cache): each element's
    error, special-value failure and whether it fails are kept, its bound, ratio and bin are
    counted and dropped (the bound kept at the worst element, the first of the largest ratio,
    as ``np.argmax`` finds it over the whole)."""
    size, bins = actual.size, len(RATIO_BINS) - 1
    error, special_bad, bad = np.empty(size), np.empty(size, bool), np.empty(size, bool)
    histogram, excused = np.zeros(bins, np.int64), 0
    worst, top, worst_bound = 0, -np.inf, 0.0
    some_impl = bool(impl.any())
    for low, high in block_ranges(size):
        e, b, s, ratio, ieee_failing = _closest_figures(
            actual[low:high], _sliced(references, low, high, size), out_dtype, model, flush_out)
        judged = ~impl[low:high]
        error[low:high], special_bad[low:high] = e, s
        bad[low:high] = failing = (ratio > 1) & judged if some_impl else ratio > 1
        histogram += ratio_histogram(ratio[judged] if some_impl else ratio)
        ranked = np.where(judged, ratio, -1.0) if some_impl else ratio
        k = int(np.argmax(ranked))
        if not np.isnan(top) and (np.isnan(ranked[k]) or ranked[k] > top):   # (NaN: argmax's)
            worst, top, worst_bound = low + k, ranked[k], b[k].item()
        if ftz:
            excused += int(np.count_nonzero(ieee_failing & ~failing & judged))
    return {"error": error, "worst_bounds": [worst_bound], "special_bad": special_bad,
            "bad": bad, "excused": [excused] if ftz else None,
            "checked": [size - int(np.count_nonzero(impl))], "mismatched": [int(np.count_nonzero(bad))],
            "impl": [int(np.count_nonzero(impl))], "histograms": [histogram.tolist()],
            "worst": [worst]}


def _closest_figures(actual, references, out_dtype, model, flush_out) -> tuple:
    """Per element error, bound, special-value failure and error / bound against the closest of
    the ``references`` (``(expected, accumulation, residual)`` each: the oracle's, and the
    ``ftz`` one where there is one), and whether ``ieee`` would fail it."""
    figures = [_element_figures(actual, ref, out_dtype, model, acc, flush_out, k > 0, rest)
               for k, (ref, acc, rest) in enumerate(references)]
    error, bound, special_bad, ratio, flush_excused = figures[0]
    ieee_failing = (ratio > 1) | flush_excused
    for other in figures[1:]:  # per element, the reference the actual is closest to
        closer = other[3] < ratio
        error, bound, special_bad, ratio = (np.where(closer, o, c) for o, c in
                                            zip(other, (error, bound, special_bad, ratio)))
    return error, bound, special_bad, ratio, ieee_failing


def _binned(figures: tuple) -> tuple:
    """:func:`_closest_figures`' figures and each element's :func:`ratio_bins` bin."""
    return (*figures, ratio_bins(figures[3]))


def _segment_judgements(group, figures, quick, impl_seen, actual, expected, sizes, offsets,
                        out_dtype, model, name, unit) -> list[Judgement]:
    """One judgement per segment from its figures (its worst element's values read once)."""
    sizes = sizes.tolist()
    flats = [int(w) if n else 0 for w, n in zip(figures["worst"], figures["checked"])]
    at = offsets + np.array(flats, np.int64)
    shown = expected[at]
    if model.get("correctly_rounded"):   # the value the backend had to return, not the exact one
        shown = round_to_dtype(shown, out_dtype, saturate=model.get("saturate", False)) \
            .astype(np.complex128 if is_complex(out_dtype) else np.float64)
    worst_values = list(zip(_py_list(shown), _py_list(actual[at]), figures["error"][at].tolist(),
                            figures["worst_bounds"], figures["special_bad"][at].tolist()))
    excused = figures["excused"]
    judgements = []
    for k, g in enumerate(group):
        if quick[k]:
            judgements.append(_all_matched(name, unit, sizes[k]))
            continue
        expected_at, actual_at, error_at, bound_at, special_at = worst_values[k]
        if not figures["checked"][k]:   # every element implementation-defined: no worst one
            error_at, bound_at = 0.0, 0.0   # (element 0's figures hold the backend's own value)
        judgement = Judgement("pass", name, unit, checked=figures["checked"][k],
                              mismatched=figures["mismatched"][k], impl_defined=figures["impl"][k],
                              max_error=error_at, bound=bound_at,
                              histogram=figures["histograms"][k],
                              subnormal_excused=excused[k] if excused else 0)
        judgement.worst = {"index": _unravel(flats[k], g[2].shape), "expected": expected_at,
                           "actual": actual_at, "error": error_at, "bound": bound_at
                           } if figures["checked"][k] else None
        if figures["mismatched"][k]:
            judgement.verdict = "fail"
            start = int(offsets[k])
            judgement.failing = np.flatnonzero(figures["bad"][start:start + sizes[k]])
            if special_at:
                judgement.reason = "special value mismatch (NaN, infinity or signed zero)"
        elif not figures["checked"][k] and impl_seen[k]:   # open throughout: nothing judged
            judgement.verdict = "impl_defined"
        if impl_seen[k]:
            mask = g[3].ravel()
            judgement.observed = [[_py(a), _py(e)] for a, e in
                                  zip(g[1].ravel()[mask][:5], g[2].ravel()[mask][:5])]
        judgements.append(judgement)
    return judgements


def _all_matched(name: str, unit: str, size: int) -> Judgement:
    """The judgement of an output whose ``size`` elements all match exactly."""
    return Judgement("pass", name, unit, checked=size,
                     histogram=[size] + [0] * (len(RATIO_BINS) - 2))


def _unravel(flat: int, shape) -> list[int]:
    """``np.unravel_index(flat, shape)`` as a list of ints (for the few dimensions of a case)."""
    index = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return index[::-1]


def _py_list(values: np.ndarray) -> list:
    """``[_py(v) for v in values]`` in one step (complex values as their text, ``'(1-2j)'``:
    JSON has no complex numbers)."""
    if values.dtype.kind == "c":
        return [str(complex(v)) for v in values.tolist()]
    if values.dtype.kind not in "biuO":   # (O: strings, kept as they are)
        values = values.astype(np.float64)
    return values.tolist()


def _join(arrays) -> np.ndarray:
    """The arrays flattened and concatenated (a flat view when there is one)."""
    return arrays[0].ravel() if len(arrays) == 1 else np.concatenate([a.ravel() for a in arrays])


def _joined(accumulations, sizes):
    """Per-output accumulation figures ``(S, n)`` as one per-element pair, or None."""
    if accumulations[0] is None:
        return None
    magnitude = _join([np.asarray(a[0], np.float64) for a in accumulations])
    if len(accumulations) == 1:
        return magnitude, accumulations[0][1]
    return magnitude, np.repeat(np.array([a[1] for a in accumulations], np.int64), sizes)


def _segment_counts(mask: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The True elements of each segment of ``mask`` (``np.add.reduceat``; one segment counted
    by ``np.count_nonzero``, several times faster)."""
    if len(offsets) == 1:
        return np.array([np.count_nonzero(mask)])
    return np.add.reduceat(mask, offsets)


def _first_maximum(values, offsets, sizes, segment) -> np.ndarray:
    """Per segment, the offset of its first largest value (as ``np.argmax`` on the segment)."""
    top = np.maximum.reduceat(values, offsets)
    positions = np.arange(values.size) - np.repeat(offsets, sizes)
    first = np.minimum.reduceat(np.where(values == top[segment], positions, values.size), offsets)
    for k in np.flatnonzero(first >= sizes):   # a NaN maximum: no element equals it
        first[k] = int(np.argmax(values[offsets[k]:offsets[k] + sizes[k]]))
    return first


def _py(value):
    """A JSON-friendly Python scalar (floats keep inf/nan as strings in JSON writers)."""
    if isinstance(value, str):   # an element of a string array
        return value
    value = np.asarray(value)
    if value.dtype.kind == "b":
        return bool(value)
    if value.dtype.kind in "iu":
        return int(value)
    if value.dtype.kind == "c":
        return str(complex(value))
    return float(value)
