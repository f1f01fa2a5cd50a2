"""Special values from the standard, never from a library's fast path.

An element-wise op's spec may hold a ``special_values`` table: rows of
``{inputs: [matcher per input], output: value, source: "where the standard says so"}``, taken
from the standard's text (C11 Annex F F.10 for the math functions XLA and the spec texts leave
to IEEE/C, IEEE 754 §9.2, or the operator's own text). :func:`apply_table` applies it to an
oracle's output: at every element whose inputs match a row, the row's value replaces whatever
the oracle computed (the first matching row wins, as the standard's rows are read in order).

Input matchers (a number matches itself; zeros are written with their sign):

* ``"+0"``, ``"-0"``, ``"inf"``, ``"-inf"``, ``"nan"``, a number (``1``, ``-1``, ``0.5``);
* ``"any"`` (NaN included), ``"finite"``, ``"<0"``, ``">0"``, ``"<-1"``, ``"<1"`` (infinities
  included, zeros not where 0 is the bound),
  ``"finite<0"``, ``"finite>0"``, ``"|x|<1"``, ``"|x|>1"`` (infinities included);
* ``"odd<0"``, ``"odd>0"`` (odd integers), ``"not_odd<0"``, ``"not_odd>0"`` (not an odd
  integer: even integers, non-integers and the infinity of that sign),
  ``"finite_non_integer"``.

Output values: ``"nan"``, ``"inf"``, ``"-inf"``, ``"+0"``, ``"-0"``, a number, a multiple of
pi: ``"pi"``, ``"-pi"``, ``"pi/2"``, ``"-pi/2"``, ``"pi/4"``, ``"-pi/4"``, ``"3pi/4"``,
``"-3pi/4"`` (for a float64 reference also with its residual, the rest of the exact value), or
``"=in0"``, ``"=in1"``, ...: that input's value (``fmod(x, ±inf)`` returns ``x``).
"""
from __future__ import annotations

import functools
from fractions import Fraction
from typing import Sequence

import numpy as np

from conform.ops.multiprecision import evaluate_pair, residual_of, with_residual
from conform.ops.regions import broadcast_aligned


def _odd(x):
    with np.errstate(invalid="ignore"):
        return np.isfinite(x) & (np.fmod(x, 2.0) != 0) & (np.trunc(x) == x)


def _integer(x):
    return np.isfinite(x) & (np.trunc(x) == x)


_PREDICATES = {
    "any": lambda x: np.ones(x.shape, bool),
    "nan": np.isnan,
    "inf": lambda x: x == np.inf,
    "-inf": lambda x: x == -np.inf,
    "+0": lambda x: (x == 0) & ~np.signbit(x),
    "-0": lambda x: (x == 0) & np.signbit(x),
    "finite": np.isfinite,
    "<0": lambda x: x < 0,
    ">0": lambda x: x > 0,
    "finite<0": lambda x: np.isfinite(x) & (x < 0),
    "finite>0": lambda x: np.isfinite(x) & (x > 0),
    "<-1": lambda x: x < -1,
    "<1": lambda x: x < 1,
    "|x|<1": lambda x: np.abs(x) < 1,
    "|x|>1": lambda x: np.abs(x) > 1,
    "odd<0": lambda x: _odd(x) & (x < 0),
    "odd>0": lambda x: _odd(x) & (x > 0),
    "not_odd<0": lambda x: ~_odd(x) & (x < 0),
    "not_odd>0": lambda x: ~_odd(x) & (x > 0),
    "finite_non_integer": lambda x: np.isfinite(x) & ~_integer(x),
}

#: Multiples of pi an output may name: (numerator, denominator).
_PI_MULTIPLES = {"pi": (1, 1), "-pi": (-1, 1), "pi/2": (1, 2), "-pi/2": (-1, 2), "pi/4": (1, 4),
                 "-pi/4": (-1, 4), "3pi/4": (3, 4), "-3pi/4": (-3, 4)}
_NAMED = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "+0": 0.0, "-0": -0.0}

INPUT_MATCHERS = tuple(_PREDICATES)
OUTPUT_NAMES = tuple(_NAMED) + tuple(_PI_MULTIPLES) + ("=in0", "=in1")


