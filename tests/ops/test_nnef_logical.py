"""NNEF's logical and, or and not: the truth tables, NNEF's broadcast (leading dimensions
aligned), the edge sweep holding every pair of truth values, and the judge catching an and/or
swap run through the real NNEF executor."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import Case
from conform.generators._suite import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate

T, F = True, False


def run(name, *inputs):
    (out,) = evaluate(name, [np.asarray(x) for x in inputs], {})
    return out


def test_truth_tables():
    x, y = np.array([F, F, T, T]), np.array([F, T, F, T])
    assert run("nnef_and", x, y).tolist() == [F, F, F, T]
    assert run("nnef_or", x, y).tolist() == [F, T, T, T]
    assert run("nnef_not", x).tolist() == [T, T, F, F]
    assert run("nnef_not", np.bool_(True)).tolist() is False


def test_broadcast_aligns_leading_dimensions():
    """y of shape [2] against x of shape [2, 3] is y of shape [2, 1] (NNEF ch. 2: a shape goes
    on with singleton dimensions), not NumPy's [1, 2]."""
    x = np.ones((2, 3), bool)
    assert run("nnef_and", x, np.array([T, F])).tolist() == [[T, T, T], [F, F, F]]
    assert run("nnef_or", ~x, np.array([F, T])).tolist() == [[F, F, F], [T, T, T]]


@pytest.mark.parametrize("name", ["nnef_and", "nnef_or", "nnef_not"])
def test_the_edge_sweep_is_the_truth_table(specs, name):
    sweep = next(c for c in generate_cases(specs[name], "bool", count=1, seed=0)
                 if c.id.endswith(".sweep"))
    flat = [x.reshape(-1) for x in sweep.inputs]   # on one of the cell's drawn shapes
    pairs = {tuple(bool(x[i]) for x in flat) for i in range(sweep.inputs[0].size)}
    assert len(pairs) == 2 ** len(sweep.inputs)


@pytest.mark.parametrize("name, swapped", [("nnef_and", "or"), ("nnef_or", "and")])
def test_judge_catches_and_or_swapped_on_the_nnef_executor(specs, tmp_path, name, swapped):
    nnef = pytest.importorskip("nnef")
    from conform.harness.backends.nnef_models import build_document, prelude

    spec = specs[name]
    x, y = np.array([[F, F], [T, T]]), np.array([[F, T], [F, T]])
    case = Case(id=f"{name}.bool.0", op=name, dtype="bool", input_dtypes=("bool", "bool"),
                out_dtype="bool", inputs=[x, y], attrs={}, plan="normal", seed=0)
    document = build_document(spec, case)

    def execute(text, operations):
        path = tmp_path / "graph.nnef"
        path.write_text(text, encoding="utf-8")
        with nnef.Session(str(path), stdlib=prelude(*operations), lowered=[]) as session:
            return [document.finish(o) for o in session(*document.feeds(case))]

    assert judge_outputs(spec, case, execute(document.text, document.operations)).verdict == "pass"
    op = spec.bindings["nnef"]["op"]
    buggy = document.text.replace(f"{op}(", f"{swapped}(")
    assert buggy != document.text
    assert judge_outputs(spec, case, execute(buggy, [swapped])).verdict == "fail"
