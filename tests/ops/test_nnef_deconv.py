"""NNEF deconv, separable_conv and separable_deconv: deconv as the adjoint of conv (checked
against the XLA conv oracle, ops/contraction.py), hand-worked examples of the fragments' bodies,
the regions, and the nnef executor, whose deviations are pinned with their repro commands."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.generators import Case
from conform.harness.backends.models import run_case
from conform.harness.judge.judging import judge_outputs
from conform.model_formats import Refused
from conform.oracles._registry import evaluate
from backend_verdicts import verdicts


def run(name, *inputs, **attrs):
    (out,) = evaluate(name, [np.asarray(x, np.float64) for x in inputs], attrs)
    return out


def window(kernel, padding, stride=None, dilation=None, **more):
    rank = len(kernel)
    return dict(kernel=kernel, padding=padding, stride=stride or [1] * rank,
                dilation=dilation or [1] * rank, **more)


def test_deconv_places_the_filter_at_each_strided_input():
    x, w = [[[1.0, 2.0]]], [[[1.0, 10.0]]]
    out = run("nnef_deconv", x, w, **window([2], [[0, 0]], [2]), groups=1, output_shape=[])
    assert out.tolist() == [[[1.0, 10.0, 2.0, 20.0]]]
    out = run("nnef_deconv", x, w, [[0.5]], **window([2], [[1, 0]], [2]), groups=1,
              output_shape=[1, 1, 4])          # padding crops the first position
    assert out.tolist() == [[[10.5, 2.5, 20.5, 0.5]]]


@pytest.mark.parametrize("seed", range(3))
def test_deconv_is_the_adjoint_of_conv(seed):
    rng = np.random.default_rng(seed)
    kernel = [int(k) for k in rng.integers(1, 4, 2)]
    attrs = window(kernel, [[int(a), int(b)] for a, b in rng.integers(0, 2, (2, 2))],
                   [int(s) for s in rng.integers(1, 3, 2)], [int(d) for d in rng.integers(1, 3, 2)])
    u = rng.standard_normal((2, 3, 6, 7))
    w = rng.standard_normal((4, 3, *kernel))
    (convolved,) = evaluate("conv", [u, w], {"window_strides": attrs["stride"],
                                             "padding": attrs["padding"],
                                             "rhs_dilation": attrs["dilation"]})
    v = rng.standard_normal(convolved.shape)
    adjoint = run("nnef_deconv", v, w, **attrs, groups=1, output_shape=list(u.shape))
    assert math.isclose(np.sum(convolved * v), np.sum(u * adjoint), rel_tol=1e-12)


def test_separable_conv_is_a_depthwise_then_a_pointwise_conv():
    x = [[[1.0, 2.0, 4.0], [8.0, 16.0, 32.0]]]                 # N 1, C 2, width 3
    plane = [[[1.0, 1.0]], [[1.0, -1.0]]]                      # [2, 1, 2]: per channel
    point = [[[1.0], [1.0]], [[2.0], [0.0]]]                   # [2, 2, 1]
    out = run("nnef_separable_conv", x, plane, point, **window([2], [[0, 0]]), groups=1)
    # depthwise: [3, 6] and [-8, -16]; pointwise: [-5, -10] and [6, 12]
    assert out.tolist() == [[[-5.0, -10.0], [6.0, 12.0]]]
    grouped = run("nnef_separable_conv", x, plane, [[[1.0]], [[2.0]]], [[0.5, 0.25]],
                  **window([2], [[0, 0]]), groups=2)
    assert grouped.tolist() == [[[3.5, 6.5], [-15.75, -31.75]]]


def test_separable_deconv_is_a_pointwise_then_a_depthwise_deconv():
    x = [[[1.0, 2.0]]]                                          # N 1, I 1, width 2
    point = [[[1.0], [3.0]]]                                    # [1, 2, 1]: P = 2
    plane = [[[1.0, 10.0]], [[1.0, -1.0]]]                      # [2, 1, 2]
    out = run("nnef_separable_deconv", x, plane, point, **window([2], [[0, 0]], [2]), groups=1,
              output_shape=[])
    assert out.tolist() == [[[1.0, 10.0, 2.0, 20.0], [3.0, -3.0, 6.0, -6.0]]]


def _case(op, inputs, attrs):
    inputs = [np.asarray(x, np.float32) for x in inputs]
    return Case(id=f"{op}.float32.hand", op=op, dtype="float32",
                input_dtypes=("float32",) * len(inputs), out_dtype="float32", inputs=inputs,
                attrs=attrs, plan="hand", seed=0)


def test_an_overflowing_depthwise_stage_is_implementation_defined(specs):
    """In float32 the depthwise sum 3e38 + 3e38 overflows to inf and the pointwise stage
    gives inf * 0 = NaN; exactly the result is 0: the region excuses it, and only it."""
    spec = specs["nnef_separable_conv"]
    x = [[[3e38, 3e38, 1.0]]]
    case = _case("nnef_separable_conv", [x, [[[1.0, 1.0]]], [[[0.0]]]],
                 {**window([2], [[0, 0]]), "groups": 1})
    judged = judge_outputs(spec, case, [np.array([[[np.nan, 0.0]]], np.float32)])
    assert (judged.verdict, judged.impl_defined, judged.checked) == ("pass", 1, 1)
    assert judge_outputs(spec, case, [np.array([[[0.0, 1.0]]], np.float32)]).verdict == "fail"


# -- the nnef executor ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["nnef_deconv", "nnef_separable_conv",
                                  "nnef_separable_deconv"])
def test_the_executor_passes_groups_of_one(specs, nnef_backend, name):
    found = verdicts(specs[name], nnef_backend, "float32", count=12, seed=1,
                     keep=lambda case: case.attrs["groups"] == 1 or name == "nnef_deconv")
    assert found <= {"pass", "impl_defined"} and "pass" in found


@pytest.mark.parametrize("name", ["nnef_separable_conv", "nnef_separable_deconv"])
def test_the_nnef_parser_refuses_separable_fragments_with_groups(specs, nnef_backend, name):
    """The nnef package's shape check for separable_conv and separable_deconv (shapes.h; also
    shapes.py separable_conv_shape) demands point_filter's channels equal plane_filter's batch
    whatever ``groups``, which the fragments' own bodies contradict (conv(filtered,
    point_filter, groups = groups) takes point_filter [O, P / groups, 1...]): every valid
    document with groups > 1 is refused.
    Repro: conform run --backend nnef --ops nnef_separable_conv,nnef_separable_deconv
    --out /tmp/sc && conform repro nnef_separable_conv.float32.6 --from /tmp/sc (and
    nnef_separable_deconv.float32.1)"""
    spec = specs[name]
    x = np.ones((1, 2, 3), np.float32)
    if name == "nnef_separable_conv":
        inputs, attrs = [x, np.ones((2, 1, 2)), np.ones((2, 1, 1))], {}
    else:
        inputs, attrs = [x, np.ones((2, 1, 2)), np.ones((2, 1, 1))], {"output_shape": []}
    case = _case(name, inputs, {**window([2], [[0, 0]]), "groups": 2, **attrs})
    assert np.isfinite(evaluate(name, case.inputs, case.attrs)[0]).all()   # valid per the body
    with pytest.raises(Refused, match="channel dimension of point filter must equal batch"):
        run_case(nnef_backend, spec, case)


# -- numpy ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["nnef_deconv", "nnef_separable_conv",
                                  "nnef_separable_deconv"])
def test_numpy_passes(specs, name):
    """np.einsum per tap, in the inputs' type, groups and output_shape included."""
    from conform.harness.backends.numpy_backend import NumpyBackend

    found = verdicts(specs[name], NumpyBackend(), "float32", count=8, seed=4)
    assert found <= {"pass", "impl_defined"} and "pass" in found


def test_numpy_materialises_padding_in_the_region_the_text_leaves_open(specs):
    """numpy's conv multiplies the padded zeros: 0 * inf = NaN where the oracle's reading
    (padding absent) gives 0; the region padded_tap_times_nonfinite excuses exactly that."""
    from conform.ops.nnef_deconv import numpy_separable_conv

    spec = specs["nnef_separable_conv"]
    inputs = [[[[1.0]]], [[[np.inf]]], [[[1.0]]]]
    attrs = {**window([1], [[1, 0]]), "groups": 1, "absent_inputs": ["bias"]}
    case = _case("nnef_separable_conv", inputs, attrs)
    out = numpy_separable_conv(*case.inputs, **attrs)
    assert np.isnan(out[0, 0, 0]) and out[0, 0, 1] == np.inf
    judged = judge_outputs(spec, case, [out])
    assert (judged.verdict, judged.impl_defined, judged.checked) == ("pass", 1, 1)
    assert judge_outputs(spec, case, [np.array([[[np.nan, 1.0]]], np.float32)]).verdict == "fail"
