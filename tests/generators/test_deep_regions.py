"""Deeper regions (issue 35, item 7): every critical region of every element-wise op gets at
least 256 elements per op x float dtype cell at the default budget, counted from the drawn
corpus, with the critical case's shape its own (no case added for it)."""
from __future__ import annotations

import numpy as np
import pytest

from conform.dtypes import FLOAT_FORMATS
from conform.generators import generate_cases
from conform.generators._critical import critical_cases
from conform.spec.critical import evaluate, to_dtype, ulp

MIN_PER_REGION = 256
DEFAULT_BUDGET = 20   # conform run's default (harness/cli/main.py DEFAULT_BUDGET)


def in_region(case, spec, region: dict, sign: float) -> int:
    """How many elements of ``case`` have the region's input inside the region (its centre
    resolved per element from the other inputs, as the drawer resolves it), one ULP of slack."""
    named = {n: np.asarray(x, np.float64) for n, x in zip(spec.inputs, case.inputs)}
    drawn = named.pop(region.get("input", spec.inputs[0]))
    centre = sign * to_dtype(evaluate(region["at"], case.dtype, named), case.dtype)
    centre = np.broadcast_to(centre, drawn.shape)
    half = region["ulps"] * ulp(centre, case.dtype) if "ulps" in region \
        else np.abs(centre) * region["rel"]
    with np.errstate(all="ignore"):
        inside = np.abs(drawn - centre) <= half + ulp(drawn, case.dtype)
        reachable = np.abs(centre) - half <= FLOAT_FORMATS[case.dtype].max_finite
    return int((inside & np.isfinite(centre) & reachable).sum())


def _blocks(spec):
    return [(region, sign) for region in spec.critical_regions
            for sign in ((1.0, -1.0) if region.get("mirror") else (1.0,))]


def test_every_region_of_every_cell_gets_256_elements(specs):
    cells, thin = 0, []
    for spec in specs.values():
        for dtype in spec.dtypes:
            for case in critical_cases(spec, dtype, seed=0):
                if case.plan != "critical" or "->" in dtype:
                    continue
                cells += 1
                for region, sign in _blocks(spec):
                    count = in_region(case, spec, region, sign)
                    if 0 < count < MIN_PER_REGION:   # 0: no such region under this dtype
                        thin.append((case.id, region["name"], sign, count))
    assert cells >= 300 and not thin, thin[:10]


@pytest.mark.parametrize("op, dtype", [("tanh", "float32"), ("cosh", "float16")])
def test_the_default_corpus_holds_them_without_a_case_more(specs, op, dtype):
    spec = specs[op]
    cases = generate_cases(spec, dtype, count=DEFAULT_BUDGET, seed=0)
    for region, sign in _blocks(spec):
        assert sum(in_region(c, spec, region, sign) for c in cases) >= MIN_PER_REGION
    assert [c.id for c in cases if c.plan == "critical"] == [f"{op}.{dtype}.critical"]
