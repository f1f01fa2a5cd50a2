"""The registry of oracles and the single wrapper that enforces their contract."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from conform.oracles import activation, elementwise, logical, movement, reduction, unary_math

# Every oracle module, listed explicitly; each public ``oracle_<op>`` function is registered as <op>.
MODULES = (elementwise, unary_math, activation, logical, reduction, movement)


def _collect(modules) -> dict[str, Callable[..., tuple]]:
    found: dict[str, Callable[..., tuple]] = {}
    for module in modules:
        for name, fn in vars(module).items():
            if name.startswith("oracle_") and callable(fn):
                op = name.removeprefix("oracle_")
                if op in found:
                    raise ImportError(f"oracle {op!r} is defined in two modules: "
                                      f"{found[op].__module__} and {module.__name__}")
                found[op] = fn
    return found


ORACLES: dict[str, Callable[..., tuple]] = _collect(MODULES)


class UnknownOracle(KeyError):
    pass


def widen(array: np.ndarray) -> np.ndarray:
    """An input as the oracle sees it: float64 for floats, int64 for integers, bool for bool."""
    kind = array.dtype.kind
    if kind == "b":
        return array.astype(np.bool_)
    if kind in "iu":
        return array.astype(np.int64)
    return array.astype(np.float64)


def evaluate(name: str, inputs: Sequence[np.ndarray], attrs: dict) -> tuple[np.ndarray, ...]:
    """Run oracle ``name`` on widened copies of ``inputs``; returns a tuple of arrays.

    >>> evaluate("add", [np.float32([1.5]), np.float32([2.25])], {})
    (array([3.75]),)
    """
    try:
        oracle = ORACLES[name]
    except KeyError:
        raise UnknownOracle(f"unknown oracle {name!r}; available: {sorted(ORACLES)}") from None
    with np.errstate(all="ignore"):
        outputs = oracle(*(widen(x) for x in inputs), **attrs)
    if not isinstance(outputs, tuple) or not all(isinstance(o, np.ndarray | np.generic) for o in outputs):
        raise TypeError(f"oracle {name!r} must return a tuple of arrays, got {type(outputs).__name__}")
    return tuple(np.asarray(o) for o in outputs)


def accumulation_length(op: str, shapes: Sequence[tuple], attrs: dict) -> int:
    """How many terms are summed into one output element (for the accumulation error model)."""
    if op in ("reduce_sum", "reduce_mean"):
        return int(np.prod([shapes[0][d] for d in attrs["dimensions"]], dtype=np.int64))
    if op == "dot_general":
        return int(shapes[0][-1])
    if op == "conv":
        return int(np.prod(shapes[1][1:], dtype=np.int64))
    raise KeyError(f"op {op!r} has no accumulation length; it cannot use the accumulation model")
