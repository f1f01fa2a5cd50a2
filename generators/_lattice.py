"""The input lattice a sweep of a binary element-wise op enumerates: every pair of exponents
(each operand's sign and biased exponent, all of them) times a sample of mantissas.

An operand of a float dtype with ``E`` exponent bits and ``m`` stored mantissa bits is
``(sign, biased exponent, mantissa)``; the lattice takes every one of the ``2 ** (E + 1)``
sign-and-exponent codes for each operand and, for each, the mantissas of :func:`lattice_mantissas`
(the edges 0, 1 and ``2 ** m - 1`` and :data:`RANDOM_MANTISSAS` drawn once, with a fixed seed),
in every combination. So it holds, for every pair of binades (zeros and subnormals, normals,
infinities and NaNs, both signs), the binade's first and last values, its second, and a few
inside, for both operands. Index ``i`` of the lattice is, in mixed radix,
``((code_a * 2**(E+1) + code_b) * M + mantissa_a) * M + mantissa_b`` (``M`` mantissas): the
lattice is ordered by the first operand's bit pattern, then the second's. A float32 or bfloat16
lattice holds 512**2 * 8**2 = 16,777,216 pairs, a float16 one 64**2 * 8**2 = 262,144.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS, np_dtype
from conform.generators._edges import EXHAUSTIVE_BITS, _case
from conform.spec import OpSpec

#: Mantissas of the lattice besides the edges 0, 1 and the largest: drawn (distinct, from 2 to
#: the largest but one) by ``numpy.random.default_rng(LATTICE_SEED)``.
RANDOM_MANTISSAS = 5
LATTICE_SEED = 34


def _widths(dtype: str) -> tuple[int, int]:
    """``(exponent bits, stored mantissa bits)`` of ``dtype``."""
    mantissa = FLOAT_FORMATS[dtype].precision - 1
    return EXHAUSTIVE_BITS[dtype] - 1 - mantissa, mantissa


def lattice_mantissas(dtype: str) -> np.ndarray:
    """The stored mantissas each operand of the lattice takes, ascending.

    >>> lattice_mantissas("float16").tolist()[:2], lattice_mantissas("float16").tolist()[-1]
    ([0, 1], 1023)
    """
    largest = (1 << _widths(dtype)[1]) - 1
    drawn = np.random.default_rng(LATTICE_SEED).choice(np.arange(2, largest), RANDOM_MANTISSAS,
                                                       replace=False)
    return np.array([0, 1, *sorted(int(m) for m in drawn), largest], np.int64)


def lattice_size(dtype: str) -> int:
    """How many operand pairs ``dtype``'s lattice holds.

    >>> lattice_size("float16")
    262144
    """
    codes = 1 << (_widths(dtype)[0] + 1)
    return (codes * len(lattice_mantissas(dtype))) ** 2


def lattice_description(dtype: str) -> dict:
    """What ``dtype``'s lattice is, for a sweep's summary: its size, how an index reads and the
    mantissas taken."""
    exponent, mantissa = _widths(dtype)
    return {"kind": "binary-lattice", "size": lattice_size(dtype),
            "operand": f"every sign and biased exponent ({2 ** (exponent + 1)} codes) x "
                       f"{len(lattice_mantissas(dtype))} stored mantissas of {mantissa} bits",
            "mantissas": lattice_mantissas(dtype).tolist(),
            "random_mantissas": {"count": RANDOM_MANTISSAS,
                                 "drawn_by": f"numpy.random.default_rng({LATTICE_SEED})"},
            "index": "((code_a * codes + code_b) * M + mantissa_a) * M + mantissa_b, code = "
                     "sign and biased exponent, M mantissas"}


def lattice_bits(dtype: str, first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """The bit patterns (int64) of both operands at lattice indices ``first`` to ``stop``."""
    exponent, mantissa = _widths(dtype)
    codes, mantissas = 1 << (exponent + 1), lattice_mantissas(dtype)
    index = np.arange(first, stop, dtype=np.int64)
    index, low_b = np.divmod(index, len(mantissas))
    index, low_a = np.divmod(index, len(mantissas))
    code_a, code_b = np.divmod(index, codes)
    return (code_a << mantissa) | mantissas[low_a], (code_b << mantissa) | mantissas[low_b]


def lattice_case(spec: OpSpec, dtype: str, first: int, stop: int):
    """The case of a binary element-wise op whose operands are the lattice's pairs ``first`` to
    ``stop`` (one past the last), in order (plan ``lattice``).

    >>> [x.tolist() for x in lattice_case(spec, "float32", 9, 11).inputs]   # doctest: +SKIP
    [[0.0, 0.0], [1e-45, 1.4e-45]]
    """
    size = lattice_size(dtype)
    if not 0 <= first <= stop <= size:
        raise ValueError(f"lattice range {first:#x}:{stop:#x} is outside {dtype}'s 0:{size:#x}")
    return _case(spec, dtype, f"lattice{first:x}-{stop:x}", lattice_inputs(dtype, first, stop),
                 "lattice", 0)


def lattice_inputs(dtype: str, first: int, stop: int) -> list:
    """:func:`lattice_case`'s inputs: both operands' ``dtype`` values at lattice indices
    ``first`` to ``stop``."""
    storage = np.uint32 if EXHAUSTIVE_BITS[dtype] == 32 else np.uint16
    return [bits.astype(storage).view(np_dtype(dtype)) for bits in lattice_bits(dtype, first, stop)]


__all__ = ["LATTICE_SEED", "RANDOM_MANTISSAS", "lattice_bits", "lattice_case", "lattice_description", "lattice_inputs",
           "lattice_mantissas", "lattice_size"]
