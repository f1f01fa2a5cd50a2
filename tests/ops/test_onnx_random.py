"""ONNX's random operators (ops/onnx_random.py, ops/onnx_random_discrete.py): the laws read
from the texts, onnxruntime and numpy judged statistically, onnxruntime's inverted Bernoulli
pinned, and injected biases and range errors caught."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.harness.backends.models import run_case
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate

sys.path.insert(0, str(Path(__file__).parent))
from backend_runs import numpy_backend, onnxruntime  # noqa: E402,F401


def _cases(specs, name, dtype, count=2, seed=3):
    return specs[name], list(generate_cases(specs[name], dtype, count=count, seed=seed))


@pytest.mark.parametrize("name", ["onnx_random_uniform", "onnx_random_uniform_like",
                                  "onnx_random_normal", "onnx_random_normal_like",
                                  "onnx_multinomial", "onnx_dropout_training"])
def test_onnxruntime_passes(specs, onnxruntime, name):
    spec, cases = _cases(specs, name, "float32")
    for case in cases:
        judged = judge_outputs(spec, case, run_case(onnxruntime, spec, case))
        assert judged.verdict == "pass", (case.id, judged.reason)


@pytest.mark.parametrize("name", ["onnx_bernoulli", "onnx_random_uniform", "onnx_multinomial"])
def test_numpy_passes(specs, name):
    spec, cases = _cases(specs, name, "float64")
    for case in cases:
        judged = judge_outputs(spec, case, run_case(numpy_backend(), spec, case))
        assert judged.verdict == "pass", (case.id, judged.reason)


@pytest.mark.parametrize("name, label", [("onnx_bernoulli", "float32->uint16"),
                                         ("onnx_bernoulli", "float32->bool"),
                                         ("onnx_multinomial", "float32->int64"),
                                         ("onnx_random_uniform_like", "string")])
def test_each_output_or_input_type_has_its_label_and_passes_on_numpy(specs, name, label):
    """A label 'T1->T2' draws input T1 and output T2 (the dtype attribute; int32 Multinomial's
    default may be left out); a string input gives only its shape."""
    spec, cases = _cases(specs, name, label, count=1)
    for case in cases:
        assert case.input_dtypes[0] == label.split("->")[0]
        if "->" in label:
            assert case.out_dtype == case.attrs["dtype"] == label.split("->")[1]
        judged = judge_outputs(spec, case, run_case(numpy_backend(), spec, case))
        assert judged.verdict == "pass", (case.id, judged.reason)


def test_bernoulli_function_body_reads_greater_than_p():
    """The second reading, from the schema itself: the body computes Greater(uniform, p)."""
    import onnx
    import onnx.defs
    from onnx import TensorProto, helper

    body = onnx.FunctionProto()
    body.ParseFromString(onnx.defs.get_schema("Bernoulli").get_context_dependent_function(
        helper.make_node("Bernoulli", ["x"], ["y"]).SerializeToString(),
        [helper.make_tensor_type_proto(TensorProto.FLOAT, [3]).SerializeToString()]))
    greater = [n for n in body.node if n.op_type == "Greater"]
    assert len(greater) == 1 and greater[0].input[1] == body.input[0]
    assert next(n for n in body.node if n.output[0] == greater[0].input[0]).op_type == \
        "RandomUniformLike"


def test_onnxruntime_bernoulli_follows_the_function_body_not_the_doc(specs, onnxruntime):
    """onnxruntime 1.32 gives 1 with probability 1 - p (p = 0 gives all ones): the function
    body's reading, not the doc's 'an output of 1 is produced with probability p': recorded
    as impl_defined (region reading_differs)."""
    spec = specs["onnx_bernoulli"]
    case = dataclasses.replace(next(iter(generate_cases(spec, "float32", count=1, seed=1))),
                               expectation=None)
    p = np.zeros(65536, np.float32)
    p[::4] = 0.25
    case = dataclasses.replace(case, inputs=[p], attrs={"levels": [0.0, 0.25]},
                               out_dtype="float32")
    out = np.asarray(run_case(onnxruntime, spec, case)[0]).astype(np.float64)
    assert out[p == 0].min() == 1.0 and abs(out[p == 0.25].mean() - 0.75) < 0.02
    judged = judge_outputs(spec, case, [out.astype(np.float32)])
    assert judged.verdict == "impl_defined"
    assert judged.reason.startswith("fits the function body's reading (Greater(uniform, p): 1 "
                                    "with probability 1 - p), not the doc's reading")


def test_a_uniform_shifted_by_one_percent_of_its_range_is_caught(specs, onnxruntime):
    spec, cases = _cases(specs, "onnx_random_uniform", "float32")
    for case in cases:
        out = np.asarray(run_case(onnxruntime, spec, case)[0])
        low, high = case.attrs.get("low", 0.0), case.attrs.get("high", 1.0)
        shifted = (out.astype(np.float64) + 0.01 * (high - low)).astype(np.float32)
        judged = judge_outputs(spec, case, [shifted])
        assert judged.verdict == "fail" and "outside the support" in judged.reason


def test_a_bernoulli_off_by_two_hundredths_is_caught(specs):
    """numpy's Bernoulli run on p + 0.02, judged against p."""
    spec = specs["onnx_bernoulli"]
    for case in generate_cases(spec, "float64", count=6, seed=4):
        p = case.inputs[0].astype(np.float64)
        if not np.any((p > 0) & (p < 0.98)):
            continue
        biased = dataclasses.replace(case, inputs=[np.where((p > 0) & (p < 0.98), p + 0.02, p)],
                                     attrs={**case.attrs, "seed": 5.0}, expectation=None)
        judged = judge_outputs(spec, case, run_case(numpy_backend(), spec, biased))
        assert judged.verdict == "fail" and "binomial test per value and group" in judged.reason, \
            (case.id, case.attrs, judged.max_error, judged.reason)


