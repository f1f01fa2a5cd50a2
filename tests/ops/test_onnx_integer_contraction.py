"""ONNX MatMulInteger and ConvInteger: the texts' exact integer results (zero points per tensor,
per row, per column and per output channel; Conv's geometry with group and auto_pad), the
padding's open value, the onnx package's node-test examples, valid models, and the judge
catching a wrong attribute through the real onnxruntime."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from conform.generators import Case, generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate
from conform.oracles.expectations import expect
from tests.ops.onnx_node_cases import node_attributes, node_cases

MATMUL = ("a", "b", "a_zero_point", "b_zero_point")
CONV = ("x", "w", "x_zero_point", "w_zero_point")


def _case(op, names, arrays, **attrs):
    """A case of ``op`` over the arrays given by name; the optional inputs not given are
    absent."""
    absent = [n for n in names if n not in arrays]
    inputs = [np.asarray(arrays[n]) for n in names if n in arrays]
    if absent:
        attrs["absent_inputs"] = absent
    return Case(id=f"{op}.t.0", op=op, dtype=str(inputs[0].dtype),
                input_dtypes=tuple(str(x.dtype) for x in inputs), out_dtype="int32",
                inputs=inputs, attrs=attrs, plan="normal", seed=0)


def _run(case):
    return evaluate(case.op, case.inputs, case.attrs)[0]


def test_matmul_integer_subtracts_zero_points_per_row_and_column():
    a = np.uint8([[1, 2], [3, 4]])
    b = np.int8([[1, -1], [2, 0]])
    # per row of A (2 elements: rows less 1 and 3), per column of B (less 1 and -1)
    case = _case("onnx_mat_mul_integer", MATMUL, {"a": a, "b": b, "a_zero_point": np.uint8([1, 3]),
                                                  "b_zero_point": np.int8([1, -1])})
    assert _run(case).tolist() == [[1, 1], [1, 1]]   # [[0, 1], [0, 1]] @ [[0, 0], [1, 1]]
    case = _case("onnx_mat_mul_integer", MATMUL, {"a": a, "b": b, "b_zero_point": np.int8(-128)})
    assert _run(case).tolist() == [[389, 383], [907, 893]]
    extreme = _case("onnx_mat_mul_integer", MATMUL, {"a": np.uint8([[255] * 16]),
                                                      "b": np.int8([[-128]] * 16)})
    assert _run(extreme).tolist() == [[-16 * 255 * 128]]   # no int16 step saturates


def test_conv_integer_geometry_group_and_auto_pad():
    x = np.arange(10, dtype=np.uint8).reshape(1, 2, 5)
    w = np.uint8([[[1, 1]], [[1, 0]]])   # group 2: one map per channel
    valid = _case("onnx_conv_integer", CONV, {"x": x, "w": w}, group=2)
    assert _run(valid).tolist() == [[[1, 3, 5, 7], [5, 6, 7, 8]]]
    # SAME_UPPER: 5 outputs, the one pad at the end; SAME_LOWER: at the beginning
    upper = _case("onnx_conv_integer", CONV, {"x": x, "w": w}, group=2, auto_pad="SAME_UPPER")
    lower = _case("onnx_conv_integer", CONV, {"x": x, "w": w}, group=2, auto_pad="SAME_LOWER")
    assert _run(upper).tolist() == [[[1, 3, 5, 7, 4], [5, 6, 7, 8, 9]]]
    assert _run(lower).tolist() == [[[0, 1, 3, 5, 7], [0, 5, 6, 7, 8]]]
    strided = _case("onnx_conv_integer", CONV, {"x": x, "w": w, "x_zero_point": np.uint8(1),
                                                "w_zero_point": np.uint8([0, 1])},
                    group=2, strides=[2], dilations=[2])
    # channel 0: (x - 1) taps 0 and 2 summed; channel 1: w - 1 = [0, -1] picks -(x - 1) at tap 2
    assert _run(strided).tolist() == [[[0, 4], [-6, -8]]]


def test_the_padding_value_is_the_region_reading_differs(specs):
    spec = specs["onnx_conv_integer"]
    case = _case(spec.op, CONV, {"x": np.uint8([[[5, 5]]]), "w": np.uint8([[[1, 1]]]),
                                 "x_zero_point": np.uint8(5)}, pads=[1, 1])
    (answer,) = expect(spec, case)
    assert answer.expected.tolist() == [[[0, 0, 0]]]   # padding holds 0 of x - x_zero_point
    assert answer.impl_mask.tolist() == [[[True, False, True]]]   # raw 0 of x gives -5 there
    no_zero = _case(spec.op, CONV, {"x": np.uint8([[[5, 5]]]), "w": np.uint8([[[1, 1]]])}, pads=[1, 1])
    (answer,) = expect(spec, no_zero)
    assert answer.impl_mask is None or not answer.impl_mask.any()


@pytest.mark.parametrize("module, op, names", [("matmulinteger", "onnx_mat_mul_integer", MATMUL),
                                               ("convinteger", "onnx_conv_integer", CONV)])
def test_the_onnx_node_test_examples(specs, module, op, names):
    """Every example passes; the padded ConvInteger example sets x_zero_point 1 and agrees with
    the oracle's reading (padding is 0 of x - x_zero_point), the other reading's elements being
    open."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node_cases(module)
    assert cases
    for name, node, inputs, outputs in cases:
        given = {n: x for n, x in zip(node.input, inputs) if n}
        arrays = {formal: given[n] for formal, n in zip(names, node.input) if n}
        case = _case(op, names, arrays, **node_attributes(node))
        judged = judge_outputs(specs[op], case, outputs)
        assert judged.verdict in ("pass", "impl_defined"), (name, judged.worst)
        assert np.array_equal(_run(case), outputs[0]), name


