"""ONNX If and Loop with generated subgraphs (ops/onnx_control_flow.py): Loop's worked example and
its table of operating modes, the body catalog's exactness, the onnx package's node test cases,
runs on onnxruntime and the judge catching injected bugs there."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.ops.onnx_control_flow import (BODY_OPS, Overflow, as_value, body_ops, canonical_loop,
                                           iterate, run_chain, value_class)
from conform.oracles import evaluate
from conform.oracles.expectations import expect

sys.path.insert(0, str(Path(__file__).parent))
from onnx_node_cases import node_cases  # noqa: E402


# -- Loop's worked example and its operating modes ----------------------------------------------

def _doc_example_step(a):
    """The body of the text's sample: my_local = a + b_in; b_out = a - b_in; keepgoing_out =
    my_local > b_out; user_defined_val = b_in + b_in."""
    def step(i, keepgoing_in, b_in):
        my_local, b_out = a + b_in, a - b_in
        return my_local > b_out, b_out, b_in + b_in
    return step


def test_loops_worked_example():
    """a = 3, b = 6, keepgoing = true, max_trip_count = 10: i = 0 gives b = -3 (9 > -3 goes on),
    i = 1 gives b = 6 (0 > 6 stops); user_defined_vals = [12, -6]."""
    b_out, scans, count = iterate(_doc_example_step(3), 6, trips=10, cond=True)
    assert (b_out, scans, count) == (6, [12, -6], 2)


def _doc_example_model() -> onnx.ModelProto:
    """The text's sample graph (Loop outputs: b_out and the scan; a and the constants
    int32 as the sample types them, the iteration number int64 as the schema does)."""
    def const(name, value, kind=np.int32):
        return numpy_helper.from_array(np.asarray(value, kind), name)

    scalar = lambda name, kind: helper.make_tensor_value_info(name, kind, [])   # noqa: E731
    body = helper.make_graph(
        [helper.make_node("Add", ["a", "b_in"], ["my_local"]),
         helper.make_node("Sub", ["a", "b_in"], ["b_out"]),
         helper.make_node("Greater", ["my_local", "b_out"], ["keepgoing_out"]),
         helper.make_node("Add", ["b_in", "b_in"], ["user_defined_val"])],
        "body_net", [scalar("i", TensorProto.INT64), scalar("keepgoing_in", TensorProto.BOOL),
                     scalar("b_in", TensorProto.INT32)],
        [scalar("keepgoing_out", TensorProto.BOOL), scalar("b_out", TensorProto.INT32),
         scalar("user_defined_val", TensorProto.INT32)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["max_trip_count", "keepgoing", "b"],
                          ["b_final", "user_defined_vals"], body=body)],
        "predict_net", [], [scalar("b_final", TensorProto.INT32),
                            helper.make_tensor_value_info("user_defined_vals", TensorProto.INT32,
                                                          ["n"])],
        initializer=[const("a", 3), const("b", 6), const("keepgoing", True, np.bool_),
                     const("max_trip_count", 10, np.int64)])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)])


def test_onnxruntime_runs_the_worked_example_as_the_oracle_does():
    import onnxruntime as ort

    model = _doc_example_model()
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    b_final, vals = session.run(None, {})
    b_out, scans, _ = iterate(_doc_example_step(3), 6, trips=10, cond=True)
    assert int(b_final) == b_out and vals.tolist() == scans


def _counting(until):
    return lambda i, cond_in, v: (cond_in if until is None else i < until, v + 1, i)


@pytest.mark.parametrize("trips, cond, until, runs", [
    (5, None, 1, 5),      # (trip_count, ""): the body's cond is ignored
    (5, None, None, 5),
    (None, True, 2, 3),   # ("", cond): a while loop, stops after the iteration with i = 2
    (None, False, 2, 0),  # the cond input decides whether the first iteration runs
    (5, True, 1, 2),      # (trip_count, cond): both
    (2, True, 4, 2),
    (0, True, None, 0),
    (-1, None, None, 0),  # for (i = 0; i < -1; ...) runs no iteration
])
def test_loop_termination_follows_the_texts_table(trips, cond, until, runs):
    v, scans, count = iterate(_counting(until), 0, trips, cond)
    assert count == runs and v == runs and scans == list(range(runs))


def test_oracle_loop_scans_every_iteration_and_ignores_the_body_cond_without_cond():
    v, w, x = np.float32([1.0, -2.0]), np.float32([0.0, 1.0]), np.float32([0.5, 0.25])
    attrs = {"body": ["onnx_mul"], "carry": ["onnx_add"], "until": 0}
    final, w_final, scan, iterations = evaluate("onnx_loop", [v, w, x, np.int64(3)],
                                                {**attrs, "absent_inputs": ["cond"]})
    assert iterations.tolist() == [0, 1, 2] and scan.shape == (3, 2)
    assert final.tolist() == [0.125, -2.0 / 64] and scan[0].tolist() == [0.5, -0.5]
    # w' = w + v_in, the incoming v: 0 + 1 + 0.5 + 0.25 and 1 - 2 - 0.5 - 0.125
    assert w_final.tolist() == [1.75, -1.625]
    final, w_final, scan, iterations = evaluate("onnx_loop", [v, w, x, np.int64(3),
                                                              np.bool_(True)], attrs)
    assert iterations.tolist() == [0] and final.tolist() == [0.5, -0.5]
    assert w_final.tolist() == [1.0, -1.0]
    final, w_final, scan, iterations = evaluate("onnx_loop", [v, w, x, np.int64(3),
                                                              np.bool_(False)], attrs)
    assert scan.shape == (0, 2) and final.tolist() == v.tolist() and w_final.tolist() == [0, 1]


def test_feeding_of_each_loop_output():
    from conform.oracles.feeding import feeding_elements

    v, w, x = np.float64([1, 2]), np.float64([3, 4]), np.float64([5, 6])
    attrs = {"body": ["onnx_add"], "carry": ["negate"], "until": None,
             "absent_inputs": ["cond"]}
    fed = feeding_elements("onnx_loop", [v, w, x, np.int64(2)], attrs, [1], output=0)
    assert [None if f is None else f.tolist() for f in fed] == [[2], None, [6], None]
    fed = feeding_elements("onnx_loop", [v, w, x, np.int64(2)], attrs, [1], output=1)
    assert [None if f is None else f.tolist() for f in fed] == [None, [4], None, None]
    attrs["carry"] = ["onnx_mul"]
    fed = feeding_elements("onnx_loop", [v, w, x, np.int64(2)], attrs, [0], output=1)
    assert [None if f is None else f.tolist() for f in fed] == [[1], [3], [5], None]
    fed = feeding_elements("onnx_loop", [v, w, x, np.int64(2)], attrs, [0, 1], output=2)
    assert [None if f is None else f.tolist() for f in fed] == [[2], None, [6], None]


# -- the body catalog ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["onnx_if", "onnx_loop", "onnx_scan", "onnx_sequence_map"])
def test_every_body_op_is_exact_in_every_dtype_it_is_drawn_for(specs, name):
    """Each body op's own spec takes the dtype and judges it exactly or as correctly rounded
    (``correctly_rounded``, which rounding once from float64 attains bit for bit), with ONNX
    bindings."""
    for dtype in specs[name].dtypes:
        assert body_ops(dtype)
        for op in body_ops(dtype):
            spec = specs[op]
            assert dtype in spec.dtypes and "onnx" in spec.bindings, (op, dtype)
            model = spec.model_for(dtype)
            assert model.get("exact") or model.get("correctly_rounded"), (op, dtype, model)
            assert value_class(dtype) in BODY_OPS[op][1]


def test_as_value_rounds_once_to_nearest_even():
    # 1 + 2**-8 + 2**-30 lies above the bfloat16 midpoint 1 + 2**-8: rounding once gives
    # 1 + 2**-7; through float32 (as ml_dtypes' float64 -> bfloat16 does) it ties to 1.
    x = np.float64(1 + 2**-8 + 2**-30)
    assert as_value(x, "bfloat16") == 1 + 2**-7
    assert float(x.astype(np.float32).astype(ml_dtypes.bfloat16)) == 1.0
    assert as_value(np.float64(65520.0), "float16") == np.inf
    assert as_value(np.float64(2**-25), "float16") == 0.0   # a tie to the even zero
    assert as_value(np.float64(1 + 2**-60), "float64") == 1.0


def test_integer_overflow_is_detected_and_drawn_inputs_avoid_it(specs):
    with pytest.raises(Overflow):
        run_chain(["onnx_mul"], np.int64([2**20]), np.int64([2**12]), "int32")
    with pytest.raises(Overflow):
        run_chain(["abs"], np.int64([-2**63]), np.int64([0]), "int64")
    with pytest.raises(Overflow):
        run_chain(["onnx_mul"], np.int64([2**40]), np.int64([2**40]), "int64")
    for name in ("onnx_if", "onnx_loop"):
        for dtype in ("int32", "int64"):
            for case in generate_cases(specs[name], dtype, count=32, seed=4, answer=expect):
                assert case.expectation is not None   # the oracle ran without Overflow


def test_if_takes_the_branch_cond_names(specs):
    x, y = np.float32([1.0, 4.0]), np.float32([2.0, 2.0])
    attrs = {"then_branch": ["onnx_add", "sqrt"], "else_branch": ["negate"]}
    want = [float(np.float32(np.sqrt(3.0))), float(np.float32(np.sqrt(6.0)))]
    assert evaluate("onnx_if", [np.bool_(True), x, y], attrs)[0].tolist() == want
    assert evaluate("onnx_if", [np.array([False]), x, y], attrs)[0].tolist() == [-1.0, -4.0]


# -- the onnx package's node test cases ------------------------------------------------------------

#: Node test cases whose subgraphs use what a generated branch or body does not (with why the
#: oracle is not run on them); the rules they rest on are checked below where they can be.
TRIAGED = {
    "test_if": "branches are Constant nodes: the selection rule is checked below",
    "test_if_seq": "branches build sequences (SequenceConstruct of Constants)",
    "test_if_opt": "branches build optionals (Optional of a sequence)",
    "test_loop11": "the body slices an outer Constant with iteration_num: the iteration rule "
                   "is checked below with that body written out",
    "test_loop13_seq": "the loop carries a sequence (SequenceInsert in the body)",
    "test_loop16_seq_none": "the loop carries an optional sequence (OptionalHasElement)",
}


def test_every_node_test_case_is_reproduced_or_triaged():
    names = {name for module in ("if_", "loop") for name, *_ in node_cases(module)}
    assert names == set(TRIAGED)


def test_test_if_takes_the_then_branch():
    (name, node, (cond,), (want,)), = [c for c in node_cases("if_") if c[0] == "test_if"]
    branches = {a.name: numpy_helper.to_array(a.g.node[0].attribute[0].t) for a in node.attribute}
    assert bool(cond) and np.array_equal(branches["then_branch"], want)


def test_iterate_reproduces_test_loop11():
    """Its body: y_out = y_in + x[iter_count], scanned, cond passed on; x = [1, 2, 3, 4, 5]."""
    (name, node, (trips, cond, y), (y_final, scan)), = \
        [c for c in node_cases("loop") if c[0] == "test_loop11"]
    x = np.float32([1, 2, 3, 4, 5])
    step = lambda i, cond_in, v: (cond_in, v + x[i:i + 1], v + x[i:i + 1])  # noqa: E731
    final, scans, count = iterate(step, y, trips, cond)
    assert np.array_equal(final, y_final) and np.array_equal(np.stack(scans), scan)


# -- canonical empty scans -------------------------------------------------------------------------

def test_canonical_loop_reshapes_only_an_empty_scan_of_the_right_rank(specs):
    case = next(c for c in generate_cases(specs["onnx_loop"], "float32", count=64, seed=1, answer=expect)
                if c.expectation[3].expected.size == 0 and c.inputs[0].ndim >= 1)
    v = case.expectation[0].expected.astype(np.float32)
    w = case.expectation[1].expected.astype(np.float32)
    empty = np.zeros((0,) * (case.inputs[0].ndim + 1), np.float32)
    assert canonical_loop([v, w, empty, np.zeros(0, np.int64)], case)[2].shape == \
        (0, *case.inputs[0].shape)
    assert judge_outputs(specs["onnx_loop"], case, [v, w, empty, np.zeros(0, np.int64)]).verdict \
        == "pass"
    wrong_rank = np.zeros((0,) * (case.inputs[0].ndim + 2), np.float32)
    assert judge_outputs(specs["onnx_loop"], case, [v, w, wrong_rank, np.zeros(0, np.int64)]
                         ).verdict == "fail"
    one_more = np.zeros((1, *case.inputs[0].shape), np.float32)
    assert judge_outputs(specs["onnx_loop"], case, [v, w, one_more, np.zeros(0, np.int64)]
                         ).verdict == "fail"


# -- onnxruntime ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def onnxruntime():
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    return OnnxRuntimeBackend()


def _run(onnxruntime, spec, case):
    from conform.harness.backends.models import run_case

    return run_case(onnxruntime, spec, case)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_onnxruntime_passes_every_if_case(specs, onnxruntime, dtype):
    spec = specs["onnx_if"]
    for case in generate_cases(spec, dtype, count=32, seed=9, answer=expect):
        judgement = judge_outputs(spec, case, _run(onnxruntime, spec, case))
        assert judgement.verdict == "pass", (case.id, judgement.reason)


def test_onnxruntime_if_float16_fails_only_where_a_branch_chains_two_ops(specs, onnxruntime):
    """A real deviation: in a float16 branch onnxruntime 1.32 keeps the value between two
    nodes in float32 (its CPU provider computes float16 nodes in float32 and drops the
    rounding between them), where the standard's nodes each give a float16 tensor."""
    spec, failed = specs["onnx_if"], 0
    for case in generate_cases(spec, "float16", count=64, seed=9, answer=expect):
        if judge_outputs(spec, case, _run(onnxruntime, spec, case)).verdict != "pass":
            chosen = case.attrs["then_branch" if case.inputs[0].reshape(-1)[0] else "else_branch"]
            assert len(chosen) == 2, case.id
            failed += 1
    assert failed


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_onnxruntime_loop_fails_only_where_it_honours_the_body_cond_without_cond(
        specs, onnxruntime, dtype):
    """A real deviation: with M given and cond left out ('input (trip_count, \\"\\")') the
    text ignores the body's cond output; onnxruntime 1.32 stops the loop on it."""
    spec, failed = specs["onnx_loop"], 0
    for case in generate_cases(spec, dtype, count=64, seed=9, answer=expect):
        if judge_outputs(spec, case, _run(onnxruntime, spec, case)).verdict != "pass":
            assert "cond" in case.attrs.get("absent_inputs", ()), case.id
            assert case.attrs["until"] is not None, case.id
            failed += 1
    assert failed


