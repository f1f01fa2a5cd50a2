"""ONNX SequenceEmpty, SequenceInsert, SequenceErase and SequenceLength
(ops/onnx_sequence_edit.py): the texts' positions and defaults, the onnx package's node test
cases, runs on onnxruntime and numpy, empty sequences' element types, and the judge catching
an off-by-one insertion."""
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
from backend_runs import assert_all_pass, numpy_backend, onnxruntime  # noqa: E402,F401
from onnx_node_cases import node_cases  # noqa: E402

OPS = ("onnx_sequence_empty", "onnx_sequence_insert", "onnx_sequence_erase",
       "onnx_sequence_length")
A, B, C = np.float64([1, 2]), np.float64([3]), np.float64([4, 5, 6])


def _elements(name, inputs, attrs):
    return [e.tolist() for e in unpack(*evaluate(name, inputs, attrs))]


@pytest.mark.parametrize("position, want", [(0, [[9], [1, 2], [3]]), (2, [[1, 2], [3], [9]]),
                                            (-1, [[1, 2], [9], [3]]), (-2, [[9], [1, 2], [3]])])
def test_insert_counts_negative_positions_from_the_back_in_minus_n_to_n(position, want):
    got = _elements("onnx_sequence_insert", [np.float64([9]), np.int64(position), A, B], {})
    assert got == want


def test_insert_without_position_appends_and_into_an_empty_sequence():
    absent = {"absent_inputs": ["position"]}
    assert _elements("onnx_sequence_insert", [np.float64([9]), A], absent) == [[1, 2], [9]]
    assert _elements("onnx_sequence_insert", [np.float64([9])], absent) == [[9]]


@pytest.mark.parametrize("attrs, want", [({}, [[1, 2], [3]]), ({"position": 0}, [[3], [4, 5, 6]]),
                                         ({"position": -2}, [[1, 2], [4, 5, 6]])])
def test_erase_removes_the_last_by_default_and_counts_negative_from_the_back(attrs, want):
    assert _elements("onnx_sequence_erase", [A, B, C], attrs) == want


def test_erasing_the_only_tensor_leaves_an_empty_sequence():
    values, shapes = evaluate("onnx_sequence_erase", [A], {})
    assert values.size == 0 and shapes.shape == (0, 0)


def test_length_and_empty():
    assert evaluate("onnx_sequence_length", [A, B, C], {})[0].tolist() == 3
    (length,) = evaluate("onnx_sequence_length", [], {})
    assert length.dtype == np.int64 and length.shape == () and length == 0
    values, shapes = evaluate("onnx_sequence_empty", [], {})
    assert values.size == 0 and shapes.shape == (0, 0)


def test_oracle_reproduces_the_sequence_insert_node_tests():
    """Triaged: the node test gives position as a 1-element 1-D tensor where the text says
    'It must be a scalar(tensor of empty shape)': its one value is passed as the scalar."""
    cases = node_cases("sequenceinsert")
    assert {name for name, *_ in cases} == {"test_sequence_insert_at_back",
                                            "test_sequence_insert_at_front"}
    for name, _node, (sequence, tensor, *position), (want,) in cases:
        attrs = {} if position else {"absent_inputs": ["position"]}
        position = [p.reshape(()) for p in position]
        values, shapes = evaluate("onnx_sequence_insert", [tensor, *position, *sequence], attrs)
        want_values, want_shapes = pack(want)
        assert values.tolist() == want_values.tolist() and \
            shapes.tolist() == want_shapes.tolist(), name


def test_packed_outputs_types_an_empty_sequence_by_the_declared_dtype():
    values, shapes = packed_outputs([[]], ["int8", "int64"])
    assert values.dtype == np.int8 and shapes.shape == (0, 0)
    values, _ = packed_outputs([[np.float32([1])]], ["int8", "int64"])
    assert values.dtype == np.float32   # a non-empty sequence keeps what the backend gave
    values, _ = packed_outputs([[]], ["string", "int64"])   # text: NumPy's object type
    assert values.dtype == object and values.shape == (0,)



def test_onnxruntime_passes_an_empty_sequence_of_text(specs, onnxruntime):
    assert_all_pass(specs, onnxruntime, "onnx_sequence_empty", "string", count=2)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_onnxruntime_passes(specs, onnxruntime, name, dtype):
    assert_all_pass(specs, onnxruntime, name, dtype)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", ["float16", "uint64"])
def test_numpy_passes(specs, name, dtype):
    assert_all_pass(specs, numpy_backend(), name, dtype)


