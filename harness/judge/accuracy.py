"""Per-element accuracy figures for a sweep's accuracy map: each element's distance from the
float64 reference in ULPs (the judge's ``ulp`` arithmetic, special values settled first), and
whether it is the correctly rounded result, whatever error model the op is judged by.

The verdict of a sweep's chunk is the judge's (:func:`~conform.harness.judge.judging.judge_many`,
under the spec's model); these figures are what the map adds to it: a histogram of ULP errors,
the share correctly rounded, the largest ULP error and where it is.
"""
from __future__ import annotations

import numpy as np

from conform.harness.judge._elements import _element_figures, _exact, _strict_zero, block_ranges, blockwise

#: Upper edges of the ULP-error buckets of an accuracy map: an element falls in the first bucket
#: whose edge is at least its error; a special-value mismatch (NaN, infinity, signed zero) in
#: the last, ``special``.
ULP_EDGES = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 256.0, 65536.0, float("inf"))
ULP_LABELS = ("0", "<=0.5", "<=1", "<=2", "<=4", "<=8", "<=16", "<=256", "<=65536", ">65536",
              "special")

#: The ULP model the figures are measured under (its bound is not used: only the error).
_MEASURE = {"ulp": 1.0, "why": "accuracy map: the distance is measured, not judged"}


def ulp_errors(actual: np.ndarray, expected: np.ndarray, out_dtype: str, *,
               subnormals: str = "ieee", signed_zero: str = "strict") -> np.ndarray:
    """Per element, ``|a - e| / ulp(e)`` in ``out_dtype``'s ULPs of the float64 reference's
    binade (:func:`~conform.harness.judge.compare.compare`'s ``ulp`` model), 0 where special
    values match, inf where they do not (a zero of the other sign too, unless ``signed_zero``
    is the op model's ``any``); under ``ftz`` a zero for a subnormal reference is 0.

    >>> ulp_errors(np.float32([1.0]), np.array([1.0 + 2**-23]), "float32").tolist()
    [1.0]
    """
    with np.errstate(all="ignore"):
        error, _, special, _, _ = _element_figures(np.asarray(actual), np.asarray(expected, np.float64),
                                                   out_dtype, {**_MEASURE, "signed_zero": signed_zero},
                                                   None, subnormals == "ftz")
    return np.where(special, np.inf, error)


def correctly_rounded(actual: np.ndarray, expected: np.ndarray, out_dtype: str, *,
                      signed_zero: str = "strict") -> np.ndarray:
    """Per element, whether ``actual`` is the float64 reference rounded once to nearest even into
    ``out_dtype`` (NaN for NaN; zeros of the same sign, unless ``signed_zero`` is ``any``).

    >>> correctly_rounded(np.float32([1.0, 1.0]), np.array([1.0, 1.0 + 2**-23]), "float32").tolist()
    [True, False]
    """
    with np.errstate(all="ignore"):
        return ~_exact(np.asarray(actual), np.asarray(expected, np.float64), out_dtype,
                       _strict_zero({"signed_zero": signed_zero}, out_dtype))


def ulp_buckets(errors: np.ndarray) -> np.ndarray:
    """The count of ``errors`` (from :func:`ulp_errors`) in each :data:`ULP_LABELS` bucket: the
    first whose edge is at least the error (a negative one in the first), an infinite one in
    ``special``, a NaN in none.

    >>> ulp_buckets(np.array([0.0, 0.3, 1.0, 3.0, np.inf])).tolist()
    [1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 1]
    """
    errors = np.asarray(errors, np.float64).ravel()
    # per block (in the cache), how many errors are at most each finite edge, finite, infinite:
    # one comparison and count per edge, no per-element bucket index; a block whose largest
    # error is finite (no NaN, no infinity) has all its errors at most every edge from that
    # error up: those edges are counted without comparing (a sweep's blocks mostly err by a
    # few ULPs)
    at_most = np.zeros(len(ULP_EDGES) + 1, np.int64)
    for low, high in block_ranges(errors.size):
        block = errors[low:high]
        largest = block.max() if block.size else 0.0
        clean = largest < np.inf   # (False for an infinity, and for a NaN)
        for k, edge in enumerate(_FINITE_EDGES):
            at_most[k] += block.size if clean and largest <= edge else np.count_nonzero(block <= edge)
        at_most[-2] += block.size if clean else np.count_nonzero(block < np.inf)
        at_most[-1] += 0 if clean else np.count_nonzero(block == np.inf)
    return np.append(np.diff(at_most[:-1], prepend=0), at_most[-1])


_FINITE_EDGES = tuple(np.float64(edge) for edge in ULP_EDGES[:-1])


__all__ = ["ULP_EDGES", "ULP_LABELS", "block_ranges", "blockwise", "correctly_rounded", "ulp_buckets", "ulp_errors"]
