"""NNEF up- and down-sampling: the oracles on hand-worked examples of the text's definitions
(the standard fragments' box and debox; multilinear_upsample's interpolation at each method's
coordinates), multilinear_upsample against a literal reading of NNEF 2.0's deconvolution form of
the same operation, its derived bound, and the nnef backend: its results pass, and a wrong method
or a wrong factor placement is caught by the judge."""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from conform.generators import Case, generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate


def run(name, x, **attrs):
    (out,) = evaluate(name, [np.asarray(x, np.float32)], attrs)
    return out


def test_nearest_upsample_repeats_each_element_factor_times():
    x = [[[1.0, 2.0], [3.0, 4.0]]]   # batch 1, channels 2, one spatial dimension
    assert run("nnef_nearest_upsample", x, factor=[3]).tolist() == \
        [[[1, 1, 1, 2, 2, 2], [3, 3, 3, 4, 4, 4]]]
    y = run("nnef_nearest_upsample", [[[[1.0, 2.0], [3.0, 4.0]]]], factor=[2, 1])
    assert y.tolist() == [[[[1, 2], [1, 2], [3, 4], [3, 4]]]]


def test_nearest_downsample_keeps_every_factor_th_element_from_the_first():
    x = np.arange(12.0).reshape(1, 1, 2, 6)
    assert run("nnef_nearest_downsample", x, factor=[2, 3]).tolist() == [[[[0.0, 3.0]]]]
    assert run("nnef_nearest_downsample", x, factor=[1, 2]).tolist() == \
        [[[[0, 2, 4], [6, 8, 10]]]]


def test_area_downsample_averages_each_block():
    x = np.arange(12.0).reshape(1, 1, 2, 6)
    assert run("nnef_area_downsample", x, factor=[2, 3]).tolist() == [[[[4.0, 7.0]]]]
    assert run("nnef_area_downsample", x, factor=[1, 2]).tolist() == \
        [[[[0.5, 2.5, 4.5], [6.5, 8.5, 10.5]]]]


@pytest.mark.parametrize("method, border, expected", [
    ("symmetric", "replicate", [1.0, 1.25, 1.75, 2.0]),     # x = -0.25, 0.25, 0.75, 1.25
    ("symmetric", "constant", [0.75, 1.25, 1.75, 1.5]),
    ("asymmetric", "replicate", [1.0, 1.5, 2.0, 2.0]),      # x = 0, 0.5, 1, 1.5
    ("asymmetric", "constant", [1.0, 1.5, 2.0, 1.0]),
    ("aligned", "replicate", [1.0, 4 / 3, 5 / 3, 2.0]),     # x = 0, 1/3, 2/3, 1
    ("aligned", "constant", [1.0, 4 / 3, 5 / 3, 2.0]),
])
def test_multilinear_upsample_by_two(method, border, expected):
    out = run("nnef_multilinear_upsample", [[[1.0, 2.0]]], factor=[2], method=method,
              border=border)
    assert np.allclose(out[0, 0], expected, rtol=0, atol=1e-15)


def test_multilinear_weights_multiply_across_dimensions():
    x = [[[[0.0, 4.0], [8.0, 12.0]]]]
    out = run("nnef_multilinear_upsample", x, factor=[2, 2], method="asymmetric",
              border="replicate")
    assert out[0, 0, 1, 1] == 6.0 and out[0, 0, 1].tolist() == [4.0, 6.0, 8.0, 8.0]


def test_multilinear_a_far_neighbour_at_weight_zero_takes_no_part():
    """At x = 1 exactly (asymmetric, o = 2) the output is in[1]: an infinite in[2] beside it
    weighs nothing (the deconvolution has no term for it), where 0 * inf would be NaN."""
    out = run("nnef_multilinear_upsample", [[[1.0, 2.0, np.inf]]], factor=[2],
              method="asymmetric", border="constant")
    assert out[0, 0, :4].tolist() == [1.0, 1.5, 2.0, np.inf]


