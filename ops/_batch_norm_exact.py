"""float64 references of XLA's batch-norm ops beyond float64 (ops/xla_batch_norm.py,
ops/xla_batch_norm_grad.py).

A float64 result's bound is a few float64 roundings, of the order of the error of the formula
evaluated in float64 itself, so the reference must be finer: each feature's sums, means and
the population variance are exact rationals (python-flint ``fmpq``: every float64 is one), the
one irrational step, ``1 / sqrt(var + epsilon)``, an Arb ball raised in precision until it is
within 2**-110 relative (:func:`conform.ops.multiprecision.evaluate_pairs`), and each result is
returned as ``hi + lo`` (:class:`~conform.ops.multiprecision.Refined`). A feature with an
infinite or NaN input, or an element whose exact result is not a finite real number (``var +
epsilon <= 0``), keeps the float64 evaluation's value (a special value, which the judge settles
first); a zero result keeps that evaluation's sign (a rational has none).
"""
from __future__ import annotations

import math

import numpy as np

from conform.ops.multiprecision import evaluate_pairs, with_residual


def all_float64(dtypes) -> bool:
    """Whether the inputs (their dtype names, None when unknown) are float64: only then is the
    reference taken beyond float64 (a narrower result's bound is far above float64's error)."""
    return dtypes is not None and all(d == "float64" for d in dtypes)


def q(value: float):
    """A float64 as the rational it is (python-flint ``fmpq``)."""
    from flint import fmpq
    return fmpq(*float(value).as_integer_ratio())


def _rational_pair(value) -> tuple[float, float]:
    """A rational as ``(hi, lo)``: the float64 nearest it and the float64 nearest the rest."""
    try:
        hi = int(value.p) / int(value.q)   # Python's int division rounds correctly to nearest
    except OverflowError:
        return (math.inf if value > 0 else -math.inf), 0.0
    rest = value - q(hi)
    return hi, int(rest.p) / int(rest.q)


class Refiner:
    """Per-element ``(hi, lo)`` of outputs computed first in float64 (``fast``), replaced where
    a finer value is given; a zero keeps the fast value's sign (a rational or a ball has none)."""

    def __init__(self, *fast: np.ndarray):
        self.hi = [np.array(f, np.float64) for f in fast]
        self.lo = [np.zeros(np.shape(f)) for f in fast]

    def rational(self, k: int, index, value) -> None:
        """Output ``k`` at ``index`` is the rational ``value``."""
        self._set(k, index, _rational_pair(value))

    def arb_rows(self, k: int, indices, fn, rows) -> None:
        """Output ``k`` at each of ``indices`` is ``fn`` (of Arb balls) on that row of float64
        arguments; where ``fn``'s value is not a finite real number the fast value stays."""
        for index, pair in zip(indices, evaluate_pairs(fn, rows)):
            if pair is not None:
                self._set(k, index, pair)

    def _set(self, k, index, pair):
        hi, lo = pair
        if hi == 0:
            hi, lo = math.copysign(0.0, self.hi[k][index]), 0.0
        self.hi[k][index], self.lo[k][index] = hi, lo

    def outputs(self) -> tuple:
        """Each output as a :class:`~conform.ops.multiprecision.Refined` ``hi + lo``."""
        return tuple(with_residual(h, lo) for h, lo in zip(self.hi, self.lo))


def feature_rows(x: np.ndarray, feature: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, indices)``: each feature's values as a row, and each value's index in ``x``."""
    indices = np.moveaxis(np.indices(x.shape), 0, -1)
    rows = np.moveaxis(x, feature, 0).reshape(x.shape[feature], -1)
    return rows, np.moveaxis(indices, feature, 0).reshape(x.shape[feature], -1, x.ndim)


def population_statistics(row: np.ndarray):
    """The exact mean and population variance (rationals) of a row of float64 values."""
    values = [q(v) for v in row.tolist()]
    mean = sum(values) / len(values)
    return mean, sum((v - mean) * (v - mean) for v in values) / len(values)
