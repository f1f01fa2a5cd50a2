"""The unit of work: one op applied to concrete inputs."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Case:
    """One generated test case: an op applied to concrete inputs."""

    id: str
    op: str
    dtype: str
    input_dtypes: tuple[str, ...]
    out_dtype: str
    inputs: list[np.ndarray]
    attrs: dict
    plan: str
    seed: int
    extra: dict = field(default_factory=dict)
    # the oracle's answer (conform.oracles.expectations.Expectation), attached when the case is
    # generated and kept with it in the corpus; None: computed when the case is judged
    expectation: object | None = field(default=None, compare=False, repr=False)

    @property
    def shapes(self) -> list[list[int]]:
        return [list(x.shape) for x in self.inputs]
