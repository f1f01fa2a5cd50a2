"""What a suite's cases are drawn as: per op, dtype labels and signatures (no Hypothesis here)."""
from __future__ import annotations

from typing import Callable, NamedTuple


class Signature(NamedTuple):
    input_dtypes: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    attrs: dict
    out_dtype: str


class Boundary(NamedTuple):
    """A boundary case whose input values matter (an op's ``boundaries`` hook may give these
    beside plain signatures): the ``signature``, and ``values(inputs) -> inputs`` setting the
    values that put it on the boundary (a slice's starts and ends) once the case is filled."""

    signature: Signature
    values: Callable


class MustReject(NamedTuple):
    """An input the op's text forbids (an op module's ``invalid`` hook gives them): the
    ``signature`` its inputs are filled by, the sentence of the text that ``forbids`` it
    (quoted), the ``output_shapes`` a model of it declares (the formula's, as if it were
    valid), and ``breaks(rng, inputs) -> inputs``: the filled (and, by the op's ``values`` hook,
    made valid) inputs with the forbidden values put in (None: the signature alone is
    forbidden, a shape or an attribute)."""

    signature: Signature
    forbids: str
    output_shapes: tuple
    breaks: Callable | None = None


def fixed_attrs(spec) -> dict:
    """The spec's fixed attributes (``signature.attrs``), e.g. leaky_relu's alpha: every case
    carries them, so the oracle and every binding see the same values."""
    return dict(spec.signature.get("attrs", {}))


def dtype_labels(spec) -> list[str]:
    """The dtype labels a spec is run under: its dtypes, or what its op's ``dtype_labels`` hook
    makes of them (e.g. 'SRC->DST' pairs for a conversion)."""
    hook = spec.definition.dtype_labels
    return hook(spec) if hook is not None else list(spec.dtypes)
