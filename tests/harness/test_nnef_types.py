"""What NNEF's type system takes decides what is drawn for an NNEF backend (issue 32 item 3):
a fragment's ``tensor<scalar>`` parameters take float values only, ``tensor<integer>`` integers,
``tensor<logical>`` bools, and a generic fragment's ``tensor<?>`` parameters one kind between
them. A label the standard rules out is never drawn, so that an ``unsupported`` verdict on an
NNEF consumer means the consumer lacks what NNEF allows."""
from __future__ import annotations

import numpy as np
import pytest

from conform.harness.backends.nnef_models import types_allow
from conform.harness.run.runner import SelectionError, by_format


@pytest.mark.parametrize("op, label, allowed", [
    ("abs", "float32", True), ("abs", "int32", False),            # abs(x: tensor<scalar>)
    ("bitwise_and", "bool", True), ("bitwise_and", "int64", False),  # and(x: tensor<logical>)
    ("nnef_select", "int32", True), ("nnef_select", "bool", True),   # select<?>: condition logical
    ("nnef_gather", "float32", True),                                # gather<?>(indices: integer)
    ("reduce_sum", "int32", False), ("pad", "bool", False),
    ("exp", "complex64", False), ("copy", "string", False),        # scalar is a real value
])
def test_the_fragments_declared_types_decide(specs, op, label, allowed):
    assert types_allow(specs[op], label) is allowed


def test_a_run_never_draws_what_nnef_rules_out(specs):
    pairs = [(specs["abs"], "float32"), (specs["abs"], "int32"), (specs["bitwise_and"], "int64")]
    assert by_format(pairs, "nnef", "nnef") == [(specs["abs"], "float32")]
    assert by_format(pairs, "numpy", None) == pairs   # a backend of no format takes them all
    with pytest.raises(SelectionError):
        by_format([(specs["exp"], "float32")], "nnef", "no_such_format")


def test_an_integer_result_is_the_consumer_s_width(specs):
    """NNEF leaves integer's width to the consumer and a document declares no result types:
    argmax_reduce's index (conform's int32) is written for a consumer whose integer is int64
    (tract), and its int64 result is handed back as int32 where the values are int32's; one
    that is not stays int64, for the judge to fail. A consumer without integer tensors refuses."""
    import numpy as np

    from conform.generators import Case
    from conform.harness.backends.base import Unsupported
    from conform.harness.backends.nnef_models import build_document

    case = Case(id="nnef_argmax_reduce.float32.hand", op="nnef_argmax_reduce", dtype="float32",
                input_dtypes=("float32",), out_dtype="float32",
                inputs=[np.zeros((2, 3), np.float32)], attrs={"axis": 1}, plan="hand", seed=0)
    spec = specs["nnef_argmax_reduce"]
    int64 = {"float32": "scalar", "int64": "integer", "bool": "logical"}
    document = build_document(spec, case, int64)
    (index,) = document.results([np.array([[2], [0]], np.int64)])
    assert index.dtype == np.int32 and index.tolist() == [[2], [0]]
    (wide,) = document.results([np.array([[2**40], [0]], np.int64)])
    assert wide.dtype == np.int64
    with pytest.raises(Unsupported, match="no int32 tensors"):
        build_document(spec, case, {"float32": "scalar"})


def test_a_case_nnef_cannot_express_is_not_drawn_for_an_nnef_run(specs):
    """pad with interior padding or a NaN padding value (NNEF pad has no interior padding, and
    no literal spells NaN): not drawn for an NNEF run (any consumer: the op's lowering says so),
    and said so in the run's ``not_expressible``; still drawn for an XLA or ONNX run, and the
    cases NNEF can express are the same ones."""
    from conform.harness.run.runner import RunConfig, _generate

    def interior(case):
        return any(step for _, _, step in case.attrs["padding_config"])

    drawn = {binding: _generate(RunConfig(backend=binding, ops=["pad"], dtypes=["float32"],
                                          max_examples=20), specs, binding)
             for binding in ("nnef", "xla", "onnx")}
    _, nnef, _, left_out = drawn["nnef"]
    assert nnef and not any(interior(case) or np.isnan(case.inputs[1]) for case in nnef)
    assert {entry["reason"] for entry in left_out} == {
        "NNEF pad has no interior padding", "NNEF numeric literals cannot spell nan"}
    for binding in ("xla", "onnx"):
        _, cases, _, left = drawn[binding]
        assert any(map(interior, cases)) and left == []
        assert [c.id for c in cases if not interior(c) and not np.isnan(c.inputs[1])] \
            == [c.id for c in nnef]
    assert sum(entry["cases"] for entry in left_out) + len(nnef) == len(drawn["xla"][1])
    # a given corpus (conform certify's) may hold an op of no nnef binding: it is kept, and
    # the run reports it unsupported as before
    from conform.harness.run.runner import expressible

    assert "nnef" not in specs["add"].bindings
    other = _generate(RunConfig(backend="numpy", ops=["add"], dtypes=["float32"], max_examples=2),
                      specs, None)[1]
    assert expressible(other, specs, "nnef") == (other, [])
