"""ONNX's sequence operators (ops/onnx_sequences.py) and the way a sequence crosses as tensors
(ops/sequence_values.py): the texts' rules, the onnx package's node test cases, runs on onnxruntime and
the judge catching an injected bug there."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.ops.sequence_values import pack, packed_outputs, unpack
from conform.oracles import evaluate

sys.path.insert(0, str(Path(__file__).parent))
from onnx_node_cases import node_cases  # noqa: E402

SEQUENCE_OPS = ("onnx_sequence_construct", "onnx_sequence_at", "onnx_split_to_sequence",
                "onnx_concat_from_sequence")


# -- sequences as tensors ----------------------------------------------------------------------

def test_pack_ravels_and_concatenates_the_elements_and_lists_their_shapes():
    values, shapes = pack([np.arange(6).reshape(2, 3), np.zeros((0, 3)), np.ones((1, 3))])
    assert values.tolist() == [0, 1, 2, 3, 4, 5, 1, 1, 1]
    assert shapes.dtype == np.int64 and shapes.tolist() == [[2, 3], [0, 3], [1, 3]]
    assert [e.shape for e in unpack(values, shapes)] == [(2, 3), (0, 3), (1, 3)]


def test_pack_of_scalars_and_of_nothing():
    values, shapes = pack([np.float32(2), np.float32(-0.0)])
    assert values.tolist() == [2.0, -0.0] and np.signbit(values[1]) and shapes.shape == (2, 0)
    values, shapes = pack([])
    assert values.shape == (0,) and shapes.shape == (0, 0)


def test_packed_outputs_expands_lists_in_place():
    a, b = np.zeros(2), np.ones((1, 2))
    out = packed_outputs([a, [b, b], a])
    assert len(out) == 4 and out[1].tolist() == [1, 1, 1, 1] and out[2].tolist() == [[1, 2]] * 2


def test_sequence_outputs_are_declared_in_pairs(specs):
    assert specs["onnx_split_to_sequence"].sequence_outputs == (0,)
    assert specs["onnx_sequence_construct"].out_dtypes(
        generate_cases(specs["onnx_sequence_construct"], "int8", count=1, seed=0)[0]) == \
        ("int8", "int64")
    assert specs["onnx_sequence_at"].sequence_outputs == ()


# -- the texts' rules ----------------------------------------------------------------------------

def test_sequence_construct_keeps_the_order_and_the_shapes():
    values, shapes = evaluate("onnx_sequence_construct",
                              [np.float64([1, 2]), np.float64([[3]]).reshape(1), np.zeros(0)], {})
    assert values.tolist() == [1, 2, 3] and shapes.tolist() == [[2], [1], [0]]


@pytest.mark.parametrize("position, want", [(0, 10), (2, 30), (-1, 30), (-3, 10), (-2, 20)])
def test_sequence_at_counts_negative_positions_from_the_back(position, want):
    elements = [np.float64([10]), np.float64([20]), np.float64([30])]
    (out,) = evaluate("onnx_sequence_at", [np.int64(position), *elements], {})
    assert out.tolist() == [want]


def test_split_to_sequence_without_split_gives_chunks_of_one_and_keepdims_drops_the_axis():
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    absent = {"absent_inputs": ["split"]}
    values, shapes = evaluate("onnx_split_to_sequence", [x], {"axis": 1, "keepdims": 1, **absent})
    assert shapes.tolist() == [[2, 1]] * 3 and values.tolist() == [0, 3, 1, 4, 2, 5]
    values, shapes = evaluate("onnx_split_to_sequence", [x], {"axis": -1, "keepdims": 0, **absent})
    assert shapes.tolist() == [[2]] * 3


def test_split_to_sequence_scalar_split_leaves_the_last_chunk_smaller_and_ignores_keepdims():
    x = np.arange(7, dtype=np.float64)
    values, shapes = evaluate("onnx_split_to_sequence", [x, np.int64(3)],
                              {"axis": 0, "keepdims": 0})
    assert shapes.tolist() == [[3], [3], [1]] and values.tolist() == list(range(7))
    _, shapes = evaluate("onnx_split_to_sequence", [x, np.int64(1)], {"axis": 0, "keepdims": 0})
    assert shapes.tolist() == [[1]] * 7   # 'If input split is specified, this attribute is ignored'
    _, shapes = evaluate("onnx_split_to_sequence", [x, np.int64(9)], {"axis": 0, "keepdims": 1})
    assert shapes.tolist() == [[7]]


def test_split_to_sequence_list_split_gives_those_lengths():
    x = np.arange(12, dtype=np.float64).reshape(2, 6)
    values, shapes = evaluate("onnx_split_to_sequence", [x, np.int64([1, 4, 1])],
                              {"axis": 1, "keepdims": 1})
    assert shapes.tolist() == [[2, 1], [2, 4], [2, 1]]
    assert [e.tolist() for e in unpack(values, shapes)][2] == [[5], [11]]


@pytest.mark.parametrize("shapes, axis, new_axis, want", [
    (((2, 2), (3, 2)), 0, 0, (5, 2)), (((2, 2), (3, 2)), -2, 0, (5, 2)),
    (((2, 2), (2, 3)), 1, 0, (2, 5)), (((2, 2), (2, 3)), -1, 0, (2, 5)),
    (((2, 3), (2, 3)), 0, 1, (2, 2, 3)), (((2, 3), (2, 3)), 1, 1, (2, 2, 3)),
    (((2, 3), (2, 3)), 2, 1, (2, 3, 2)), (((2, 3), (2, 3)), -1, 1, (2, 3, 2)),
    (((2, 3), (2, 3)), -3, 1, (2, 2, 3))])
def test_concat_from_sequence_concatenates_or_stacks_on_a_new_axis(shapes, axis, new_axis, want):
    """new_axis=0: axis in [-r, r-1]; new_axis=1: a new axis, in [-r-1, r]."""
    a, b = np.ones(shapes[0]), np.zeros(shapes[1])
    (out,) = evaluate("onnx_concat_from_sequence", [a, b], {"axis": axis, "new_axis": new_axis})
    assert out.shape == want
    assert out.sum() == a.size


def test_drawn_cases_stay_inside_the_texts_ranges(specs):
    for case in generate_cases(specs["onnx_sequence_at"], "float32", count=40, seed=3):
        count = len(case.inputs) - 1
        assert -count <= int(case.inputs[0]) < count and case.inputs[0].ndim == 0
    for case in generate_cases(specs["onnx_split_to_sequence"], "int32", count=60, seed=3):
        if len(case.inputs) == 2 and case.inputs[1].ndim == 1:
            split = case.inputs[1]
            assert (split > 0).all() and split.sum() == case.inputs[0].shape[case.attrs["axis"]]
        elif len(case.inputs) == 2:
            assert int(case.inputs[1]) >= 1
    seen = set()
    for case in generate_cases(specs["onnx_concat_from_sequence"], "int8", count=40, seed=3):
        rank = case.inputs[0].ndim + case.attrs["new_axis"]
        assert -rank <= case.attrs["axis"] < rank
        seen.add(case.attrs["new_axis"])
    assert seen == {0, 1}


# -- the onnx package's node test cases ----------------------------------------------------------

def test_oracle_reproduces_the_split_to_sequence_node_tests():
    cases = node_cases("splittosequence")
    assert {name for name, *_ in cases} == {"test_split_to_sequence_1", "test_split_to_sequence_2",
                                            "test_split_to_sequence_nokeepdims"}
    for name, node, inputs, (outputs,) in cases:
        attrs = {a.name: a.i for a in node.attribute}
        attrs = {"axis": attrs.get("axis", 0), "keepdims": attrs.get("keepdims", 1)}
        if len(inputs) == 1:
            attrs["absent_inputs"] = ["split"]
        values, shapes = evaluate("onnx_split_to_sequence", inputs, attrs)
        want_values, want_shapes = pack(outputs)
        assert shapes.tolist() == want_shapes.tolist(), name
        assert values.tolist() == want_values.tolist(), name


# -- onnxruntime ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def onnxruntime():
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    return OnnxRuntimeBackend()


def _runs(specs, onnxruntime, name, dtype, count=24):
    """(spec, case, outputs or the exception onnxruntime raised) per case."""
    from conform.harness.backends.models import run_case

    spec = specs[name]
    for case in generate_cases(spec, dtype, count=count, seed=11):
        try:
            yield spec, case, run_case(onnxruntime, spec, case)
        except Exception as exc:   # noqa: BLE001 - onnxruntime raises its own types
            yield spec, case, exc


@pytest.mark.parametrize("name", ["onnx_sequence_construct", "onnx_sequence_at",
                                  "onnx_concat_from_sequence"])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_onnxruntime_passes_every_case(specs, onnxruntime, name, dtype):
    for spec, case, outputs in _runs(specs, onnxruntime, name, dtype):
        assert not isinstance(outputs, Exception), (case.id, outputs)
        judgement = judge_outputs(spec, case, outputs)
        assert judgement.verdict == "pass", (case.id, judgement.reason)


def test_onnxruntime_split_to_sequence_fails_only_where_it_applies_keepdims_to_a_given_split(
        specs, onnxruntime):
    """A real deviation: onnxruntime 1.32 drops the axis (keepdims=0) even where split is given,
    which the text says makes keepdims ignored (onnx.reference agrees with the text)."""
    failed = 0
    for spec, case, outputs in _runs(specs, onnxruntime, "onnx_split_to_sequence", "float32", 48):
        if isinstance(outputs, Exception) or judge_outputs(spec, case, outputs).verdict != "pass":
            assert len(case.inputs) == 2 and case.attrs["keepdims"] == 0, case.id
            failed += 1
    assert failed


def test_judge_catches_sequence_at_off_by_one_for_negative_positions(specs, onnxruntime):
    """An off-by-one kernel reading position p < 0 as p - 1 (wrapping): run on onnxruntime,
    judged against the case's own answer."""
    from conform.harness.backends.models import run_case

    spec, caught = specs["onnx_sequence_at"], 0
    for case in generate_cases(spec, "float32", count=48, seed=7):
        position, elements = int(case.inputs[0]), case.inputs[1:]
        if position >= 0 or len(elements) < 2:
            continue
        shifted = (position - 1) if position - 1 >= -len(elements) else -1
        buggy = dataclasses.replace(case, inputs=[np.asarray(shifted, case.inputs[0].dtype),
                                                  *elements], expectation=None)
        outputs = run_case(onnxruntime, spec, buggy)
        if np.array_equal(outputs[0], elements[position], equal_nan=True):
            continue   # two equal elements: nothing to see
        judgement = judge_outputs(spec, case, outputs)
        assert judgement.verdict == "fail"
        caught += 1
    assert caught


