"""ONNX Cast, CastLike, QuantizeLinear and DequantizeLinear on float4e2m1 (opset 23+),
float8e8m0 (24+), int2/uint2 (25+) and float6e2m3/float6e3m2 (28+): the oracle against the Cast text's FLOAT8E8M0 table and
round_mode, the regions the text leaves open, the schemas' opsets, a real onnxruntime run at
opset 25, and the judge failing an injected wrong conversion."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conform.dtypes import np_dtype
from conform.generators import Case, dtype_labels, generate_cases
from conform.harness.backends.base import Unsupported
from conform.harness.backends.models import run_case
from conform.harness.backends.onnx_models import schema_allows
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate
from conform.oracles.expectations import expect

E8M0 = "float8_e8m0fnu"
MIN, MAX = 2.0 ** -127, 2.0 ** 127
NAN, INF = np.nan, np.inf


def _case(op, x, source, target, attrs=None):
    inputs, input_dtypes = [np.asarray(x, np_dtype(source))], (source,)
    if op == "onnx_cast_like":   # target_type: a 1, which E8M0 holds (it has no 0)
        inputs.append(np.ones((), np_dtype(target)))
        input_dtypes = (source, target)
    return Case(id=f"{op}.t.0", op=op, dtype=f"{source}->{target}", input_dtypes=input_dtypes,
                out_dtype=target, inputs=inputs, attrs={"new_dtype": target, **(attrs or {})},
                plan="normal", seed=0)


def to_e8m0(x, **attrs):
    (out,) = evaluate("onnx_cast", [np.asarray(x, np.float32)], {"new_dtype": E8M0, **attrs})
    return np.asarray(out, np.float64).tolist()


def test_the_e8m0_table_saturate_and_up_column():
    """Rows NaN, Inf, x > E8M0_MAX, x < E8M0_MIN under saturate=1, round_mode=up (the
    defaults); in range, the least power of two >= x."""
    got = to_e8m0([NAN, INF, 3e38, 1e-39, 3.0, 4.0, 0.3])
    assert np.isnan(got[0]) and got[1:] == [MAX, MAX, MIN, 4.0, 4.0, 0.5]


def test_the_e8m0_table_non_saturate_and_nearest_column():
    """Rows 0, NaN, Inf, x > E8M0_MAX, x < E8M0_MIN give NaN; in range to nearest, ties up."""
    got = to_e8m0([0.0, NAN, INF, 3e38, 1e-39, 3.0, 2.9, 6.0, 5.0],
                  saturate=0, round_mode="nearest")
    assert np.isnan(got[:5]).all() and got[5:] == [4.0, 2.0, 8.0, 4.0]


def test_round_mode_down():
    assert to_e8m0([3.0, 4.0, 7.9, 0.3], round_mode="down") == [2.0, 4.0, 4.0, 0.25]


def _impl_mask(spec, case):
    (answer,) = expect(spec, case)
    return np.zeros(answer.expected.shape, bool) if answer.impl_mask is None else answer.impl_mask


@pytest.mark.parametrize("op", ["onnx_cast", "onnx_cast_like"])
def test_negative_values_and_zero_under_saturate_into_e8m0_are_open(specs, op):
    x = [-2.0, -0.0, 0.0, 2.0]
    assert _impl_mask(specs[op], _case(op, x, "float32", E8M0)).tolist() == \
        [True, True, True, False]
    assert _impl_mask(specs[op], _case(op, x, "float32", E8M0, {"saturate": 0})).tolist() == \
        [True, True, False, False]


@pytest.mark.parametrize("op", ["onnx_cast", "onnx_cast_like"])
def test_nan_infinities_and_out_of_range_into_float4_are_open(specs, op):
    x = [NAN, INF, -INF, 7.0, -6.9, 5.0, 0.25]
    assert _impl_mask(specs[op], _case(op, x, "float32", "float4_e2m1fn")).tolist() == \
        [True, True, True, True, False, False, False]
    assert _impl_mask(specs[op], _case(op, [7, 6, -6, -7], "int8", "float4_e2m1fn")).tolist() \
        == [True, False, False, True]


def test_castlike_round_mode_is_open_where_its_function_body_differs(specs):
    """CastLike's schema has round_mode; its function body drops it (so: up)."""
    case = _case("onnx_cast_like", [3.0, 4.0, 2.5], "float32", E8M0, {"round_mode": "down"})
    assert _impl_mask(specs["onnx_cast_like"], case).tolist() == [True, False, True]
    case = _case("onnx_cast", [3.0, 4.0, 2.5], "float32", E8M0, {"round_mode": "down"})
    assert _impl_mask(specs["onnx_cast"], case).tolist() == [False, False, False]


