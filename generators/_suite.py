"""Deterministic suites: Hypothesis draws case plans (:mod:`._drawing`), NumPy fills the arrays.

The same conform version (which pins Hypothesis) and seed give the same cases, byte for byte.
"""
from __future__ import annotations

import gc
import hashlib

import numpy as np

from conform.generators._case import Case
from conform.generators._corpus import corpus_path, load_or_generate, note_written
from conform.generators._corpus_format import answer_arrays
from conform.generators._consistency import consistency_cases
from conform.generators._critical import critical_cases
from conform.generators._drawn_shapes import onto_drawn_shapes
from conform.generators._edges import (broadcast_case, broadcast_inputs, edge_case_cases,
                                       edge_sweep_case, every_value_case, midpoint_case)
from conform.generators._length import length_cases
from conform.generators._materialize import materialize
from conform.spec import OpSpec
from conform.dtypes import content_bytes


def generate_cases(spec: OpSpec, dtype: str, *, count: int, seed: int,
                   use_cache: bool = False, answer=None) -> list[Case]:
    """The suite's cases for one op and dtype label (from the corpus cache if ``use_cache``).

    Drawing computes no oracle answer: ``answer(spec, case)`` (the expectation stage's
    :func:`conform.oracles.expectations.expect`), when given, makes each case's once, when its
    slice is made, and the corpus keeps it with the case; without it, cases have none (the judge
    asks the oracle when it judges them).

    >>> [c.id for c in generate_cases(spec, "float32", count=2, seed=0)]   # doctest: +SKIP
    ['add.float32.0', 'add.float32.1']
    """
    return load_or_generate(spec, dtype, count=count, seed=seed, use_cache=use_cache,
                            answered=answer is not None,
                            generate=lambda: _answered(
                                spec, _generate(spec, dtype, count=count, seed=seed), answer))


def _answered(spec: OpSpec, cases: list[Case], answer) -> list[Case]:
    """``cases``, each with ``answer(spec, case)`` attached (none without ``answer``)."""
    if answer is not None:
        for case in cases:   # the oracle runs once per case, here, not once per run and backend
            if not case.extra.get("must_reject"):   # its answer is a refusal: no oracle's
                case.expectation = answer(spec, case)
    return cases


def fill_corpus(slices, *, count: int, seed: int, processes: int, context=None,
                answer=None) -> int:
    """Generate the corpus files of those (spec, dtype label) ``slices`` the cache lacks, in up to
    ``processes`` child processes of multiprocessing ``context`` (which must fork: the children
    take the specs from this process), each case with its ``answer`` (see
    :func:`generate_cases`). Later :func:`generate_cases` calls read them from the
    cache, byte for byte the cases they would have drawn themselves. A slice whose generation
    fails in a child is left to that later call, which raises the error where it belongs.
    Returns how many files the children wrote."""
    if processes < 2 or context is None:
        return 0
    missing = [(spec, dtype, path) for spec, dtype in slices
               if not (path := corpus_path(spec, dtype, count=count, seed=seed,
                                           answered=answer is not None)).exists()]
    if len(missing) < 2:
        return 0
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    _FILLING[:] = [(spec, dtype, count, seed, answer) for spec, dtype, _ in missing]
    try:
        with ProcessPoolExecutor(min(processes, len(missing)), mp_context=context,
                                 initializer=gc.enable) as pool:
            done = list(pool.map(_fill_one, range(len(missing))))
    except BrokenProcessPool:   # a child died: what it did not write is generated here later
        done = [path.exists() for _, _, path in missing]
    finally:
        _FILLING.clear()
    written = [path for (_, _, path), wrote in zip(missing, done) if wrote]
    note_written(written)
    return len(written)


#: The slices :func:`fill_corpus` hands its (forked) children, who pick theirs by index.
_FILLING: list = []


def _fill_one(index: int) -> bool:
    """Whether the child wrote the corpus file of slice ``index``."""
    spec, dtype, count, seed, answer = _FILLING[index]
    try:
        generate_cases(spec, dtype, count=count, seed=seed, use_cache=True, answer=answer)
    except Exception:
        return False
    return True


def _generate(spec: OpSpec, dtype: str, *, count: int, seed: int) -> list[Case]:
    from conform.generators._drawing import draw_plans
    from conform.generators._shape_edges import boundary_cases, must_reject_cases

    every = every_value_case(spec, dtype)
    if every is not None:   # a float8 or float4 type: every value in one case
        return [every]
    plans = draw_plans(spec, dtype, count=count, seed=seed)
    edges: dict = {}
    cases = [materialize(spec, dtype, i, plan, edges) for i, plan in enumerate(plans)]
    if spec.elementwise:
        sweep, broadcast = (edge_sweep_case(spec, dtype, seed=seed),
                            broadcast_case(spec, dtype, seed=seed))
        cases += [c for c in (sweep, broadcast) if c] + edge_case_cases(spec, dtype, seed=seed)
    cases += critical_cases(spec, dtype, seed=seed)
    midpoint = midpoint_case(spec, dtype, seed=seed)
    cases += [midpoint] if midpoint else []
    cases = onto_drawn_shapes(cases, lambda case, shapes: broadcast_inputs(spec, dtype, shapes,
                                                                           seed=seed))
    cases = length_cases(spec, dtype, cases, seed=seed)
    return (cases + consistency_cases(spec, dtype, cases, seed=seed)
            + boundary_cases(spec, dtype, seed=seed) + must_reject_cases(spec, dtype, seed=seed))


def case_digest(case: Case) -> str:
    """A content hash of a case (inputs, attrs, dtypes), for determinism checks and manifests."""
    h = hashlib.sha256(repr((case.id, case.input_dtypes, case.out_dtype, sorted(case.attrs.items()))).encode())
    for x in case.inputs:
        h.update(str(x.shape).encode())
        h.update(content_bytes(np.asarray(x)))
    return h.hexdigest()


def answer_digest(case: Case) -> str:
    """A content hash of a case's oracle answer: each of its named arrays' name, dtype, shape
    and bytes (:func:`conform.generators._corpus_format.answer_arrays`), or of its absence."""
    h = hashlib.sha256(b"answer")
    if case.expectation is None:
        return hashlib.sha256(b"no answer").hexdigest()
    for name, array in answer_arrays(case.expectation).items():
        array = np.asarray(array)
        h.update(f"\0{name}\0{array.dtype.name}\0{array.shape}\0".encode())
        h.update(content_bytes(array))
    return h.hexdigest()
