"""ONNX Flatten, Shape, Size, EyeLike, ConstantOfShape and Constant (ops/onnx_shape.py): the texts'
examples, the onnx package's node test cases, the drawn cases on onnxruntime and numpy, and the
judge catching a wrong answer from the real onnxruntime."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conform.generators import Case
from conform.oracles import evaluate
from onnx import helper

from tests.ops import real_backends
from tests.ops.onnx_node_cases import node_attributes, node_cases

#: conform dtype names by ONNX element type, for EyeLike's dtype attribute
_BY_ONNX = {helper.np_dtype_to_tensor_dtype(np.dtype(d)): d
            for d in ("float32", "float64", "float16", "int32", "int64", "bool")}


def _attrs(op_type: str, node) -> dict:
    """The node's attributes as the oracle takes them (EyeLike's dtype a dtype name;
    ConstantOfShape's value tensor its one number, dtype its type)."""
    attrs = node_attributes(node)
    if op_type == "EyeLike":
        attrs.setdefault("k", 0)
        if "dtype" in attrs:
            attrs["dtype"] = _BY_ONNX[attrs["dtype"]]
    if op_type == "ConstantOfShape":
        value = attrs.pop("value", np.float32([0]))
        attrs = {"value": value.item(), "dtype": str(value.dtype)}
    if op_type == "Flatten":
        attrs.setdefault("axis", 1)
    return attrs


@pytest.mark.parametrize("module, op_type, name", [
    ("flatten", "Flatten", "onnx_flatten"), ("shape", "Shape", "onnx_shape"),
    ("size", "Size", "onnx_size"), ("eyelike", "EyeLike", "onnx_eye_like"),
    ("constantofshape", "ConstantOfShape", "onnx_constant_of_shape")])
def test_oracle_reproduces_the_onnx_node_test_cases(module, op_type, name):
    cases = node_cases(module)
    assert cases
    for case_name, node, inputs, (want,) in cases:
        (got,) = evaluate(name, inputs, _attrs(op_type, node))
        assert got.shape == want.shape, case_name
        assert np.array_equal(got.astype(want.dtype), want), case_name


def test_shape_clamps_start_and_end_after_adding_the_rank():
    """The text's examples and its clamping: start < -r is 0, end > r is r, start > end is
    empty."""
    x = np.zeros((2, 3, 4))
    shape = lambda **attrs: evaluate("onnx_shape", [x], attrs)[0].tolist() 
    assert shape() == [2, 3, 4] and shape(start=-1) == [4] and shape(end=-1) == [2, 3]
    assert shape(start=1, end=2) == [3] and shape(start=-10) == [2, 3, 4]
    assert shape(end=10) == [2, 3, 4] and shape(start=2, end=1) == []
    assert evaluate("onnx_shape", [np.float32(1)], {"start": -3, "end": 5})[0].shape == (0,)


def test_flatten_of_a_scalar_and_of_an_empty_tensor():
    assert evaluate("onnx_flatten", [np.float32(7)], {"axis": 0})[0].shape == (1, 1)
    assert evaluate("onnx_flatten", [np.zeros((2, 0, 3))], {"axis": 2})[0].shape == (0, 3)
    assert evaluate("onnx_flatten", [np.zeros((2, 0, 3))], {"axis": -3})[0].shape == (1, 0)


def test_eye_like_populates_diagonal_k_of_the_output_type():
    (out,) = evaluate("onnx_eye_like", [np.zeros((3, 4), np.int8)], {"k": -1, "dtype": "bool"})
    assert out.dtype == np.bool_ and np.argwhere(out).tolist() == [[1, 0], [2, 1]]
    (out,) = evaluate("onnx_eye_like", [np.zeros((2, 2))], {"k": 5})
    assert not out.any()


def test_constant_of_shape_keeps_the_value_bit_for_bit():
    (out,) = evaluate("onnx_constant_of_shape", [np.int64([2, 0])], {"value": "-zero",
                                                                    "dtype": "float16"})
    assert out.shape == (2, 0)
    (out,) = evaluate("onnx_constant_of_shape", [np.int64([3])], {"value": "-zero",
                                                                  "dtype": "float16"})
    assert np.signbit(out).all()
    (out,) = evaluate("onnx_constant_of_shape", [np.int64([])], {"value": "int_max",
                                                                 "dtype": "uint64"})
    assert out.shape == () and int(out) == 2 ** 64 - 1


backends = real_backends.backends   # the fixture


