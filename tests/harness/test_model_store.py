"""Models kept across runs (conform.harness.backends.model_store): a warm run reads back the
bytes an earlier run built, a refusal included, and builds what it cannot tell apart."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conform.generators import Case
from conform.harness.backends import Unsupported
from conform.harness.backends.model_store import ModelStore
from conform.harness.backends.models import Model, run_case
from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend


def _exp_case(values, dtype="float32"):
    x = np.asarray(values, dtype=dtype)
    return Case(id=f"exp.{dtype}.t", op="exp", dtype=dtype, input_dtypes=(dtype,), out_dtype=dtype,
                inputs=[x], attrs={}, plan="test", seed=0, output_shapes=(x.shape,))


def _store(folder) -> ModelStore:
    return ModelStore("onnx", lambda proto: proto.SerializeToString(), folder=folder)


def _never_built(monkeypatch):
    monkeypatch.setattr(Model, "build", lambda self: pytest.fail("the model was built again"))


def test_a_second_backend_reads_the_first_ones_model_and_computes_the_same(specs, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv("CONFORM_CACHE_DIR", str(tmp_path))
    case = _exp_case([0.0, 1.0, -2.5])
    first = OnnxRuntimeBackend()
    [built] = run_case(first, specs["exp"], case)
    _never_built(monkeypatch)
    second = OnnxRuntimeBackend()
    [read] = run_case(second, specs["exp"], _exp_case([0.0, 1.0, -2.5]))
    [other] = run_case(second, specs["exp"], _exp_case([3.0, -1.0]))   # the same session
    assert (first.stats()["models_read"], second.stats()["models_read"]) == (0, 1)
    assert second.stats()["sessions"] == 1 and other.shape == (2,)
    assert read.tobytes() == built.tobytes() and abs(built[1] - np.e) < 1e-6


def test_a_refusal_is_kept_and_raised_again_without_building(specs, tmp_path, monkeypatch):
    model = Model("onnx", replace(specs["exp"], bindings={}), _exp_case([1.0]))
    with pytest.raises(Unsupported) as first:
        _store(tmp_path).serialized(model)
    _never_built(monkeypatch)
    store = _store(tmp_path)
    with pytest.raises(Unsupported) as again:
        store.serialized(Model("onnx", model.spec, _exp_case([2.0])))
    assert str(again.value) == str(first.value) and "no onnx binding" in str(first.value)
    assert store.read == 1


def test_what_the_digest_cannot_tell_apart_is_built_and_not_kept(specs, tmp_path):
    store, model = _store(tmp_path), Model("onnx", specs["exp"], _exp_case([1.0]))
    store.serialized(model, None)   # what the bytes depend on is not known
    outside = replace(specs["exp"], path=str(tmp_path / "exp.yaml"))   # a user's spec folder
    store.serialized(Model("onnx", outside, _exp_case([1.0])))
    assert store.written == 0
    for ranks in [(1,), (2,), (1,)]:   # cases of one key whose models differ are kept apart
        store.serialized(model, ranks)
    assert (store.written, store.read) == (2, 1)


def test_a_damaged_entry_is_built_again_with_a_warning(specs, tmp_path, capsys):
    model = Model("onnx", specs["exp"], _exp_case([1.0]))
    data = _store(tmp_path).serialized(model)
    [path] = tmp_path.glob("*.onnx")
    path.write_bytes(path.read_bytes()[:-1] + b"\0")
    store = _store(tmp_path)
    assert store.serialized(model) == data and (store.read, store.written) == (0, 1)
    assert "damaged cache entry" in capsys.readouterr().err