def test_judge_catches_a_loop_running_one_iteration_fewer_on_onnxruntime(specs, onnxruntime):
    """The bug: a Loop stopping one iteration early (M - 1), run on onnxruntime, judged against
    the case's own answer."""
    spec, caught = specs["onnx_loop"], 0
    for case in generate_cases(spec, "float32", count=64, seed=12, answer=expect):
        if case.expectation[3].expected.size == 0 or "m" in case.attrs.get("absent_inputs", ()):
            continue
        position = 3
        m = case.inputs[position]
        buggy = case.inputs[:position] + [np.asarray(int(m) - 1, m.dtype)] + \
            case.inputs[position + 1:]
        if int(m) > case.expectation[3].expected.size:   # the loop stopped on cond before M
            continue
        outputs = _run(onnxruntime, spec, dataclasses.replace(case, inputs=buggy,
                                                              expectation=None))
        judgement = judge_outputs(spec, case, outputs)
        assert judgement.verdict == "fail", case.id
        assert dict(judgement.outputs)["iterations"].verdict == "fail"
        caught += 1
    assert caught


def test_judge_catches_if_taking_the_wrong_branch_on_onnxruntime(specs, onnxruntime):
    spec, caught = specs["onnx_if"], 0
    for case in generate_cases(spec, "int32", count=32, seed=13, answer=expect):
        flipped = [np.logical_not(case.inputs[0]), *case.inputs[1:]]
        outputs = _run(onnxruntime, spec, dataclasses.replace(case, inputs=flipped,
                                                              expectation=None))
        if np.array_equal(outputs[0], case.expectation[0].expected):
            continue   # both branches agree here
        assert judge_outputs(spec, case, outputs).verdict == "fail"
        caught += 1
    assert caught