def test_judge_catches_a_wrong_diagonal_from_onnxruntime(specs, backends):
    """EyeLike run on the real onnxruntime with k one too high fails against the case's k."""
    spec = specs["onnx_eye_like"]
    case = Case(id="onnx_eye_like.float32.0", op="onnx_eye_like", dtype="float32",
                input_dtypes=("float32",), out_dtype="int32", inputs=[np.zeros((3, 4), np.float32)],
                attrs={"k": 0, "dtype": "int32"}, plan="normal", seed=0)
    assert real_backends.verdict(spec, case, backends["onnxruntime"])[0] == "pass"
    shifted = dataclasses.replace(case, attrs={**case.attrs, "k": case.attrs["k"] + 1})
    assert real_backends.verdict(spec, case, backends["onnxruntime"], run=shifted)[0] == "fail"


# --- Constant ---------------------------------------------------------------------------------

def _constant_case(form, dtype, shape, bits, **extra):
    attrs = {"form": form, "dtype": dtype, "shape": list(shape), "bits": list(bits), **extra}
    return Case(id=f"onnx_constant.{dtype}.0", op="onnx_constant", dtype=dtype, input_dtypes=(),
                out_dtype=dtype, inputs=[], attrs=attrs, plan="normal", seed=0)


def test_constant_reproduces_the_onnx_node_test_case():
    """The node's value tensor, as bits, gives back the example's output element for element."""
    from onnx import numpy_helper

    ((name, node, _, (want,)),) = node_cases("constant")
    tensor = numpy_helper.to_array(node.attribute[0].t)
    bits = tensor.view(np.uint32).ravel().tolist()
    (got,) = evaluate("onnx_constant", [], {"form": "value", "dtype": "float32",
                                            "shape": list(tensor.shape), "bits": bits})
    assert np.array_equal(got.astype(np.float32), want), name


def test_constant_keeps_every_bit_pattern_and_fills_a_sparse_tensor_with_zeros():
    """-0, a NaN and the smallest subnormal of float16; int4's 0xF is -1; sparse_value puts its
    values at the linear indices and 0 elsewhere."""
    (out,) = evaluate("onnx_constant", [], _constant_case("value", "float16", (3,),
                                                          [0x8000, 0x7E01, 0x0001]).attrs)
    assert np.signbit(out[0]) and out[0] == 0 and np.isnan(out[1]) and out[2] == 2.0 ** -24
    (out,) = evaluate("onnx_constant", [], _constant_case("value", "int4", (2,), [0xF, 7]).attrs)
    assert out.tolist() == [-1, 7]
    sparse = _constant_case("sparse_value", "int8", (2, 3), [5, 0xFF], indices=[1, 4]).attrs
    assert evaluate("onnx_constant", [], sparse)[0].tolist() == [[0, 5, 0], [0, -1, 0]]


@pytest.mark.parametrize("form, dtype, shape, bits", [
    ("value", "float16", (2, 2), [0x8000, 0x7C00, 0x0001, 0x3C00]),
    ("value", "uint64", (2,), [2 ** 64 - 1, 0]),
    ("value_float", "float32", (), [0x80000000]),
    ("value_floats", "float32", (3,), [0x3F800000, 0xFF800000, 0x00000001]),
    ("value_int", "int64", (), [2 ** 63]),
    ("value_ints", "int64", (2,), [5, 2 ** 64 - 1])])
def test_each_form_passes_on_onnxruntime_and_a_wrong_bit_fails(specs, backends, form, dtype, shape,
                                                              bits):
    spec = specs["onnx_constant"]
    case = _constant_case(form, dtype, shape, bits)
    assert real_backends.verdict(spec, case, backends["onnxruntime"])[0] == "pass"
    flipped = _constant_case(form, dtype, shape, [bits[0] ^ 1] + bits[1:])
    assert real_backends.verdict(spec, case, backends["onnxruntime"], run=flipped)[0] == "fail"


def test_onnxruntime_gives_no_dense_tensor_for_sparse_value(backends, specs):
    """A real deviation, pinned: the standard's output is a tensor of T, but onnxruntime 1.32
    returns Constant's sparse_value as a SparseTensor (rank 1 and 2) or fails to run it
    ('Currently do not support dims higher than 2 dimensions', scalars included). Repro:
    conform run --backend onnxruntime --ops onnx_constant --out /tmp/c; then
    conform repro <a sparse_value case id> --from /tmp/c."""
    import onnxruntime as ort
    from conform.harness.backends.onnx_models import build_model

    spec = specs["onnx_constant"]
    case = _constant_case("sparse_value", "float32", (2, 3), [0x3F800000], indices=[4])
    model = build_model(spec, case).SerializeToString()
    (out,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {})
    assert type(out).__name__ == "SparseTensor"
    case = _constant_case("sparse_value", "float32", (2, 1, 3), [0x3F800000], indices=[4])
    session = ort.InferenceSession(build_model(spec, case).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="dims higher than 2"):
        session.run(None, {})
