"""The critical plan draws inside each declared region and at both of its edges; conversions get
their target's thresholds; broadcasting ops always get a size-1 broadcast case."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.generators._critical import PER_REGION, TWINS, critical_cases, conversion_values
from conform.generators._edges import broadcast_case
from conform.spec import load_specs
from conform.spec.critical import resolve, ulp
from conform.dtypes import FLOAT_FORMATS


@pytest.fixture(scope="module")
def specs():
    return load_specs(None)


@pytest.mark.parametrize("op, dtype", [("exp", "float32"), ("cosh", "float16"), ("tanh", "float64"),
                                       ("log1p", "bfloat16"), ("reciprocal", "float32")])
def test_the_plan_draws_inside_each_region_and_at_both_edges(specs, op, dtype):
    spec = specs[op]
    (case,) = critical_cases(spec, dtype, seed=0)
    values = case.inputs[0].astype(np.float64)
    k = 0
    for region in spec.critical_regions:
        for sign in ((1, -1) if region.get("mirror") else (1,)):
            block = values[k:k + PER_REGION]
            k += PER_REGION
            centre = sign * resolve(region["at"], dtype)
            if "ulps" in region:
                half = region["ulps"] * ulp(centre, dtype)
                low, high = centre - half, centre + half
            else:
                low, high = sorted((centre * (1 - region["rel"]), centre * (1 + region["rel"])))
            top = FLOAT_FORMATS[dtype].max_finite
            low, high = max(low, -top), min(high, top)
            inside = (block >= low - ulp(low, dtype)) & (block <= high + ulp(high, dtype))
            assert inside.all(), (op, dtype, region["name"], block, low, high)
            assert np.isclose(block.min(), low, rtol=2 ** -8) or np.isclose(block.max(), high, rtol=2 ** -8)
    assert k + TWINS == values.size


def test_every_run_holds_the_critical_case(specs):
    cases = generate_cases(specs["cosh"], "float32", count=4, seed=0)
    critical = [c for c in cases if c.plan == "critical"]
    assert [c.id for c in critical] == ["cosh.float32.critical"]
    x = np.abs(critical[0].inputs[0].astype(np.float64))
    assert ((x > 88.72) & (x <= 89.41)).sum() >= 4   # where exp(|x|) overflows and cosh does not


def test_conversions_meet_their_targets_thresholds():
    values = conversion_values("float32", "float16").astype(np.float64)
    for v in (65504.0, 65536.0, 2.0 ** -14, 2.0 ** -24, -65504.0):
        assert v in values
    assert np.nextafter(np.float32(65504), np.float32(np.inf)) in values.astype(np.float32)
    assert conversion_values("float16", "float32") is None   # widening: no threshold met
    assert {2 ** 11 + 1, 65504, 65536}.issubset(set(conversion_values("int32", "float16").tolist()))


def test_conversion_cases_carry_the_target(specs):
    (case,) = critical_cases(specs["onnx_cast"], "float32->float8_e4m3fn", seed=0)
    assert case.attrs["new_dtype"] == "float8_e4m3fn" and case.out_dtype == "float8_e4m3fn"
    assert {448.0, 480.0}.issubset(set(case.inputs[0].astype(np.float64).tolist()))


def test_broadcasting_ops_always_get_a_size_one_broadcast(specs):
    case = broadcast_case(specs["onnx_add"], "float32", seed=0)
    assert case.shapes == [[1, 3], [4, 1]]
    assert broadcast_case(specs["add"], "float32", seed=0) is None   # XLA: broadcast_dimensions


def test_a_bitcast_is_not_a_value_conversion(specs):
    assert critical_cases(specs["bitcast_convert_type"], "float32->int32", seed=0) == []
    assert critical_cases(specs["bitcast_convert_type"], "float64->float32", seed=0) == []
