"""Critical regions resolve to the right values per dtype, and bad ``at`` expressions are refused."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.spec import SpecError, load_spec, load_specs
from conform.spec.critical import RegionExpressionError, parse, resolve, ulp


@pytest.mark.parametrize("expression, dtype, want", [
    ("log(max_finite)", "float32", 88.72283935546875),          # exp overflows above it
    ("log(2 * max_finite)", "float32", 89.41598510742188),      # cosh and sinh overflow
    ("log(min_normal)", "float32", -87.3365478515625),          # exp turns subnormal below
    ("log(max_finite)", "float16", 11.09375),
    ("log(2 * max_finite)", "float16", 11.78125),
    ("log(max_finite)", "bfloat16", 88.5),
    ("log(max_finite)", "float64", 709.782712893384),
    ("sqrt(max_finite)", "float16", 255.875),
    ("2**(precision - 1)", "float32", 8388608.0),
    ("1 / max_finite", "float16", 1.5258789e-05),
])
def test_regions_resolve_per_dtype(expression, dtype, want):
    assert resolve(expression, dtype) == pytest.approx(want, rel=1e-7)


def test_the_shipped_exp_and_cosh_regions_resolve_to_their_thresholds():
    specs = load_specs(None)
    at = {r["name"]: r["at"] for r in specs["exp"].critical_regions}
    assert resolve(at["overflow"], "float32") == 88.72283935546875
    below = np.nextafter(np.float32(88.72283935546875), np.float32(0))
    assert math.exp(below) < np.finfo(np.float32).max < math.exp(88.72283935546875)
    at = {r["name"]: r["at"] for r in specs["cosh"].critical_regions}
    assert resolve(at["result_overflow"], "float32") == 89.41598510742188


def test_an_expression_may_name_the_other_inputs_element_wise():
    lhs = np.array([2.0, 4.0, 0.5])
    got = resolve("(emax + 1) / log2(abs(lhs))", "float32", {"lhs": lhs})
    assert got.tolist() == [128.0, 64.0, -128.0]


@pytest.mark.parametrize("expression, message", [
    ("log(", "does not parse"),
    ("max_finit", "names 'max_finit'"),
    ("__import__('os')", "may be called"),
    ("max_finite.real", "uses Attribute"),
    ("'a'", "not a number"),
    ("log(x=1)", "may be called"),
])
def test_bad_expressions_are_refused(expression, message):
    with pytest.raises(RegionExpressionError, match=message):
        parse(expression)


def test_a_spec_with_a_bad_region_fails_to_load(tmp_path):
    text = (load_specs(None)["exp"].path and open(load_specs(None)["exp"].path).read())
    bad = text.replace('at: "log(max_finite)"', 'at: "log(maxfinite)"', 1)
    path = tmp_path / "exp.yaml"
    path.write_text(bad)
    with pytest.raises(SpecError, match=r"critical_regions\.0\.at.*names 'maxfinite'"):
        load_spec(path)
    path.write_text(text.replace("ulps: 16", "ulps: 0", 1))
    with pytest.raises(SpecError, match="critical_regions"):
        load_spec(path)


def test_ulp_is_the_spacing_of_the_dtype():
    assert float(ulp(1.0, "float32")) == 2.0 ** -23
    assert float(ulp(0.0, "float16")) == 2.0 ** -24   # the subnormals' spacing   # the subnormals' spacing
