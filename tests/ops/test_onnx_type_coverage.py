"""Every (operator, type) pair an ONNX schema allows, at each opset a binding claims, is drawn
(issue 30, "every type each schema allows"), but for the exceptions below, each with its reason.

The comparison is bench/onnx_type_coverage.py's: per bound default-domain operator, per schema
version in force over the binding's ``opsets`` range, per type constraint typing a formal the
spec feeds, the types the constraint allows against those the spec's labels put there (after
``schema_allows``, as a run at that opset draws them). No backend runs. A pair onnxruntime has
no kernel for is still drawn: it is reported ``unsupported`` there.
"""
from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_NOT_YET = "not yet drawn: issue 30 item 2 is unfinished for it"

#: (operators, types, reason): the allowed pairs not drawn. ``"*"`` is every operator.
EXCEPTIONS = [
    (("GridSample",), ("complex64", "complex128"),
     "drawn at GridSample-20 and 22 (onnx_grid_sample: complex sampled part by part); the "
     "GridSample-16 spec draws the types whose nearest is a copy, and complex there would be "
     "generation time for cases onnxruntime (no complex kernel) cannot run: " + _NOT_YET),
    (("Resize",), ("float64", "int8", "int16", "int64", "uint16", "uint32", "uint64", "bfloat16",
                   "bool", "string", "complex64", "complex128"),
     "drawn at Resize-19 (onnx_resize: nearest for integers, bool and text, a copy; complex "
     "interpolated too, its parts alike); the specs of Resize-10 to 18 draw four types: each "
     "further label there costs about 0.25 s of tests/harness/test_onnx_validity.py alone (its "
     "covering design makes some 30 cases a label at any budget), about 7 s for the twelve "
     "types across the four specs, beyond what the suite's 15 minutes allow, and at the "
     "default opset every such case is ruled out: " + _NOT_YET),
]


@pytest.fixture(scope="module")
def coverage():
    spec = importlib.util.spec_from_file_location(
        "onnx_type_coverage", ROOT / "bench" / "onnx_type_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, module.coverage()


def _excused(op_type: str, dtype: str) -> list[int]:
    return [k for k, (ops, types, _) in enumerate(EXCEPTIONS)
            if (ops == "*" or op_type in ops) and dtype in types]


def test_every_type_a_bound_schema_allows_is_drawn(coverage):
    module, found = coverage
    missed = module.misses(found)
    unexcused = sorted({(op, param, since, dtype) for op, param, since, dtype, _ in missed
                        if not _excused(op, dtype)})
    assert not unexcused, f"{len(unexcused)} allowed (operator, constraint, opset, type) " \
                          f"not drawn, e.g. {unexcused[:10]}"
    used = {k for op, _, _, dtype, _ in missed for k in _excused(op, dtype)}
    stale = [EXCEPTIONS[k][:2] for k in range(len(EXCEPTIONS)) if k not in used]
    assert not stale, f"exceptions that excuse nothing (remove them): {stale}"
    totals = module.totals(found)
    assert totals["operators"] >= 150 and totals["pairs_drawn"] <= totals["pairs"]


def test_the_comparison_sees_a_missing_type(coverage, monkeypatch):
    """The measurement can fail: a spec that stops drawing a type its schema allows shows it."""
    module, _ = coverage
    from conform.spec import load_specs

    spec = load_specs()["onnx_add"]
    narrowed = dataclasses.replace(spec, dtypes=tuple(d for d in spec.dtypes if d != "uint16"))
    monkeypatch.setattr(module, "load_specs", lambda: {"onnx_add": narrowed})
    found = module.coverage({"onnx_add"})
    assert {(op, dtype) for op, _, _, dtype, _ in module.misses(found)} == {("Add", "uint16")}
