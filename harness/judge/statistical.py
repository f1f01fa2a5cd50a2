"""The ``statistical`` error model: the outputs of a random op judged against the distribution
its text states (docs/error-models.md, "Random outputs").

A case is judged exactly where the text is exact and by a test where it states a law:

* shape and element type, exactly;
* support: every element a value the law allows (:class:`~conform.ops.distributions.Continuous`:
  inside ``[low, high]`` widened to the nearest values of the output type around each end;
  :class:`~conform.ops.distributions.Categorical`: one of the values of probability > 0), exactly;
* goodness of fit, a test whose false-alarm probability is at most the model's ``alpha`` per case
  (split evenly over the case's tested outputs, and within an output over its tests: Bonferroni):
  Kolmogorov-Smirnov for a continuous law, widened for the rounding to the output type; an
  exact binomial test for each value of a finite law, and for each bit position of random bits.

The op's ``distribution`` hook gives each output's law (:mod:`conform.ops.distributions`); an
output whose law is ``Given`` is judged by :func:`~conform.harness.judge.compare.compare` under
its model, one that is ``Unjudged`` by shape and type alone. Shared code: it names no op.
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import FLOAT_FORMATS, dtype_name, int_info, is_integer, np_dtype
from conform.harness.judge.compare import Judgement, compare
from conform.ops.distributions import (Bits, Categorical, Continuous, Given, Readings, Unjudged,
                                       stats)
from conform.widening import widen

__all__ = ["TESTED", "judge_random", "judge_statistical", "ks_rounded", "binomial_p_values"]

#: The laws a goodness-of-fit test is run on (each takes a share of the case's alpha).
TESTED = (Continuous, Categorical, Bits, Readings)
UNIT = "-log10(p)"


def judge_random(spec, case, outputs, answer, subnormals: str = "ieee") -> list[Judgement]:
    """Per output of ``case`` (an op with a ``distribution`` hook), its judgement: outputs under
    the ``statistical`` model against the hook's law, the others under their own model against
    the oracle's answer."""
    out_dtypes = spec.out_dtypes(case)
    models = [spec.model_for(d, k, case) for k, d in enumerate(out_dtypes)]
    actual = [np.asarray(o) for o in outputs]
    laws = spec.definition.distribution([widen(np.asarray(x)) for x in case.inputs], case.attrs,
                                        actual, out_dtypes=tuple(out_dtypes),
                                        dtypes=tuple(str(np.asarray(x).dtype) for x in case.inputs))
    tested = sum(1 for m, law in zip(models, laws) if "statistical" in m and isinstance(law, TESTED))
    judgements = []
    for k, (model, law, out_dtype) in enumerate(zip(models, laws, out_dtypes)):
        part = answer[k]
        if "statistical" not in model:
            judged = compare(actual[k], part.expected, out_dtype=out_dtype, model=model,
                             impl_mask=part.impl_mask, accumulation=part.accumulation,
                             subnormals=subnormals, residual=part.residual)
        else:
            judged = judge_statistical(actual[k], np.shape(part.expected), out_dtype, law,
                                       model["statistical"]["alpha"] / max(tested, 1),
                                       output=spec.outputs[k])
        if judged.worst is not None:   # (no input feeds one element of a random output)
            judged.worst.setdefault("inputs", [None] * len(case.inputs))
        judgements.append(judged)
    return judgements


def judge_statistical(actual: np.ndarray, shape, out_dtype: str, law, alpha: float, *,
                      output: str = "out") -> Judgement:
    """Judge one random output: exact ``shape`` and ``out_dtype``, then ``law``'s support, then
    its goodness-of-fit test at false-alarm probability ``alpha``.

    >>> rng = np.random.default_rng(1)
    >>> law = Continuous(stats.uniform(0, 1), 0.0, 1.0, "uniform on [0, 1)")
    >>> judge_statistical(rng.random(4096).astype(np.float32), (4096,), "float32", law, 1e-9).verdict
    'pass'
    """
    name = f"statistical(alpha={alpha:.3g})"
    where = f"output {output} {out_dtype}{list(shape)}"
    actual = np.asarray(actual)
    if actual.shape != tuple(shape) or actual.dtype != np_dtype(out_dtype):
        return Judgement("fail", name, UNIT, checked=int(np.prod(shape)),
                         mismatched=int(np.prod(shape)), max_error=math.inf, reason=(
                             f"output is {actual.dtype}{list(actual.shape)}, expected {where}"))
    if isinstance(law, Given):
        return compare(actual, law.expected, out_dtype=out_dtype, model=law.model)
    if isinstance(law, Readings):
        return _judge_readings(actual, shape, out_dtype, law, alpha, output)
    if isinstance(law, Unjudged) or actual.size == 0:
        return Judgement("pass", name, UNIT, checked=actual.size)
    outside = _outside(actual, law, out_dtype)
    if outside.any():
        at = np.flatnonzero(outside)
        first = np.unravel_index(at[0], actual.shape)
        return Judgement("fail", name, UNIT, checked=actual.size, mismatched=len(at),
                         max_error=math.inf, bound=-math.log10(alpha), failing=at, reason=(
                             f"{where}: {len(at)} / {actual.size} elements outside the support "
                             f"of {law.text}; first out{list(map(int, first))}="
                             f"{actual[first].item()!r}"))
    test, statistic, p = _fit(actual, law, out_dtype)
    p = min(max(p, 0.0), 1.0)
    error = math.inf if p == 0 else -math.log10(p)
    judgement = Judgement("pass", name, UNIT, checked=actual.size, max_error=error,
                          bound=-math.log10(alpha))
    if p < alpha:
        judgement.verdict = "fail"
        judgement.reason = (f"{where}: {test} rejects {law.text}: {statistic}, p={p:.3g} < "
                            f"threshold {alpha:.3g}")
    return judgement