# -- numpy ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["onnx_if", "onnx_loop", "onnx_scan", "onnx_sequence_map"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int64"])
def test_numpy_passes_every_case(specs, name, dtype):
    """Each body op computed by its own op's NumPy computation in the value type rounds once
    per op, as the text's graph does: every case passes (float16 too, where onnxruntime keeps
    a chain's intermediate in float32)."""
    from conform.harness.backends.models import run_case
    from conform.harness.backends.numpy_backend import NumpyBackend

    spec, backend = specs[name], NumpyBackend()
    for case in generate_cases(spec, dtype, count=24, seed=11, answer=expect):
        judgement = judge_outputs(spec, case, run_case(backend, spec, case))
        assert judgement.verdict == "pass", (case.id, judgement.reason)


@pytest.mark.parametrize("name", ["onnx_if", "onnx_loop", "onnx_scan", "onnx_sequence_map"])
@pytest.mark.parametrize("dtype", ["bool", "uint64", "int8", "string", "float8_e5m2", "int4",
                                   "complex64"])
def test_numpy_passes_every_case_of_the_other_value_classes(specs, name, dtype):
    """Unsigned bodies (Add, Mul, Max, Min), bool bodies (And, Or, Xor, Not) and the moved
    types' (Identity) agree with NumPy's computation in the value type, case by case."""
    from conform.harness.backends.models import run_case
    from conform.harness.backends.numpy_backend import NumpyBackend

    spec, backend = specs[name], NumpyBackend()
    if dtype not in spec.dtypes:
        pytest.skip(f"{name} does not draw {dtype}")
    for case in generate_cases(spec, dtype, count=4, seed=11, answer=expect):
        judgement = judge_outputs(spec, case, run_case(backend, spec, case))
        assert judgement.verdict == "pass", (case.id, judgement.reason)