def _nnef2_linear_upsample(x, factor, symmetric, replicate):
    """NNEF 2.0 image.linear_upsample along the last axis, its @lower written out literally:
    output[|f*i + j - padding|] += input[replicate ? clamp(i - c) : i] * filter[j]."""
    f, s = factor, x.shape[-1]
    fs = 2 * f - f % 2 if symmetric else 2 * f - 1
    padding = (f + f // 2 if replicate else f // 2) if symmetric else f - 1
    offset = 0.5 if symmetric and f % 2 == 0 else 1.0
    c = int(symmetric)
    filt = [1.0 - abs(i - f + offset) / f for i in range(fs)]
    out = np.zeros(x.shape[:-1] + (f * s,))
    for i in range(s + c + 1 if replicate else s):
        source = min(max(i - c, 0), s - 1) if replicate else i
        for j in range(fs):
            o = f * i + j - padding
            if 0 <= o < f * s:
                out[..., o] += x[..., source] * filt[j]
    return out


@pytest.mark.parametrize("factor, symmetric, replicate",
                         itertools.product([1, 2, 3, 4], [True, False], [True, False]))
def test_multilinear_agrees_with_nnef2_deconvolution_form(factor, symmetric, replicate):
    rng = np.random.default_rng(factor)
    x = rng.standard_normal((2, 3, 5))
    ours = evaluate("nnef_multilinear_upsample", [x],
                    {"factor": [factor], "method": "symmetric" if symmetric else "asymmetric",
                     "border": "replicate" if replicate else "constant"})[0]
    assert np.allclose(ours, _nnef2_linear_upsample(x, factor, symmetric, replicate),
                       rtol=1e-14, atol=1e-14)


def _case(specs, x, **attrs):
    x = np.asarray(x, np.float32)
    return Case(id="nnef_multilinear_upsample.float32.hand", op="nnef_multilinear_upsample",
                dtype="float32", input_dtypes=("float32",), out_dtype="float32", inputs=[x],
                attrs=attrs, plan="hand", seed=0)


def test_the_derived_bound_admits_a_float32_evaluation_and_not_a_float16_one(specs):
    spec = specs["nnef_multilinear_upsample"]
    rng = np.random.default_rng(0)
    x = rng.uniform(-10, 10, (1, 2, 5, 4)).astype(np.float32)
    attrs = {"factor": [3, 2], "method": "symmetric", "border": "constant"}
    case = _case(specs, x, **attrs)
    exact = evaluate(spec.op, [x], attrs)[0]
    in_float32 = exact.astype(np.float32)
    assert judge_outputs(spec, case, [in_float32]).verdict == "pass"
    coarse = exact.astype(np.float16).astype(np.float32)   # an 11-bit evaluation
    assert judge_outputs(spec, case, [coarse]).verdict == "fail"


# -- the nnef backend -------------------------------------------------------------------------

def _run(backend, spec, case):
    from conform.harness.backends.models import run_case

    return run_case(backend, spec, case)


@pytest.mark.parametrize("name", ["nnef_nearest_upsample", "nnef_nearest_downsample",
                                  "nnef_area_downsample"])
def test_the_nnef_executor_passes_the_fragments_it_lowers(specs, nnef_backend, name):
    spec = specs[name]
    verdicts = {judge_outputs(spec, case, _run(nnef_backend, spec, case)).verdict
                for case in generate_cases(spec, "float32", count=12, seed=3)}
    assert verdicts <= {"pass", "impl_defined"} and "pass" in verdicts


@pytest.mark.parametrize("method", ["symmetric", "asymmetric"])
@pytest.mark.parametrize("border", ["replicate", "constant"])
def test_the_nnef_executor_passes_multilinear_by_two_and_a_wrong_method_fails(
        specs, nnef_backend, method, border):
    spec = specs["nnef_multilinear_upsample"]
    x = np.random.default_rng(1).uniform(-10, 10, (2, 3, 4, 3)).astype(np.float32)
    case = _case(specs, x, factor=[2, 2], method=method, border=border)
    assert judge_outputs(spec, case, _run(nnef_backend, spec, case)).verdict == "pass"
    other = "asymmetric" if method == "symmetric" else "symmetric"
    wrong = dataclasses.replace(case, attrs={**case.attrs, "method": other})
    assert judge_outputs(spec, case, _run(nnef_backend, spec, wrong)).verdict == "fail"


def test_an_upsample_along_the_wrong_dimension_is_caught(specs, nnef_backend):
    spec = specs["nnef_nearest_upsample"]
    caught = 0
    for case in generate_cases(spec, "float32", count=12, seed=5):
        factor = case.attrs["factor"]
        if len(factor) < 2 or factor[0] == factor[1]:
            continue
        swapped = dataclasses.replace(case, attrs={"factor": factor[::-1]})
        outputs = _run(nnef_backend, spec, swapped)
        caught += judge_outputs(spec, case, outputs).verdict == "fail"
    assert caught


# -- numpy ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["nnef_nearest_upsample", "nnef_nearest_downsample",
                                  "nnef_area_downsample"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_numpy_passes_the_fragments(specs, name, dtype):
    """np.repeat, slicing, reshape and np.mean: every case passes (or is in the region the
    text leaves open: a block's sum overflowing)."""
    from conform.harness.backends.models import run_case
    from conform.harness.backends.numpy_backend import NumpyBackend

    spec, backend, verdicts = specs[name], NumpyBackend(), []
    for case in generate_cases(spec, dtype, count=16, seed=11):
        outputs = run_case(backend, spec, case)
        assert outputs[0].dtype.name == dtype
        verdicts.append(judge_outputs(spec, case, outputs).verdict)
    assert set(verdicts) <= {"pass", "impl_defined"} and verdicts.count("pass") >= 4, verdicts


def test_numpy_area_downsample_averages_float16_in_float32_as_np_mean_does():
    """A float16 block [2048, 1, 1, 1]: summed in float16 it would stay 2048 (mean 512);
    np.mean sums float16 in float32, 2051 / 4 = 512.75 rounds to 513."""
    from conform.ops.nnef_resampling import numpy_area_downsample

    out = numpy_area_downsample(np.float16([[[2048, 1, 1, 1, 4, 4, 4, 4]]]), factor=[4])
    assert out.dtype == np.float16 and out.tolist() == [[[513.0, 4.0]]]


def test_numpy_has_no_multilinear_upsample(specs):
    from conform.model_formats import Unsupported
    from conform.harness.backends.models import run_case
    from conform.harness.backends.numpy_backend import NumpyBackend

    spec = specs["nnef_multilinear_upsample"]
    case = generate_cases(spec, "float32", count=1, seed=1)[0]
    with pytest.raises(Unsupported, match="NumPy has no interpolation over a grid"):
        run_case(NumpyBackend(), spec, case)
