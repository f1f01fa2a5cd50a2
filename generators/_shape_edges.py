"""The ``boundary`` and ``must_reject`` plans: cases at the edges of an op's shape arithmetic.

An op module declares them (see :class:`conform.op_registry.OpDefinition`): ``boundaries``
gives signatures where the text's shape formulas (pooling and convolution output sizes with
pads, strides and dilations, resize lengths, slice clamping, pad cropping) sit at their
boundaries (an output length of 0 or 1, exactly one window fitting): the text defines the
result there, so they are judged as any case. ``invalid`` gives inputs the text forbids (shapes
that do not match, indices out of range where the text calls them an error): their expected
answer is a refusal, and each names the sentence of the text that forbids it.

Every suite holds them, filled from a seed derived from the run's, so they are deterministic.
"""
from __future__ import annotations

import numpy as np

from conform.generators import kit
from conform.generators._case import Case
from conform.generators._edges import seed_of
from conform.generators._materialize import materialize
from conform.generators._values import PLANS, plan_kind
from conform.spec import OpSpec

#: The keys of a must-reject case's ``extra``: the text's sentence, and its model's outputs.
FORBIDS, OUTPUT_SHAPES = "must_reject", "output_shapes"


def _value_plan(signature) -> str:
    """The ordinary value plan of the signature's input types (their first plan)."""
    return PLANS[plan_kind(signature.input_dtypes)][0]


def _materialized(spec: OpSpec, dtype: str, suffix: str, seed: int, signature) -> tuple:
    """The case ``<op>.<dtype>.<suffix>`` of ``signature``, filled by its ordinary value plan
    from a seed of its own, and that seed."""
    fill_seed = seed_of(spec, dtype, suffix, seed)
    case = materialize(spec, dtype, 0, (signature, _value_plan(signature), fill_seed))
    case.id = f"{spec.op}.{dtype}.{suffix}"
    return case, fill_seed


def boundary_cases(spec: OpSpec, dtype: str, *, seed: int) -> list[Case]:
    """The cases of the op's ``boundaries`` hook under ``dtype`` (none without it): each
    signature filled by its ordinary value plan (then, for a ``kit.Boundary``, given its
    values), ``plan`` "boundary"."""
    hook = spec.definition.boundaries
    cases = []
    for k, item in enumerate(hook(kit, spec, dtype) if hook is not None else ()):
        signature = item.signature if isinstance(item, kit.Boundary) else item
        case, _ = _materialized(spec, dtype, f"boundary{k}", seed, signature)
        if isinstance(item, kit.Boundary):
            case.inputs = [np.asarray(x) for x in item.values(list(case.inputs))]
        case.plan = "boundary"
        cases.append(case)
    return cases


def must_reject_cases(spec: OpSpec, dtype: str, *, seed: int) -> list[Case]:
    """The cases of the op's ``invalid`` hook under ``dtype`` (none without it): each filled as
    a valid case would be, then broken by its ``breaks``; ``plan`` "must_reject", and ``extra``
    holds the sentence that forbids it and the output shapes its model declares. They get no
    oracle answer: the answer is a refusal."""
    hook = spec.definition.invalid
    cases = []
    for k, rejected in enumerate(hook(kit, spec, dtype) if hook is not None else ()):
        case, fill_seed = _materialized(spec, dtype, f"invalid{k}", seed, rejected.signature)
        if rejected.breaks is not None:
            rng = np.random.default_rng(fill_seed + 1)
            case.inputs = [np.asarray(x) for x in rejected.breaks(rng, list(case.inputs))]
        case.plan = "must_reject"
        case.extra = {**case.extra, FORBIDS: rejected.forbids,
                      OUTPUT_SHAPES: [list(s) for s in rejected.output_shapes]}
        cases.append(case)
    return cases


def must_reject(case) -> str | None:
    """The sentence of the text that forbids ``case`` (a ``must_reject`` case), else None."""
    return case.extra.get(FORBIDS) if case.extra else None


__all__ = ["FORBIDS", "OUTPUT_SHAPES", "boundary_cases", "must_reject", "must_reject_cases"]