def _judge_readings(actual, shape, out_dtype, law, alpha, output) -> Judgement:
    """The first reading's judgement where it passes; ``impl_defined`` where only another
    reading's law fits (a test of the true law rejects with probability at most ``alpha``);
    the first's failure where none fits."""
    (first, name), *others = law.laws
    judged = judge_statistical(actual, shape, out_dtype, first, alpha, output=output)
    if judged.verdict == "pass":
        return judged
    for other, other_name in others:
        fits = judge_statistical(actual, shape, out_dtype, other, alpha, output=output)
        if fits.verdict == "pass":
            fits.verdict, fits.impl_defined = "impl_defined", fits.checked
            fits.reason = f"fits {other_name}, not {name}: {judged.reason}"
            return fits
    judged.reason += f" (under {name}; no other reading fits either)"
    return judged


def _outside(actual, law, out_dtype) -> np.ndarray:
    """Where an element is not a value ``law`` allows (NaN never is)."""
    if isinstance(law, Bits):
        return np.zeros(actual.shape, bool)
    values = actual.astype(np.float64)
    if isinstance(law, Continuous):
        low, high = _enclosure(law.low, law.high, out_dtype)
        return ~((values >= low) & (values <= high))
    allowed = np.zeros(actual.size, bool)
    flat = values.ravel()
    for indices, support, probabilities in law.groups:
        kept = np.asarray(support, np.float64)[np.asarray(probabilities) > 0]
        allowed[indices] = np.isin(flat[indices], kept)
    return ~allowed.reshape(actual.shape)


def _enclosure(low: float, high: float, out_dtype: str) -> tuple[float, float]:
    """The output type's values nearest ``low`` from below and ``high`` from above (a rounded
    draw of ``[low, high]`` lies between them; ends that are values of the type stay)."""
    if out_dtype not in FLOAT_FORMATS or not (math.isfinite(low) and math.isfinite(high)):
        return low, high
    ends = np.array([low, high])
    step = _spacing(ends, FLOAT_FORMATS[out_dtype])
    down, up = np.floor(low / step[0]) * step[0], np.ceil(high / step[1]) * step[1]
    return float(down), float(up)


def _spacing(values: np.ndarray, fmt) -> np.ndarray:
    """The spacing of ``fmt``'s values in the binade of each of ``values`` (subnormal spacing
    at zero)."""
    _, e = np.frexp(np.abs(values))
    e = np.where(values == 0, fmt.emin + 1, e)
    return np.ldexp(1.0, np.maximum(e - 1, fmt.emin) - fmt.precision + 1)


def _fit(actual, law, out_dtype) -> tuple[str, str, float]:
    """``(test name, statistic text, p-value)`` of ``law``'s goodness-of-fit test."""
    if isinstance(law, Continuous):
        statistic, n = ks_rounded(actual.astype(np.float64).ravel(), law.law.cdf, out_dtype)
        return ("Kolmogorov-Smirnov test (widened for rounding)",
                f"D={statistic:.4g} over n={n}", float(stats.kstwo.sf(statistic, n)) if statistic
                else 1.0)
    if isinstance(law, Bits):
        counts, n, width = _bit_counts(actual)
        p = binomial_p_values(counts, n, np.full(width, 0.5))
        worst = int(np.argmin(p))
        return (f"binomial test per bit position ({width} positions, Bonferroni)",
                f"bit {worst}: {int(counts[worst])} ones of n={n}, expected {n / 2:g}",
                float(min(1.0, width * p[worst])))
    return _categorical_fit(actual.astype(np.float64).ravel(), law)