@pytest.mark.parametrize("label, opsets", [
    ("float32->float4_e2m1fn", (23, 24, 25)), ("float4_e2m1fn->float32", (23, 24, 25)),
    ("float32->float8_e8m0fnu", (24, 25)), ("float8_e8m0fnu->float16", (24, 25)),
    ("int8->int2", (25,)), ("uint2->float32", (25,))])
def test_the_new_types_are_drawn_at_the_opsets_whose_schema_has_them(specs, label, opsets):
    for op in ("onnx_cast", "onnx_cast_like"):
        allowed = tuple(v for v in range(21, 27) if schema_allows(specs[op], label, v))
        assert allowed == opsets + (26,), (op, label)


def test_quantize_labels_follow_their_schemas(specs):
    quantize, dequantize = specs["onnx_quantize_linear"], specs["onnx_dequantize_linear"]
    assert [v for v in (21, 23, 25) if schema_allows(dequantize, "float4_e2m1fn->float32", v)] \
        == [23, 25]
    assert [v for v in (21, 23, 25) if schema_allows(dequantize, "int2->float32", v)] == [25]
    for label in ("float32->float4_e2m1fn", "float32->int2", "float16->uint2"):
        assert label in dtype_labels(quantize)


def _quantized_by_half(specs, x, target):
    """The expectation of QuantizeLinear of float32 ``x`` with y_scale 0.5, no zero point."""
    case = Case(id="q.t.0", op="onnx_quantize_linear", dtype=f"float32->{target}",
                input_dtypes=("float32", "float32"), out_dtype=target,
                inputs=[x, np.float32(0.5)], plan="normal", seed=0,
                attrs={"new_dtype": target, "output_dtype": target,
                       "absent_inputs": ["y_zero_point"]})
    return expect(specs["onnx_quantize_linear"], case)


def test_quantize_into_two_bits_and_float4_by_the_text(specs):
    x = np.float32([-5.0, -2.5, 0.5, 1.5, 2.5, 9.0])
    zero = np.zeros((), np_dtype("int2"))
    (y,) = evaluate("onnx_quantize_linear", [x, np.float32(1.0), zero], {"new_dtype": "int2"})
    assert np.asarray(y).tolist() == [-2, -2, 0, 1, 1, 1]   # round half even, saturate [-2, 1]
    (answer,) = _quantized_by_half(specs, x, "float4_e2m1fn")
    # x / 0.5: -10 (beyond 6: open), -5, 1, 3, 5 (tie of 4 and 6: even 4), 18 (open)
    assert answer.impl_mask.tolist() == [True, False, False, False, False, True]
    assert np.asarray(answer.expected, np.float64)[1:5].tolist() == [-4.0, 1.0, 3.0, 4.0]


FLOAT6 = ("float6_e2m3fn", "float6_e3m2fn")


@pytest.mark.parametrize("target, largest", zip(FLOAT6, (7.5, 28.0)))
def test_nan_infinities_and_out_of_range_into_float6_are_open(specs, target, largest):
    """Cast-28: no table names the 6-bit floats, which have neither infinity nor NaN; in range
    the value rounded to nearest even (a tie just below the top stays finite)."""
    x = [NAN, INF, -INF, largest * 1.1, -largest, largest * 0.99, 0.3]
    mask = _impl_mask(specs["onnx_cast"], _case("onnx_cast", x, "float32", target))
    assert mask.tolist() == [True, True, True, True, False, False, False]


