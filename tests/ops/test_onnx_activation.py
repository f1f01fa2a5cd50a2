"""ONNX Celu, Selu, Gelu, Mish, Swish and SwiGLU (ops/onnx_activation.py): the oracles on the
operator texts' formulas and against mpmath, the onnx package's node cases judged under the
specs at their own opsets, the types each schema allows, the derived bounds admitting the texts'
formulas evaluated in T and refusing a narrower evaluation, onnx.reference as a second opinion,
and wrong attributes injected into onnxruntime's models caught by the judge."""
from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import helper

from conform.oracles._registry import evaluate, evaluate_refined
from tests.ops.onnx_schema_checks import (OPS, case_of, node_case_verdicts, schema_types, texts,
                                          verdict)
from tests.ops.ort_graphs import run_graph, run_mutated

SELU = {"alpha": 1.6732631921768188, "gamma": 1.0507010221481323}   # the float32 defaults


def one(op, inputs, **attrs):
    (out,) = evaluate(op, [np.asarray(x) for x in inputs], attrs)
    return out


# -- the operator texts -----------------------------------------------------------------------

def test_the_texts_formulas_at_worked_points():
    assert one("onnx_celu", [[-1.0, 3.0]], alpha=2.0).tolist() == [2 * math.expm1(-0.5), 3.0]
    selu = one("onnx_selu", [[-1.0, 2.0]], **SELU)
    assert selu[0] == pytest.approx(SELU["gamma"] * (SELU["alpha"] * math.exp(-1) - SELU["alpha"]),
                                    rel=1e-15)
    assert selu[1] == pytest.approx(2 * SELU["gamma"], rel=1e-15)
    assert one("onnx_gelu", [1.0], approximate="none") == pytest.approx(
        0.5 * (1 + math.erf(1 / math.sqrt(2))), rel=1e-15)
    assert one("onnx_gelu", [1.0], approximate="tanh") == pytest.approx(
        0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * (1 + 0.044715))), rel=1e-15)
    assert one("onnx_mish", [1.0]) == pytest.approx(math.tanh(math.log1p(math.e)), rel=1e-15)
    assert one("onnx_swish", [2.0], alpha=0.5) == pytest.approx(2 / (1 + math.exp(-1)), rel=1e-15)
    assert one("onnx_swiglu", [[1.0], [3.0]], alpha=1.0)[0] == pytest.approx(
        3 / (1 + math.exp(-1)), rel=1e-15)


def test_float_attributes_are_read_as_the_node_stores_them():
    """alpha = 1.3 is the float32 1.2999999523162842 in the node."""
    a = float(np.float32(1.3))
    assert one("onnx_celu", [-1.0], alpha=1.3) == pytest.approx(a * math.expm1(-1 / a), rel=1e-15)


def test_where_the_formulas_are_minus_inf_times_zero_the_oracles_mark_the_element_open():
    for op, attrs in [("onnx_gelu", {"approximate": "none"}), ("onnx_gelu", {"approximate": "tanh"}),
                      ("onnx_mish", {}), ("onnx_swish", {"alpha": 1.0})]:
        x = np.array([-np.inf, -1.0, np.inf])
        (mask,) = evaluate(op, [x], {**attrs, "open_elements": True})
        assert mask.tolist() == [True, False, False], op
        y = one(op, [x], **attrs)
        assert math.copysign(1, y[0]) < 0 and y[0] == 0 and y[2] == np.inf, op


def test_celu_and_selu_keep_their_limits_at_minus_inf():
    assert one("onnx_celu", [-np.inf], alpha=2.0) == -2.0
    assert one("onnx_selu", [-np.inf], **SELU) == pytest.approx(-SELU["gamma"] * SELU["alpha"])