def _categorical_fit(flat, law) -> tuple[str, str, float]:
    """An exact binomial test of each value's count in each group and, over several groups, a
    Bernstein bound on each value's total count (the sum of independent indicators of unequal
    probabilities: P(|S - ES| >= t) <= 2 exp(-t**2 / (2 var + 2 t / 3)), Bernstein 1924; a
    bias shared by the groups adds up there); Bonferroni over all of them."""
    counts, sizes, probabilities, labels = [], [], [], []
    for g, (indices, support, chances) in enumerate(law.groups):
        values = flat[indices]
        for v, p in zip(np.asarray(support, np.float64).tolist(), np.asarray(chances).tolist()):
            if 0 < p < 1:
                counts.append(int(np.count_nonzero(values == v)))
                sizes.append(len(values))
                probabilities.append(p)
                labels.append((f"group {g}", v))
    if not counts:
        return "no test (every value certain)", "", 1.0
    p = list(binomial_p_values(np.array(counts), np.array(sizes), np.array(probabilities)))
    expected = [n * q for n, q in zip(sizes, probabilities)]
    if len(law.groups) > 1:
        p += _pooled_tests(counts, sizes, probabilities, labels, expected)
    worst = int(np.argmin(p))
    where, value = labels[worst]
    pooled = " and Bernstein bound per value" if len(law.groups) > 1 else ""
    return (f"binomial test per value and group{pooled} ({len(p)} tests, Bonferroni)",
            f"value {value:g} in {where}: {counts[worst]} of n={sizes[worst]}, expected "
            f"{expected[worst]:.6g}", float(min(1.0, len(p) * p[worst])))


def _pooled_tests(counts, sizes, probabilities, labels, expected) -> list[float]:
    """Per value, the Bernstein p-value bound of its count over every group (appending the
    pooled figures to ``counts``, ``sizes``, ``labels`` and ``expected``)."""
    found = []
    for value in sorted({v for _, v in labels}):
        at = [k for k, (_, v) in enumerate(labels) if v == value]
        count, mean = sum(counts[k] for k in at), sum(expected[k] for k in at)
        variance = sum(expected[k] * (1 - probabilities[k]) for k in at)
        t = abs(count - mean)
        found.append(min(1.0, 2 * math.exp(-t * t / (2 * variance + 2 * t / 3))))
        counts.append(count)
        sizes.append(sum(sizes[k] for k in at))
        labels.append(("all groups (Bernstein bound)", value))
        expected.append(mean)
    return found


def binomial_p_values(counts, n, p) -> np.ndarray:
    """Two-sided p-values of ``counts`` successes in ``n`` trials of probability ``p`` (each
    tail's exact probability, doubled: a valid p-value, never below the exact test's).

    >>> binomial_p_values(np.array([50]), 100, np.array([0.5])).round(3).tolist()
    [1.0]
    """
    counts = np.asarray(counts)
    lower = stats.binom.cdf(counts, n, p)
    upper = stats.binom.sf(counts - 1, n, p)
    return np.minimum(1.0, 2 * np.minimum(lower, upper))


def _bit_counts(actual) -> tuple[np.ndarray, int, int]:
    """Ones per bit position (position k: the bit of weight 2**k) over the elements (any
    integer or float type, read as unsigned of its storage width), over the type's own bits: a
    2-, 4- or 6-bit type (int4, float4_e2m1fn) holds its bits in the low end of a byte."""
    flat = np.ascontiguousarray(actual).ravel()
    name = dtype_name(flat.dtype)
    width = FLOAT_FORMATS[name].bits if name in FLOAT_FORMATS else \
        int_info(name).bits if is_integer(name) else flat.dtype.itemsize * 8
    unsigned = flat.view(np.dtype(f"u{flat.dtype.itemsize}"))
    counts = [np.count_nonzero((unsigned >> np.array(k, unsigned.dtype)) & 1) for k in range(width)]
    return np.array(counts, np.int64), flat.size, width


def ks_rounded(values: np.ndarray, cdf, out_dtype: str) -> tuple[float, int]:
    """The Kolmogorov-Smirnov distance of the sample ``values`` (of ``out_dtype``) from
    ``cdf``, widened for rounding: each sorted value ``y`` is compared with ``cdf`` one step
    of the type above it and two below (the sample's distance from the law of draws each
    rounded to either neighbour in the type is at least this: Noether, "Note on the Kolmogorov
    statistic in the discrete case", Metrika 7, 1963, for why the p-value stays valid), and
    the distance less ``2**(1-p)`` (one ULP of 1: a generator drawing its uniform variates on
    the type's own grid). At most the distance of
    the sample from the law of the rounded draws, so the KS p-value ``kstwo.sf(D, n)`` is a
    valid (conservative) p-value for it.

    >>> statistic, n = ks_rounded(np.linspace(0.0005, 0.9995, 1000), stats.uniform.cdf, "float64")
    >>> round(statistic, 6), n
    (0.0005, 1000)
    """
    y = np.sort(values)
    n = y.size
    slack = 0.0
    if out_dtype in FLOAT_FORMATS:
        fmt = FLOAT_FORMATS[out_dtype]
        step = _spacing(np.abs(y), fmt)   # the spacing above |y| (below it: at most that)
        # one value of the type above y, two below (three spacings where y < 0: the spacing
        # away from zero may double past a power of two)
        above, below = cdf(y + step), cdf(y - np.where(y < 0, 3, 2) * step)
        slack = 2.0 ** (1 - fmt.precision)
    else:
        above = below = cdf(y)
    i = np.arange(1, n + 1)
    distance = max(float(np.max(i / n - above)), float(np.max(below - (i - 1) / n)))
    return max(0.0, distance - slack), n
