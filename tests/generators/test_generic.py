"""The generic drawer interprets a signature: shape relations and attribute domains."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conform.generators._drawing import draw_plans


def _signatures(spec, count=64, seed=0):
    return [plan[0] for plan in draw_plans(spec, "float32", count=count, seed=seed)]


def _with(spec, **signature):
    return dataclasses.replace(spec, signature={**spec.signature, **signature})


def _nnef_broadcast(*shapes):
    """NNEF's rule: a shape is followed by singleton dimensions, so shapes align at the start."""
    rank = max(map(len, shapes))
    padded = [tuple(s) + (1,) * (rank - len(s)) for s in shapes]
    return np.broadcast_shapes(*padded)


def test_equal_shapes_by_default(specs):
    for signature in _signatures(_with(specs["add"], shapes="equal")):
        assert signature.shapes[0] == signature.shapes[1]


def test_onnx_broadcast_draws_numpy_broadcastable_shapes_of_every_kind(specs):
    signatures = _signatures(_with(specs["add"], shapes="onnx_broadcast"), count=256)
    kinds = set()
    for signature in signatures:
        lhs, rhs = signature.shapes
        np.broadcast_shapes(lhs, rhs)   # raises if they do not broadcast
        kinds.add("ranks differ" if len(lhs) != len(rhs) else
                  "size-1 against larger" if lhs != rhs else "equal")
    assert kinds == {"ranks differ", "size-1 against larger", "equal"}


def test_nnef_broadcast_aligns_leading_dimensions(specs):
    signatures = _signatures(_with(specs["add"], shapes="nnef_broadcast", min_rank=2), count=256)
    trailing_dropped = 0
    for signature in signatures:
        lhs, rhs = signature.shapes
        _nnef_broadcast(lhs, rhs)
        if len(lhs) != len(rhs):
            short, long = sorted((lhs, rhs), key=len)
            trailing_dropped += all(a in (1, b) for a, b in zip(short, long))
    assert trailing_dropped > 0


def test_attribute_domains(specs):
    spec = _with(specs["exp"], min_rank=1, attrs={
        "axis": {"axis_of": "operand", "negative": True},
        "axes": {"axes_of": "operand", "negative": True, "min_size": 1},
        "perm": {"permutation_of": "operand"},
        "keepdims": {"choice": [0, 1]},
        "k": {"range": [2, 5]},
        "alpha": 0.5})
    seen_negative = False
    for signature in _signatures(spec, count=256):
        rank = len(signature.shapes[0])
        a = signature.attrs
        assert -rank <= a["axis"] < rank
        assert 1 <= len(a["axes"]) <= rank
        assert len({axis % rank for axis in a["axes"]}) == len(a["axes"])
        assert all(-rank <= axis < rank for axis in a["axes"])
        assert sorted(a["perm"]) == list(range(rank))
        assert a["keepdims"] in (0, 1) and 2 <= a["k"] <= 5 and a["alpha"] == 0.5
        seen_negative |= a["axis"] < 0 or any(axis < 0 for axis in a["axes"])
    assert seen_negative


@pytest.mark.parametrize("signature, field, message", [
    ({"attrs": {"axis": {"axis_of": "nope"}}, "min_rank": 1}, "signature.attrs.axis.axis_of",
     "axis_of='nope' names no input"),
    ({"attrs": {"axis": {"axis_of": "operand"}}}, "signature.attrs.axis.axis_of",
     "a 0-d input lacks"),
    ({"shapes": "numpy"}, "signature.shapes", "is not one of"),
    ({"attrs": {"axis": {"axis_of": "operand", "negatives": True}}, "min_rank": 1},
     "signature.attrs.axis", "is not valid under any of the given schemas"),
])
def test_a_bad_domain_is_named(tmp_path, signature, field, message):
    import yaml

    from conform.spec import BUILTIN_DIR, SpecError, load_spec

    data = yaml.safe_load((BUILTIN_DIR / "exp.yaml").read_text(encoding="utf-8"))
    data["signature"] = {**data["signature"], **signature}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.field == field and message in str(info.value)


def test_an_input_typed_by_a_list_of_dtypes_takes_each_of_them(specs):
    """A type variable (ONNX's Tind) is one of its dtypes per signature; the others keep T."""
    spec = _with(specs["add"], inputs=["lhs", {"name": "rhs", "type": ["int32", "int64"]}])
    assert spec.input_types == ("T", ("int32", "int64"))
    drawn = {signature.input_dtypes for signature in _signatures(spec, count=64)}
    assert drawn == {("float32", "int32"), ("float32", "int64")}


def test_an_onnx_label_holds_where_one_member_of_a_type_variable_is_allowed(specs):
    from conform.harness.backends.onnx_models import schema_allows

    gather = specs["onnx_gather"]   # Tind: int32 or int64
    assert schema_allows(gather, "float32", 21)
    wrong = _with(gather, inputs=["data", {"name": "indices", "type": ["int8", "uint8"]}])
    assert not schema_allows(wrong, "float32", 21)
