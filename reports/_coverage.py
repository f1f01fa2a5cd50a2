"""Coverage: how many of a run's cases were judged, and why the others were not.

A case is *judged* when the backend computed it and its verdict counts in the pass rate:
``pass``, ``xpass``, ``fail``, ``error``, ``crash``, ``timeout`` (the pass rate's denominator).
Not judged: ``unsupported`` (the backend cannot express the case), ``skip`` (a manifest left it
out), ``xfail`` and ``waived`` (a manifest excused the verdict: it is left out of the pass rate
and counts against the coverage, as in a certificate), and ``impl_defined`` (every element the
case checks lies in a region the standard leaves open: the values are recorded, not judged; a
case with only some elements there is judged on the others).
``coverage = judged / cases``.
"""
from __future__ import annotations

import math
import re
from collections import Counter

from conform.verdicts import JUDGED  # noqa: E402 - the vocabulary, re-exported

# Why a case is unsupported, from the message its ``unsupported`` record carries (the backend
# contract has no field for it): the first pattern that matches names the reason.
REASONS = {
    "binding": "no binding for the backend's model format",
    "op": "op not claimed by the backend",
    "dtype": "dtype not claimed by the backend",
    "standard": "the standard does not allow it",
    "runtime": "the runtime or adapter cannot run it",
}
SHORT_REASONS = {"binding": "no binding", "op": "op not claimed", "dtype": "dtype not claimed",
                 "standard": "not in the standard", "runtime": "runtime cannot"}
_REASON_PATTERNS = (
    ("binding", re.compile(r"has no \S+ binding|has no function")),
    ("op", re.compile(r"does not claim op ")),
    ("dtype", re.compile(r"does not claim dtype")),
    # the model format's own rules: "ONNX Pad has no interior padding", "NNEF type system: ..."
    ("standard", re.compile(r"^(ONNX|NNEF|StableHLO|XLA) ")),
)


def judged(counts: dict) -> int:
    """How many cases of ``counts`` (verdict -> count) were judged."""
    return sum(counts.get(v, 0) for v in JUDGED)


def coverage(counts: dict) -> float | None:
    """judged / cases; None where there are no cases."""
    cases = sum(counts.values())
    return judged(counts) / cases if cases else None


def rate_text(rate: float | None) -> str:
    """A pass rate or coverage as a percentage with two decimals, rounded down (a rate below 1
    never shows as 100.00%), 'n/a' for None: the one form of a percentage in the terminal,
    every report and certificates."""
    if rate is None:
        return "n/a"
    # (the 1e-9 absorbs float noise: 0.29 * 10000 is 2899.9999999999995)
    return f"{math.floor(rate * 10000 + 1e-9) / 100:.2f}%"


def coverage_text(counts: dict) -> str:
    """'judged N of M cases (coverage x%)'."""
    cases, rate = sum(counts.values()), coverage(counts)
    return f"judged {judged(counts)} of {cases} cases (coverage {rate_text(rate)})"


def unsupported_reason(message: str | None) -> str:
    """The key in :data:`REASONS` of an ``unsupported`` record's message."""
    for key, pattern in _REASON_PATTERNS:
        if message and pattern.search(message):
            return key
    return "runtime"


def reasons_text(reasons: dict | None) -> str:
    """An n/a cell's reasons ('dtype not claimed by the backend (20)'), most frequent first."""
    if not reasons:
        return ""
    ordered = sorted(reasons.items(), key=lambda kv: -kv[1]["cases"])
    return "; ".join(f"{REASONS.get(key, key)} ({entry['cases']}): {entry['example']}"
                     for key, entry in ordered)


def not_expressible_text(summary: dict) -> str:
    """'' or the sentence naming the drawn cases the run's model format cannot express (its
    summary's ``not_expressible``: left out of the format's suite, never run, not in the
    coverage), by op and reason, most frequent first."""
    grouped: Counter = Counter()
    for entry in summary.get("not_expressible") or ():
        grouped[entry["op"], entry["reason"]] += entry["cases"]
    if not grouped:
        return ""
    fmt = summary.get("model_format") or "the backend's"
    return (f"Not in the suite: {sum(grouped.values())} drawn cases the {fmt} model format "
            "cannot express (never run, not counted): "
            + "; ".join(f"{op}: {reason} ({n})" for (op, reason), n in grouped.most_common())
            + ".")