def test_the_models_are_valid(specs):
    import onnx

    from conform.harness.backends.onnx_models import build_model

    for op in ("onnx_mat_mul_integer", "onnx_conv_integer"):
        for label in ("int8", "uint8"):
            for case in generate_cases(specs[op], label, count=8, seed=3):
                onnx.checker.check_model(build_model(specs[op], case), full_check=True)


def test_a_wrong_auto_pad_fails_on_onnxruntime(specs):
    """onnxruntime given SAME_LOWER for a SAME_UPPER case (the injected bug) fails; the true
    model passes."""
    from conform.harness.backends.models import run_case
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    backend = OnnxRuntimeBackend()
    spec = specs["onnx_conv_integer"]
    arrays = {"x": np.arange(20, dtype=np.uint8).reshape(1, 2, 10), "w": np.uint8([[[1, 2]], [[3, 1]]]),
              "w_zero_point": np.uint8(1)}   # x_zero_point 0: the padding holds 0
    case = _case(spec.op, CONV, dict(arrays), group=2, auto_pad="SAME_UPPER")
    assert judge_outputs(spec, case, run_case(backend, spec, case)).verdict == "pass"
    wrong = _case(spec.op, CONV, dict(arrays), group=2, auto_pad="SAME_LOWER")
    assert judge_outputs(spec, case, run_case(backend, spec, wrong)).verdict == "fail"


def test_the_judge_fails_a_pair_sum_saturated_in_int16(specs):
    """'The production MUST never overflow': a kernel summing u8 x s8 products in pairs into
    int16 with saturation (x86 pmaddubsw) gives 32767 for 255 * 127 + 255 * 127 = 64770."""
    spec = specs["onnx_mat_mul_integer"]
    case = _case(spec.op, MATMUL, {"a": np.uint8([[255, 255]]), "b": np.int8([[127], [127]])})
    assert judge_outputs(spec, case, [np.int32([[64770]])]).verdict == "pass"
    assert judge_outputs(spec, case, [np.int32([[32767]])]).verdict == "fail"


def test_feeding_names_a_row_a_column_and_their_zero_points():
    from conform.oracles.feeding import feeding_elements
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4) + 100
    fed = feeding_elements("onnx_mat_mul_integer", [a, b, np.array([7.0, 8.0]),
                                                     np.array([1.0, 2.0, 3.0, 4.0])], {}, [1, 2])
    assert [f.tolist() for f in fed] == [[3, 4, 5], [102, 106, 110], [8], [3]]


def test_conv_feeding_names_the_patch_inside_and_its_kernel_taps():
    """1-D, pads 1: output 0's window starts in the padding; group 2 takes channel 1 for m=1."""
    from conform.oracles.feeding import feeding_elements
    x = np.arange(8.0).reshape(1, 2, 4)
    w = np.arange(6.0).reshape(2, 1, 3) + 100
    fed = feeding_elements("onnx_conv_integer", [x, w, np.array(9.0), np.array([1.0, 2.0])],
                           {"pads": [1, 1], "group": 2}, [0, 1, 0])
    assert [f.tolist() for f in fed] == [[4, 5], [104, 105], [9], [2]]
