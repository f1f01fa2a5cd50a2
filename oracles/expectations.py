"""What the standard says a case's output is: the oracle's result plus the figures the error model
needs. It depends on the case alone (never on a backend), so it is computed once per case, when
the case is generated, and kept with it in the corpus."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from conform.oracles._registry import accumulation_length, evaluate
from conform.ops.regions import RegionContext, region_mask


class Expectation(NamedTuple):
    """The oracle's answer for one case. (A named tuple: a run loads one per case from the
    corpus, and it is made in half the time of a frozen dataclass.)"""

    expected: np.ndarray              # the float64 (or int64, bool) reference output
    impl_mask: np.ndarray | None      # elements the standard leaves open (None: no such element)
    accumulation: tuple | None        # (S, n) for the accumulation error model, else None


def expect(spec, case) -> Expectation:
    """Evaluate ``spec``'s oracle on ``case`` with its implementation-defined regions and, for
    the accumulation model, the sum of magnitudes ``S`` and accumulation length ``n``."""
    (expected,) = evaluate(spec.oracle, case.inputs, case.attrs)
    model = spec.model_for(case.out_dtype)
    regions = [r["region"] for r in spec.implementation_defined]
    length = None
    if spec.definition.accumulation_length is not None:
        length = accumulation_length(spec.op, [x.shape for x in case.inputs], case.attrs)
    impl = None
    if regions:
        context = RegionContext(inputs=[np.asarray(x) for x in case.inputs], expected=expected,
                                out_dtype=case.out_dtype, accumulation_length=length,
                                shapes=spec.signature.get("shapes", "equal"),
                                float_oracle=lambda xs: evaluate(spec.oracle, xs, case.attrs)[0],
                                attrs=case.attrs, oracle_with=lambda xs, **more: evaluate(
                                    spec.oracle, xs, {**case.attrs, **more})[0])
        impl = region_mask(regions, context)
        impl = impl if impl.any() else None
    accumulation = None
    if "accumulation" in model:
        (magnitude_sum,) = evaluate(spec.oracle, [np.abs(x) for x in case.inputs], case.attrs)
        accumulation = (magnitude_sum, length)
    return Expectation(expected, impl, accumulation)
