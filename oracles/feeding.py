"""Which input elements feed one output element.

A failure message names the worst output element and the inputs it was computed from. Each op
says how to find them (``OpDefinition.feeding``): element-aligned inputs give one value (the judge
reads them at the output's index); for reductions, windows, dot products and convolutions the
op's own rule gives a slice, a window or a patch; for data movement the one element copied is
traced through the oracle. :func:`feeding_elements` gives, per input, the elements (row-major
order) that the standard's definition combines into ``out[index]``, or ``None`` where that input
takes no part.
"""
from __future__ import annotations

import functools
import inspect
from typing import Sequence

import numpy as np

from conform.ops.indexing import moved_from
from conform.oracles._registry import definition

Feeding = list  # per input: an array of the elements feeding the output element, or None


def feeding_elements(op: str, inputs: Sequence[np.ndarray], attrs: dict,
                     index: Sequence[int], output: int = 0) -> Feeding:
    """Per input, the elements the standard combines into output element ``index`` of op
    ``op`` (row-major, padding left out), or ``None`` for an input that takes no part. Not for
    element-aligned ops, whose inputs are read at ``index`` itself (the judge does so for every
    record). ``output`` is the output's number (an op's own rule gives the same elements for
    each of its outputs, unless it has an ``output`` keyword: then it is told which).

    >>> feeding_elements("reduce_sum", [np.arange(6.0).reshape(2, 3)], {"dimensions": [1]}, [1])
    [array([3., 4., 5.])]
    """
    rule = definition(op).feeding
    if rule == "moved":
        return moved_from(op, inputs, attrs, index, range(len(inputs)), output)
    if not callable(rule):
        raise KeyError(f"op {op!r} is element-aligned: its inputs are read at the output's index")
    if _takes_output(rule):   # a rule that differs per output (Loop's final values and scans)
        return rule(inputs, attrs, index, output=output)
    return rule(inputs, attrs, index)


@functools.cache
def _takes_output(rule) -> bool:
    return "output" in inspect.signature(rule).parameters
