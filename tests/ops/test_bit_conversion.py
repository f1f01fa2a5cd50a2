"""XLA ReducePrecision, BitcastConvertType, ONNX BitCast (conform/ops/bit_conversion.py), Rev and Iota
(conform/ops/movement.py): the XLA text's examples and rules, the underflow region, and the
judge catching injected bugs through the real jax backend."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conform.generators._case import Case
from conform.oracles import evaluate
from conform.oracles.expectations import expect


def _run(op, x, **attrs):
    (out,) = evaluate(op, [np.asarray(x)], attrs)
    return out


# --- ReducePrecision ---------------------------------------------------------------------------

def test_reduce_precision_rounds_ties_to_even():
    x = np.float32([1.5, 2.5, 3.5, -2.5, 1.25, 1.75, 1.375])
    assert _run("reduce_precision", x, exponent_bits=8, mantissa_bits=0).tolist() == \
        [2, 2, 4, -2, 1, 2, 1]
    # two significant bits: 2.5 (10.1b) lies between 2 (10b) and 3 (11b), 3.5 between 3 and 4
    assert _run("reduce_precision", x, exponent_bits=8, mantissa_bits=1).tolist() == \
        [1.5, 2, 4, -2, 1, 2, 1.5]


def test_reduce_precision_to_float16_overflows_as_ieee_does():
    """exponent_bits 5, mantissa_bits 10 is IEEE binary16: 65519 rounds to 65504, 65520 (the
    midpoint to 2**16) rounds up and overflows to inf."""
    x = np.float32([65504, 65519, 65520, -70000, 1.0009765625, 1.00048828125])
    out = _run("reduce_precision", x, exponent_bits=5, mantissa_bits=10)
    assert out.tolist() == [65504, 65504, math.inf, -math.inf, 1.0009765625, 1.0]


def test_reduce_precision_keeps_nan_infinities_and_signed_zero():
    x = np.float32([np.nan, np.inf, -np.inf, -0.0])
    out = _run("reduce_precision", x, exponent_bits=2, mantissa_bits=1)
    assert np.isnan(out[0]) and out[1:3].tolist() == [math.inf, -math.inf]
    assert out[3] == 0 and math.copysign(1, out[3]) == -1


def test_widths_at_or_above_the_types_own_are_no_ops():
    x = np.float32([1.0000001, 3e38, 1e-30])
    assert _run("reduce_precision", x, exponent_bits=9, mantissa_bits=25).tolist() == x.tolist()
    assert _run("reduce_precision", x, exponent_bits=8, mantissa_bits=23).tolist() == x.tolist()


def test_values_below_the_narrow_normal_range_are_a_region(specs):
    x = np.float32([1e-5, 6.2e-5, 1.0, 0.0, 1e-40])
    case = Case(id="reduce_precision.float32.0", op="reduce_precision", dtype="float32",
                input_dtypes=("float32",), out_dtype="float32", inputs=[x],
                attrs={"exponent_bits": 5, "mantissa_bits": 10}, plan="normal", seed=0)
    (answer,) = expect(specs["reduce_precision"], case)
    # float16's smallest normal is 2**-14 ~ 6.10e-5; 1e-40 is below float32's own
    assert answer.impl_mask.tolist() == [True, False, False, False, True]


def test_a_tie_without_fraction_bits_is_a_region(specs):
    """mantissa_bits 0: 3 is halfway between 2 and 4, whose significands are both the one digit
    1, so 'to nearest even' does not choose (XLA gives 2, the oracle 4); 2.5 and 3.5 are no
    ties, and with one fraction bit 3 is held exactly."""
    x = np.float32([3.0, -6.0, 2.5, 3.5, 4.0, np.inf])
    opened = []
    for mantissa_bits in (0, 1):
        case = Case(id="reduce_precision.float32.0", op="reduce_precision", dtype="float32",
                    input_dtypes=("float32",), out_dtype="float32", inputs=[x],
                    attrs={"exponent_bits": 8, "mantissa_bits": mantissa_bits}, plan="normal",
                    seed=0)
        (answer,) = expect(specs["reduce_precision"], case)
        opened.append(None if answer.impl_mask is None else answer.impl_mask.tolist())
    assert opened == [[True, True, False, False, False, False], None]


@pytest.mark.parametrize("dtype, values, exponent_bits, mantissa_bits, expected, open_elements", [
    # float4 (no infinity): e = its own 2 is an IEEE-style e2 format (largest 3) or its own (6)
    ("float4_e2m1fn", [1.5, 3.0, 4.0, -6.0], 2, 1, [1.5, 3.0, 4.0, -6.0],
     [False, False, True, True]),
    # (1.5, 3 and 6 are ties without fraction bits: open; 6 also rounds past 6)
    ("float4_e2m1fn", [1.5, 3.0, 4.0, -6.0], 3, 0, [2.0, 4.0, 4.0, -8.0],
     [True, True, False, True]),
    # e4m3fn gives its top exponent to numbers (448); e = 3 clamps 16 'to infinity', which it lacks
    ("float8_e4m3fn", [240.0, 256.0, 448.0, 15.0, 16.0], 4, 3, [240.0, 256.0, 448.0, 15.0, 16.0],
     [False, True, True, False, False]),
    ("float8_e4m3fn", [15.0, 16.0], 3, 3, [15.0, math.inf], [False, True]),
    # e5m2 holds infinities: its overflow is the text's, judged
    ("float8_e5m2", [224.0, 57344.0], 4, 2, [224.0, math.inf], [False, False]),
    # E8M0: all 8 bits are its exponent (no sign): e = 8 is a no-op, e = 3 clamps 16
    ("float8_e8m0fnu", [2.0 ** 100, 8.0, 16.0], 8, 0, [2.0 ** 100, 8.0, 16.0],
     [False, False, False]),
    ("float8_e8m0fnu", [8.0, 16.0], 3, 0, [8.0, math.inf], [False, True]),
])
def test_reduce_precision_in_the_narrow_floats(specs, dtype, values, exponent_bits,
                                               mantissa_bits, expected, open_elements):
    """Issue 36: the text clamps past the exponent_bits format 'to infinity': in a type without
    infinities that, and (exponent_bits at the type's own) which format's range applies, are
    open (ops/bit_conversion.py reduce_precision_without_infinity)."""
    from conform.dtypes import np_dtype
    x = np.array(values, np_dtype(dtype))
    attrs = {"exponent_bits": exponent_bits, "mantissa_bits": mantissa_bits}
    (out,) = evaluate("reduce_precision", [x], {**attrs, "dtypes": (dtype,)})
    assert out.tolist() == expected
    case = Case(id=f"reduce_precision.{dtype}.0", op="reduce_precision", dtype=dtype,
                input_dtypes=(dtype,), out_dtype=dtype, inputs=[x], attrs=attrs, plan="normal",
                seed=0)
    (answer,) = expect(specs["reduce_precision"], case)
    impl = np.zeros(len(values), bool) if answer.impl_mask is None else answer.impl_mask
    assert impl.tolist() == open_elements


# --- BitcastConvertType ------------------------------------------------------------------------

def test_bitcast_same_width_reads_the_bits():
    assert _run("bitcast_convert_type", np.float32([1.0, -2.0]), new_dtype="int32").tolist() == \
        [0x3F800000, -0x40000000]
    assert _run("bitcast_convert_type", np.int16([-1]), new_dtype="uint16").tolist() == [65535]
    assert _run("bitcast_convert_type", np.uint16([0x3C00]), new_dtype="float16").tolist() == [1.0]


def test_bitcast_the_texts_shape_examples():
    """f16[10,2] = bitcast-convert(f32[10]); f16[2] = bitcast-convert(f32[]); f32[10] =
    bitcast-convert(f16[10,2]) (pieces in the host's byte order: little-endian here)."""
    x = np.float32(np.arange(10) + 0.5)
    halves = _run("bitcast_convert_type", x, new_dtype="float16")
    assert halves.shape == (10, 2)
    assert _run("bitcast_convert_type", np.float32(1.0), new_dtype="float16").shape == (2,)
    back = _run("bitcast_convert_type", halves.astype(np.float16), new_dtype="float32")
    assert back.tolist() == x.tolist()
    assert _run("bitcast_convert_type", np.int32([0x01020304]), new_dtype="uint8").tolist() == \
        [[4, 3, 2, 1]]


def test_bitcast_keeps_the_bits_of_uint64_above_2_63():
    out = _run("bitcast_convert_type", np.array([2**64 - 1], np.uint64), new_dtype="int64")
    assert out.tolist() == [-1]


# --- Rev ----------------------------------------------------------------------------------------

def test_rev_reverses_each_given_dimension():
    x = np.arange(6).reshape(2, 3)
    assert _run("rev", x, dimensions=[1]).tolist() == [[2, 1, 0], [5, 4, 3]]
    assert _run("rev", x, dimensions=[0, 1]).tolist() == [[5, 4, 3], [2, 1, 0]]
    assert _run("rev", x, dimensions=[]).tolist() == x.tolist()


# --- injected bugs, through the real jax backend ------------------------------------------------

@pytest.mark.parametrize("backend, op, dtype", [
    ("ExtraMantissaBitBackend", "reduce_precision", "float32"),
    ("BigEndianBitcastBackend", "bitcast_convert_type", "int32->int8"),
    ("PartialRevBackend", "rev", "int32"),
])
def test_the_judge_catches_an_injected_bug(tmp_path, conform_cli, backend, op, dtype):
    out = tmp_path / "run"
    conform_cli("run", "--backend", f"tests.harness.injected_jax_backend:{backend}", "--ops", op,
                "--dtypes", dtype, "--max-examples", "16", "--out", out, "--quiet")
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert any(r["verdict"] == "fail" for r in records), "the judge let the bug pass"
    assert not [r for r in records if r["verdict"] in ("error", "crash")]


def test_bitcast_of_the_8_bit_floats_reads_their_bytes(specs):
    """0x80 is -0 in E4M3FN and NaN in E4M3FNUZ, 0x7E 448 and 0x7F NaN in E4M3FN, 0x7F 1 in
    E8M0; two bytes make a uint16
    (little-endian); each 8-bit float pairs with uint8 and uint16 only."""
    from conform.dtypes import np_dtype
    from conform.generators import dtype_labels
    byte = np.uint8([0x80, 0x7E, 0x7F])
    e4m3fn = _run("bitcast_convert_type", byte, new_dtype="float8_e4m3fn", dtypes=("uint8",))
    assert e4m3fn[0] == 0 and np.signbit(e4m3fn[0]) and e4m3fn[1] == 448 and np.isnan(e4m3fn[2])
    assert np.isnan(_run("bitcast_convert_type", byte, new_dtype="float8_e4m3fnuz",
                         dtypes=("uint8",))[0])
    assert _run("bitcast_convert_type", byte, new_dtype="float8_e8m0fnu", dtypes=("uint8",))[2] == 1
    pair = byte[:2].view(np_dtype("float8_e5m2"))
    assert _run("bitcast_convert_type", pair, new_dtype="uint16",
                dtypes=("float8_e5m2",)).tolist() == 0x7E80
    labels = [lb for lb in dtype_labels(specs["bitcast_convert_type"]) if "float8_e5m2fnuz" in lb]
    assert labels == ["float8_e5m2fnuz->uint8", "uint8->float8_e5m2fnuz", "float8_e5m2fnuz->uint16"]


# --- Iota (no operand) --------------------------------------------------------------------------

def test_iota_the_texts_examples():
    """Iota(s32[4, 8], 0) and Iota(s32[4, 8], 1)."""
    (down,) = evaluate("iota", [], {"shape": [4, 8], "dimension": 0, "dtype": "int32"})
    (across,) = evaluate("iota", [], {"shape": [4, 8], "dimension": 1, "dtype": "int32"})
    assert down.tolist() == [[i] * 8 for i in range(4)]
    assert across.tolist() == [list(range(8))] * 4


def test_iota_of_complex_and_float4_converts_the_count(specs):
    """Complex: the count with imaginary part +0; float4_e2m1fn: each count rounded once (5 to 4,
    the tie to even), 7 (past 6, no infinity) left open: a 5 rounded up to 6 fails."""
    import ml_dtypes
    from conform.harness.judge.judging import judge_outputs
    (z,) = evaluate("iota", [], {"shape": [3], "dimension": 0, "dtype": "complex64"})
    assert z.dtype == np.complex128 and z.tolist() == [0j, 1 + 0j, 2 + 0j]
    attrs = {"shape": [8], "dimension": 0, "dtype": "float4_e2m1fn"}
    case = Case(id="iota.float4_e2m1fn.0", op="iota", dtype="float4_e2m1fn", input_dtypes=(),
                out_dtype="float4_e2m1fn", inputs=[], attrs=attrs, plan="normal", seed=1)
    right = np.array([0, 1, 2, 3, 4, 4, 6, 6], dtype=ml_dtypes.float4_e2m1fn)
    judged = judge_outputs(specs["iota"], case, [right])
    assert judged.verdict == "pass" and judged.impl_defined == 1   # 7: open, the rest judged
    wrong = right.copy()
    wrong[5] = 6
    assert judge_outputs(specs["iota"], case, [wrong]).verdict == "fail"


def test_iota_runs_on_jax_with_no_operand(tmp_path, conform_cli):
    out = tmp_path / "run"
    conform_cli("run", "--backend", "jax", "--ops", "iota", "--dtypes", "bfloat16,uint8",
                "--max-examples", "8", "--out", out, "--quiet", check_status=0)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 16 and all(r["verdict"] == "pass" for r in records)
    assert all(r["shapes"] == [] for r in records)


# --- ONNX BitCast -------------------------------------------------------------------------------

def _bitcast(x, src, to):
    from conform.dtypes import np_dtype

    (out,) = evaluate("onnx_bitcast", [np.asarray(x).astype(np_dtype(src))], {"to": to})
    return out


def test_onnx_bitcast_reproduces_the_node_test_cases():
    from tests.ops.onnx_node_cases import node_cases

    cases = node_cases("bitcast")
    assert len(cases) == 10
    for name, _, (x,), (want,) in cases:
        got = _bitcast(x, str(x.dtype), str(want.dtype))
        assert got.shape == want.shape and np.array_equal(got.astype(want.dtype), want), name


def test_onnx_bitcast_pairs_one_width_and_reads_each_elements_bits():
    """Pairs of one width only (bool a byte); -0.0 is float32 0x80000000; int4 -1 is 0xF, the
    float4 -6; float8 e4m3fn 0x7F (NaN) as uint8 127; the shape kept, 0-d included."""
    from conform.spec import load_specs

    labels = load_specs()["onnx_bitcast"].definition.dtype_labels(load_specs()["onnx_bitcast"])
    assert "float32->int32" in labels and "bool->uint8" in labels and "int4->float4_e2m1fn" in labels
    assert "float16->int32" not in labels and "int8->int16" not in labels and "int2->int4" not in labels
    assert _bitcast(np.float32(-0.0), "float32", "uint32").item() == 0x80000000
    assert _bitcast(np.array([-1, 7]), "int4", "float4_e2m1fn").tolist() == [-6.0, 6.0]
    assert _bitcast(np.array([np.nan]), "float8_e4m3fn", "uint8").tolist() == [127]
    assert _bitcast(np.array([2 ** 64 - 1], np.uint64), "uint64", "int64").tolist() == [-1]


def test_onnx_bitcast_runs_on_onnxruntime_at_opset_26_and_a_wrong_target_fails(specs,
                                                                             monkeypatch):
    """onnxruntime 1.32 runs BitCast at opset 26 (at the default 21 the standard rules it out:
    unsupported); the bits read as uint32 where int32 is asked fail (-0.0: 2**31, not -2**31)."""
    from conform.harness.judge.judging import judge_outputs
    from tests.ops.ort_graphs import run_mutated

    monkeypatch.setenv("CONFORM_ONNX_OPSET", "26")
    spec = specs["onnx_bitcast"]
    x = np.float32([1.0, -0.0, np.inf, 3.5])
    case = Case(id="onnx_bitcast.float32->int32.0", op="onnx_bitcast", dtype="float32->int32",
                input_dtypes=("float32",), out_dtype="int32", inputs=[x], attrs={"to": "int32"},
                plan="normal", seed=0)
    assert judge_outputs(spec, case, run_mutated(spec, case)).verdict == "pass"
    as_unsigned = Case(**{**case.__dict__, "attrs": {"to": "uint32"}, "out_dtype": "uint32"})
    unsigned = run_mutated(spec, as_unsigned)
    assert unsigned[0].dtype == np.uint32
    assert judge_outputs(spec, case, unsigned).verdict == "fail"


def test_onnx_bitcast_complex64_is_its_real_part_below_its_imaginary_part():
    """TensorProto: complex64 'two consecutive FLOAT values, real component first', little
    endian: 1 + 2j is 0x40000000_3F800000; back again, and onnx.reference agrees; complex128,
    alone at 128 bits, casts to itself only."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    from conform.spec import load_specs

    spec = load_specs()["onnx_bitcast"]
    labels = spec.definition.dtype_labels(spec)
    assert "complex64->int64" in labels and "complex128->complex128" in labels
    assert "complex64->complex64" not in labels and "complex64->int32" not in labels
    x = np.complex64([1 + 2j, -0.0 - 1.5j])
    bits = _bitcast(x, "complex64", "uint64")
    assert bits.tolist() == [0x400000003F800000, 0xBFC0000080000000]
    back = _bitcast(bits.astype(np.uint64), "uint64", "complex64")
    assert back.tolist() == x.tolist() and np.signbit(back.real).tolist() == [False, True]
    node = helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.UINT64)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.COMPLEX64, None)], [helper.make_tensor_value_info(
            "y", TensorProto.UINT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26)])
    (ref,) = ReferenceEvaluator(model).run(None, {"x": x})
    assert ref.tolist() == bits.tolist()
    same = np.complex128([np.nan + 1j, 2 - 0.0j])
    assert np.array_equal(_bitcast(same, "complex128", "complex128"), same, equal_nan=True)
