"""Hypothesis draws the structure of a suite's cases: signatures (dtypes, shapes, attributes),
value plans and fill seeds. Imported only when a corpus is generated: a run from the corpus
cache does not load Hypothesis.
"""
from __future__ import annotations

import contextlib
import random
import zlib

from hypothesis import strategies as st
from hypothesis.control import BuildContext
from hypothesis.errors import StopTest
from hypothesis.internal.conjecture.data import ConjectureData

from conform.generators import kit
from conform.generators._generic import draw_signature
from conform.generators._values import PLANS, plan_kind
from conform.spec import OpSpec


CASES_PER_SIGNATURE = 4  # cases sharing one drawn signature: fewer compilations and sessions
# At most this many signatures per op x dtype: a larger budget adds cases (values) to the same
# signatures instead of new shapes, so compilations stay bounded (each costs a jax worker ~15 ms
# even from the persistent cache). Budgets up to CASES_PER_SIGNATURE * MAX_SIGNATURES cases are
# unaffected.
MAX_SIGNATURES = 16


# The composites are made once, here, not per op x dtype: making one inspects its function's
# source (~1 ms), and a strategy made once is validated once.
@st.composite
def _family(draw, spec: OpSpec, dtype: str):
    hook = spec.definition.draw
    return draw_signature(draw, spec, dtype) if hook is None else hook(draw, kit, spec, dtype)


_FIRST_PLAN = {kind: st.integers(0, len(plans) - 1) for kind, plans in PLANS.items()}
_BASE_SEED = st.integers(0, 2**32 - 1)


@st.composite
def _signatures(draw, family):
    signature = draw(family)
    kind = plan_kind(signature.input_dtypes)
    first_plan = draw(_FIRST_PLAN[kind])
    base_seed = draw(_BASE_SEED)
    return signature, PLANS[kind], first_plan, base_seed


def _signature_strategy(spec: OpSpec, dtype: str):
    # the family's strategy made once per op x dtype, not once per draw: each new one is
    # validated again (the draws are the same)
    return _signatures(_family(spec, dtype))


@contextlib.contextmanager
def _without_local_constants():
    """Hypothesis mixes literal constants found in already-imported local modules into its draws,
    so the same seed would give different cases depending on what the process had imported.
    A suite must not depend on that: draw with an empty local-constants pool (Hypothesis is
    pinned, so this internal hook is stable for a given conform version)."""
    from hypothesis.internal.conjecture import providers

    original, theirs = providers._get_local_constants, providers.CONSTANTS_CACHE
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    # The permitted constants per kind of draw, cached under the empty pool: kept from one
    # op x dtype to the next (rebuilding them for each cost a third of the drawing time), apart
    # from the cache Hypothesis keeps under the modules' constants (left as it was)
    if not _CONSTANTS:
        _CONSTANTS.append(type(theirs)(theirs.max_size))
    providers.CONSTANTS_CACHE = _CONSTANTS[0]
    try:
        yield
    finally:
        providers._get_local_constants, providers.CONSTANTS_CACHE = original, theirs


#: The constants cache of conform's draws (see _without_local_constants), made on first use.
_CONSTANTS: list = []


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