def test_dropout_keeps_with_probability_one_minus_ratio_and_scales(specs):
    """The mask's law and the output given the mask, read from the text."""
    spec = specs["onnx_dropout_training"]
    data = np.float32([1.0, -2.0, 3.0, 4.0])
    law = spec.definition.distribution(
        [data.astype(np.float64), np.float64(0.25), np.asarray(True)], {},
        [np.float32([0, 0, 4, 0]), np.array([False, False, True, False])],
        out_dtypes=("float32", "bool"), dtypes=("float32", "float32", "bool"))
    assert law[0].expected.tolist() == [0.0, 0.0, 4.0, 0.0]
    assert law[1].groups[0][2].tolist() == [0.25, 0.75]
    outputs = evaluate("onnx_dropout_training", [data, np.float32(0.25), np.asarray(True)],
                       {"ratio_value": 0.25})
    assert [o.shape for o in outputs] == [(4,), (4,)]


def test_dropout_with_a_mask_of_the_wrong_rate_or_an_unscaled_output_fails(specs, onnxruntime):
    spec = specs["onnx_dropout_training"]
    for case in generate_cases(spec, "float32", count=4, seed=2):
        output, mask = run_case(onnxruntime, spec, case)
        ratio = case.attrs["ratio_value"]
        if ratio == 0.0:
            continue
        unscaled = np.where(mask, case.inputs[0], 0).astype(np.float32)
        assert judge_outputs(spec, case, [unscaled, mask]).verdict == "fail"
        flipped = np.where(mask, 0, case.inputs[0] / np.float32(1 - ratio)).astype(np.float32)
        assert judge_outputs(spec, case, [flipped, ~mask]).verdict == ("pass" if ratio == 0.5
                                                                         else "fail")


def test_dropout_22_draws_its_ratio_in_every_type_of_t1(specs, monkeypatch):
    """Dropout-22's T1 adds bfloat16 and the float 8 types: drawn from opset 22 only, the models
    valid; numpy passes with them, and an output scaled by the wrong ratio fails."""
    import onnx

    from conform.harness.backends.onnx_models import build_model

    spec = specs["onnx_dropout_training"]
    old = {"float16", "float32", "float64", "bool"}
    for seed in (5, 26):   # at opset 22 a float 8 ratio of 0.25 (its scale 4/3 rounded)
        assert {t for case in generate_cases(spec, "float32", count=4, seed=seed)
                for t in case.input_dtypes} <= old
    monkeypatch.setenv("CONFORM_ONNX_OPSET", "22")
    for seed, ratio_type in ((5, "float8_e5m2"), (26, "float8_e4m3fn")):
        (case, *_) = generate_cases(spec, "float32", count=4, seed=seed)
        assert case.input_dtypes[1] == ratio_type and case.attrs["ratio_value"] == 0.25
        onnx.checker.check_model(build_model(spec, case), full_check=True)
        output, mask = run_case(numpy_backend(), spec, case)
        assert judge_outputs(spec, case, [output, mask]).verdict == "pass", case.id
        wrong = (output * np.float32(1 - case.attrs["ratio_value"]) * 2).astype(np.float32)
        assert judge_outputs(spec, case, [wrong, mask]).verdict == "fail", case.id


def test_multinomial_reads_the_input_as_unnormalized_log_probabilities(specs):
    spec = specs["onnx_multinomial"]
    logits = np.array([[0.0, np.log(3.0), -np.inf]])
    (law,) = spec.definition.distribution([logits], {"sample_size": 8}, [np.zeros((1, 8))],
                                          out_dtypes=("int32",), dtypes=("float64",))
    assert np.allclose(law.groups[0][2], [0.25, 0.75, 0.0])


@pytest.mark.parametrize("name", ["onnx_random_uniform", "onnx_random_normal_like",
                                  "onnx_bernoulli", "onnx_dropout_training"])
def test_onnx_reference_is_a_second_opinion_on_the_laws(specs, name):
    """onnx.reference's evaluator (not the oracle) draws from the laws read here: it passes
    (Multinomial it does not implement)."""
    from onnx.reference import ReferenceEvaluator

    from conform.harness.backends.onnx_models import build_model, feeds

    spec, cases = _cases(specs, name, "float32", count=1)
    for case in cases:
        outputs = ReferenceEvaluator(build_model(spec, case)).run(None, feeds(case))
        judged = judge_outputs(spec, case, outputs)
        assert judged.verdict == "pass", (case.id, judged.reason)
