"""ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the oracles reproduce the onnx
package's node test cases and the texts' examples, every reduction, ignore_index (every target
ignored included) and weights; the regions hold what the texts leave open; onnxruntime passes
and injected bugs fail; onnxruntime's float64 SoftmaxCrossEntropyLoss deviation is pinned."""
from __future__ import annotations

import math

import numpy as np
import onnx
import pytest

from conform.generators._case import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from conform.oracles.expectations import expect
from tests.ops.backend_runs import assert_all_pass, judged, numpy_backend, onnxruntime  # noqa: F401
from tests.ops.onnx_node_cases import node_cases
from tests.ops.ort_graphs import run_mutated

NLL, SCE = "onnx_negative_log_likelihood_loss", "onnx_softmax_cross_entropy_loss"
# the texts' examples 2 and 3 (NegativeLogLikelihoodLoss)
X = np.array([[[1.0, 2.0], [2.0, 2.0], [3.0, 2.0]], [[0.0, 1.0], [2.0, 2.0], [1.0, 2.0]]])
TARGET = np.array([[2, 1], [0, 2]])
WEIGHT = np.array([0.2, 0.3, 0.1])


def _case(op, inputs, attrs, dtype="float32"):
    inputs = [np.asarray(x, dtype if k != 1 else np.int64) for k, x in enumerate(inputs)]
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype,
                input_dtypes=tuple(str(x.dtype) for x in inputs), out_dtype=dtype,
                inputs=inputs, attrs=attrs, plan="normal", seed=3)


def _node_attrs(op, node, inputs):
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
    attrs.setdefault("reduction", "mean")
    if op == SCE:
        attrs["request_log_prob"] = int(len(node.output) > 1)
    if len(inputs) < 3:
        attrs["absent_inputs"] = ["weight" if op == NLL else "weights"]
    return attrs


@pytest.mark.parametrize("op, module", [(NLL, "negativeloglikelihoodloss"),
                                        (SCE, "softmax_cross_entropy_loss")])
def test_the_onnx_node_test_cases_are_reproduced(specs, op, module):
    """Each example is judged against the oracle under the spec's model (its log_prob too);
    a mean with ignored samples lies in reading_differs, where the example takes the function
    body's reading (the oracle's, reading 0)."""
    seen = 0
    for name, node, inputs, outputs in node_cases(module):
        attrs = _node_attrs(op, node, inputs)
        dtype = str(inputs[0].dtype)
        case = Case(id=name, op=op, dtype=dtype, input_dtypes=tuple(str(x.dtype) for x in inputs),
                    out_dtype=dtype, inputs=list(inputs), attrs=attrs, plan="normal", seed=0)
        got = evaluate(op, inputs, attrs)
        judgement = judge_outputs(specs[op], case, list(outputs) + [y.astype(dtype) for y in got[len(outputs):]])
        assert judgement.verdict in ("pass", "impl_defined"), (name, judgement.worst)
        np.testing.assert_allclose(got[0], outputs[0], rtol=1e-5, err_msg=name)
        seen += 1
    assert seen >= 18


def test_the_texts_examples():
    """Example 1: -input at the target; example 2: weighted sum -1.1; example 3: weighted
    mean -1.57 (the sum over the applied weights 0.1 + 0.3 + 0.2 + 0.1)."""
    (loss,) = evaluate(NLL, [X, TARGET], {"reduction": "none", "absent_inputs": ["weight"]})
    assert loss.tolist() == [[-3.0, -2.0], [-0.0, -2.0]]
    (total,) = evaluate(NLL, [X, TARGET, WEIGHT], {"reduction": "sum"})
    assert total == pytest.approx(-1.1, rel=1e-15)
    (mean,) = evaluate(NLL, [X, TARGET, WEIGHT], {"reduction": "mean"})
    assert mean == pytest.approx(-1.1 / 0.7, rel=1e-15)


def test_ignored_samples_are_zero_and_the_mean_divides_by_the_kept_weights():
    """ignore_index 1: the second sample is 0; the mean divides by the kept samples' weights
    (reading 0) or, without weight, by every sample (reading 1, the doc's mean(loss))."""
    attrs = {"reduction": "none", "ignore_index": 1}
    (loss,) = evaluate(NLL, [X, TARGET, WEIGHT], attrs)
    assert loss.tolist() == [[-0.30000000000000004, 0.0], [-0.0, -0.2]]
    kept = {"reduction": "mean", "ignore_index": 1, "absent_inputs": ["weight"]}
    assert evaluate(NLL, [X, TARGET], kept)[0] == pytest.approx(-5 / 3, rel=1e-15)
    assert evaluate(NLL, [X, TARGET], {**kept, "reading": 1})[0] == pytest.approx(-5 / 4)


def test_every_target_ignored_makes_the_mean_nan_and_the_sum_zero():
    """The text's mean is sum(loss) / sum(weights) = 0 / 0; the doc's mean(loss) without
    weight reads 0 (a region)."""
    every = np.full_like(TARGET, -1)
    for weight in ([WEIGHT], []):
        attrs = {"reduction": "mean", "ignore_index": -1,
                 **({} if weight else {"absent_inputs": ["weight"]})}
        assert math.isnan(evaluate(NLL, [X, every, *weight], attrs)[0])
        assert evaluate(NLL, [X, every, *weight], {**attrs, "reduction": "sum"})[0] == 0
    assert evaluate(NLL, [X, every], {**attrs, "reading": 1})[0] == 0


