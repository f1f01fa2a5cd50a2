"""ONNX LayerNormalization (and the other normalisations of ops/onnx_normalization.py): a
hand-worked example, onnx.reference as a second opinion, the three outputs' shapes and types, the
unbounded_evaluation region, and the judge catching injected bugs run through the real
onnxruntime: epsilon added outside the square root, and statistics computed in float16."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from conform.generators._case import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from conform.oracles.expectations import expect
from tests.ops.ort_graphs import constant, rounded_to_float16, run_graph, run_nnef_document

LN = "onnx_layer_normalization"


def _ln_case(x, scale, b=None, *, axis=-1, epsilon=1e-5):
    inputs = [x, scale] + ([] if b is None else [b])
    attrs = {"axis": axis, "epsilon": epsilon, "stash_type": 1}
    if b is None:
        attrs["absent_inputs"] = ["b"]
    dtype = str(x.dtype)
    return Case(id=f"{LN}.{dtype}.0", op=LN, dtype=dtype, input_dtypes=(dtype,) * len(inputs),
                out_dtype=dtype, inputs=inputs, attrs=attrs, plan="normal", seed=1)


def test_a_hand_worked_layer_normalization():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    y, mean, inv = evaluate(LN, [x, np.array([1.0, 1.0, 2.0, -1.0]), np.array([0, 0, 0, 0.5])],
                            {"axis": -1, "epsilon": 0.0, "stash_type": 1})
    # mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25
    assert mean.tolist() == [[2.5]] and inv[0, 0] == pytest.approx(1 / np.sqrt(1.25), rel=1e-15)
    z = (x - 2.5) / np.sqrt(1.25)
    np.testing.assert_allclose(y, z * [1, 1, 2, -1] + [0, 0, 0, 0.5], rtol=1e-15)


def test_epsilon_is_the_float32_attribute_added_under_the_root():
    x = np.array([0.0, 0.2])
    (_, _, inv) = evaluate(LN, [x, np.ones(2)], {"axis": 0, "epsilon": 0.1, "stash_type": 1,
                                                 "absent_inputs": ["b"]})
    assert inv[0] == 1 / np.sqrt(0.01 + float(np.float32(0.1)))


@pytest.mark.parametrize("axis", [0, 1, -1, -3])
def test_onnx_reference_agrees_as_a_second_opinion(axis):
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(axis + 5)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    normalised = x.shape[axis % 3:]
    scale, b = (rng.standard_normal(normalised).astype(np.float32) for _ in range(2))
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "m", "i"], axis=axis)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 1, None)
                                            for n in "xsb"],
                              [helper.make_tensor_value_info(n, 1, None) for n in "ymi"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    theirs = ReferenceEvaluator(model).run(None, {"x": x, "s": scale, "b": b})
    ours = evaluate(LN, [x, scale, b], {"axis": axis, "epsilon": 1e-5, "stash_type": 1})
    for mine, other in zip(ours, theirs):
        assert mine.shape == other.shape
        np.testing.assert_allclose(mine, other, rtol=2e-5, atol=1e-6)


def test_the_outputs_types_and_the_region_of_an_overflowing_stash(specs):
    spec = specs[LN]
    case = _ln_case(np.float16([[1, 2, 3], [4, 5, 7]]), np.float16([1, 1, 1]))
    assert spec.outputs == ("y", "mean", "inv_std_dev")
    assert spec.out_dtypes(case) == ("float16", "float32", "float32")
    # |x| >= 1.8e19: its square overflows the float32 stash, though the exact result is finite
    big = _ln_case(np.float64([[1e20, 1.0, 2.0], [1.0, 2.0, 4.0]]), np.ones(3))
    y, mean, inv = expect(spec, big)
    assert y.impl_mask[:, 0].tolist() == [True, False] and mean.impl_mask.ravel().tolist() == [True, False]
    assert np.isfinite(y.expected).all()
    # epsilon 0 and a constant slice: the one-pass variance may cancel below zero
    flat = expect(spec, _ln_case(np.float32([[3, 3, 3], [1, 2, 4]]), np.ones(3, np.float32),
                                 epsilon=0.0))
    assert flat[2].impl_mask.ravel().tolist() == [True, False]


def test_nan_and_infinite_inputs_are_judged_not_excused(specs):
    x = np.float32([[1, np.nan, 3], [1, np.inf, 3]])
    y, mean, _ = expect(specs[LN], _ln_case(x, np.ones(3, np.float32)))
    assert y.impl_mask is None and mean.expected[1, 0] == np.inf and np.isnan(y.expected).all()


# ------------------------------------------------------------------ injected bugs

def _standardisation(epsilon_outside=False, float16_statistics=False):
    """LayerNormalization over the last axis spelled in primitive nodes (two passes, float32),
    optionally with epsilon added to the standard deviation instead of the variance, or with
    every statistic rounded to float16."""
    round16 = rounded_to_float16 if float16_statistics else (
        lambda name, out: [helper.make_node("Identity", [name], [out])])
    nodes = [constant("axes", [-1])] + round16("x", "xr")
    nodes += [helper.make_node("ReduceMean", ["xr", "axes"], ["mean0"], keepdims=1)]
    nodes += round16("mean0", "mean")
    nodes += [helper.make_node("Sub", ["xr", "mean"], ["d0"])] + round16("d0", "d")
    nodes += [helper.make_node("Mul", ["d", "d"], ["dd"]),
              helper.make_node("ReduceMean", ["dd", "axes"], ["var0"], keepdims=1)]
    nodes += round16("var0", "var")
    if epsilon_outside:
        nodes += [helper.make_node("Sqrt", ["var"], ["sd"]), helper.make_node("Add", ["sd", "eps"], ["std"])]
    else:
        nodes += [helper.make_node("Add", ["var", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["std"])]
    nodes += [helper.make_node("Reciprocal", ["std"], ["inv"]),
              helper.make_node("Mul", ["d", "inv"], ["z"]),
              helper.make_node("Mul", ["z", "scale"], ["zs"]),
              helper.make_node("Add", ["zs", "b"], ["y"])]
    return nodes


def _run_ln(nodes, x, scale, b, epsilon):
    rows = x.shape[0]
    return run_graph(nodes, {"x": x, "scale": scale, "b": b, "eps": np.float32([epsilon])},
                     {"y": (np.float32, x.shape), "mean": (np.float32, (rows, 1)),
                      "inv": (np.float32, (rows, 1))})


@pytest.mark.parametrize("epsilon", [1e-3, 0.5])
def test_epsilon_outside_the_square_root_fails(specs, epsilon):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((4, 16)) * 0.1).astype(np.float32)
    scale, b = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    case = _ln_case(x, scale, b, epsilon=epsilon)
    good = _run_ln(_standardisation(), x, scale, b, epsilon)
    assert judge_outputs(specs[LN], case, good).verdict == "pass"
    bad = judge_outputs(specs[LN], case, _run_ln(_standardisation(epsilon_outside=True), x,
                                                 scale, b, epsilon))
    assert bad.verdict == "fail" and dict(bad.outputs)["inv_std_dev"].verdict == "fail"


def test_statistics_in_float16_fail_in_float32(specs):
    rng = np.random.default_rng(12)
    x = (rng.standard_normal((4, 32)) + 3).astype(np.float32)
    scale, b = np.ones(32, np.float32), np.zeros(32, np.float32)
    case = _ln_case(x, scale, b)
    bad = judge_outputs(specs[LN], case, _run_ln(_standardisation(float16_statistics=True), x,
                                                 scale, b, 1e-5))
    assert bad.verdict == "fail" and dict(bad.outputs)["y"].mismatched > 0


def test_onnxruntimes_own_layer_normalization_passes(specs):
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((3, 5, 8)) * 4 + 1).astype(np.float32)
    scale, b = rng.standard_normal((5, 8)).astype(np.float32), rng.standard_normal((5, 8)).astype(np.float32)
    node = helper.make_node("LayerNormalization", ["x", "scale", "b"], ["y", "mean", "inv"], axis=1)
    out = run_graph([node], {"x": x, "scale": scale, "b": b},
                    {"y": (np.float32, x.shape), "mean": (np.float32, (3, 1, 1)),
                     "inv": (np.float32, (3, 1, 1))})
    assert judge_outputs(specs[LN], _ln_case(x, scale, b, axis=1), out).verdict == "pass"


# ------------------------------------------------------------------ per-channel normalisations

def _channel_case(op, inputs, **attrs):
    dtype = str(inputs[0].dtype)
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype, input_dtypes=(dtype,) * len(inputs),
                out_dtype=dtype, inputs=list(inputs), attrs=attrs, plan="normal", seed=1)


def test_group_normalization_groups_channels_and_scales_per_channel():
    rng = np.random.default_rng(21)
    x = rng.standard_normal((3, 4, 2, 2))
    scale, bias = rng.standard_normal(4), rng.standard_normal(4)
    (y,) = evaluate("onnx_group_normalization", [x, scale, bias],
                    {"num_groups": 2, "epsilon": 1e-5, "stash_type": 1})
    # the onnx test case's construction, written out: groups of two channels
    groups = x.reshape(3, 2, -1)
    z = (groups - groups.mean(2, keepdims=True)) / np.sqrt(groups.var(2, keepdims=True)
                                                           + float(np.float32(1e-5)))
    np.testing.assert_allclose(y, z.reshape(x.shape) * scale.reshape(1, 4, 1, 1)
                               + bias.reshape(1, 4, 1, 1), rtol=1e-13)
    (one,) = evaluate("onnx_group_normalization", [x, scale, bias],
                      {"num_groups": 4, "epsilon": 1e-5, "stash_type": 1})
    (instance,) = evaluate("onnx_instance_normalization", [x, scale, bias], {"epsilon": 1e-5})
    np.testing.assert_allclose(one, instance, rtol=1e-14)   # the text: groups == channels


def test_onnxruntimes_group_and_instance_normalization_pass(specs):
    rng = np.random.default_rng(22)
    x = (rng.standard_normal((2, 6, 3, 3)) * 3).astype(np.float32)
    scale, bias = (rng.standard_normal(6).astype(np.float32) for _ in range(2))
    feeds = {"x": x, "scale": scale, "bias": bias}
    out = {"y": (np.float32, x.shape)}
    group = run_graph([helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"],
                                        num_groups=3)], feeds, out)
    case = _channel_case("onnx_group_normalization", [x, scale, bias], num_groups=3,
                         epsilon=1e-5, stash_type=1)
    assert judge_outputs(specs["onnx_group_normalization"], case, group).verdict == "pass"
    instance = run_graph([helper.make_node("InstanceNormalization", ["x", "scale", "bias"],
                                           ["y"])], feeds, out)
    case = _channel_case("onnx_instance_normalization", [x, scale, bias], epsilon=1e-5)
    assert judge_outputs(specs["onnx_instance_normalization"], case, instance).verdict == "pass"


def test_a_group_normalization_ignoring_num_groups_fails(specs):
    """Statistics per channel (onnxruntime's InstanceNormalization) where the case groups two
    channels together: the judge catches the wrong grouping."""
    rng = np.random.default_rng(23)
    x = (rng.standard_normal((2, 4, 3)) + np.arange(4).reshape(1, 4, 1)).astype(np.float32)
    scale, bias = np.float32([2.0, -1.0, 1.0, 0.5]), np.float32([0.5, 0.25, 0, 1])
    per_channel = run_graph([helper.make_node("InstanceNormalization", ["x", "scale", "bias"],
                                              ["y"])],
                            {"x": x, "scale": scale, "bias": bias}, {"y": (np.float32, x.shape)})
    case = _channel_case("onnx_group_normalization", [x, scale, bias], num_groups=2,
                         epsilon=1e-5, stash_type=1)
    assert judge_outputs(specs["onnx_group_normalization"], case, per_channel).verdict == "fail"


def test_batch_normalization_inference_a_hand_worked_case():
    x = np.array([[[1.0, 3.0]], [[5.0, -1.0]]])          # N=2, C=1, D=2
    (y,) = evaluate("onnx_batch_normalization",
                    [x, np.array([2.0]), np.array([1.0]), np.array([1.0]), np.array([4.0])],
                    {"epsilon": 0.0, "momentum": 0.9, "training_mode": 0})
    assert y.tolist() == [[[1.0, 3.0]], [[5.0, -1.0]]]   # (x - 1) / 2 * 2 + 1


def test_a_regrouped_batch_normalization_fails_where_x_is_near_the_mean(specs):
    """x * a + (B - mean * a), a = scale / sqrt(var + eps), is not the text's formula: where
    x is close to mean it cancels, and the judge catches it (onnxruntime evaluates it so)."""
    x = np.float32([[1000.001, 999.999, 1000.0, 1000.0005]]).reshape(1, 1, 4)
    params = [np.float32([3.0]), np.float32([0.001]), np.float32([1000.0]), np.float32([0.01])]
    case = _channel_case("onnx_batch_normalization", [x] + params, epsilon=1e-5, momentum=0.9,
                         training_mode=0)
    a = params[0] / np.sqrt(params[3] + np.float32(1e-5))
    regrouped = (x * a + (params[1] - params[2] * a)).astype(np.float32)
    assert judge_outputs(specs["onnx_batch_normalization"], case, [regrouped]).verdict == "fail"
    text = ((x - params[2]) / np.sqrt(params[3] + np.float32(1e-5)) * params[0] + params[1])
    assert judge_outputs(specs["onnx_batch_normalization"], case, [text]).verdict == "pass"
    ort_y = run_graph([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])],
                      dict(zip("xsbmv", [x] + params)), {"y": (np.float32, x.shape)})
    assert judge_outputs(specs["onnx_batch_normalization"], case, ort_y).verdict == "fail"


# ------------------------------------------------------------------ NNEF batch_normalization

def test_nnef_batch_normalization_is_onnxs_formula_with_leading_dims_aligned():
    rng = np.random.default_rng(31)
    x = rng.standard_normal((2, 3, 4))
    mean, offset, scale = (rng.standard_normal((1, 3)) for _ in range(3))
    variance = rng.uniform(0, 2, (1, 3))
    (ours,) = evaluate("nnef_batch_normalization", [x, mean, variance, offset, scale],
                       {"epsilon": 1e-3})
    (onnx_y,) = evaluate("onnx_batch_normalization",
                         [x] + [p.ravel() for p in (scale, offset, mean, variance)],
                         {"epsilon": 1e-3, "momentum": 0.9, "training_mode": 0})
    np.testing.assert_allclose(ours, onnx_y, rtol=1e-14)


def _nnef_bn_document(shape, epsilon, *, epsilon_outside):
    """batch_normalization spelled in primitive NNEF operations (the executor has no kernel for
    the compound one), optionally with epsilon added after the square root."""
    root = (["    r = sqrt(variance);", f"    sd = add(r, {epsilon});"] if epsilon_outside else
            [f"    ve = add(variance, {epsilon});", "    sd = sqrt(ve);"])
    lines = [f"    input = external<scalar>(shape = {list(shape)});"]
    lines += [f"    {name} = external<scalar>(shape = [1, {shape[1]}]);"
              for name in ("mean", "variance", "offset", "scale")]
    lines += ["    d = sub(input, mean);", "    sd_ = mul(scale, d);"] + root
    lines += ["    q = div(sd_, sd);", "    output = add(offset, q);"]
    return ("version 1.0;\ngraph g( input, mean, variance, offset, scale ) -> ( output )\n{\n"
            + "\n".join(lines) + "\n}\n")


def test_nnef_batch_normalization_with_epsilon_outside_the_root_fails(specs, tmp_path):
    rng = np.random.default_rng(32)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    mean, offset, scale = (rng.standard_normal((1, 3)).astype(np.float32) for _ in range(3))
    variance = np.float32([[0.01, 0.5, 2.0]])
    inputs = [x, mean, variance, offset, scale]
    case = Case(id="nnef_batch_normalization.float32.0", op="nnef_batch_normalization",
                dtype="float32", input_dtypes=("float32",) * 5, out_dtype="float32",
                inputs=inputs, attrs={"epsilon": 0.001}, plan="normal", seed=1)
    spec = specs["nnef_batch_normalization"]
    good = run_nnef_document(_nnef_bn_document(x.shape, 0.001, epsilon_outside=False), inputs,
                             tmp_path)
    assert judge_outputs(spec, case, good).verdict == "pass"
    bad = run_nnef_document(_nnef_bn_document(x.shape, 0.001, epsilon_outside=True), inputs,
                            tmp_path)
    assert judge_outputs(spec, case, bad).verdict == "fail"


# ------------------------------------------------------------------ BatchNormalization, training

BNT = "onnx_batch_normalization_training"


def test_training_mode_uses_the_batch_statistics_and_updates_the_running_ones():
    x = np.array([[[1.0, 3.0]], [[5.0, -1.0]]])            # N=2, C=1, D=2: mean 2, var 5
    y, running_mean, running_var = evaluate(
        BNT, [x, np.array([1.0]), np.array([0.0]), np.array([10.0]), np.array([1.0])],
        {"epsilon": 0.0, "momentum": 0.5, "training_mode": 1})
    np.testing.assert_allclose(y, (x - 2) / np.sqrt(5), rtol=1e-15)
    assert running_mean.tolist() == [6.0] and running_var.tolist() == [3.0]   # population var


def _bnt_inputs(seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((4, 3, 5)) * 2 + 1).astype(np.float32)
    return [x] + [rng.standard_normal(3).astype(np.float32) for _ in range(3)] \
        + [rng.uniform(0.5, 2, 3).astype(np.float32)]


def test_a_sample_variance_in_the_running_update_fails(specs):
    """onnxruntime's training-mode BatchNormalization passes; the same with running_var updated
    from the sample variance (N - 1 in the denominator, not the text's N) fails."""
    inputs = _bnt_inputs(41)
    feeds = dict(zip(["x", "s", "b", "m", "v"], inputs))
    outs = {"y": (np.float32, (4, 3, 5)), "rm": (np.float32, (3,)), "rv": (np.float32, (3,))}
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                            training_mode=1, momentum=0.5)
    case = _channel_case(BNT, inputs, epsilon=1e-5, momentum=0.5, training_mode=1)
    good = run_graph([node], feeds, outs)
    assert judge_outputs(specs[BNT], case, good).verdict == "pass"
    n = 4 * 5
    sample = good[2] + (good[2] - inputs[4] * 0.5) * (1 / (n - 1))   # var * n/(n-1), times 0.5
    bad = judge_outputs(specs[BNT], case, [good[0], good[1], np.float32(sample)])
    assert bad.verdict == "fail" and dict(bad.outputs)["running_var"].verdict == "fail"


def test_numpy_training_batch_norm_takes_momentum_as_a_float32_attribute():
    """The running mean with momentum 0.9 uses 0.9 as ONNX stores it (float32), as 1 - momentum
    does: input_mean * 0.9f + mean * (1 - 0.9f) in float64."""
    from conform.ops.onnx_normalization import numpy_batch_norm_training
    x, one, zero = np.array([[2.0]]), np.array([1.0]), np.array([0.0])
    _, running_mean, _ = numpy_batch_norm_training(x, one, zero, np.array([-1000.0]), one,
                                                   epsilon=1e-5, momentum=0.9, training_mode=1)
    m = float(np.float32(0.9))
    assert running_mean[0] == -1000.0 * m + 2.0 * float(1 - np.float32(0.9))


def test_stash_type_16_gives_bfloat16_statistics_numpy_passes_and_float32_ones_pass_too(specs):
    """stash_type 16: U (Mean, InvStdDev) is bfloat16, stage one in bfloat16 ('This also
    specifies stage one's computation precision'); the model is valid; numpy (two passes in
    bfloat16) passes; statistics off by far more than bfloat16's rounding fail."""
    import onnx

    from conform.harness.backends.models import run_case
    from conform.harness.backends.numpy_backend import NumpyBackend
    from conform.harness.backends.onnx_models import build_model

    name = "onnx_layer_normalization_stash_bfloat16"
    spec = specs[name]
    x = (np.random.default_rng(5).standard_normal((3, 16)) * 2 + 1).astype(np.float32)
    case = Case(id=f"{name}.float32.0", op=name, dtype="float32",
                input_dtypes=("float32",) * 2, out_dtype="float32",
                inputs=[x, np.full(16, 1.5, np.float32)], plan="normal", seed=1,
                attrs={"axis": -1, "epsilon": 1e-5, "stash_type": 16, "absent_inputs": ["b"]})
    assert spec.out_dtypes(case)[1:] == ("bfloat16", "bfloat16")
    model = build_model(spec, case)
    onnx.checker.check_model(model, full_check=True)
    outputs = run_case(NumpyBackend(), spec, case)
    assert str(outputs[1].dtype) == "bfloat16"
    assert judge_outputs(spec, case, outputs).verdict == "pass"
    shifted = [outputs[0], (outputs[1].astype(np.float32) + 0.25).astype(outputs[1].dtype),
               outputs[2]]
    assert dict(judge_outputs(spec, case, shifted).outputs)["mean"].verdict == "fail"
