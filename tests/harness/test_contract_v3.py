"""Contract 3: the program view, the shim that calls contract 1 and 2 adapters as before, and
wrapping one backend in another (in process; tests/e2e/test_wrapping.py runs them through the CLI)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.harness.backends import API_VERSION, Backend, Program, Unsupported, Wrapping, \
    evaluate, load_backend
from conform.harness.backends.models import Model, legacy, prepare_case, run_case, unclaimed

STARTER_V2 = Path(__file__).resolve().parents[1] / "fixtures" / "starter-v2"


def _case(specs, op, dtype="float32", count=2, seed=1):
    return generate_cases(specs[op], dtype, count=count, seed=seed)[0]


def test_program_of_one_op(specs):
    case = _case(specs, "onnx_top_k")
    program = Program(specs["onnx_top_k"], case)
    assert program.op == "onnx_top_k" and not program.is_chain
    assert program.input_names == ("x",) and program.input_dtypes == ("float32",)
    assert program.outputs == ("values", "indices") and program.out_dtypes == ("float32", "int64")
    (node,) = program.nodes
    assert (node.op, node.inputs, node.outputs) == ("onnx_top_k", ("x",), ("values", "indices"))
    assert node.attrs is case.attrs and program.attrs is case.attrs and "k" in node.attrs
    assert program.nodes is program.nodes   # made once
    assert "onnx_top_k" in repr(program)


def test_program_of_an_absent_optional_input(specs):
    spec = specs["onnx_clip"]
    case = next(c for c in generate_cases(spec, "float32", count=40, seed=2)
                if c.attrs.get("absent_inputs"))
    program = Program(spec, case)
    assert len(program.input_names) == len(case.inputs) < len(spec.inputs)
    assert not set(program.input_names) & set(case.attrs["absent_inputs"])


def test_chain_program_node_by_node(specs):
    name = "chain__exp__add__tanh"
    spec = specs[name]
    case = _case(specs, name)
    program = Program(spec, case)
    assert program.is_chain and program.op == name
    assert [n.op for n in program.nodes] == ["exp", "add", "tanh"]
    assert program.outputs == tuple(o for n in program.nodes for o in n.outputs)
    assert program.nodes[1].inputs == (program.nodes[0].outputs[0], program.input_names[1])
    table = {"exp": np.exp, "add": np.add, "tanh": np.tanh}
    with np.errstate(all="ignore"):
        outputs = evaluate(program, case.inputs, lambda node, xs: [table[node.op](*xs)])
        x0, x1 = case.inputs
        np.testing.assert_array_equal(outputs[2], np.tanh(np.exp(x0) + x1))
    assert len(outputs) == 3


class _V2(Backend):
    """A contract 2 adapter: ``run(*, spec, case)``, no declared version (inherits 3)."""

    name = "v2"

    def run(self, *, spec, case):
        return [np.asarray(case.inputs[0]) * 0 + len(spec.op)]


class _V2Prepare(_V2):
    api_version = 2

    def prepare(self, *, spec, case, model=None):   # calls Backend.prepare the contract 2 way
        return super().prepare(spec=spec, case=case, model=model)


class _V3(Backend):
    name = "v3"

    def run(self, *, program, inputs, model=None):
        return [inputs[0] * 0 + len(program.op)]


def test_the_shim_decides_by_version_then_signature(specs):
    case = _case(specs, "exp")
    assert legacy(_V2()) and legacy(_V2Prepare()) and not legacy(_V3())
    old_v3 = type("Declared1", (_V3,), {"api_version": 1})
    assert legacy(old_v3())
    for backend in (_V2(), _V2Prepare(), _V3()):
        (out,) = run_case(backend, specs["exp"], case)
        assert np.all(out == 3), type(backend)
    assert API_VERSION == 3


def test_models_are_shaped_by_the_contract(specs):
    seen = {}

    class Onnx(Backend):
        model_format = "onnx"

        def run(self, *, program, inputs, model=None):
            seen[self.api_version] = model.shaped
            return [inputs[0]]

    for version in (1, 2, 3):
        cls = type(f"V{version}", (Onnx,), {"api_version": version})
        if version < 3:
            cls.run = lambda self, *, spec, case, model=None, _v=version: \
                seen.__setitem__(_v, model.shaped) or [case.inputs[0]]
        run_case(cls(), specs["onnx_add"], _case(specs, "onnx_add"))
    assert seen == {1: False, 2: True, 3: True}


def test_programs_are_claimed_node_by_node(specs):
    backend = _V3()
    backend.ops = frozenset({"exp", "tanh"})
    assert unclaimed(backend, specs["chain__exp__tanh"], _case(specs, "chain__exp__tanh")) is None
    assert "does not claim op chain__exp__add" in unclaimed(
        backend, specs["chain__exp__add"], _case(specs, "chain__exp__add"))


def test_load_backend_and_wrapping_forward_declarations(specs):
    from tests.harness.wrapping_backend import CountingOnnxRuntime, PlainOnnxRuntime

    assert isinstance(load_backend("numpy"), Backend)
    assert PlainOnnxRuntime.name == "onnxruntime" and PlainOnnxRuntime.model_format == "onnx"
    assert CountingOnnxRuntime.name == "counting-onnxruntime"
    backend, plain = CountingOnnxRuntime(), load_backend("onnxruntime")
    assert backend.version() == plain.version() and backend.device() == "cpu"
    for op in ("onnx_add", "onnx_top_k", "chain__exp__tanh"):
        case = _case(specs, op)
        ours, theirs = run_case(backend, specs[op], case), run_case(plain, specs[op], case)
        assert [a.tobytes() for a in ours] == [b.tobytes() for b in theirs]
    assert backend.stats()["forwarded"] == 3 and backend.stats()["sessions"] == 3


def test_wrapping_an_instance_of_a_contract_2_adapter(specs, monkeypatch):
    monkeypatch.syspath_prepend(str(STARTER_V2))
    from conform_legacy_v2 import LegacyV2Backend

    inner = LegacyV2Backend()
    assert inner.api_version == 2 and legacy(inner)
    wrapper = Wrapping(inner)
    assert wrapper.name == "legacy_v2" and wrapper.ops == inner.ops and not legacy(wrapper)
    case = _case(specs, "exp")
    (ours,) = run_case(wrapper, specs["exp"], case)
    (theirs,) = run_case(inner, specs["exp"], case)
    assert ours.tobytes() == theirs.tobytes()
    doubled = [x * 2 for x in case.inputs]   # a wrapper's own inputs reach the old adapter
    (out,) = prepare_case(wrapper, specs["exp"], case, inputs=doubled)()
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, np.exp(doubled[0]))
    with pytest.raises(Unsupported):
        run_case(wrapper, specs["tan"], _case(specs, "tan"))
    sys.modules.pop("conform_legacy_v2", None)


def test_a_wrapper_needs_something_to_wrap():
    with pytest.raises(TypeError, match="wraps"):
        Wrapping()
