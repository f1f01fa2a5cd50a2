"""The unit of work: one op applied to concrete inputs."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np


class RemadeInputs(list):
    """A case's input arrays that ``make(*args)`` makes (a sweep's bit patterns, say), and that
    pickle as that recipe: a backend's worker remakes them instead of receiving them. The
    arrays here are made read-only, so that they stay what the recipe makes; a list whose
    arrays were replaced pickles as a plain list of them.

    >>> inputs = RemadeInputs([np.arange(3)], np.arange, (3,))   # doctest: +SKIP
    >>> pickle.loads(pickle.dumps(inputs))                       # doctest: +SKIP
    [array([0, 1, 2])]
    """

    def __init__(self, arrays, make, args: tuple):
        super().__init__(arrays)
        for array in arrays:
            array.flags.writeable = False
        self._made, self._recipe = tuple(arrays), (make, args)

    def __reduce__(self):
        if len(self) == len(self._made) and all(a is b for a, b in zip(self, self._made)):
            return _remade, self._recipe
        return list, (list(self),)


def _remade(make, args: tuple) -> list:
    """The arrays ``make(*args)`` makes, as a list (writable: a worker's own)."""
    return list(make(*args))


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
    # the shapes of the oracle's outputs, without their values: what a backend's process gets
    # instead of the expectation (see for_backend)
    output_shapes: tuple | None = field(default=None, compare=False, repr=False)

    def for_backend(self) -> "Case":
        """This case as a backend's process receives it: without the oracle's answer, which
        the backend must not see, but with its outputs' shapes (a model declares them)."""
        shapes = self.output_shapes
        if shapes is None and self.expectation is not None:
            shapes = tuple(np.shape(part.expected) for part in self.expectation)
        if shapes is None and "output_shapes" in self.extra:   # a must-reject case's model's
            shapes = tuple(tuple(shape) for shape in self.extra["output_shapes"])
        stripped = copy.copy(self)   # (a copy of the fields, not of the arrays: cheap)
        stripped.expectation, stripped.output_shapes = None, shapes
        return stripped

    @property
    def shapes(self) -> list[list[int]]:
        return [list(x.shape) for x in self.inputs]

    @property
    def drawn(self) -> bool:
        """Whether the plans drew the case (its id ends in its draw index), not a dedicated
        case (``sweep``, ``edge3``, ``critical``, ...)."""
        return self.id.rsplit(".", 1)[-1].isdigit()
