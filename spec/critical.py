"""Critical input regions: where an op's accuracy or special-value behaviour changes (overflow
and underflow thresholds, saturation, branch points and poles, result binade crossings, large
arguments), declared in a spec's ``critical_regions`` as expressions over a dtype's constants.

An entry::

    - {name: overflow, at: "log(max_finite)", ulps: 64, mirror: false, why: "exp(x) > max_finite"}

``at`` is an arithmetic expression (``+ - * / **``, numbers, parentheses) over the constants
of the case's dtype (:data:`CONSTANTS`), the functions in :data:`FUNCTIONS` and, for a
multi-input op, the values of the op's *other* inputs (element-wise: pow's overflow threshold
``(emax + 1) / log2(abs(lhs))``). It is resolved per dtype at draw time, in float64, and rounded
to the dtype. The region is ``ulps`` units in the last place of the dtype either side of that
centre, or a relative half-width ``rel`` (``[c (1 - rel), c (1 + rel)]``). ``input`` names the
input drawn in it (default: the first); ``mirror: true`` adds the region at ``-at``.

>>> resolve("log(max_finite)", "float32")
88.72283935546875
"""
from __future__ import annotations

import ast
import functools
import math

import numpy as np

from conform.dtypes import FLOAT_FORMATS, round_to_format

#: Function names an ``at`` expression may call (each applied element-wise in float64).
FUNCTIONS = {"log": np.log, "log2": np.log2, "log1p": np.log1p, "exp": np.exp, "exp2": np.exp2,
             "sqrt": np.sqrt, "abs": np.abs, "atanh": np.arctanh, "acosh": np.arccosh,
             "asinh": np.arcsinh, "floor": np.floor}

_OPERATORS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply,
              ast.Div: np.divide, ast.Pow: np.power}


def constants(dtype: str) -> dict[str, float]:
    """The named constants of float dtype ``dtype`` an expression may use.

    ``eps`` is the spacing of 1 (2**(1 - precision)); ``emin``/``emax`` the exponents of the
    smallest normal and the largest finite number; ``precision`` the significand bits.

    >>> constants("float16")["max_finite"], constants("float16")["eps"]
    (65504.0, 0.0009765625)
    """
    fmt = FLOAT_FORMATS[dtype]
    return {"max_finite": fmt.max_finite, "min_normal": fmt.min_normal,
            "min_subnormal": fmt.min_subnormal, "max_subnormal": fmt.min_normal - fmt.min_subnormal,
            "eps": 2.0 ** (1 - fmt.precision), "emax": float(fmt.emax), "emin": float(fmt.emin),
            "precision": float(fmt.precision), "pi": math.pi, "e": math.e}


#: Constant names, the same for every dtype.
CONSTANTS = tuple(constants("float32"))


class RegionExpressionError(ValueError):
    """An ``at`` expression that does not parse or names something it may not."""


@functools.lru_cache(maxsize=None)
def parse(expression: str, inputs: tuple[str, ...] = ()) -> ast.Expression:
    """The checked syntax tree of ``expression``; it may name :data:`CONSTANTS`, call
    :data:`FUNCTIONS` and name ``inputs`` (the op's other inputs).

    >>> parse("1 + ").body  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    RegionExpressionError: at='1 + ' does not parse ...
    """
    try:
        tree = ast.parse(str(expression), mode="eval")
    except SyntaxError as exc:
        raise RegionExpressionError(f"at={expression!r} does not parse: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in CONSTANTS + inputs + tuple(FUNCTIONS):
            raise RegionExpressionError(
                f"at={expression!r} names {node.id!r}; known: {', '.join(CONSTANTS + inputs)} "
                f"and the functions {', '.join(FUNCTIONS)}")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in FUNCTIONS and not node.keywords):
            raise RegionExpressionError(f"at={expression!r}: only {', '.join(FUNCTIONS)} "
                                        "may be called, with positional arguments")
        if not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.USub, ast.UAdd,
                                 ast.Constant, ast.Name, ast.Call, ast.Load, *_OPERATORS)):
            raise RegionExpressionError(f"at={expression!r} uses {type(node).__name__}, which "
                                        "a region expression may not")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise RegionExpressionError(f"at={expression!r} holds {node.value!r}, not a number")
    return tree


def evaluate(expression, dtype: str, values: dict | None = None):
    """``expression`` (a number or an ``at`` string) in float64 under ``dtype``'s constants and
    the input arrays ``values`` (not rounded: see :func:`resolve`)."""
    values = values or {}
    if not isinstance(expression, str):
        return np.float64(expression)
    own = constants(dtype) if dtype in FLOAT_FORMATS else {}   # an integer type: none
    names = {**own, **{k: np.asarray(v, np.float64) for k, v in values.items()}}
    tree = parse(expression, tuple(values))

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant):
            return np.float64(node.value)
        if isinstance(node, ast.Name):
            return names[node.id]
        if isinstance(node, ast.UnaryOp):
            return -walk(node.operand) if isinstance(node.op, ast.USub) else walk(node.operand)
        if isinstance(node, ast.Call):
            return FUNCTIONS[node.func.id](*map(walk, node.args))
        return _OPERATORS[type(node.op)](walk(node.left), walk(node.right))

    with np.errstate(all="ignore"):
        return walk(tree)


def to_dtype(values, dtype: str) -> np.ndarray:
    """float64 ``values`` rounded (to nearest even) to ``dtype``, as float64."""
    values = np.asarray(values, np.float64)
    return values if dtype == "float64" else round_to_format(values, FLOAT_FORMATS[dtype])


def resolve(expression, dtype: str, values: dict | None = None):
    """The region centre ``expression`` names under ``dtype``, rounded to ``dtype`` (a float,
    or an array when it names input ``values``).

    >>> resolve("log(2 * max_finite)", "float16")
    11.78125
    """
    found = to_dtype(evaluate(expression, dtype, values), dtype)
    return float(found) if found.ndim == 0 else found


def ulp(values, dtype: str) -> np.ndarray:
    """The spacing of ``dtype`` at each of ``values`` (that of the subnormals below min_normal)."""
    fmt = FLOAT_FORMATS[dtype]
    magnitude = np.abs(np.asarray(values, np.float64))
    _, e = np.frexp(magnitude)
    exponent = np.where(magnitude == 0, fmt.emin, np.maximum(e - 1, fmt.emin))
    return np.ldexp(1.0, exponent - fmt.precision + 1)
