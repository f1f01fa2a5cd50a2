"""Deterministic suites: Hypothesis draws case plans, NumPy fills the arrays.

The same conform version (which pins Hypothesis) and seed give the same cases, byte for byte.
"""
from __future__ import annotations

import contextlib
import hashlib
import zlib

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from conform.generators._case import Case
from conform.generators._edges import edge_case_cases, edge_sweep_case
from conform.generators._families import FAMILIES
from conform.generators._values import PLANS, edge_values, fill, value_range
from conform.spec import OpSpec, dtype_class


def _plan_strategy(spec: OpSpec, dtype: str):
    family = FAMILIES[spec.family]

    @st.composite
    def plans(draw):
        signature = draw(family(spec, dtype))
        classes = {dtype_class(d) for d in signature.input_dtypes}
        plan_class = "float" if "float" in classes else "int" if "int" in classes else "bool"
        plan = draw(st.sampled_from(PLANS[plan_class]))
        fill_seed = draw(st.integers(0, 2**32 - 1))
        return signature, plan, fill_seed

    return plans()


@contextlib.contextmanager
def _without_local_constants():
    """Hypothesis mixes literal constants found in already-imported local modules into its draws,
    so the same seed would give different cases depending on what the process had imported.
    A suite must not depend on that: draw with an empty local-constants pool (Hypothesis is
    pinned, so this internal hook is stable for a given conform version)."""
    from hypothesis.internal.conjecture import providers

    original = providers._get_local_constants
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = original
        providers.CONSTANTS_CACHE.cache.clear()


def draw_plans(spec: OpSpec, dtype: str, *, count: int, seed: int) -> list:
    """``count`` plans for ``spec`` under ``dtype``, drawn by Hypothesis from a fixed seed."""
    drawn: list = []
    op_seed = seed ^ zlib.crc32(f"{spec.op}/{dtype}".encode())

    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck), print_blob=False, derandomize=False)
    @hypothesis_seed(op_seed)
    @given(_plan_strategy(spec, dtype))
    def collect(plan):
        drawn.append(plan)

    with _without_local_constants():
        collect()
    return drawn[:count]


def materialize(spec: OpSpec, dtype: str, index: int, plan) -> Case:
    """Turn a drawn plan into a Case with concrete input arrays."""
    signature, value_plan, fill_seed = plan
    rng = np.random.default_rng(fill_seed)
    inputs = []
    for i, (in_dtype, shape) in enumerate(zip(signature.input_dtypes, signature.shapes)):
        name = spec.inputs[min(i, len(spec.inputs) - 1)]
        low, high = value_range(spec, name, in_dtype) if dtype_class(in_dtype) != "bool" else (0, 1)
        inputs.append(fill(rng, shape=shape, dtype=in_dtype, plan=value_plan, low=low, high=high,
                           edges=edge_values(spec, in_dtype)))
    return Case(id=f"{spec.op}.{dtype}.{index}", op=spec.op, dtype=dtype,
                input_dtypes=signature.input_dtypes, out_dtype=signature.out_dtype, inputs=inputs,
                attrs=signature.attrs, plan=value_plan, seed=fill_seed)


def generate_cases(spec: OpSpec, dtype: str, *, count: int, seed: int) -> list[Case]:
    """The suite's cases for one op and dtype label.

    >>> [c.id for c in generate_cases(spec, "float32", count=2, seed=0)]   # doctest: +SKIP
    ['add.float32.0', 'add.float32.1']
    """
    plans = draw_plans(spec, dtype, count=count, seed=seed)
    cases = [materialize(spec, dtype, i, plan) for i, plan in enumerate(plans)]
    if spec.family != "elementwise":
        return cases
    sweep = edge_sweep_case(spec, dtype, seed=seed)
    return cases + ([sweep] if sweep else []) + edge_case_cases(spec, dtype, seed=seed)


def case_digest(case: Case) -> str:
    """A content hash of a case (inputs, attrs, dtypes), for determinism checks and manifests."""
    h = hashlib.sha256(repr((case.id, case.input_dtypes, case.out_dtype, sorted(case.attrs.items()))).encode())
    for x in case.inputs:
        h.update(str(x.shape).encode())
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()
