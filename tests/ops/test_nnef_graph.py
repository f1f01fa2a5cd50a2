"""NNEF external, variable and update: the documents (a variable's data in the tensor file its
label names, beside graph.nnef), the executor and numpy passing drawn cases, a compiled model
never reused for other weights, the executor's update not carried into the next step (pinned,
with its repro), and every fragment of the standard library bound by a spec."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import Case
from conform.harness.backends.models import Model, run_case
from conform.harness.backends.nnef_models import _standard_fragments, build_document
from conform.harness.backends.nnef_tensors import read_tensor
from backend_verdicts import verdicts

GRAPH_OPS = ["nnef_external", "nnef_variable", "nnef_update"]
W = np.arange(6, dtype=np.float32).reshape(2, 3)


def _case(op, *inputs):
    inputs = [np.asarray(x) for x in inputs]
    dtype = inputs[0].dtype.name
    return Case(id=f"{op}.{dtype}.hand", op=op, dtype=dtype,
                input_dtypes=tuple(x.dtype.name for x in inputs), out_dtype=dtype,
                inputs=inputs, attrs={}, plan="hand", seed=0)


def test_a_variable_reads_its_label_s_tensor_file(specs, tmp_path):
    document = build_document(specs["nnef_variable"], _case("nnef_variable", W))
    assert "out0 = variable<scalar>(shape = [2, 3], label = 'var0');" in document.text
    assert "graph conform_nnef_variable( in0 ) -> ( out0 )" in document.text  # one parameter
    folder = document.write(tmp_path / "model")
    array, header = read_tensor(folder / "var0.dat")
    assert header.item_type == 0 and array.dtype == np.float32
    np.testing.assert_array_equal(array, W)


def test_update_s_variable_is_declared_from_a_file_and_its_value_fed(specs):
    value = np.ones((2, 3), np.int32)
    document = build_document(specs["nnef_update"], _case("nnef_update", W.astype(np.int32), value))
    assert "in0 = variable<integer>(shape = [2, 3], label = 'var0');" in document.text
    assert "in1 = external<integer>(shape = [2, 3]);" in document.text
    assert "graph conform_nnef_update( in1 ) -> ( out0 )" in document.text
    assert document.inputs == [1] and list(document.files) == ["var0"]
    assert "variable" in document.operations


@pytest.mark.parametrize("name", GRAPH_OPS)
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_the_executor_passes(specs, nnef_backend, name, dtype):
    assert verdicts(specs[name], nnef_backend, dtype, count=3, seed=2) == {"pass"}


@pytest.mark.parametrize("name", GRAPH_OPS)
def test_numpy_passes(specs, name):
    from conform.harness.backends.numpy_backend import NumpyBackend

    assert verdicts(specs[name], NumpyBackend(), "float64", count=3, seed=2) == {"pass"}


def test_other_weights_are_another_model(specs, nnef_backend):
    """A compiled session holds the variables it read: two cases alike but for the tensor
    file's data have different keys, and each runs on its own weights."""
    spec = specs["nnef_variable"]
    first, second = _case("nnef_variable", W), _case("nnef_variable", W + 1)
    assert Model("nnef", spec, first).key != Model("nnef", spec, second).key
    np.testing.assert_array_equal(run_case(nnef_backend, spec, first)[0], W)
    np.testing.assert_array_equal(run_case(nnef_backend, spec, second)[0], W + 1)


def test_the_executor_does_not_keep_an_update_into_the_next_step(tmp_path):
    """A deviation of the nnef package's executor (1.0.10): 'variable tensors can be updated in
    each step and keep their values between consecutive steps' (NNEF 1.0 ch. 2, the seeds' 001),
    but a session's second step reads the variable's file value again, not the update.
    Repro: this test's document, run twice by nnef.Session(folder)."""
    import nnef

    from conform.harness.backends.nnef_models import Document, prelude

    text = ("version 1.0;\n\ngraph g( x ) -> ( v, r )\n{\n"
            "    x = external<scalar>(shape = [2, 3]);\n"
            "    v = variable<scalar>(shape = [2, 3], label = 'w');\n"
            "    r = update(v, x);\n}\n")
    folder = Document(text, "update", [0], files={"w": W}).write(tmp_path / "model")
    x = np.full((2, 3), 10.0, np.float32)
    with nnef.Session(str(folder), stdlib=prelude("variable", "update"), lowered=[]) as session:
        v1, r1 = session(x)
        v2, _ = session(x)
    np.testing.assert_array_equal(v1, W)
    np.testing.assert_array_equal(r1, x)                # update's result: the new value
    np.testing.assert_array_equal(v2, W)                # the text: x, the value kept


def test_every_standard_fragment_is_bound(specs):
    """All 119 fragments of the nnef package's standard library (nnef 1.0.10) have a spec
    whose ``nnef`` binding invokes them."""
    fragments = _standard_fragments()
    bound = {(s.bindings.get("nnef") or {}).get("op") for s in specs.values()}
    assert len(fragments) == 119
    assert sorted(set(fragments) - bound) == []
