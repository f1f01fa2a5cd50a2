"""One chunk of a sweep: a bit range of one unary op's inputs run by the backend, the oracle and
the judge, summed up in a small dict.

A chunk is named by its content (:class:`ChunkTask`: op, dtype, backend and its version, the bit
range and conform's version), so a finished chunk is never run again for the same question
(:mod:`conform.harness.run.sweep`). Its case is the generators' :func:`bit_range_case`; the
backend runs it in a worker of a :class:`~conform.harness.run.isolation.WorkerPool` (a crash or
hang costs that worker, which is replaced, and the chunk runs once more before it is recorded
as ``crash`` or ``timeout``); the oracle is the run's (:func:`~conform.oracles.expectations.expect`)
and the verdict the run's judge (:func:`~conform.harness.judge.judging.judge_many`), to which
the accuracy figures (:mod:`conform.harness.judge.accuracy`) add the ULP histogram and the
share correctly rounded. The summary's ``result`` depends on the chunk's inputs alone, so
summaries merge (:mod:`conform.harness.run.sweep_merge`) to the same figures whatever the
chunking; its ``seconds`` (each stage's time) are kept apart from it.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass

import numpy as np

from conform.dtypes import FLOAT_FORMATS
from conform.generators import bit_range_case
from conform.harness.judge.accuracy import correctly_rounded, ulp_buckets, ulp_errors
from conform.harness.judge.judging import flushed_expectation, judge_many
from conform.oracles.expectations import expect
from conform.spec.critical import resolve, ulp

#: Failing inputs a chunk keeps (the first in bit order), and so does a merged sweep.
FIRST_FAILING = 16
#: Outcomes after which a chunk is run once more, on a new worker process.
RETRIED = ("crash", "timeout")


@dataclass(frozen=True)
class ChunkTask:
    """What a chunk computes: ``op`` on the ``dtype`` bit patterns ``first`` to ``stop`` (one
    past the last) on ``backend`` (as its workers name their version), judged under
    ``subnormals``, by conform ``conform_version``."""

    op: str
    dtype: str
    backend: str
    backend_version: str
    first: int
    stop: int
    conform_version: str
    subnormals: str = "ieee"

    @property
    def key(self) -> str:
        """The chunk's content key: a digest of every field."""
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def backend_outcome(pool, case):
    """``(outcome, attempts)``: ``case`` run on ``pool``'s backend, once more (on the new worker
    the pool started) after a crash or a timeout."""
    for attempt in (1, 2):
        (_, outcome), = list(pool.run([case]))
        if outcome.kind not in RETRIED:
            break
    return outcome, attempt


def run_chunk(pool, spec, task: ChunkTask) -> dict:
    """The summary of ``task``'s chunk (see :func:`chunk_summary`), the backend run on ``pool``.

    >>> run_chunk(pool, specs["tanh"], task)["result"]["checked"]   # doctest: +SKIP
    4194304
    """
    case = bit_range_case(spec, task.dtype, task.first, task.stop)
    start = time.perf_counter()
    outcome, attempts = backend_outcome(pool, case)
    computed = time.perf_counter()
    if outcome.kind != "ok":
        return {"key": task.key, "first": task.first, "stop": task.stop, "status": outcome.kind,
                "attempts": attempts, "message": outcome.message[:400],
                "seconds": {"backend": computed - start}}
    summary = chunk_summary(spec, case, outcome.outputs, task)
    summary["attempts"] = attempts
    summary["seconds"]["backend"] = computed - start
    return summary