@pytest.mark.parametrize("name", ["onnx_if", "onnx_loop", "onnx_scan", "onnx_sequence_map"])
def test_a_complex_body_is_identity_and_its_model_is_valid(specs, name):
    """ONNX has no complex arithmetic a body could use (Add's T has no complex): the V type is
    carried by Identity, whose V allows complex; the model passes the full check."""
    import onnx

    from conform.harness.backends.onnx_models import build_model

    for case in generate_cases(specs[name], "complex128", count=2, seed=3):
        model = build_model(specs[name], case)
        onnx.checker.check_model(model, full_check=True)
        bodies = [g for node in model.graph.node for a in node.attribute for g in
                  ([a.g] if a.type == onnx.AttributeProto.GRAPH else [])]
        # Less: Loop's body cond, iteration_num < until (int64)
        assert bodies and {n.op_type for g in bodies for n in g.node} <= {"Identity", "Less"}


def test_a_body_reads_uint64_as_stored_and_bool_and_moved_types_by_their_ops():
    # the oracle contract widens uint64 to int64 (2**64 - 1 becomes -1): run_chain reads it
    # back as stored, beyond what int64 holds exactly, so the case's values are halved (as
    # values_* do); read as -1, Max(-1, 82) was 82 where onnxruntime rightly gave 2**64 - 1
    for name in ("onnx_max", "onnx_add"):
        with pytest.raises(Overflow):
            run_chain([name], np.int64([-1]), np.int64([82]), "uint64")
    assert run_chain(["onnx_max"], np.int64([2**61]), np.int64([82]), "uint64").tolist() \
        == [2**61]
    a, b = np.array([True, True, False]), np.array([True, False, False])
    assert run_chain(["onnx_xor", "onnx_not"], a, b, "bool").tolist() == [True, False, True]
    text = np.array(["ß", ""], object)
    assert run_chain(["copy", "copy"], text, text, "string").tolist() == ["ß", ""]
    assert body_ops("string") == body_ops("float8_e4m3fn") == body_ops("int4") == ["copy"]
    assert "onnx_sub" not in body_ops("uint8") and "negate" not in body_ops("uint32")


def test_numpy_if_computes_the_chosen_branch_only_each_op_by_its_numpy_of():
    from conform.ops.onnx_control_flow import numpy_if

    asked = []

    def numpy_of(name):
        asked.append(name)
        return {"negate": np.negative, "onnx_add": np.add}[name]

    out = numpy_if(np.array([False]), np.float16([1.5]), np.float16([2.0]), then_branch=["sqrt"],
                   else_branch=["negate", "onnx_add"], numpy_of=numpy_of)
    assert asked == ["negate", "onnx_add"]
    assert out.dtype == np.float16 and out.tolist() == [0.5]
