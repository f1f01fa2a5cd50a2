"""One chunk of a sweep: a bit range of one unary op's inputs run by the backend, the oracle and
the judge, summed up in a small dict.

A chunk is named by its content (:class:`ChunkTask`: op, dtype, backend and its version, the bit
range and conform's version), so a finished chunk is never run again for the same question
(:mod:`conform.harness.run.sweep`). Its case is the generators' :func:`bit_range_case` (a
binary op's: :func:`~conform.generators.lattice_case`, ``first`` and ``stop`` indices into the
lattice of operand pairs, where a unary op's are bit patterns); the
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
from conform.generators import (EXHAUSTIVE_BITS, RemadeInputs, bit_range_case, bit_range_inputs,
                                lattice_case, lattice_inputs)
from conform.harness.judge.accuracy import (block_ranges, blockwise, correctly_rounded, ulp_buckets,
                                            ulp_errors)
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
    space: str = "bits"   # what first and stop number: "bits" (patterns) or "lattice" (pairs)

    @property
    def key(self) -> str:
        """The chunk's content key: a digest of every field (``space`` left out where it is
        ``bits``: the keys of unary chunks are those they had before binary ops were swept)."""
        fields = asdict(self)
        if fields["space"] == "bits":
            del fields["space"]
        text = json.dumps(fields, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def case(self, spec):
        """The chunk's case: its bit patterns, or its lattice pairs, with the shapes of its
        outputs (an element-wise op's: its inputs'), which a backend's model declares: the
        backend's worker need not compute the oracle's answer to learn them; its inputs
        reach the worker as the range that makes them (:class:`~conform.generators.RemadeInputs`)."""
        lattice = self.space == "lattice"
        case = (lattice_case if lattice else bit_range_case)(spec, self.dtype, self.first, self.stop)
        case.output_shapes = (np.broadcast_shapes(*(x.shape for x in case.inputs)),) * len(spec.outputs)
        case.inputs = RemadeInputs(case.inputs, lattice_inputs if lattice else bit_range_inputs,
                                   (self.dtype, self.first, self.stop))
        return case


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
    case = task.case(spec)
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
    """The summary of ``case`` (``task``'s, :meth:`ChunkTask.case`) given the backend's
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
    actual, xs = np.asarray(outputs[0]).ravel(), [x.ravel() for x in case.inputs]
    impl = case.expectation[0].impl_mask
    judged_mask = np.ones(actual.shape, bool) if impl is None else ~np.asarray(impl, bool).ravel()
    errors, rounded = _accuracy(spec, case, actual, expected.ravel(), task.subnormals,
                                judgement)
    if impl is not None:
        errors = np.where(judged_mask, errors, 0.0)
    failing = np.zeros(actual.shape, bool)
    if judgement.failing is not None:
        failing[np.asarray(judgement.failing, np.int64)] = True
    result = {"inputs": int(actual.size), "checked": judgement.checked,
              "failed": judgement.mismatched, "impl_defined": judgement.impl_defined,
              "model": judgement.model, "unit": judgement.unit,
              "worst": _worst(judgement, task.first, xs, expected.ravel()),
              "ulp_histogram": ulp_buckets(errors if impl is None else errors[judged_mask]).tolist(),
              "correctly_rounded": int(np.count_nonzero(rounded & judged_mask)),
              "max_ulp": _largest(errors, task.first, xs),
              "regions": region_counts(spec, task.dtype, xs, judged_mask, failing, errors),
              "failing": _first_failing(failing, task.first, xs, expected.ravel(), actual, errors),
              "profile": error_profile(errors, task.first, profile_shift(task.dtype, task.space))}
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
    judged = judgement.errors if "ulp" in model else None
    flushed = flushed_expectation(spec, case) if subnormals == "ftz" else None
    other = None if flushed is None else np.asarray(flushed[0][0], np.float64).ravel()

    def figures(actual, expected, other, judged):
        errors = judged if judged is not None else ulp_errors(
            actual, expected, case.out_dtype, subnormals=subnormals, signed_zero=zero)
        rounded = correctly_rounded(actual, expected, case.out_dtype, signed_zero=zero)
        if other is not None:
            if judged is None:
                errors = np.minimum(errors, ulp_errors(actual, other, case.out_dtype,
                                                       subnormals=subnormals, signed_zero=zero))
            rounded |= correctly_rounded(actual, other, case.out_dtype, signed_zero=zero)
        return np.asarray(errors, np.float64), rounded

    if judged is not None and other is None:   # the judge's errors as they are: no copy
        return np.asarray(judged, np.float64), blockwise(
            lambda a, e: (correctly_rounded(a, e, case.out_dtype, signed_zero=zero),),
            (actual, expected), actual.size)[0]
    return blockwise(figures, (actual, expected, other, judged), actual.size)


def _py(value) -> float:
    return float(value)


def _input_at(xs: list, index: int):
    """The input at ``index``: a unary op's value, or a binary op's ``[a, b]``."""
    return _py(xs[0][index]) if len(xs) == 1 else [_py(x[index]) for x in xs]


def _worst(judgement, first: int, xs: list, expected: np.ndarray) -> dict | None:
    """The judge's worst element (the largest error / bound, the first in bit order of equals)."""
    worst = judgement.worst
    if worst is None:
        return None
    index = int(worst["index"][0])
    error, bound = float(worst["error"]), float(worst["bound"])
    special = bool(judgement.reason) and judgement.verdict == "fail"
    ratio = float("inf") if special or (bound == 0 and error > 0) else (error / bound if bound else 0.0)
    return {"bits": first + index, "input": _input_at(xs, index), "expected": _py(worst["expected"]),
            "actual": _py(worst["actual"]), "error": error, "bound": bound, "ratio": ratio}


def _largest(errors: np.ndarray, first: int, xs: list) -> dict:
    """The largest ULP error and its input (the first in bit order of equals)."""
    index = int(np.argmax(errors)) if errors.size else 0
    return {"ulp": float(errors[index]) if errors.size else 0.0, "bits": first + index,
            "input": _input_at(xs, index) if errors.size else None}


def _first_failing(failing, first, xs, expected, actual, errors) -> list:
    """The first :data:`FIRST_FAILING` failing inputs: ``[bits, input, expected, actual, ulp]``."""
    at = np.flatnonzero(failing)[:FIRST_FAILING]
    return [[first + int(i), _input_at(xs, i), _py(expected[i]), _py(actual[i]), float(errors[i])]
            for i in at]


#: Bit patterns per block of the error profile (the largest ULP error per block, for the map's
#: plot), per dtype: 512 blocks over a 16-bit type, 65,536 over float32.
PROFILE_BLOCK_BITS = {"float16": 7, "bfloat16": 7, "float32": 16}
#: Lattice indices per block of a binary op's profile: 4,096 blocks over a float16 lattice
#: (an exponent pair each), 65,536 over a float32 or bfloat16 one (four pairs each).
LATTICE_BLOCK_BITS = {"float16": 6, "bfloat16": 8, "float32": 8}


def profile_shift(dtype: str, space: str = "bits") -> int:
    """log2 of the inputs per block of the error profile of a sweep of ``dtype`` over
    ``space`` (:data:`PROFILE_BLOCK_BITS`, :data:`LATTICE_BLOCK_BITS`)."""
    return (LATTICE_BLOCK_BITS if space == "lattice" else PROFILE_BLOCK_BITS)[dtype]


def error_profile(errors: np.ndarray, first: int, shift: int) -> list:
    """``[block, largest ULP error]`` per block of ``2 ** shift`` inputs (numbered from input
    0: a bit pattern, or a lattice index) that holds an element of ``errors`` (those of the
    inputs from ``first`` on) with a non-zero error."""
    # where a block starts: at 0, then at each pattern that is a multiple of 2**shift
    starts = np.r_[0, np.arange((((first >> shift) + 1) << shift) - first, errors.size, 1 << shift)]
    largest = np.maximum.reduceat(errors, starts) if errors.size else np.zeros(0)
    return [[(first + int(s)) >> shift, float(v)] for s, v in zip(starts, largest) if v > 0]


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


def region_counts(spec, dtype: str, xs: list, judged: np.ndarray, failing: np.ndarray,
                  errors: np.ndarray) -> dict:
    """Per region (the spec's critical regions, its implementation-defined inputs, and the
    inputs with a subnormal, zero or non-finite operand; a binary op's critical regions, which
    concern both operands, are left out): ``[inputs, failed, max ULP error]``."""
    bounds = region_bounds(spec, dtype) if len(xs) == 1 else []
    any_failing = bool(failing.any())
    parts = [_block_regions(bounds, dtype, [x[low:high] for x in xs],
                            *(a[low:high] for a in (judged, failing, errors)), any_failing)
             for low, high in block_ranges(judged.size)]
    return {name: [sum(p[name][0] for p in parts), sum(p[name][1] for p in parts),
                   float(np.max([p[name][2] for p in parts]))] for name in parts[0]}


def _block_regions(bounds: list, dtype: str, xs: list, judged, failing, errors,
                   any_failing: bool = True) -> dict:
    """:func:`region_counts` of a block of elements (``any_failing``: False where no element
    of the chunk fails). A region the block's least and largest input show it misses gets no
    mask (a sweep's block of consecutive bit patterns misses most)."""
    masks = {"implementation_defined": None if judged.all() else ~judged}
    bits = EXHAUSTIVE_BITS[dtype]
    sign = np.uint32(1 << (bits - 1)) if bits == 32 else np.uint16(1 << (bits - 1))
    # (read from the bit patterns: the exponent field all ones, all zeros, or the whole zero)
    fraction = FLOAT_FORMATS[dtype].precision - 1
    normal, infinity = 1 << fraction, ((1 << (bits - 1 - fraction)) - 1) << fraction
    for x in xs:
        magnitude = x.view(sign.dtype) & (sign - 1)
        low, high = (magnitude.min(), magnitude.max()) if magnitude.size else (infinity, 0)
        for name, mask in (("non_finite", high >= infinity and (lambda: magnitude >= infinity)),
                           ("zero", low == 0 and (lambda: magnitude == 0)),
                           ("subnormal", low < normal and high > 0
                            and (lambda: (magnitude > 0) & (magnitude < normal)))):
            masks[name] = _either(masks.get(name), mask() if mask else None)
    if bounds:   # (compared in float64: the bounds are float64 values)
        wide = xs[0] if xs[0].dtype.kind == "f" else xs[0].astype(np.float64)
        least, most = (wide.min(), wide.max()) if wide.size else (np.inf, -np.inf)
    for name, low, high in bounds:   # (a NaN among the inputs: least and most NaN, masked)
        inside = None if most < low or least > high else \
            np.greater_equal(wide, np.float64(low)) & np.less_equal(wide, np.float64(high))
        masks[f"critical:{name}"] = _either(masks.get(f"critical:{name}"), inside)
    counts = {}
    for name, mask in masks.items():
        n = 0 if mask is None else int(np.count_nonzero(mask))
        counts[name] = [n, int(np.count_nonzero(failing & mask)) if any_failing and n else 0,
                        float(np.where(mask, errors, -np.inf).max()) if n else 0.0]
    return counts


def _either(mask, other):
    """Where either mask holds (None: nowhere)."""
    return other if mask is None else mask if other is None else mask | other


__all__ = ["FIRST_FAILING", "LATTICE_BLOCK_BITS", "PROFILE_BLOCK_BITS", "ChunkTask", "backend_outcome", "chunk_summary", "error_profile", "profile_shift", "region_bounds",
           "region_counts", "run_chunk"]