def test_judge_catches_an_insertion_one_place_late(specs, onnxruntime):
    """A kernel inserting a negative position p at n + p + 1 (after the element, not before):
    run on onnxruntime with the shifted position, judged against the case's own answer."""
    from conform.harness.backends.models import run_case

    spec, caught = specs["onnx_sequence_insert"], 0
    for case in generate_cases(spec, "float32", count=40, seed=3):
        if "position" in case.attrs.get("absent_inputs", ()):
            continue
        tensor, position, *elements = case.inputs
        if int(position) >= 0 or int(position) == -len(elements) - 1:
            continue
        late = np.asarray(int(position) + 1, position.dtype)
        buggy = dataclasses.replace(case, inputs=[tensor, late, *elements], expectation=None)
        outputs = run_case(onnxruntime, spec, buggy)
        want = evaluate(spec.op, case.inputs, case.attrs)
        if all(np.array_equal(a, b, equal_nan=True) for a, b in zip(outputs, want)):
            continue   # equal neighbours: nothing to see
        assert judge_outputs(spec, case, outputs).verdict == "fail", case.id
        caught += 1
    assert caught


# -- the onnx package's sequence model tests (onnx.backend.test.case.model.sequence) -------------

def _sequence_models() -> list:
    """(name, model, inputs, outputs) of each model test the module's export passes to expect."""
    import onnx.backend.test.case.model.sequence as module

    found, original = [], module.expect
    module.expect = lambda model, inputs, outputs, name, **_: found.append(
        (name, model, inputs, outputs))
    try:
        module.Sequence.export()
    finally:
        module.expect = original
    return found


def _run_node(node, args: list, attrs: dict):
    """One node by conform's oracles: sequences as lists of arrays."""
    kind = node.op_type
    if kind == "SequenceEmpty":
        return []
    if kind == "SequenceConstruct":
        return list(args)
    if kind == "SequenceInsert":
        position = args[2:] or []
        absent = {} if position else {"absent_inputs": ["position"]}
        return unpack(*evaluate("onnx_sequence_insert", [args[1], *position, *args[0]], absent))
    if kind == "SequenceErase":
        given = {"position": int(args[1])} if len(args) > 1 else {}
        return unpack(*evaluate("onnx_sequence_erase", args[0], given))
    if kind == "SequenceAt":
        return evaluate("onnx_sequence_at", [args[1], *args[0]], {})[0]
    if kind == "SequenceLength":
        return evaluate("onnx_sequence_length", args[0], {})[0]
    if kind == "SplitToSequence":
        absent = {} if len(args) > 1 else {"absent_inputs": ["split"]}
        attrs = {"axis": attrs.get("axis", 0), "keepdims": attrs.get("keepdims", 1), **absent}
        return unpack(*evaluate("onnx_split_to_sequence", args, attrs))
    if kind == "ConcatFromSequence":
        attrs = {"axis": attrs["axis"], "new_axis": attrs.get("new_axis", 0)}
        return evaluate("onnx_concat_from_sequence", args[0], attrs)[0]
    raise KeyError(kind)


def test_oracles_reproduce_the_sequence_model_tests():
    """Each model of onnx's sequence model tests run node by node on conform's oracles (the
    empty sequence, insertion, erasure, length, at, split and concatenation together)."""
    from onnx import helper, numpy_helper

    models = _sequence_models()
    assert len(models) >= 8
    for name, model, inputs, outputs in models:
        values = {i.name: x for i, x in zip(model.graph.input, inputs)}
        values.update({t.name: numpy_helper.to_array(t) for t in model.graph.initializer})
        for node in model.graph.node:
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            args = [values[n] for n in node.input if n]
            values[node.output[0]] = _run_node(node, args, attrs)
        for output, want in zip(model.graph.output, outputs):
            assert np.array_equal(values[output.name], want), name


def test_insert_feeding_traces_the_copy_with_the_real_position():
    """The position is no term (it is not numbered): out[1] is tensor, inserted at 1."""
    from conform.oracles.feeding import feeding_elements
    tensor, position = np.array([7.0]), np.asarray(1, np.int64)
    sequence = [np.array([5.0]), np.array([6.0])]
    fed = feeding_elements("onnx_sequence_insert", [tensor, position, *sequence], {}, [1])
    assert [None if f is None else f.tolist() for f in fed] == [[7.0], None, None, None]
    assert feeding_elements("onnx_sequence_insert", [tensor, position, *sequence], {}, [1, 0],
                            output=1) == [None] * 4