def _input_copied(token) -> int | None:
    """``k`` for an output ``"=in<k>"`` (the value of input ``k``), else None."""
    if isinstance(token, str) and token.startswith("=in") and token[3:].isdigit():
        return int(token[3:])
    return None


def matcher(token) -> np.ufunc:
    """The predicate over float64 arrays that an input matcher stands for (see the module
    docstring); ValueError for an unknown one."""
    if isinstance(token, bool) or not isinstance(token, (int, float, str)):
        raise ValueError(f"input matcher {token!r} is neither a number nor one of {INPUT_MATCHERS}")
    if isinstance(token, str):
        if token not in _PREDICATES:
            raise ValueError(f"input matcher {token!r} is unknown; available: {INPUT_MATCHERS} "
                             f"or a number")
        return _PREDICATES[token]
    if token == 0:
        raise ValueError("input matcher 0 must be written with its sign: '+0' or '-0'")
    return lambda x: x == token


@functools.lru_cache(maxsize=None)
def output_value(token) -> tuple[float, float]:
    """A row's output as ``(hi, lo)``: the float64 nearest the value and the rest.

    >>> output_value("pi")
    (3.141592653589793, 1.2246467991473532e-16)

    (An output ``"=in<k>"`` has no value of its own: :func:`apply_table` copies the input.)
    """
    if isinstance(token, str) and token in _PI_MULTIPLES:
        num, den = _PI_MULTIPLES[token]
        return evaluate_pair(lambda one: one.pi() * num / den, [1.0])
    if isinstance(token, str) and token in _NAMED:
        return _NAMED[token], 0.0
    if isinstance(token, bool) or not isinstance(token, (int, float)):
        raise ValueError(f"output {token!r} is neither a number nor one of {OUTPUT_NAMES}")
    if token == 0:
        raise ValueError("output 0 must be written with its sign: '+0' or '-0'")
    hi = float(token)
    return hi, float(Fraction(token) - Fraction(hi)) if isinstance(token, int) else 0.0


def check_row(row: dict, arity: int) -> None:
    """ValueError naming the problem if ``row`` is not a valid table row for ``arity`` inputs."""
    if len(row["inputs"]) != arity:
        raise ValueError(f"inputs={row['inputs']} has {len(row['inputs'])} matchers; the op has "
                         f"{arity} inputs")
    for token in row["inputs"]:
        matcher(token)
    copied = _input_copied(row["output"])
    if copied is None:
        output_value(row["output"])
    elif copied >= arity:
        raise ValueError(f"output {row['output']!r} names input {copied}; the op has {arity} inputs")


def apply_table(table: Sequence[dict], inputs: Sequence[np.ndarray], output: np.ndarray, *,
                shapes: str = "equal", attrs: dict | None = None) -> np.ndarray:
    """``output`` (an oracle's float output, maybe carrying a residual) with every element
    whose inputs match a row of ``table`` set to that row's value (first matching row wins).
    ``shapes`` is the spec's shape relation, by which inputs broadcast to the output.

    >>> rows = [{"inputs": ["-0", 0.5], "output": "+0", "source": "C11 F.10.4.4"}]
    >>> apply_table(rows, [np.array(-0.0), np.array(0.5)], np.array(-0.0)).tolist()
    0.0
    """
    if not table or output.dtype.kind != "f" or output.size == 0 \
            or any(np.iscomplexobj(x) for x in inputs):   # the rows are C Annex F's, for reals
        return output
    wide = [broadcast_aligned(np.asarray(x, np.float64), output.shape, shapes, attrs or {})
            for x in inputs]
    hi = np.array(output, np.float64)
    lo = residual_of(output)
    lo = None if lo is None else np.array(lo)
    free = np.ones(output.shape, bool)
    with np.errstate(invalid="ignore"):
        for row in table:
            hit = free.copy()
            for token, x in zip(row["inputs"], wide):
                hit &= matcher(token)(x)
            if hit.any():
                copied = _input_copied(row["output"])
                value, rest = (wide[copied][hit], 0.0) if copied is not None else \
                    output_value(row["output"])
                hi[hit] = value
                if lo is not None:
                    lo[hit] = rest
                free &= ~hit
    return hi if lo is None else with_residual(hi, lo)


__all__ = ["INPUT_MATCHERS", "OUTPUT_NAMES", "apply_table", "check_row", "matcher",
           "output_value"]