def chunk_summary(spec, case, outputs: list, task: ChunkTask) -> dict:
    """The summary of ``case`` (a :func:`bit_range_case` of ``task``'s range) given the backend's
    ``outputs``: ``result`` holds the judge's counts and worst element (its ratio to the bound),
    the ULP histogram, the count correctly rounded, the largest ULP error and its input, counts
    per region and the first :data:`FIRST_FAILING` failing inputs; ``seconds`` the time the
    oracle, the judge and the accuracy figures took."""
    start = time.perf_counter()
    case.expectation = expect(spec, case, subnormals=task.subnormals)
    expected = np.asarray(case.expectation[0].expected)
    oracle = time.perf_counter()
    judgement = judge_many([(spec, case, outputs)], task.subnormals, keep_errors=True)[0]
    judged = time.perf_counter()
    actual, x = np.asarray(outputs[0]).ravel(), case.inputs[0].ravel()
    impl = case.expectation[0].impl_mask
    judged_mask = np.ones(x.shape, bool) if impl is None else ~np.asarray(impl, bool).ravel()
    errors, rounded = _accuracy(spec, case, actual, expected.ravel(), task.subnormals,
                                judgement)
    errors = np.where(judged_mask, errors, 0.0)
    failing = np.zeros(x.shape, bool)
    if judgement.failing is not None:
        failing[np.asarray(judgement.failing, np.int64)] = True
    result = {"inputs": int(x.size), "checked": judgement.checked, "failed": judgement.mismatched,
              "impl_defined": judgement.impl_defined, "model": judgement.model,
              "unit": judgement.unit, "worst": _worst(judgement, task.first, x, expected.ravel()),
              "ulp_histogram": ulp_buckets(errors[judged_mask]).tolist(),
              "correctly_rounded": int((rounded & judged_mask).sum()),
              "max_ulp": _largest(errors, task.first, x),
              "regions": region_counts(spec, task.dtype, x, judged_mask, failing, errors),
              "failing": _first_failing(failing, task.first, x, expected.ravel(), actual, errors),
              "profile": error_profile(errors, task.first, task.dtype)}
    return {"key": task.key, "first": task.first, "stop": task.stop, "status": "ok",
            "result": result, "seconds": {"oracle": oracle - start, "judge": judged - oracle,
                                          "accuracy": time.perf_counter() - judged}}


def _accuracy(spec, case, actual, expected, subnormals: str, judgement) -> tuple:
    """Per element ``(ULP error, correctly rounded)``; under ``ftz``, against whichever reference
    is closer, the oracle's or the one with subnormal inputs read as zeros, and with the sign of a
    zero judged as the op's error model says (as the judge does). Under an ``ulp`` model the
    errors are the judge's own (``judgement.errors``)."""
    model = spec.model_for(case.out_dtype, 0, case)
    zero = model.get("signed_zero", "strict")   # as judged
    errors = judgement.errors if "ulp" in model else None
    if errors is None:
        errors = ulp_errors(actual, expected, case.out_dtype, subnormals=subnormals,
                            signed_zero=zero)
    rounded = correctly_rounded(actual, expected, case.out_dtype, signed_zero=zero)
    flushed = flushed_expectation(spec, case) if subnormals == "ftz" else None
    if flushed is not None:
        other = np.asarray(flushed[0][0], np.float64).ravel()
        if judgement.errors is None or "ulp" not in model:
            errors = np.minimum(errors, ulp_errors(actual, other, case.out_dtype,
                                                   subnormals=subnormals, signed_zero=zero))
        rounded |= correctly_rounded(actual, other, case.out_dtype, signed_zero=zero)
    return np.asarray(errors, np.float64).ravel(), rounded


def _py(value) -> float:
    return float(value)


def _worst(judgement, first: int, x: np.ndarray, expected: np.ndarray) -> dict | None:
    """The judge's worst element (the largest error / bound, the first in bit order of equals)."""
    worst = judgement.worst
    if worst is None:
        return None
    index = int(worst["index"][0])
    error, bound = float(worst["error"]), float(worst["bound"])
    special = bool(judgement.reason) and judgement.verdict == "fail"
    ratio = float("inf") if special or (bound == 0 and error > 0) else (error / bound if bound else 0.0)
    return {"bits": first + index, "input": _py(x[index]), "expected": _py(worst["expected"]),
            "actual": _py(worst["actual"]), "error": error, "bound": bound, "ratio": ratio}