def test_the_float6_types_are_drawn_at_opset_28_only_and_their_models_are_valid(
        specs, monkeypatch):
    import onnx

    from conform.harness.backends.onnx_models import build_model

    monkeypatch.setenv("CONFORM_ONNX_OPSET", "28")
    for op, label in (("onnx_cast", "float6_e3m2fn->bfloat16"),
                      ("onnx_quantize_linear", "float16->float6_e3m2fn"),
                      ("onnx_dequantize_linear", "float6_e2m3fn->float32"),
                      ("onnx_optional_get_element", "float6_e3m2fn")):
        assert [v for v in (21, 26, 28) if schema_allows(specs[op], label, v)] == [28]
        for case in generate_cases(specs[op], label, count=1, seed=2):
            onnx.checker.check_model(build_model(specs[op], case), full_check=True)


def test_quantize_into_float6_by_the_text_and_onnx_reference_agrees_in_range(specs):
    """x / 0.5 into float6e3m2 (3 significand bits): -11 (1.011b * 8, a tie of 10 and 12)
    rounds to the even -12, 3.25 (a tie of 3 and 3.5) to 3, 1.2 to 1.25; 36 (past 28) is open."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    x = np.float32([-5.5, 1.625, 0.6, 18.0])
    (answer,) = _quantized_by_half(specs, x, "float6_e3m2fn")
    assert answer.impl_mask.tolist() == [False, False, False, True]
    expected = np.asarray(answer.expected, np.float64)
    assert expected[:3].tolist() == [-12.0, 3.0, 1.25]
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"],
                            output_dtype=TensorProto.FLOAT6E3M2)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        n, TensorProto.FLOAT, None) for n in "xs"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT6E3M2, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])
    (ref,) = ReferenceEvaluator(model).run(None, {"x": x, "s": np.float32(0.5)})
    assert np.asarray(ref, np.float64)[:3].tolist() == expected[:3].tolist()


@pytest.fixture()
def onnxruntime_at_25(monkeypatch):
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    monkeypatch.setenv("CONFORM_ONNX_OPSET", "25")
    return OnnxRuntimeBackend()


def _verdicts(backend, spec, label, count=6):
    verdicts = []
    for case in generate_cases(spec, label, count=count, seed=5):
        try:
            verdicts.append(judge_outputs(spec, case, run_case(backend, spec, case)).verdict)
        except Unsupported:
            verdicts.append("unsupported")
    return verdicts


@pytest.mark.parametrize("label", ["int2->int8", "uint2->float32", "int32->int2",
                                   "int16->uint2", "float8_e8m0fnu->float32",
                                   "float16->float8_e8m0fnu"])
def test_onnxruntime_casts_the_new_types_at_opset_25(specs, onnxruntime_at_25, label):
    """Every case judged: 2-bit integers packed four to a byte and E8M0 by its bits cross both
    ways; no error, no failure (saturate on a non-float 8 target is left out: onnxruntime
    refuses it, which its own cases show)."""
    spec = specs["onnx_cast"]
    for case in generate_cases(spec, label, count=6, seed=5):
        if "saturate" in case.attrs and "e8m0" not in label:
            continue
        judged = judge_outputs(spec, case, run_case(onnxruntime_at_25, spec, case))
        assert judged.verdict in ("pass", "impl_defined"), (case.id, judged.message)


def test_onnxruntime_has_no_float4_cast_kernel_which_is_unsupported(specs, onnxruntime_at_25):
    assert set(_verdicts(onnxruntime_at_25, specs["onnx_cast"], "float32->float4_e2m1fn", 3)) \
        == {"unsupported"}


def test_the_judge_fails_an_injected_wrong_conversion(specs, onnxruntime_at_25):
    """onnxruntime's right answers pass; the same answers rounded down instead of up into E8M0,
    or uint2 read as int2 (a missed zero extension), fail."""
    spec = specs["onnx_cast"]
    case = _case("onnx_cast", [3.0, 5.0, 0.75, 64.0], "float32", E8M0)
    right = run_case(onnxruntime_at_25, spec, case)
    assert judge_outputs(spec, case, right).verdict == "pass"
    (wrong,) = evaluate("onnx_cast", [case.inputs[0]], {"new_dtype": E8M0, "round_mode": "down"})
    judged = judge_outputs(spec, case, [np.asarray(wrong).astype(np_dtype(E8M0))])
    assert judged.verdict == "fail" and judged.mismatched == 3
    case = _case("onnx_cast", [0, 1, 2, 3], "uint2", "int8")
    right = run_case(onnxruntime_at_25, spec, case)
    assert right[0].tolist() == [0, 1, 2, 3] and judge_outputs(spec, case, right).verdict == "pass"
    wrong = [np.int8([0, 1, -2, -1])]
    judged = judge_outputs(spec, case, wrong)
    assert judged.verdict == "fail" and judged.mismatched == 2


def test_onnxruntime_rounds_float64_into_e8m0_through_float32(specs, onnxruntime_at_25):
    """A real deviation: just above 2**-127 rounds up (the default) to 2**-126, but onnxruntime
    gives 2**-127 (the value rounded to float32 first, where it becomes 2**-127 exactly)."""
    spec = specs["onnx_cast"]
    case = _case("onnx_cast", [2.0 ** -127 * (1 + 2.0 ** -40), 3.0], "float64", E8M0)
    judged = judge_outputs(spec, case, run_case(onnxruntime_at_25, spec, case))
    assert judged.verdict == "fail" and judged.worst["expected"] == 2.0 ** -126
    assert judged.worst["actual"] == 2.0 ** -127


def test_onnxruntime_casts_the_smallest_e8m0_to_false(specs, onnxruntime_at_25):
    """A real deviation: 2**-127 (code 0x00) is not 0, so Cast to bool gives True ("all else
    to True"); onnxruntime gives False, reading the zero code as zero."""
    spec = specs["onnx_cast"]
    x = np.array([0, 1, 127, 254], np.uint8).view(np_dtype(E8M0))
    case = _case("onnx_cast", x, E8M0, "bool")
    judged = judge_outputs(spec, case, run_case(onnxruntime_at_25, spec, case))
    assert judged.verdict == "fail" and judged.mismatched == 1 and judged.worst["index"] == [0]


@pytest.mark.parametrize("op, label", [("onnx_quantize_linear", "float32->int8"),
                                       ("onnx_dequantize_linear", "uint8->float16")])
def test_e8m0_scales_are_drawn_from_opset_24_and_numpy_passes(specs, monkeypatch, op, label):
    """T2 (the scale) adds float8e8m0 at opset 24: never drawn below (the draws of opset 21
    unchanged), at times from 24, with QuantizeLinear's precision set (E8M0 cannot be the
    division's precision) and DequantizeLinear's output_dtype set (T3 has no E8M0); the models
    valid; numpy passes; the scale read one binade off fails."""
    import onnx

    from conform.harness.backends.numpy_backend import NumpyBackend
    from conform.harness.backends.onnx_models import build_model

    spec = specs[op]
    assert all(E8M0 not in case.input_dtypes for case in generate_cases(spec, label, count=8,
                                                                        seed=4))
    monkeypatch.setenv("CONFORM_ONNX_OPSET", "24")
    cases = [case for case in generate_cases(spec, label, count=12, seed=4)
             if case.input_dtypes[1] == E8M0]
    assert cases
    for case in cases[:3]:
        assert ("precision" if op == "onnx_quantize_linear" else "output_dtype") in case.attrs
        onnx.checker.check_model(build_model(spec, case), full_check=True)
        outputs = run_case(NumpyBackend(), spec, case)
        assert judge_outputs(spec, case, outputs).verdict in ("pass", "impl_defined"), case.id
    failed = 0
    for case in cases:
        inputs = list(case.inputs)
        inputs[1] = (inputs[1].astype(np.float32) * 2).astype(inputs[1].dtype)
        wrong = run_case(NumpyBackend(), spec, dataclasses.replace(case, inputs=inputs))
        failed += judge_outputs(spec, case, wrong).verdict == "fail"
    assert failed >= len(cases) // 2
