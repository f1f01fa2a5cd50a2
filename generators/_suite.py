"""Deterministic suites: Hypothesis draws case plans, NumPy fills the arrays.

The same conform version (which pins Hypothesis) and seed give the same cases, byte for byte.
"""
from __future__ import annotations

import contextlib
import hashlib
import random
import zlib

import numpy as np
from hypothesis import strategies as st
from hypothesis.control import BuildContext
from hypothesis.errors import StopTest
from hypothesis.internal.conjecture.data import ConjectureData

from conform.generators._case import Case
from conform.generators._corpus import load_or_generate
from conform.generators._edges import edge_case_cases, edge_sweep_case
from conform.generators._families import FAMILIES
from conform.generators._values import PLANS, edge_values, fill, value_range
from conform.oracles.expectations import expect
from conform.spec import OpSpec, dtype_class


CASES_PER_SIGNATURE = 4  # cases sharing one drawn signature: fewer compilations and sessions
# At most this many signatures per op x dtype: a larger budget adds cases (values) to the same
# signatures instead of new shapes, so compilations stay bounded (each costs a jax worker ~15 ms
# even from the persistent cache). Budgets up to CASES_PER_SIGNATURE * MAX_SIGNATURES cases are
# unaffected.
MAX_SIGNATURES = 16


def _signature_strategy(spec: OpSpec, dtype: str):
    family = FAMILIES[spec.family]

    @st.composite
    def signatures(draw):
        signature = draw(family(spec, dtype))
        classes = {dtype_class(d) for d in signature.input_dtypes}
        plans = PLANS["float" if "float" in classes else "int" if "int" in classes else "bool"]
        first_plan = draw(st.integers(0, len(plans) - 1))
        base_seed = draw(st.integers(0, 2**32 - 1))
        return signature, plans, first_plan, base_seed

    return signatures()


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


def _draw(strategy, rng: random.Random, attempts: int = 100):
    """One example of ``strategy`` drawn from ``rng``'s stream by Hypothesis's choice provider,
    without its test engine (no mutation, no shrinking): the draws are a pure function of the
    seed. A draw rejected by a filter is retried with the next seed from ``rng``."""
    for _ in range(attempts):
        data = ConjectureData(random=random.Random(rng.getrandbits(64)))
        try:
            with BuildContext(data, is_final=True, wrapped_test=None):
                return data.draw(strategy)
        except StopTest:
            continue
    raise RuntimeError(f"could not draw from {strategy!r} in {attempts} attempts")


def draw_plans(spec: OpSpec, dtype: str, *, count: int, seed: int) -> list:
    """``count`` plans ``(signature, value_plan, fill_seed)`` for ``spec`` under ``dtype``.

    Hypothesis draws one signature (shapes, attributes) per CASES_PER_SIGNATURE cases, up to
    MAX_SIGNATURES signatures (then each takes more cases); the cases sharing a signature cycle
    through the value plans, each with its own fill seed.
    """
    strategy = _signature_strategy(spec, dtype)
    rng = random.Random(seed ^ zlib.crc32(f"{spec.op}/{dtype}".encode()))
    per_signature = max(CASES_PER_SIGNATURE, -(-count // MAX_SIGNATURES))
    plans = []
    with _without_local_constants():
        while len(plans) < count:
            signature, value_plans, first, base_seed = _draw(strategy, rng)
            for k in range(min(per_signature, count - len(plans))):
                fill_seed = (base_seed + 0x9E3779B1 * k) & 0xFFFFFFFF
                plans.append((signature, value_plans[(first + k) % len(value_plans)], fill_seed))
    return plans


def materialize(spec: OpSpec, dtype: str, index: int, plan, edges: dict | None = None) -> Case:
    """Turn a drawn plan into a Case with concrete input arrays.

    ``edges`` caches the spec's edge values per input dtype across calls.
    """
    signature, value_plan, fill_seed = plan
    edges = {} if edges is None else edges
    rng = np.random.default_rng(fill_seed)
    inputs = []
    for i, (in_dtype, shape) in enumerate(zip(signature.input_dtypes, signature.shapes)):
        name = spec.inputs[min(i, len(spec.inputs) - 1)]
        low, high = value_range(spec, name, in_dtype) if dtype_class(in_dtype) != "bool" else (0, 1)
        if in_dtype not in edges:
            edges[in_dtype] = edge_values(spec, in_dtype)
        inputs.append(fill(rng, shape=shape, dtype=in_dtype, plan=value_plan, low=low, high=high,
                           edges=edges[in_dtype]))
    return Case(id=f"{spec.op}.{dtype}.{index}", op=spec.op, dtype=dtype,
                input_dtypes=signature.input_dtypes, out_dtype=signature.out_dtype, inputs=inputs,
                attrs=signature.attrs, plan=value_plan, seed=fill_seed)


def generate_cases(spec: OpSpec, dtype: str, *, count: int, seed: int,
                   use_cache: bool = False) -> list[Case]:
    """The suite's cases for one op and dtype label (from the corpus cache if ``use_cache``).

    >>> [c.id for c in generate_cases(spec, "float32", count=2, seed=0)]   # doctest: +SKIP
    ['add.float32.0', 'add.float32.1']
    """
    return load_or_generate(spec, dtype, count=count, seed=seed, use_cache=use_cache,
                            generate=lambda: _generate(spec, dtype, count=count, seed=seed))


def _generate(spec: OpSpec, dtype: str, *, count: int, seed: int) -> list[Case]:
    plans = draw_plans(spec, dtype, count=count, seed=seed)
    edges: dict = {}
    cases = [materialize(spec, dtype, i, plan, edges) for i, plan in enumerate(plans)]
    if spec.family == "elementwise":
        sweep = edge_sweep_case(spec, dtype, seed=seed)
        cases += ([sweep] if sweep else []) + edge_case_cases(spec, dtype, seed=seed)
    for case in cases:  # the oracle runs once per case, here, not once per run and backend
        case.expectation = expect(spec, case)
    return cases


def case_digest(case: Case) -> str:
    """A content hash of a case (inputs, attrs, dtypes), for determinism checks and manifests."""
    h = hashlib.sha256(repr((case.id, case.input_dtypes, case.out_dtype, sorted(case.attrs.items()))).encode())
    for x in case.inputs:
        h.update(str(x.shape).encode())
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()
