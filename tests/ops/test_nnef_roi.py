"""NNEF avg_roi_pool, max_roi_pool, roi_resample, avg_roi_align and max_roi_align: the oracle
on hand-worked cases (a region of a constant plane is that plane's value, from the batch its
batch_index names), the drawn values, the region that leaves varying planes unjudged, and the
nnef executor, whose deviation is pinned here with its repro command."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import Case, generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate

ROI_OPS = ["nnef_avg_roi_pool", "nnef_max_roi_pool", "nnef_roi_resample",
           "nnef_avg_roi_align", "nnef_max_roi_align"]
PLANES = np.array([[[[1.5] * 3] * 2, [[-2.0] * 3] * 2],       # batch 0: channels 1.5, -2
                   [[[7.0] * 3] * 2, [[0.25] * 3] * 2]], np.float32)   # batch 1: 7, 0.25
ROIS = np.array([[0.0, 0.1, 0.5, 1.0], [0.2, 0.2, 0.3, 0.9]], np.float32)
BATCH = np.array([1, 0], np.int32)


def _attrs(name, output_size):
    attrs = {"output_size": output_size}
    if "align" in name:
        attrs.update(sampling_rate=[2, 1], resize_method="symmetric")
    if name == "nnef_roi_resample":
        attrs["method"] = "symmetric"
    return attrs


def _case(name, inputs, attrs, dtype="float32"):
    return Case(id=f"{name}.{dtype}.hand", op=name, dtype=dtype,
                input_dtypes=tuple(x.dtype.name for x in inputs), out_dtype=dtype,
                inputs=list(inputs), attrs=attrs, plan="hand", seed=0)


@pytest.mark.parametrize("name", ROI_OPS)
def test_a_region_of_a_constant_plane_is_its_value_from_the_named_batch(name):
    (out,) = evaluate(name, [PLANES, ROIS, BATCH], _attrs(name, [2, 3]))
    assert out.shape == (2, 2, 2, 3)                    # [m, channels] + output_size
    assert out[0].tolist() == [[[7.0] * 3] * 2, [[0.25] * 3] * 2]
    assert out[1].tolist() == [[[1.5] * 3] * 2, [[-2.0] * 3] * 2]


@pytest.mark.parametrize("name", ROI_OPS)
def test_drawn_cases_have_constant_planes_sorted_regions_and_batches_in_range(specs, name):
    widths = set()
    for case in generate_cases(specs[name], "float32", count=20, seed=0):
        x, rois, batch = case.inputs
        assert np.all(np.isfinite(x)) and np.all(x == x[:, :, :1, :1])
        assert np.all((rois >= 0) & (rois <= 1)) and np.all(np.diff(rois, axis=1) >= 0)
        assert np.all((batch >= 0) & (batch < x.shape[0]))
        widths.add(batch.dtype)
    # NNEF leaves integer's width to the consumer: the executor's int32 and tract's int64
    assert widths == {np.dtype(np.int32), np.dtype(np.int64)}


def test_the_judge_fails_a_wrong_batch_and_leaves_a_varying_plane_unjudged(specs):
    spec = specs["nnef_avg_roi_pool"]
    case = _case("nnef_avg_roi_pool", [PLANES, ROIS, BATCH], {"output_size": [1, 1]})
    (right,) = evaluate("nnef_avg_roi_pool", case.inputs, case.attrs)
    assert judge_outputs(spec, case, [right.astype(np.float32)]).verdict == "pass"
    swapped = right[::-1].astype(np.float32)            # each region read from the other batch
    assert judge_outputs(spec, case, [swapped]).verdict == "fail"
    varying = PLANES.copy()
    varying[1, 0, 0, 0] = 8.0                           # region 0's first channel varies
    case = _case("nnef_avg_roi_pool", [varying, ROIS, BATCH], {"output_size": [1, 1]})
    result = judge_outputs(spec, case, [right.astype(np.float32)])
    assert (result.verdict, result.impl_defined) == ("pass", 1)   # region 1 judged


@pytest.mark.parametrize("name", ["nnef_roi_resample", "nnef_avg_roi_align"])
def test_the_executor_cannot_infer_roi_resamples_shape(specs, nnef_backend, name):
    """A deviation of the nnef package (1.0.10): its C++ shape function for roi_resample
    (shapes.h roi_shape_resample, registered in nnef.cpp) checks a ``sampling_rate`` that
    roi_resample's declaration does not have, so every document invoking roi_resample (and
    the align fragments, whose bodies invoke it) is refused before it runs.
    Repro: conform run --backend nnef --ops nnef_roi_resample --out /tmp/r &&
    conform repro nnef_roi_resample.float32.0 --from /tmp/r"""
    from conform.harness.backends.models import run_case
    from conform.model_formats import Refused

    spec = specs[name]
    case = _case(name, [PLANES, ROIS, BATCH], _attrs(name, [2, 3]))
    with pytest.raises(Refused, match="operation 'roi_resample'.*expected items"):
        run_case(nnef_backend, spec, case)


def test_the_executor_has_no_roi_pool_kernel(specs, nnef_backend):
    from conform.harness.backends.base import Unsupported
    from conform.harness.backends.models import run_case

    spec = specs["nnef_max_roi_pool"]
    case = _case("nnef_max_roi_pool", [PLANES, ROIS, BATCH], {"output_size": [2, 3]})
    with pytest.raises(Unsupported, match="not implemented: max_roi_pool"):
        run_case(nnef_backend, spec, case)
