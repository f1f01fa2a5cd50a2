"""The error bounds of the ``derived`` and ``accumulation`` models, on the default corpus, are
those recorded before the error-bound toolkit (``conform.ops.error_bounds``) replaced the
hand-written terms: bit for bit, per case.

For every op x dtype label whose spec uses either model, its cases drawn as ``conform run``
draws them (20 examples, seed 0), the fixture holds a digest of the cases and, per case, one
digest of its oracle answer (the reference, the implementation-defined mask, the derived bound
``B`` or the accumulation figures ``(S, n)``), of the judge's per-element bounds, and of the
flushed reference's figures the judge computes under ``ftz``.

    python3 tests/ops/test_bounds_unchanged.py record   # writes the fixture (from main's code)
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "error_bounds" / "bounds.json"
COUNT, SEED = 20, 0     # ``conform run``'s defaults: --max-examples 20, --seed 0
MODELS = ("derived", "accumulation")


def bounded_ops(specs) -> list[str]:
    """The ops whose spec (or one of its outputs) names a ``derived`` or ``accumulation`` model."""
    def models(spec):
        yield from spec.error_model.values()
        for entry in spec.signature.get("outputs", ()):
            if isinstance(entry, dict):
                yield from entry.get("error_model", {}).values()

    return sorted(name for name, spec in specs.items() if spec.node_specs == (spec,)
                  and any(kind in model for model in models(spec) for kind in MODELS))


def _hash(*arrays) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        if array is None:
            digest.update(b"none")
            continue
        array = np.ascontiguousarray(np.asarray(array))
        digest.update(f"{array.dtype.name}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()[:16]


def _judge_bounds(spec, case, answer) -> str:
    """The judge's per-element bounds (in the model's unit) for each numeric output."""
    from conform.harness.judge._elements import _numeric_error

    from conform.dtypes import FLOAT_FORMATS

    bounds = []
    for k, (part, out_dtype) in enumerate(zip(answer, spec.out_dtypes(case))):
        model = spec.model_for(out_dtype, k, case)
        if out_dtype in FLOAT_FORMATS and any(kind in model for kind in MODELS):
            expected = np.asarray(part.expected, np.float64)
            with np.errstate(all="ignore"):
                bounds.append(_numeric_error(expected, expected, out_dtype, model,
                                             part.accumulation, part.residual)[1])
    return _hash(*bounds)


def _flushed(spec, case) -> str:
    from conform.harness.judge.judging import flushed_expectation

    flushed = flushed_expectation(spec, case)
    if flushed is None:
        return "none"
    return _hash(*[x for expected, figures in flushed
                   for x in (expected, *(figures if figures is not None else (None,)))])


def figures(spec, dtype: str) -> dict[str, str]:
    """One slice: ``cases``, a digest of its cases, and per case number a digest of its answer,
    its judge bounds and its flushed figures; the answers are computed afresh (the cached
    corpus supplies only the cases)."""
    from conform.generators import answer_digest, case_digest, generate_cases
    from conform.oracles.expectations import expect

    cases = generate_cases(spec, dtype, count=COUNT, seed=SEED, use_cache=True)
    found = {"cases": hashlib.sha256("".join(map(case_digest, cases)).encode()).hexdigest()[:12]}
    for case in cases:
        if case.extra.get("must_reject"):   # no answer: a refusal is expected
            found[case.id.rsplit(".", 1)[1]] = "must_reject"
            continue
        case.expectation = expect(spec, case)
        parts = (answer_digest(case), _judge_bounds(spec, case, case.expectation),
                 _flushed(spec, case))
        found[case.id.rsplit(".", 1)[1]] = hashlib.sha256(repr(parts).encode()).hexdigest()[:12]
    return found


def all_figures(specs, slices=None) -> dict[str, dict[str, str]]:
    """:func:`figures` of every ``op/dtype`` slice named (default: every bounded op's)."""
    from conform.generators import dtype_labels

    if slices is None:
        slices = [f"{name}/{dtype}" for name in bounded_ops(specs)
                  for dtype in dtype_labels(specs[name])]
    return {key: figures(specs[key.split("/")[0]], key.split("/", 1)[1]) for key in slices}


@pytest.fixture(scope="module")
def recorded():
    return json.loads(FIXTURE.read_text())


def test_every_recorded_op_still_has_its_model(specs, recorded):
    ops = {key.split("/")[0] for key in recorded}
    assert ops <= set(bounded_ops(specs))
    assert {"onnx_softmax", "onnx_gemm", "onnx_resize", "reduce_sum", "dot_general"} <= ops


def test_every_bound_on_the_default_corpus_is_unchanged_bit_for_bit(specs, recorded):
    """(Ops added since the recording are not in it; a slice whose cases were drawn differently
    on purpose is recorded again with ``python3 tests/ops/test_bounds_unchanged.py record``.)"""
    now = all_figures(specs, list(recorded))
    changed = [f"{key} {case}: {recorded[key][case]} -> {value.get(case)}"
               for key, value in now.items() for case in recorded[key]
               if recorded[key][case] != value.get(case)]
    assert not changed, "\n".join(changed[:20])


if __name__ == "__main__" and sys.argv[1:] == ["record"]:
    from conform.spec import load_specs

    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    table = all_figures(load_specs())
    FIXTURE.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
    print(f"{sum(map(len, table.values()))} cases of {len(table)} slices recorded")