def test_float64_references_agree_with_mpmath():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    gelu = {x: 0.5 * mpmath.mpf(x) * mpmath.erfc(-mpmath.mpf(x) / mpmath.sqrt(2))
            for x in (-7.25, -1e-3, 2.5)}
    mish = {x: mpmath.mpf(x) * mpmath.tanh(mpmath.log1p(mpmath.exp(x))) for x in (-30.0, 0.75)}
    celu = {x: 1.5 * mpmath.expm1(mpmath.mpf(x) / 1.5) for x in (-1e-9, -3.0)}
    for op, table, attrs in [("onnx_gelu", gelu, {"approximate": "none"}),
                             ("onnx_mish", mish, {}), ("onnx_celu", celu, {"alpha": 1.5})]:
        x = np.array(list(table), np.float64)
        (y,), (residual,) = evaluate_refined(op, [x], attrs)
        for hi, lo, want in zip(y, residual, table.values()):
            assert abs((mpmath.mpf(hi) + lo - want) / want) < 2.0 ** -100, op


def test_onnx_reference_agrees_in_float64():
    """onnx.reference's Gelu is left out: it computes in float32 (1 + erf cancels to 0 at -6)."""
    from onnx.reference import ReferenceEvaluator

    x = np.linspace(-6, 6, 49)
    for op_type, attrs in [("Celu", {"alpha": 2.0}), ("Selu", {}), ("Mish", {})]:
        node = helper.make_node(op_type, ["x"], ["y"], **attrs)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 11, None)],
                                  [helper.make_tensor_value_info("y", 11, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
        (theirs,) = ReferenceEvaluator(model).run(None, {"x": x})
        ours = one(OPS[op_type][0], [x], **(SELU if op_type == "Selu" else attrs))
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-300, err_msg=op_type)


# -- every op of the three modules: the onnx package's node cases and the schemas ---------------

@pytest.mark.parametrize("op_type", sorted(OPS))
def test_the_onnx_node_cases_pass_under_the_spec_at_their_opset(specs, op_type):
    """Celu, Selu, ..., Sum, Mean (tests/ops/onnx_schema_checks.py, OPS): every case of the op's
    node test module, expected outputs judged as a backend's answer would be."""
    op, module = OPS[op_type]
    found = node_case_verdicts(specs, module, op)
    assert found, op_type
    assert [f for f in found if f[2] != "pass"] == []


@pytest.mark.parametrize("op_type", sorted(OPS))
def test_one_text_holds_over_the_opsets_a_binding_claims(specs, op_type):
    """The oracle follows one text: the schema versions a binding claims share it (and their
    attributes); the version before the range has another text or does not exist."""
    low, high = specs[OPS[op_type][0]].bindings["onnx"]["opsets"]
    assert len(texts(op_type, low, high)) == 1
    assert texts(op_type, low - 1, low - 1) != texts(op_type, low, low) or low == 1


@pytest.mark.parametrize("op_type", sorted(OPS))
def test_the_spec_draws_every_type_the_bound_schemas_allow(specs, op_type):
    spec = specs[OPS[op_type][0]]
    low, high = spec.bindings["onnx"]["opsets"]
    assert set(spec.dtypes) == schema_types(op_type, low, high)


# -- the derived bounds -----------------------------------------------------------------------

def test_the_texts_formulas_evaluated_in_t_pass_where_they_cancel(specs):
    """Celu and Selu as written (exp(t) - 1 near 0: tens of ULPs of the result) and Mish's
    ln(1 + e^x) for x << 0 (0 for a tiny nonzero result) in float16 and float32."""
    x16 = np.array([-1e-3, -0.01, -0.3, -4.0, 2.0, -12.0], np.float16)
    a = np.float16(1.3)
    celu = np.maximum(np.float16(0), x16) + np.minimum(np.float16(0), a * (np.exp(x16 / a) - 1))
    assert verdict(specs["onnx_celu"], [x16], {"alpha": 1.3}, [celu]) == "pass"
    x32 = np.array([-1e-6, -1e-3, -0.5, -9.0, 3.0], np.float32)
    g, al = np.float32(SELU["gamma"]), np.float32(SELU["alpha"])
    selu = np.where(x32 < 0, g * (al * np.exp(x32) - al), g * x32)
    assert verdict(specs["onnx_selu"], [x32], SELU, [selu]) == "pass"
    x = np.array([-30.0, -20.0, -1.0, 5.0], np.float32)
    mish = x * np.tanh(np.log(np.float32(1) + np.exp(x)))
    assert mish[0] == 0 and verdict(specs["onnx_mish"], [x], {}, [mish]) == "pass"


def test_a_narrower_evaluation_fails(specs):
    """Gelu and Swish of float32 inputs evaluated in float16 and widened back."""
    x = np.linspace(-3, 3, 16).astype(np.float32)
    narrow = one("onnx_gelu", [x.astype(np.float64)], approximate="none").astype(np.float16)
    assert verdict(specs["onnx_gelu"], [x], {"approximate": "none"},
                   [narrow.astype(np.float32)]) == "fail"
    swish = one("onnx_swish", [x.astype(np.float64)], alpha=1.0).astype(np.float16)
    assert verdict(specs["onnx_swish"], [x], {"alpha": 1.0}, [swish.astype(np.float32)]) == "fail"


def test_gelu_tanh_in_float64_admits_the_function_bodys_float32_constants_only(specs):
    """Gelu-20's function body casts the float32 constants 0.63661975 (2/pi) and 0.044715 to
    T: a float64 result follows them (onnxruntime's does), and errs by ~1e-8 relative; an
    evaluation wholly in float32 errs by ~1e-7 and fails."""
    x = np.linspace(-4, 4, 33)
    c1, c2 = math.sqrt(float(np.float32(0.63661975))), float(np.float32(0.044715))
    body = 0.5 * x * (1 + np.tanh(c1 * (x + c2 * x ** 3)))
    attrs = {"approximate": "tanh"}
    assert verdict(specs["onnx_gelu"], [x], attrs, [body]) == "pass"
    f = np.float32
    x32 = x.astype(f)
    narrow = f(0.5) * x32 * (f(1) + np.tanh(f(c1) * (x32 + f(c2) * x32 * x32 * x32)))
    assert verdict(specs["onnx_gelu"], [x], attrs, [narrow.astype(np.float64)]) == "fail"


def test_swiglu_where_swish_underflows_before_an_infinite_b_is_unbounded(specs):
    a, b = np.array([-1e-45, -1.0], np.float32), np.array([np.inf, 2.0], np.float32)
    case = case_of("onnx_swiglu", [a, b], {"alpha": 1.0})
    from conform.harness.judge.judging import judge_outputs

    nan_first = np.array([np.nan, one("onnx_swiglu", [a, b], alpha=1.0)[1]], np.float32)
    judged = judge_outputs(specs["onnx_swiglu"], case, [nan_first])
    assert (judged.verdict, judged.impl_defined, judged.checked) == ("pass", 1, 1)


# -- onnxruntime ------------------------------------------------------------------------------

def test_onnxruntime_gelu_tanh_for_none_fails_and_none_passes(specs):
    x = np.linspace(-4, 4, 33).astype(np.float32)

    def gelu(approximate):
        node = helper.make_node("Gelu", ["x"], ["y"], approximate=approximate)
        return run_graph([node], {"x": x}, {"y": (np.float32, x.shape)})

    assert verdict(specs["onnx_gelu"], [x], {"approximate": "none"}, gelu("none")) == "pass"
    assert verdict(specs["onnx_gelu"], [x], {"approximate": "none"}, gelu("tanh")) == "fail"


@pytest.mark.parametrize("op, attrs, bug", [
    ("onnx_selu", SELU, {"alpha": SELU["gamma"], "gamma": SELU["alpha"]}),
    ("onnx_celu", {"alpha": 2.0}, {"alpha": 1.9}),
])
def test_a_wrong_attribute_in_onnxruntimes_model_fails(specs, op, attrs, bug):
    x = np.linspace(-5, 5, 24).astype(np.float32).reshape(4, 6)
    case = case_of(op, [x], attrs)
    from conform.harness.judge.judging import judge_outputs

    assert judge_outputs(specs[op], case, run_mutated(specs[op], case)).verdict == "pass"
    assert judge_outputs(specs[op], case, run_mutated(specs[op], case, **bug)).verdict == "fail"
