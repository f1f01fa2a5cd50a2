"""Dedicated cases on drawn shapes: an edge-value, edge-sweep, critical, midpoint or broadcast case
takes one of its op x dtype cell's drawn shapes instead of a shape of its own (issue 38's product
decision), so that a backend compiling per shape (XLA: one kernel per distinct signature) compiles
nothing for it that the drawn cases did not already need.

A dedicated case's values are laid out as before, one flat run per input; they move into the
smallest drawn shape that holds them (and :data:`~._edges.EDGE_CASE_SIZE` elements at least: the
vectorised body of a kernel), the run repeated from its start to fill the shape (every element
is one of the case's own values: the same inputs at other positions, which the judge's position
independence compares). Only a drawn case with the same input types and attributes, all inputs
of one shape, lends its shape. A case whose values no drawn shape holds (a critical case's 256
values per region, mostly) keeps its own: splitting it over several cases would add cases to
every backend to save kernels on one. A broadcast case takes the shapes of a drawn broadcasting
case (inputs of unequal shapes, none empty), filled again from its own seed.
"""
from __future__ import annotations

import numpy as np

from conform.generators._case import Case
from conform.generators._edges import EDGE_CASE_SIZE

#: The plans whose cases move onto drawn shapes (issue 38 item 4).
ONTO_DRAWN = frozenset({"edge_case", "edge_sweep", "critical", "midpoint"})


def _drawn(cases: list[Case]) -> list[Case]:
    """The cell's drawn cases (their ids end in their draw index)."""
    return [c for c in cases if c.drawn and c.inputs]


def _same_kernel(case: Case, drawn: Case) -> bool:
    return case.input_dtypes == drawn.input_dtypes and case.attrs == drawn.attrs \
        and case.out_dtype == drawn.out_dtype


def _one_shape(case: Case) -> tuple | None:
    shapes = {np.shape(x) for x in case.inputs}
    return shapes.pop() if len(shapes) == 1 else None


def host_shape(case: Case, drawn: list[Case]) -> tuple | None:
    """The smallest drawn one-shape signature able to hold ``case``'s flat inputs (None: none)."""
    size = max(int(np.size(case.inputs[0])), EDGE_CASE_SIZE)
    fitting = [shape for c in drawn if _same_kernel(case, c)
               and (shape := _one_shape(c)) is not None and int(np.prod(shape)) >= size]
    return min(fitting, key=lambda s: (int(np.prod(s)), len(s), s), default=None)


def _moved(case: Case, shape: tuple) -> Case:
    size = int(np.prod(shape))
    case.inputs = [np.ascontiguousarray(np.resize(np.asarray(x).reshape(-1), size).reshape(shape))
                   for x in case.inputs]
    return case


def _broadcast_host(case: Case, drawn: list[Case]) -> list[tuple] | None:
    for c in drawn:
        shapes = [np.shape(x) for x in c.inputs]
        if _same_kernel(case, c) and len(set(shapes)) > 1 and all(np.prod(s) > 0 for s in shapes):
            return shapes
    return None


def onto_drawn_shapes(cases: list[Case], refill) -> list[Case]:
    """``cases`` with each dedicated case (plans :data:`ONTO_DRAWN`, and ``broadcast``) on a drawn
    shape of the cell where one holds it; ``refill(case, shapes)`` makes a broadcast case's
    inputs again at the shapes given."""
    drawn = _drawn(cases)
    for case in cases:
        if case.plan in ONTO_DRAWN and _one_shape(case) is not None \
                and all(np.ndim(x) == 1 for x in case.inputs):
            shape = host_shape(case, drawn)
            if shape is not None:
                _moved(case, shape)
        elif case.plan == "broadcast":
            shapes = _broadcast_host(case, drawn)
            if shapes is not None:
                case.inputs = refill(case, shapes)
    return cases
