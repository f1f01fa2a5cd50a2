"""Length cases: one element of a longer case again, alone in a tensor of one element.

An element-wise result is a function of its own inputs (ONNX IR, "element-wise"; XLA's
element-wise ops alike): it may not depend on the tensor's length, as a vectorised body, its
scalar remainder and a one-element fast path may make it. Each element-wise op x dtype cell
gets one case (``<op>.<dtype>.length``) holding, in a tensor of one element per input, the
inputs of element :data:`ELEMENT` of its *partner*, the cell's critical case or else its largest
drawn case whose inputs all have one shape. The case follows its partner in the suite and
names it (``extra["length_of"]``, ``extra["element"]``); the runner keeps the two in one reply
and the judge compares their results bit for bit (harness/judge/consistency.py,
``length_dependence``). Every such case has the shape ``(1,) * rank``: few new kernels.
"""
from __future__ import annotations

import numpy as np

from conform.generators._case import Case
from conform.generators._edges import seed_of
from conform.spec import OpSpec

#: The partner's element repeated alone: past a first vector of 8 (a vectorised body's
#: element, where a scalar prologue or a 1-element path would compute it otherwise).
ELEMENT = 8


def _partner(cases: list[Case]) -> Case | None:
    """The cell's critical case, else its largest drawn case, whose inputs share one shape of
    more than :data:`ELEMENT` elements (None: no such case)."""
    usable = [c for c in cases if c.inputs and not c.extra
              and len({np.shape(x) for x in c.inputs}) == 1 and np.size(c.inputs[0]) > ELEMENT]
    critical = [c for c in usable if c.plan == "critical"]
    drawn = sorted((c for c in usable if c.drawn),
                   key=lambda c: -np.size(c.inputs[0]))
    return (critical + drawn + [None])[0]


def length_cases(spec: OpSpec, dtype: str, cases: list[Case], *, seed: int) -> list[Case]:
    """``cases`` with the length case of ``spec`` x ``dtype`` right after its partner (none
    where the op is not element-wise, is random, or no case can be a partner)."""
    if not spec.elementwise or getattr(spec.definition, "distribution", None) is not None:
        return cases
    partner = _partner(cases)
    if partner is None:
        return cases
    inputs = [np.ascontiguousarray(np.asarray(x).reshape(-1)[ELEMENT:ELEMENT + 1]
                                   .reshape((1,) * np.ndim(x))) for x in partner.inputs]
    case = Case(id=f"{spec.op}.{dtype}.length", op=spec.op, dtype=dtype,
                input_dtypes=partner.input_dtypes, out_dtype=partner.out_dtype, inputs=inputs,
                attrs=dict(partner.attrs), plan="length",
                seed=seed_of(spec, dtype, "length", seed),
                extra={"length_of": partner.id, "element": ELEMENT})
    at = cases.index(partner) + 1
    return cases[:at] + [case] + cases[at:]
