"""Programs (chains of ops) as specs: built from their names, emitted as one model per format,
and judged node by node so that an error is blamed on the node that made it."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from conform.dtypes import is_complex
from conform.generators import generate_cases
from conform.generators._case import Case
from conform.harness.backends.nnef_models import build_document
from conform.harness.backends.onnx_models import build_model
from conform.harness.judge.judging import failure_message, judge_outputs
from conform.spec.programs import chain_name, chain_names, program_spec

EVERY_FORMAT = chain_name(["exp", "tanh", "abs"])   # ops bound in ONNX, XLA and NNEF alike


def test_a_chain_is_built_from_its_name(specs):
    spec = specs[chain_name(["exp", "add", "tanh"])]
    assert [(n.spec.op, n.inputs, n.outputs[0]) for n in spec.nodes] == [
        ("exp", ("x0",), "n0_exp"), ("add", ("n0_exp", "x1"), "n1_add"),
        ("tanh", ("n1_add",), "n2_tanh")]
    assert spec.inputs == ("x0", "x1") and spec.outputs == ("n0_exp", "n1_add", "n2_tanh")
    shared = set(specs["exp"].dtypes) & set(specs["add"].dtypes) & set(specs["tanh"].dtypes)
    assert set(spec.dtypes) == {d for d in shared if not is_complex(d)}   # complex: no chain's
    assert spec.model_for("float32", 1) is specs["add"].model_for("float32")
    assert chain_name(["exp", "add", "tanh"]) in specs and "chain__exp__nope" not in specs


@pytest.mark.parametrize("name", ["chain__", "chain__exp__reduce_sum", "chain__nope", "exp"])
def test_a_name_that_is_no_chain_of_chainable_ops_is_refused(specs, name):
    with pytest.raises(KeyError):
        program_spec(name, specs)


@pytest.mark.parametrize("fmt", ["xla", "onnx", "nnef"])
def test_the_suite_of_a_format_is_fixed_by_its_seed_and_bound_in_it(specs, fmt):
    names = chain_names(specs, fmt, seed=0)
    assert names == chain_names(specs, fmt, seed=0) != chain_names(specs, fmt, seed=1)
    assert len(names) == 12
    for name in names:
        spec = specs[name]
        assert 2 <= len(spec.nodes) <= 4 and fmt in spec.bindings
        assert any(d.startswith(("float", "bfloat")) for d in spec.dtypes)


def test_an_onnx_chain_is_bound_at_the_opsets_all_its_nodes_are(specs):
    ops = ["exp", "tanh", "abs"]
    spec = specs[chain_name(ops)]
    ranges = [specs[op].bindings["onnx"]["opsets"] for op in ops]
    assert spec.bindings["onnx"]["opsets"] == [max(r[0] for r in ranges), min(r[1] for r in ranges)]
    assert spec.bindings["xla"] == {} and spec.bindings["nnef"] == {}


def test_an_onnx_chain_holds_only_ops_bound_at_the_opset_models_are_built_at(specs, monkeypatch):
    """onnx_mod_floor is bound at opset 28 alone (Mod-28's floats): no chain holds it at 21,
    where every case of such a chain would be unsupported; at 28 some may."""
    monkeypatch.setenv("CONFORM_ONNX_OPSET", "21")
    for count in (12, 200):
        assert not any("onnx_mod_floor" in name for name in chain_names(specs, "onnx", count=count))
    monkeypatch.setenv("CONFORM_ONNX_OPSET", "28")
    assert any("onnx_mod_floor" in name for name in chain_names(specs, "onnx", count=200))


def _case(spec, inputs, dtype="float32"):
    return Case(id=f"{spec.op}.{dtype}.0", op=spec.op, dtype=dtype, input_dtypes=(dtype,) * len(inputs),
                out_dtype=dtype, inputs=inputs, attrs={}, plan="normal", seed=11)


def test_an_error_is_blamed_on_the_node_that_made_it(specs):
    spec = specs[chain_name(["exp", "negate"])]
    x = np.float32([0.5, 1.0, 2.0])
    exact = np.exp(x.astype(np.float64)).astype(np.float32)
    wrong = exact.copy()
    wrong[1] *= np.float32(1 + 2.0 ** -12)   # ~2048 ulp off
    case = _case(spec, [x])
    # node 0 wrong, node 1 right on what node 0 gave it: only node 0 fails
    judgement = judge_outputs(spec, case, [wrong, -wrong])
    parts = dict(judgement.outputs)
    assert judgement.verdict == "fail" and judgement.worst["output"] == "n0_exp"
    assert parts["n0_exp"].verdict == "fail" and parts["n1_negate"].verdict == "pass"
    message = failure_message(case, judgement, "b")
    assert "worst n0_exp[1]" in message and "inputs=(1.0)" in message and "seed=11" in message
    # node 0 right, node 1 wrong: only node 1 fails, and its inputs are node 0's output
    judgement = judge_outputs(spec, case, [exact, -wrong])
    assert judgement.worst["output"] == "n1_negate" and judgement.worst["node"] == "negate"
    assert judgement.worst["inputs"] == [float(exact[1])]
    assert dict(judgement.outputs)["n0_exp"].verdict == "pass"


def test_a_backend_returning_only_the_last_output_fails(specs):
    spec = specs[chain_name(["exp", "negate"])]
    judgement = judge_outputs(spec, _case(spec, [np.float32([1])]), [np.float32([-2.7])])
    assert judgement.verdict == "fail" and "expected 2 (n0_exp, n1_negate)" in judgement.reason


def test_every_node_is_one_onnx_node_and_the_model_is_valid(specs):
    spec = specs[chain_name(["exp", "onnx_add", "tanh"])]
    for case in generate_cases(spec, "float32", count=4, seed=0):
        model = build_model(spec, case)
        onnx.checker.check_model(model, full_check=True)
        assert [(n.op_type, list(n.input), list(n.output)) for n in model.graph.node] == [
            ("Exp", ["in0"], ["out0"]), ("Add", ["out0", "in1"], ["out1"]),
            ("Tanh", ["out1"], ["out2"])]
        assert [o.name for o in model.graph.output] == ["out0", "out1", "out2"]


def test_an_nnef_program_is_one_graph_of_invocations(specs):
    spec = specs[EVERY_FORMAT]
    case = generate_cases(spec, "float32", count=1, seed=0)[0]
    text = build_document(spec, case).text
    assert "-> ( out0, out1, out2 )" in text
    assert "out0 = exp(in0);" in text and "out1 = tanh(out0);" in text and "out2 = abs(out1);" in text


def test_a_single_op_case_is_a_one_node_program_that_is_the_case_itself(specs):
    from conform.spec.program_nodes import node_cases, program_nodes

    spec = specs["dynamic_slice"]   # a variadic last input: one name per array
    case = generate_cases(spec, spec.dtypes[0], count=1, seed=0)[0]
    (node,) = program_nodes(spec, case)
    assert node.spec is spec and node.attrs is case.attrs and node.outputs == spec.outputs
    assert len(node.inputs) == len(case.inputs) == len(set(node.inputs))
    assert node.inputs[:2] == ("operand", "start_indices") and node.inputs[2] == "start_indices.1"
    assert node_cases(spec, case) == [case] and node_cases(spec, case)[0] is case


def test_a_failing_node_of_a_chain_is_profiled_on_the_values_it_was_given(specs):
    spec = specs[chain_name(["exp", "negate"])]
    x = np.float32([0.5, 1.0, np.nan])
    exact = np.exp(x.astype(np.float64)).astype(np.float32)
    wrong = -exact
    wrong[0] = 7.0                           # node 1 wrong at an element fed by a finite value
    judgement = judge_outputs(spec, _case(spec, [x]), [exact, wrong])
    assert judgement.verdict == "fail" and judgement.profile is not None
    assert judgement.profile["elements"] == 1 and judgement.profile["inputs_nan"] == 0
    assert judgement.profile["inputs_max_abs"] == pytest.approx(float(exact[0]))


def test_no_shared_code_asks_whether_a_spec_is_a_program():
    """Only spec/programs.py knows a program spec's ``nodes``: every other stage walks
    ``program_nodes``, one node or several alike."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = [f"{path.relative_to(root)}:{n}" for folder in
             ("spec", "generators", "oracles", "harness", "reports", "ops", "conform")
             for path in (root / folder).rglob("*.py") if path.name != "programs.py"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\bspec\.nodes\b|getattr\(spec, \"nodes\"", line)]
    assert found == []
