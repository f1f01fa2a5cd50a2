"""What the ONNX activation modules share: float attributes as ONNX stores them and as an
evaluation in T reads them, ULPs of T, the finishing of a derived bound, and the ONNX lowering
passing the case's attributes.

A derived bound (``docs/error-models.md``, model ``derived``) is a first-order error analysis of
an evaluation the text admits: each IEEE 754 operation correctly rounded (half an ULP of its
result in T), each elementary function within ``b`` ULPs of T (OpenCL C 3.0 §7.4, named in the
spec's ``constants``), each float attribute rounded into T (the operators' function bodies
``CastLike`` it to the input's type). :func:`finish` turns the first-order sum of ``k`` such
terms into a bound of every order.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS, round_to_format


def f32(value: float) -> float:
    """A float attribute as an ONNX node stores it (float32).

    >>> f32(0.2)
    0.20000000298023224
    """
    return float(np.float32(value))


def in_type(value: float, dtype: str) -> float:
    """The float attribute ``value`` (stored as float32) rounded into ``dtype``, as the
    operators' function bodies ``CastLike`` it to T (float32 and float64 hold it exactly).

    >>> in_type(0.2, "float16")
    0.199951171875
    """
    stored = f32(value)
    if dtype in ("float32", "float64"):
        return stored
    return float(round_to_format(np.float64(stored), FLOAT_FORMATS[dtype]))


def attr_error(value: float, dtype: str, exact: float | None = None) -> float:
    """How far the attribute as T holds it lies from the value the text means: ``exact`` (a
    constant the text states, such as HardSwish's 1/6), else the float32 the node carries."""
    wanted = f32(value) if exact is None else exact
    return max(abs(wanted - in_type(value, dtype)), abs(wanted - f32(value)))


def ulp(values, dtype: str) -> np.ndarray:
    """The ULP of ``dtype`` in the binade of each float64 value, clamped at the smallest normal
    (a zero's is the smallest subnormal; an infinity or NaN gives inf).

    >>> ulp(np.array([1.0, 0.0, 3.0]), "float16").tolist()
    [0.0009765625, 5.960464477539063e-08, 0.001953125]
    """
    fmt = FLOAT_FORMATS[dtype]
    with np.errstate(divide="ignore", invalid="ignore"):
        magnitude = np.abs(np.asarray(values, np.float64))
        exponent = np.floor(np.log2(np.where(np.isfinite(magnitude), magnitude, 1.0)))
        spacing = np.exp2(np.maximum(exponent, fmt.emin) - fmt.precision + 1)
    return np.where(np.isfinite(magnitude), spacing, np.inf)


def half_ulp(values, dtype: str) -> np.ndarray:
    """The error of one correctly rounded operation whose exact result is ``values``: half an
    ULP, or the whole smallest subnormal of float64, whose half float64 cannot hold.

    >>> half_ulp(np.array([1.0, 1e-320]), "float64").tolist()
    [1.1102230246251565e-16, 5e-324]
    """
    spacing = ulp(values, dtype)
    half = 0.5 * spacing
    return np.where(half > 0, half, spacing)


def finish(first_order, expected, dtype: str, roundings: int) -> np.ndarray:
    """A first-order bound of ``roundings`` relative errors each below ``k u`` made a bound of
    every order (each term grows by at most ``(1 - u)**-roundings``), plus ``roundings``
    smallest subnormals for results rounded in the subnormal range; 0 where the exact result is
    not finite (the judge settles special values first); NaN (the region
    ``unbounded_evaluation``) where the first-order bound is itself undefined."""
    fmt = FLOAT_FORMATS[dtype]
    grown = np.expm1(-roundings * np.log1p(-fmt.unit_roundoff))
    bound = np.asarray(first_order, np.float64) * (1 + grown) + roundings * fmt.min_subnormal
    return np.where(np.isfinite(np.asarray(expected, np.float64)), bound, 0.0)


def onnx_with_attrs(case, graph) -> None:
    """One node of the binding's operator over every input, with the case's attributes (float
    attributes as floats: an ONNX attribute's type follows the Python value's)."""
    attrs = {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
             for k, v in case.attrs.items()}
    graph.node(graph.op_type, graph.inputs, **attrs)


def in_dtype(value: float, x: np.ndarray):
    """The float attribute ``value`` as a scalar of ``x``'s NumPy type (the numpy backend's
    reading of ``CastLike``)."""
    return x.dtype.type(f32(value))
