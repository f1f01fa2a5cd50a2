"""The single wrapper that enforces the oracles' contract. The oracles themselves live in the op
modules (:mod:`conform.ops`), found by op name."""
from __future__ import annotations

import functools
import inspect
from typing import Sequence

import numpy as np

from conform.ops import UnknownOp as UnknownOracle
from conform.ops import OpDefinition, definition
from conform.ops.multiprecision import residual_of
from conform.ops.special_values import apply_table
from conform.widening import widen
from conform.dtypes import dtype_name


def evaluate(name, inputs: Sequence[np.ndarray], attrs: dict, *, rounded64: bool = False,
             special_values=(), shapes: str = "equal") -> tuple[np.ndarray, ...]:
    """Run op ``name``'s oracle (or that of ``name``, an :class:`~conform.ops.OpDefinition`:
    a program's) on widened copies of ``inputs``; returns a tuple of arrays. ``rounded64``:
    run its ``rounded64`` hook instead (the correctly rounded float64 results).
    ``special_values`` is the spec's table (:mod:`conform.ops.special_values`), applied to
    every float output (``shapes``: the spec's shape relation).

    >>> evaluate("add", [np.float32([1.5]), np.float32([2.25])], {})
    (array([3.75]),)
    """
    return evaluate_refined(name, inputs, attrs, rounded64=rounded64,
                            special_values=special_values, shapes=shapes)[0]


def evaluate_refined(name, inputs: Sequence[np.ndarray], attrs: dict, *, rounded64: bool = False,
                     special_values=(), shapes: str = "equal") -> tuple[tuple, tuple]:
    """:func:`evaluate`'s outputs and, per output, the residual ``lo`` the oracle computed
    beyond float64 (the reference is ``hi + lo``; None where it computed none).

    >>> outputs, residuals = evaluate_refined("exp", [np.array([1.0])], {})
    >>> outputs[0].tolist(), residuals[0].tolist()
    ([2.718281828459045], [1.4456468917292502e-16])
    """
    found = name if isinstance(name, OpDefinition) else definition(name)
    name = found.name
    function = found.rounded64 if rounded64 else found.oracle
    if found.takes_dtypes if function is found.oracle else _takes_dtypes(function):
        attrs = {**attrs, "dtypes": tuple(dtype_name(np.asarray(x).dtype) for x in inputs)}
    widened = [widen(x) for x in inputs]
    with np.errstate(all="ignore"):
        outputs = function(*widened, **attrs)
    if isinstance(outputs, tuple):   # NumPy gives a 0-d result of a string array as a bare str
        outputs = tuple(_text_array(o) if isinstance(o, str) else o for o in outputs)
    if not isinstance(outputs, tuple) or not all(isinstance(o, np.ndarray | np.generic) for o in outputs):
        raise TypeError(f"oracle {name!r} must return a tuple of arrays, got {type(outputs).__name__}")
    if special_values:
        outputs = tuple(apply_table(special_values, widened, o, shapes=shapes, attrs=attrs)
                        for o in outputs)
    residuals = tuple(residual_of(o) for o in outputs)
    return tuple(np.asarray(o) for o in outputs), residuals


def _text_array(text: str) -> np.ndarray:
    """``text`` as a 0-d string array (an object array holding the str)."""
    out = np.empty((), object)
    out[()] = text
    return out


@functools.cache   # inspecting a signature costs ~50 us, and a function's never changes
def _takes_dtypes(function) -> bool:
    """Whether ``function`` has a ``dtypes`` keyword (the inputs' dtype names)."""
    return "dtypes" in inspect.signature(function).parameters


def accumulation_length(op: str, shapes: Sequence[tuple], attrs: dict) -> int:
    """How many terms are summed into one output element (for the accumulation error model)."""
    hook = definition(op).accumulation_length
    if hook is None:
        raise KeyError(f"op {op!r} has no accumulation length; it cannot use the accumulation model")
    return int(hook(shapes, attrs))


__all__ = ["UnknownOracle", "accumulation_length", "evaluate", "evaluate_refined", "widen"]
