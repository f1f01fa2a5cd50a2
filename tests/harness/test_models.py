"""The model handed to non-native backends, and the claims that keep cases from reaching run()."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from conform.generators import Case, generate_cases
from conform.harness.backends import Backend, Unsupported
from conform.harness.backends.models import Model, run_case, takes_model, unclaimed


def _exp_case(values, dtype="float32"):
    x = np.asarray(values, dtype=dtype)
    return Case(id=f"exp.{dtype}.t", op="exp", dtype=dtype, input_dtypes=(dtype,), out_dtype=dtype,
                inputs=[x], attrs={}, plan="test", seed=0)


@pytest.mark.parametrize("fmt", ["onnx", "stablehlo", "nnef"])
def test_model_in_each_format_builds_writes_and_feeds(specs, tmp_path, fmt):
    spec = specs["exp"]
    model = Model(fmt, spec, _exp_case([0.0, 1.0, -2.5]))
    built = model.build()
    text = built.text if fmt == "nnef" else built if fmt == "stablehlo" else str(built.graph)
    assert ("exp" in text.lower()) and model.build() is built
    [fed] = model.inputs()
    assert fed.dtype == np.float32 and fed.flags.c_contiguous and model.input_names == ["in0"]
    path = model.write(tmp_path)
    assert path.exists() and path.parent == tmp_path


def test_equal_keys_for_cases_that_share_a_compiled_model(specs):
    spec = specs["exp"]
    same = Model("onnx", spec, _exp_case([1.0, 2.0])), Model("onnx", spec, _exp_case([3.0, 4.0]))
    assert same[0].key == same[1].key
    assert Model("onnx", spec, _exp_case([1.0], "float64")).key != same[0].key
    hlo = Model("stablehlo", spec, _exp_case([1.0, 2.0])), Model("stablehlo", spec, _exp_case([1.0]))
    assert hlo[0].key != hlo[1].key   # StableHLO modules have static shapes


def test_a_format_that_cannot_express_the_case_raises_unsupported(specs):
    spec = replace(specs["exp"], bindings={})
    with pytest.raises(Unsupported):
        Model("onnx", spec, _exp_case([1.0])).build()
    with pytest.raises(ValueError, match="unknown model format"):
        Model("tflite", spec, _exp_case([1.0]))


class _Claiming(Backend):
    name = "claiming"
    model_format = "onnx"
    ops = frozenset({"exp"})
    dtypes = frozenset({"float32"})

    def run(self, *, spec, case, model):
        return [np.exp(model.inputs()[0])]


class _Old(Backend):
    name = "old"
    model_format = "onnx"

    def run(self, *, spec, case):   # written before models were handed over
        return [np.exp(case.inputs[0])]


def test_unclaimed_cases_never_reach_run(specs):
    backend = _Claiming()
    assert unclaimed(backend, specs["exp"], _exp_case([1.0])) is None
    assert "does not claim dtype float64 (it claims float32)" in unclaimed(
        backend, specs["exp"], _exp_case([1.0], "float64"))
    with pytest.raises(Unsupported, match="does not claim op tanh"):
        run_case(backend, specs["tanh"], replace(_exp_case([1.0]), op="tanh"))
    [out] = run_case(backend, specs["exp"], _exp_case([0.0]))
    assert out.tolist() == [1.0]


def test_adapters_without_a_model_parameter_are_called_without_one(specs):
    assert takes_model(_Claiming()) and not takes_model(_Old())
    [out] = run_case(_Old(), specs["exp"], _exp_case([0.0]))
    assert out.tolist() == [1.0]


def test_model_cache_compiles_once_remembers_unsupported_and_releases_the_oldest():
    from conform.harness.backends.models import ModelCache

    released, calls = [], []
    cache = ModelCache(limit=2, release=released.append)

    def compile_(name):
        calls.append(name)
        if name == "bad":
            raise Unsupported("no kernel")
        return name.upper()

    assert cache.get("a", lambda: compile_("a")) == cache.get("a", lambda: compile_("a")) == "A"
    for _ in range(2):
        with pytest.raises(Unsupported, match="no kernel"):
            cache.get("bad", lambda: compile_("bad"))
    assert calls == ["a", "bad"] and cache.compiled == 1 and released == []
    cache.get("a", lambda: compile_("a"))      # most recently used: "bad" is now the oldest
    cache.get("c", lambda: compile_("c"))
    assert released == [] and cache.get("a", lambda: compile_("a")) == "A"   # "bad" went, unreleased
    cache.get("d", lambda: compile_("d"))
    assert released == ["C"] and cache.compiled == 3


def test_model_cache_remembers_a_model_the_runtime_refuses_with_its_traceback():
    """A runtime's refusal is remembered like Unsupported (the model is not compiled again for
    every case of its key), and raised with the traceback of the compilation each time."""
    import traceback

    from conform.harness.backends.models import ModelCache

    cache, calls = ModelCache(), []

    def refuse():
        calls.append(1)
        raise RuntimeError("FAIL : Exception during initialization")

    texts = []
    for _ in range(3):
        with pytest.raises(RuntimeError, match="during initialization") as raised:
            cache.get("k", refuse)
        texts.append("".join(traceback.format_exception(raised.value)))
    assert calls == [1] and cache.compiled == 0
    assert texts[0] == texts[1] == texts[2] and "in refuse" in texts[0]
    with pytest.raises(MemoryError):   # not remembered: the next case compiles again
        cache.get("m", lambda: (_ for _ in ()).throw(MemoryError()))
    assert cache.get("m", lambda: "M") == "M"


def test_a_refusal_raised_again_is_formatted_once(monkeypatch):
    """The worker formats each error's traceback; the same remembered refusal raised again
    through the same code is formatted once, and alike; another exception is formatted anew."""
    import traceback

    from conform.harness.backends.models import ModelCache
    from conform.harness.run import boundary

    formatted = []
    real = traceback.format_exception
    monkeypatch.setattr(boundary.traceback, "format_exception",
                        lambda exc: formatted.append(exc) or real(exc))
    cache = ModelCache()

    def refused():
        try:
            cache.get("k", lambda: 1 / 0)
        except ZeroDivisionError as exc:
            return boundary.exception_traceback(exc)

    first, second = refused(), refused()
    assert first == second and "ZeroDivisionError" in first and len(formatted) == 1
    try:
        1 / 0
    except ZeroDivisionError as exc:
        assert boundary.exception_traceback(exc) != first and len(formatted) == 2


def test_a_contract_1_adapter_gets_the_onnx_model_without_shapes(specs):
    """Contract 2 declares ranks on ONNX models; an adapter written against contract 1 (which
    may add the case's static dimensions itself, as the OpenVINO example does) gets them as
    they were."""
    class Seen(Backend):
        model_format = "onnx"

        def run(self, *, spec, case, model=None):
            self.model = model.build()
            return [np.zeros(0)]

    spec = specs["onnx_add"]
    case = generate_cases(spec, "float32", count=2, seed=0)[1]
    for version, shaped in ((1, False), (2, True)):
        backend = Seen()
        backend.api_version = version
        run_case(backend, spec, case)
        (first, _), output = backend.model.graph.input, backend.model.graph.output[0]
        assert first.type.tensor_type.HasField("shape") is shaped, version
        assert output.type.tensor_type.HasField("shape") is shaped, version
        if shaped:
            assert len(first.type.tensor_type.shape.dim) == case.inputs[0].ndim