def _largest(errors: np.ndarray, first: int, x: np.ndarray) -> dict:
    """The largest ULP error and its input (the first in bit order of equals)."""
    index = int(np.argmax(errors)) if errors.size else 0
    return {"ulp": float(errors[index]) if errors.size else 0.0, "bits": first + index,
            "input": _py(x[index]) if errors.size else None}


def _first_failing(failing, first, x, expected, actual, errors) -> list:
    """The first :data:`FIRST_FAILING` failing inputs: ``[bits, input, expected, actual, ulp]``."""
    at = np.flatnonzero(failing)[:FIRST_FAILING]
    return [[first + int(i), _py(x[i]), _py(expected[i]), _py(actual[i]), float(errors[i])]
            for i in at]


#: Bit patterns per block of the error profile (the largest ULP error per block, for the map's
#: plot), per dtype: 512 blocks over a 16-bit type, 65,536 over float32.
PROFILE_BLOCK_BITS = {"float16": 7, "bfloat16": 7, "float32": 16}


def error_profile(errors: np.ndarray, first: int, dtype: str) -> list:
    """``[block, largest ULP error]`` per block of :data:`PROFILE_BLOCK_BITS` bit patterns
    (numbered from bit pattern 0) that holds an element of ``errors`` (those of the patterns
    from ``first`` on) with a non-zero error."""
    shift = PROFILE_BLOCK_BITS[dtype]
    blocks = (np.arange(first, first + errors.size, dtype=np.int64) >> shift)
    starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
    largest = np.maximum.reduceat(errors, starts) if errors.size else np.zeros(0)
    return [[int(blocks[s]), float(v)] for s, v in zip(starts, largest) if v > 0]


def region_bounds(spec, dtype: str) -> list:
    """``(name, low, high)`` per interval of the spec's ``critical_regions`` under ``dtype``
    (a mirrored region gives two with the same name); regions whose centre names an input
    (those of ops with several inputs) are left out."""
    found = []
    for region in spec.critical_regions:
        try:
            centre = float(resolve(region["at"], dtype))
        except Exception:   # an expression over other inputs, or undefined for the dtype
            continue
        if "ulps" in region:
            half = float(region["ulps"]) * float(ulp(centre, dtype))
            low, high = centre - half, centre + half
        else:
            low, high = sorted((centre * (1 - region["rel"]), centre * (1 + region["rel"])))
        found.append((region["name"], low, high))
        if region.get("mirror"):
            found.append((region["name"], -high, -low))
    return found


def region_counts(spec, dtype: str, x: np.ndarray, judged: np.ndarray, failing: np.ndarray,
                  errors: np.ndarray) -> dict:
    """Per region (the spec's critical regions, its implementation-defined inputs, and the
    subnormal, zero and non-finite inputs): ``[inputs, failed, max ULP error]``."""
    wide = x.astype(np.float64)
    magnitude = np.abs(wide)
    masks = {"implementation_defined": ~judged, "non_finite": ~np.isfinite(wide),
             "zero": wide == 0,
             "subnormal": (magnitude > 0) & (magnitude < FLOAT_FORMATS[dtype].min_normal)}
    for name, low, high in region_bounds(spec, dtype):
        inside = (wide >= low) & (wide <= high)
        masks[f"critical:{name}"] = masks.get(f"critical:{name}", False) | inside
    counts = {}
    for name, mask in masks.items():
        n = int(np.count_nonzero(mask))
        counts[name] = [n, int(np.count_nonzero(failing & mask)),
                        float(errors[mask].max()) if n else 0.0]
    return counts


__all__ = ["FIRST_FAILING", "PROFILE_BLOCK_BITS", "ChunkTask", "backend_outcome", "chunk_summary", "error_profile", "region_bounds",
           "region_counts", "run_chunk"]