def test_judge_catches_a_missing_element_of_a_sequence(specs):
    spec = specs["onnx_sequence_construct"]
    case = next(c for c in generate_cases(spec, "int32", count=16, seed=2) if len(c.inputs) > 1)
    outputs = packed_outputs([list(case.inputs[:-1])])
    judgement = judge_outputs(spec, case, outputs)
    assert judgement.verdict == "fail"
    assert dict(judgement.outputs)["shapes"].verdict == "fail"


def test_an_onnxruntime_repro_script_packs_the_sequence_and_reproduces_a_shape_failure(
        tmp_path, specs, conform_cli):
    """The script packs the sequence onnxruntime returns as the backend does, and checks the
    output that failed (the shapes: a failure of shape has no worst element)."""
    import json
    import subprocess

    from conform.harness.assurance.repro import write_repro

    run_dir = tmp_path / "run"
    conform_cli("run", "--backend", "onnxruntime", "--ops", "onnx_split_to_sequence", "--dtypes",
                "float32", "--max-examples", 24, "--out", run_dir, "--quiet")
    record = next(r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())
                  if r["verdict"] == "fail")
    out = write_repro(run_dir, record["id"], specs, tmp_path / "repro")
    assert "def packed_outputs(" in (out / "repro.py").read_text()
    proc = subprocess.run([sys.executable, str(out / "repro.py")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"REPRODUCED: the recorded fail of {record['id']}" in proc.stdout
    assert "output int64[" in proc.stdout   # the shapes output


# -- numpy ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["onnx_sequence_construct", "onnx_sequence_at",
                                  "onnx_split_to_sequence", "onnx_concat_from_sequence"])
