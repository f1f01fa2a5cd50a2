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


def test_the_region_sees_the_exhaustive_float16_worst_on_onnxruntime(specs):
    """The bound checked by the exhaustive float16 sweep of the same op: onnxruntime's float16
    tanh over all 65,536 inputs is within its bound, and the critical case's 256 elements per
    saturation region reach the worst error the sweep finds inside that region."""
    from conform.generators._edges import exhaustive_case
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend
    from conform.harness.backends.program import Program
    from conform.harness.judge.judging import judge_outputs
    from conform.oracles.expectations import expect

    spec, backend = specs["tanh"], OnnxRuntimeBackend()

    def errors(case):
        out = backend.run(program=Program(spec, case), inputs=list(case.inputs))
        want = np.asarray(expect(spec, case)[0].expected, np.float64)
        with np.errstate(all="ignore"):
            error = np.abs(np.asarray(out[0], np.float64) - want) / ulp(want, "float16")
        return case.inputs[0].astype(np.float64), error, judge_outputs(spec, case, out)

    x, error, judged = errors(exhaustive_case(spec, "float16"))
    assert judged.verdict == "pass" and np.nanmax(error) <= spec.model_for("float16")["ulp"]
    (critical,) = critical_cases(spec, "float16", seed=0)
    xc, error_c, _ = errors(critical)
    for region, sign in _blocks(spec):
        centre = sign * to_dtype(evaluate(region["at"], "float16"), "float16")
        half = abs(centre) * region["rel"]
        worst = np.nanmax(error[np.abs(x - centre) <= half])
        assert np.nanmax(error_c[np.abs(xc - centre) <= half]) >= 0.98 * worst, (region, worst)
