"""Hypothesis draws the structure of a suite's cases: signatures (dtypes, shapes, attributes),
value plans and fill seeds. Imported only when a corpus is generated: a run from the corpus
cache does not load Hypothesis.
"""
from __future__ import annotations

import contextlib
import random
import threading
import zlib

from hypothesis import strategies as st
from hypothesis.control import BuildContext
from hypothesis.errors import StopTest
from hypothesis.internal.conjecture.data import ConjectureData
from hypothesis.strategies._internal.strategies import FilteredStrategy, SearchStrategy

from conform.generators import kit
from conform.caches import file_digest
from conform.generators._covering import design, factors, pair_coverage
from conform.generators._signature import dtype_labels
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


_BASE_SEED = st.integers(0, 2**32 - 1)


@st.composite
def _signatures(draw, family, extra: tuple = ()):
    signature = draw(family)
    kind = plan_kind(signature.input_dtypes)
    plans = PLANS[kind] + (extra if kind in ("float", "complex") else ())
    first_plan = draw(kit.st.integers(0, len(plans) - 1))
    base_seed = draw(_BASE_SEED)
    return signature, plans, first_plan, base_seed


def _signature_strategy(spec: OpSpec, dtype: str):
    # the family's strategy made once per op x dtype, not once per draw: each new one is
    # validated again (the draws are the same); a spec's conditioning adds its value plans
    return _signatures(_family(spec, dtype), tuple(spec.conditioning.get("plans", ())))


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
    nested = "validate" in vars(FilteredStrategy)   # (an outer draw's patch holds)
    FilteredStrategy.validate = _validate_once
    try:
        yield
    finally:
        providers._get_local_constants, providers.CONSTANTS_CACHE = original, theirs
        if not nested:
            del FilteredStrategy.validate   # SearchStrategy's again


def _validate_once(strategy) -> None:
    """``SearchStrategy.validate`` of a filtered strategy, which then stays validated.

    Hypothesis's ``FilteredStrategy.do_validate`` ends by running ``__init__`` again on the
    strategy (to take the predicates it could rewrite), which empties the record that
    ``validate`` had just made: every later draw validated the strategy anew (replaying its
    predicates, parsing a lambda predicate's source). The state one validation leaves is a fixed point of another (the same predicates replayed on the
    same reified strategy), so the choices drawn are the same (the corpus digests pin that)."""
    SearchStrategy.validate(strategy)
    strategy.validate_called[threading.get_ident()] = True


#: The constants cache of conform's draws (see _without_local_constants), made on first use.
_CONSTANTS: list = []


def _draw(strategy, rng: random.Random, attempts: int = 100, data_type=ConjectureData):
    """One example of ``strategy`` drawn from ``rng``'s stream by Hypothesis's choice provider,
    without its test engine (no mutation, no shrinking): the draws are a pure function of the
    seed. A draw rejected by a filter is retried with the next seed from ``rng``. ``data_type``
    may be :class:`~conform.generators._quick_data.QuickData` (the same draws, less
    bookkeeping)."""
    for _ in range(attempts):
        data = data_type(random=random.Random(rng.getrandbits(64)))
        try:
            with BuildContext(data, is_final=True, wrapped_test=None):
                return data.draw(strategy)
        except StopTest:
            continue
    raise RuntimeError(f"could not draw from {strategy!r} in {attempts} attempts")


def draw_plans(spec: OpSpec, dtype: str, *, count: int, seed: int) -> list:
    """``count`` plans ``(signature, value_plan, fill_seed)`` for ``spec`` under ``dtype``
    (more where the op's covering design has more rows than the budget draws signatures).

    Hypothesis draws one signature (shapes, attributes) per CASES_PER_SIGNATURE cases, up to
    MAX_SIGNATURES signatures (then each takes more cases); the cases sharing a signature cycle
    through the value plans, each with its own fill seed. The first signatures are drawn each
    with one row of the op's covering design fixed (:mod:`._covering`); where the design has
    more rows than that, each row gets a signature of its own and the cases are spread over
    them (at least one each).
    """
    plans = []
    for (signature, value_plans, first, base_seed), size, _ in drawn_signatures(
            spec, dtype, count=count, seed=seed):
        for j in range(size):
            fill_seed = (base_seed + 0x9E3779B1 * j) & 0xFFFFFFFF
            plans.append((signature, value_plans[(first + j) % len(value_plans)], fill_seed))
    return plans


def drawn_signatures(spec: OpSpec, dtype: str, *, count: int, seed: int):
    """The signatures :func:`draw_plans` draws, in order, each as ``((signature, value_plans,
    first_plan, base_seed), cases, designed)``, drawn as they are consumed; ``designed``: drawn
    with a row of the op's covering design fixed (the first ones)."""
    strategy = _signature_strategy(spec, dtype)
    rng = random.Random(seed ^ zlib.crc32(f"{spec.op}/{dtype}".encode()))
    per_signature = max(CASES_PER_SIGNATURE, -(-count // MAX_SIGNATURES))
    rows = design(spec, dtype, seed=seed, slots=-(-count // per_signature))
    for k, size in enumerate(_signature_sizes(count, per_signature, len(rows))):
        with _without_local_constants(), kit.designing(rows[k] if k < len(rows) else {}):
            drawn = _draw(strategy, rng)
        yield drawn, size, k < len(rows)


def _signature_sizes(count: int, per_signature: int, rows: int) -> list[int]:
    """The cases of each signature: ``per_signature`` each (the last the rest) for ``count``
    cases, or, where the design has more ``rows`` than that makes signatures, ``max(count,
    rows)`` cases spread over ``rows`` signatures."""
    if rows <= -(-count // per_signature):
        return [min(per_signature, count - k) for k in range(0, count, per_signature)]
    total = max(count, rows)
    return [total // rows + (k < total % rows) for k in range(rows)]


def attribute_pair_coverage(spec, *, count: int, seed: int) -> dict | None:
    """:func:`pair_coverage` of the signatures the suite draws for ``spec`` (every dtype label,
    ``count`` cases each, ``seed``), or None for fewer than two factors. The design's rows are
    drawn first, label after label, and the drawing stops once every pair is covered (the
    rest can add none); else every signature of the corpus counts. Computed once per process
    for a spec file's content, budget and seed."""
    if len(factors(spec)) < 2:
        return None
    key = (spec.op, spec.path, file_digest(spec.path) if spec.path else b"", count, seed)
    if key not in _COVERAGE:
        _COVERAGE[key] = _drawn_coverage(spec, count=count, seed=seed)
    return _COVERAGE[key]


#: The coverage of each (op, spec file and its digest, budget, seed) computed in this process.
_COVERAGE: dict = {}


def _drawn_coverage(spec, *, count: int, seed: int) -> dict:
    seen, rest = [], []
    for label in dtype_labels(spec):
        stream = drawn_signatures(spec, label, count=count, seed=seed)
        for (signature, *_), _, designed in stream:
            seen.append(signature.attrs)
            if not designed:
                rest.append(stream)
                break
        found = pair_coverage(spec, seen)
        if found["covered"] == found["pairs"]:
            return found
    seen += [signature.attrs for stream in rest for (signature, *_), _, _ in stream]
    return pair_coverage(spec, seen)