@pytest.mark.parametrize("dtype", ["float16", "uint64", "bool"])
def test_numpy_passes_every_case(specs, name, dtype):
    """The numpy backend (np.split, np.concatenate, np.stack, list indexing) packs the
    sequences it computes and passes, split_to_sequence's given split included."""
    from conform.harness.backends.models import run_case
    from conform.harness.backends.numpy_backend import NumpyBackend

    spec, backend = specs[name], NumpyBackend()
    for case in generate_cases(spec, dtype, count=24, seed=11):
        outputs = run_case(backend, spec, case)
        assert [o.dtype.name for o in outputs] == [dtype, "int64"][:len(spec.outputs)], case.id
        judgement = judge_outputs(spec, case, outputs)
        assert judgement.verdict == "pass", (case.id, judgement.reason)


def test_numpy_split_ignores_keepdims_where_split_is_given():
    from conform.ops.onnx_sequences import numpy_split_to_sequence

    x = np.arange(6).reshape(2, 3)
    values, shapes = numpy_split_to_sequence(x, np.int64(2), axis=1, keepdims=0)
    assert shapes.tolist() == [[2, 2], [2, 1]] and values.tolist() == [0, 1, 3, 4, 2, 5]
    values, shapes = numpy_split_to_sequence(x, np.int32([1, 2]), axis=-1, keepdims=0)
    assert shapes.tolist() == [[2, 1], [2, 2]]
    values, shapes = numpy_split_to_sequence(x, axis=-1, keepdims=0, absent_inputs=("split",))
    assert shapes.tolist() == [[2]] * 3 and values.tolist() == [0, 3, 1, 4, 2, 5]
