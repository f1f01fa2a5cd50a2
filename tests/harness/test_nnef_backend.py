"""The nnef backend: emitted documents are valid NNEF, and real cases run through the executor."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

nnef = pytest.importorskip("nnef")

from conform.generators import Case, dtype_labels, generate_cases  # noqa: E402
from conform.harness.backends.base import Unsupported  # noqa: E402
from conform.harness.backends.nnef_models import (  # noqa: E402
    PLACEHOLDER, build_document, literal, prelude, write_document)
from conform.harness.run.isolation import WorkerPool  # noqa: E402
from conform.harness.judge.judging import result_record  # noqa: E402

CONVERSIONS = ("float32->int32", "int32->float32", "float32->bool", "bool->float32")


def _bound(specs):
    return [spec for spec in specs.values() if "nnef" in spec.bindings]


def _case(op, inputs, attrs=None, dtype="float32", out_dtype=None, index=0):
    dtypes = tuple(str(x.dtype) for x in inputs)
    return Case(id=f"{op}.{dtype}.t{index}", op=op, dtype=dtype, input_dtypes=dtypes,
                out_dtype=out_dtype or dtype, inputs=list(inputs), attrs=attrs or {},
                plan="normal", seed=index)


def _label(spec):
    return "float32->int32" if "->" in dtype_labels(spec)[0] else "float32"


def test_every_bound_op_emits_documents_the_nnef_parser_accepts(specs):
    for spec in _bound(specs):
        if "float32" not in dtype_labels(spec)[0] and "float32" not in spec.dtypes:
            continue  # e.g. bitwise ops: bound for logical tensors, run on integers (unsupported)
        for case in generate_cases(spec, _label(spec), count=4, seed=1):
            try:
                document = build_document(spec, case)
            except Unsupported:
                continue
            graph = nnef.parse_string(document.text)   # the full standard library
            ops = [op.name for op in graph.operations]
            # the bound fragment is invoked; last, but where a lowering reads it out through
            # another operation (external, a graph's parameter, cannot be its result)
            assert ops[-1] == document.op and spec.bindings["nnef"]["op"] in ops, document.text
            assert graph.inputs == [f"in{i}" for i in document.inputs] + \
                [PLACEHOLDER] * document.placeholder   # constant: a graph has one at least
            outputs = [f"out{k}" for k in range(len(spec.outputs))]
            assert nnef.parse_string(document.text,
                                     stdlib=prelude(*document.operations)).outputs == outputs


def test_a_written_document_loads_with_its_input_files(specs, tmp_path):
    case = _case("nnef_add", [np.array([1.5, -0.0], np.float32), np.array([2.0, 1e-45], np.float32)])
    path = write_document(tmp_path / "add", specs["nnef_add"], case)
    graph = nnef.load_graph(str(path.parent))
    assert [op.name for op in graph.operations] == ["external", "external", "add"]
    with open(path.parent / "in1.dat", "rb") as file:
        stored = nnef.read_tensor(file)
    assert stored.tobytes() == case.inputs[1].tobytes()


def test_literals_read_back_exactly():
    assert literal([(1, 2), (0, -1)]) == "[(1, 2), (0, -1)]"
    assert literal(True) == "true" and literal("ignore") == "'ignore'" and literal(3) == "3"
    assert literal(-0.0) == "-0.0" and literal(2.0) == "2.0"
    tiny = float(np.float32(1e-45))
    assert np.float32(float(literal(tiny))) == np.float32(tiny)
    with pytest.raises(Unsupported, match="nan"):
        literal(float("nan"))


def test_translations_that_nnef_reads_differently(specs):
    rows = np.arange(6, dtype=np.float32).reshape(2, 3)
    empty_at_zero = _case("slice", [rows], {"start_indices": [0, 1], "limit_indices": [0, 3],
                                            "strides": [1, 1]})
    assert "end = [-2, 3]" in build_document(specs["slice"], empty_at_zero).text
    kept = _case("reduce_sum", [rows], {"dimensions": [1]})
    assert build_document(specs["reduce_sum"], kept).output_shape == (2,)
    zero_extent = _case("reshape", [np.zeros((0, 3), np.float32)], {"new_sizes": [3, 0]})
    with pytest.raises(Unsupported, match="keep the input extent"):
        build_document(specs["reshape"], zero_extent)
    wide = _case("nnef_add", [rows.astype(np.float64)] * 2, dtype="float64")
    with pytest.raises(Unsupported, match="no float64"):
        build_document(specs["nnef_add"], wide)


def _real_cases():
    grid = np.linspace(-2, 2, 2 * 3 * 5 * 4, dtype=np.float32).reshape(2, 3, 5, 4)
    return [
        _case("nnef_add", [np.array([1e-45, 1.5, -0.0, 3], np.float32),
                      np.array([1e-45, 1.0, -0.0, np.inf], np.float32)]),
        _case("exp", [np.array(0.5, np.float32)], index=1),
        _case("reduce_sum", [grid], {"dimensions": [0, 2]}, index=2),
        _case("conv", [grid, np.ones((2, 3, 2, 2), np.float32)],
              {"window_strides": [2, 1], "padding": [[1, 0], [2, 1]], "rhs_dilation": [1, 2]}, index=3),
        _case("slice", [np.arange(12, dtype=np.int32).reshape(3, 4)],
              {"start_indices": [0, 1], "limit_indices": [0, 4], "strides": [1, 2]}, dtype="int32", index=4),
        _case("pad", [np.ones((2, 3), np.float32), np.array(-0.0, np.float32)],
              {"padding_config": [[1, -1, 0], [0, 2, 0]]}, index=5),
        _case("convert_element_type", [np.array([1.7, -1.7, 0.0], np.float32)],
              {"new_dtype": "int32"}, dtype="float32->int32", out_dtype="int32", index=6),
        _case("nnef_add", [np.ones(3, np.int32)] * 2, dtype="int32", index=7),   # NNEF add: scalar only
        _case("pad", [np.ones(3, np.float32), np.array(1, np.float32)],
              {"padding_config": [[0, 0, 1]]}, index=8),                          # interior padding
        _case("round", [np.ones(3, np.float32)], index=9),                        # no nnef binding
    ]


def test_real_cases_through_the_executor_in_a_worker(specs):
    cases = _real_cases()
    with WorkerPool("nnef", workers=1) as pool:
        outcomes = {case.id: outcome for case, outcome in pool.run(cases)}
        assert pool.info["model_format"] == "nnef" and pool.info["subnormals"] == "ieee"
    verdicts = [result_record(specs[c.op], c, outcomes[c.id], "nnef")["verdict"] for c in cases]
    assert verdicts == ["pass"] * 7 + ["unsupported"] * 3, [outcomes[c.id].message for c in cases]
    assert "tensor<integer>" in outcomes["nnef_add.int32.t7"].message
    assert outcomes["nnef_add.float32.t0"].outputs[0][0] == 2 * np.float32(1e-45)   # subnormals kept


def _conform(*args):
    return subprocess.run([sys.executable, "-m", "conform.harness.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=900)


def test_conform_runs_the_suite_on_nnef_end_to_end(tmp_path):
    listing = _conform("list", "--format", "json")
    bound = [row["op"] for row in json.loads(listing.stdout) if "nnef" in row["bindings"]]
    assert len(bound) >= 20, bound
    proc = _conform("run", "--backend", "nnef", "--max-examples", 2, "--out", tmp_path, "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["backend"] == "nnef" and summary["counts"]["pass"] > 0
    # the only errors: the nnef package's shape check refusing valid documents of the ops whose
    # deviation tests/ops/test_nnef_windows.py, test_nnef_deconv.py and test_nnef_roi.py pin
    refused = {"nnef_sample", "nnef_max_pool_with_index", "nnef_separable_conv",
               "nnef_separable_deconv", "nnef_roi_resample", "nnef_avg_roi_align",
               "nnef_max_roi_align"}
    errors = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()
              if json.loads(line)["verdict"] == "error"]
    assert all(r["op"] in refused and r["message"].startswith("Refused: ValueError: Shape error "
                                                               "while inferring shape")
               for r in errors), errors
    assert "Warning" not in proc.stderr, proc.stderr