def test_softmax_cross_entropy_is_the_loss_of_log_softmax_along_the_classes():
    scores = np.array([[0.0, 1.0, 2.0], [3.0, 3.0, 3.0]])
    attrs = {"reduction": "none", "request_log_prob": 1, "absent_inputs": ["weights"]}
    loss, log_prob = evaluate(SCE, [scores, np.array([2, 0])], attrs)
    lse = math.log(1 + math.e + math.e ** 2)
    np.testing.assert_allclose(log_prob[0], [-lse, 1 - lse, 2 - lse], rtol=1e-15)
    np.testing.assert_allclose(loss, [lse - 2, math.log(3)], rtol=1e-15)


# --- onnxruntime ------------------------------------------------------------------------------

@pytest.mark.parametrize("op", [NLL, SCE])
def test_onnxruntime_passes_drawn_float32_cases(specs, onnxruntime, op):  # noqa: F811
    assert_all_pass(specs, onnxruntime, op, "float32", count=16, allowed=("pass", "impl_defined"))


def test_onnxruntime_divides_the_mean_by_the_kept_weights(specs):
    """Where the texts leave the mean with ignored samples open, onnxruntime takes the
    function body's reading (the oracle's)."""
    spec = specs[NLL]
    case = _case(NLL, [X, TARGET], {"reduction": "mean", "ignore_index": 1,
                                    "absent_inputs": ["weight"]})
    (got,) = run_mutated(spec, case)
    assert got == pytest.approx(-5 / 3, rel=1e-6)


def test_a_wrong_reduction_or_ignore_index_fails_through_onnxruntime(specs):
    spec = specs[NLL]
    case = _case(NLL, [X, TARGET, WEIGHT], {"reduction": "none", "ignore_index": 1})
    assert judge_outputs(spec, case, run_mutated(spec, case)).verdict == "pass"
    assert judge_outputs(spec, case, run_mutated(spec, case, ignore_index=2)).verdict == "fail"
    mean = _case(NLL, [X, TARGET, WEIGHT], {"reduction": "mean"})
    assert judge_outputs(spec, mean, run_mutated(spec, mean)).verdict == "pass"
    assert judge_outputs(spec, mean, run_mutated(spec, mean, reduction="sum")).verdict == "fail"


def test_every_target_ignored_gives_nan_on_onnxruntime(specs):
    spec = specs[NLL]
    case = _case(NLL, [X, np.full_like(TARGET, -1), WEIGHT], {"reduction": "mean",
                                                             "ignore_index": -1})
    assert judge_outputs(spec, case, run_mutated(spec, case)).verdict == "pass"


def test_onnxruntime_float64_softmax_cross_entropy_deviates_on_nan_scores(specs):
    """A real deviation, pinned: a class slice holding NaN gives NaN under both readings of
    LogSoftmax (the doc's Log(Softmax(x)) and the function body's (x - max) - log(sum(exp(x -
    max)))); onnxruntime 1.32's float64 kernel gives finite values (45.05 beside a NaN), its
    float32 kernel NaN. A slice holding +inf is a region (the readings give -inf or NaN).
    Repro: conform run --backend onnxruntime --ops onnx_softmax_cross_entropy_loss
    --dtypes float64 --out /tmp/sce; conform repro onnx_softmax_cross_entropy_loss.float64.5
    --from /tmp/sce."""
    spec = specs[SCE]
    scores = [[0.0, np.inf, 1.0], [np.nan, 2.0, 1.0], [1.0, 2.0, 3.0]]
    attrs = {"reduction": "none", "request_log_prob": 1, "absent_inputs": ["weights"]}
    for dtype, verdict in (("float32", "pass"), ("float64", "fail")):   # (the inf slice open)
        case = _case(SCE, [scores, [0, 1, 2]], attrs, dtype)
        judgement = judge_outputs(spec, case, run_mutated(spec, case))
        assert judgement.verdict == verdict, (dtype, judgement.worst)
        assert judgement.impl_defined > 0, dtype


def test_a_class_slice_holding_inf_is_a_region_of_both_outputs(specs):
    scores = [[0.0, np.inf, 1.0], [np.nan, np.inf, 1.0], [1.0, 2.0, 3.0]]
    for attrs, index in (({"reduction": "none", "request_log_prob": 1}, 1),
                         ({"reduction": "none", "request_log_prob": 1}, 0),
                         ({"reduction": "sum", "request_log_prob": 0}, 0)):
        case = _case(SCE, [scores, [0, 1, 2]], {**attrs, "absent_inputs": ["weights"]}, "float64")
        mask = expect(specs[SCE], case)[index].impl_mask
        if index == 1:   # log_prob: the +inf slice's other elements, not the NaN slice
            assert mask.tolist() == [[True, False, True], [False] * 3, [False] * 3]
        elif attrs["reduction"] == "none":   # the loss of the sample with the +inf slice
            assert mask.tolist() == [True, False, False]
        else:
            assert bool(mask)


def test_a_log_prob_beyond_the_type_times_a_small_weight_is_unbounded(specs):
    """float16 scores -65504 and 65504: x - max is -131008, -inf in float16, though the loss
    times a weight of the smallest subnormal is finite: the text's evaluation bounds nothing
    (region unbounded_evaluation)."""
    case = _case(SCE, [[[-65504.0, 65504.0]], [0], [2.0 ** -24, 1.0]],
                 {"reduction": "none", "request_log_prob": 1}, "float16")
    loss, _ = expect(specs[SCE], case)
    assert loss.impl_mask.ravel().tolist() == [True]


def test_numpy_passes_drawn_cases(specs):
    for op in (NLL, SCE):
        for case, judgement in judged(specs, numpy_backend(), op, "float16", count=12):
            assert judgement.verdict in ("pass", "impl_defined"), (case.id, judgement.reason)
