"""Validation of a spec's ``properties``: what its standard promises beyond one element's error
(harness/judge/properties.py judges them). The schema checks each entry's form; this checks
what the schema cannot: that the property can be read off the op's cases."""
from __future__ import annotations

from pathlib import Path

from conform.spec._errors import SpecError, line_of

#: Kinds that compare an element's output with its own input (or with another element's):
#: they need an element-wise op of one input.
UNARY_KINDS = ("monotone", "symmetry", "fixed_points")


def check_properties(data: dict, root, path: Path, *, elementwise: bool, outputs: list) -> None:
    """Raise a SpecError (file, line, field) for a ``properties`` entry the judge could not
    check on the op's cases: a reversed interval, an output the op lacks, a comparison of
    inputs with outputs on an op that is not element-wise of one input, row sums of an op
    without an ``axis`` or ``axes`` attribute."""
    inputs = data["signature"]["inputs"]
    attrs = data["signature"].get("attrs", {})
    for i, entry in enumerate(data.get("properties", ())):
        kind = next(k for k in entry if k not in ("source", "output"))
        where = ["properties", i, kind]
        problem = None
        if kind in ("range", "fixed_points") and entry[kind][0] > entry[kind][1]:
            problem = f"{kind}={entry[kind]} is reversed: low > high"
        elif kind in UNARY_KINDS and not (elementwise and len(inputs) == 1):
            problem = f"{kind} compares an element's output with its input: it needs an " \
                      f"element-wise op of one input ({len(inputs)} inputs)"
        elif kind == "row_sum" and not {"axis", "axes"} & set(attrs):
            problem = "row_sum sums along the op's axis or axes attribute: the op has neither"
        elif entry.get("output", outputs[0]) not in outputs:
            where, problem = ["properties", i, "output"], \
                f"output={entry['output']!r} names no output (outputs: {outputs})"
        if problem:
            raise SpecError(path, line_of(root, where), ".".join(map(str, where)), problem)
