"""The midpoint value plan: every suite of an op judged by the correctly_rounded model holds a
case whose inputs' exact results are rounding midpoints of the output type (checked here in
exact rational arithmetic, not by the helpers that built them), with results beside them, in
normal and subnormal ranges, of both signs, with odd and even neighbours."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from conform.generators import dtype_labels, generate_cases
from conform.generators._edges import midpoint_case
from conform.ops import _midpoints as mid
from conform.dtypes import FLOAT_FORMATS

#: The exact result of each op whose hook draws midpoints, on Fractions.
EXACT = {
    "add": lambda a, b: a + b, "onnx_add": lambda a, b: a + b, "nnef_add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b, "onnx_sub": lambda a, b: a - b,
    "nnef_sub": lambda a, b: a - b,
    "multiply": lambda a, b: a * b, "onnx_mul": lambda a, b: a * b,
    "nnef_mul": lambda a, b: a * b,
    "divide": lambda a, b: a / b, "onnx_div": lambda a, b: a / b, "nnef_div": lambda a, b: a / b,
    "square": lambda x: x * x,
    "leaky_relu": lambda x: x * Fraction(5, 16) if x < 0 else x,
    "convert_element_type": lambda x: x, "onnx_cast": lambda x: x,
    "onnx_cast_like": lambda x, _like: x,
}


def _fraction(value) -> Fraction:
    value = np.asarray(value)
    return Fraction(int(value)) if value.dtype.kind in "iu" or value.dtype.name in ("int4", "uint4") \
        else Fraction(float(value))


def midpoint(value: Fraction, dtype: str) -> bool:
    """Independent of ``mid.is_midpoint``: ``value`` lies strictly between two adjacent values
    of ``dtype`` at equal distance (the multiples of its binade's spacing)."""
    fmt = FLOAT_FORMATS[dtype]
    magnitude = abs(value)
    if magnitude == 0:
        return False
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    exponent -= magnitude < Fraction(2) ** exponent     # now 2**exponent <= magnitude
    exponent = min(exponent, fmt.emax)                  # past the top: the overflow threshold
    quantum = Fraction(2) ** (max(exponent, fmt.emin) - fmt.precision + 1)
    below = (magnitude // quantum) * quantum
    return magnitude != below and magnitude - below == quantum / 2


def test_is_midpoint_known_answers():
    assert mid.is_midpoint(Fraction(2049), "float16") and not mid.is_midpoint(Fraction(2050), "float16")
    assert mid.is_midpoint(Fraction(2**53 + 1), "float64")
    assert mid.is_midpoint(Fraction(2) ** -150, "float32")        # half the smallest subnormal
    assert mid.is_midpoint(Fraction(65520), "float16")            # the overflow threshold
    assert not mid.is_midpoint(Fraction(65536), "float16") and not mid.is_midpoint(0, "float16")


def _cases(specs):
    for name in sorted(EXACT):
        spec = specs[name]
        for label in dtype_labels(spec):
            case = midpoint_case(spec, label, seed=0)
            if case is not None:
                yield name, label, case


def test_every_midpoint_case_holds_exact_midpoints_and_their_neighbours(specs):
    seen = set()
    for name, label, case in _cases(specs):
        seen.add(name)
        assert case.plan == "midpoint" and case.inputs[0].size >= 8, case.id
        rows = zip(*[[_fraction(v) for v in x.ravel()] for x in case.inputs]) \
            if case.inputs[-1].ndim else [(_fraction(v), 0) for v in case.inputs[0].ravel()]
        values = [EXACT[name](*row) for row in rows]
        ties = sum(midpoint(v, case.out_dtype) for v in values)
        assert ties >= min(8, len(values) // 4), f"{case.id}: {ties} midpoints of {len(values)}"
        assert ties < len(values) or name.endswith(("add", "sub")), \
            f"{case.id}: no results beside the midpoints"
    assert seen == set(EXACT)


@pytest.mark.parametrize("source, target", [("float32", "bfloat16"), ("float64", "float16"),
                                            ("float16", "float8_e4m3fn"), ("int32", "float32")])
def test_conversion_midpoints_cover_signs_subnormals_and_both_parities(source, target):
    values = mid.conversion_midpoints(np.random.default_rng(1), source, target, 64)
    exact = [_fraction(v) for v in values]
    ties = [v for v in exact if midpoint(v, target)]
    fmt = FLOAT_FORMATS[target]
    assert {v > 0 for v in ties} == {True, False}
    below = [int(abs(v) // mid.spacing(v, fmt)) % 2 for v in ties]   # the lower neighbour's parity
    assert set(below) == {0, 1}
    if source.startswith("float"):
        assert any(abs(v) < Fraction(fmt.min_normal) for v in ties), "no subnormal midpoint"
    assert any(not midpoint(v, target) for v in exact), "no neighbours"


def test_ops_with_no_possible_ties_draw_no_midpoint_case(specs):
    for name in ("sqrt", "reciprocal"):
        assert all(midpoint_case(specs[name], label, seed=0) is None
                   for label in dtype_labels(specs[name]))


def test_the_suite_holds_the_midpoint_case(specs):
    ids = [c.id for c in generate_cases(specs["multiply"], "float32", count=4, seed=0)]
    assert "multiply.float32.midpoint" in ids
    ids = [c.id for c in generate_cases(specs["convert_element_type"], "float32->bfloat16",
                                        count=4, seed=0)]
    assert "convert_element_type.float32->bfloat16.midpoint" in ids
    # an op judged by another model draws none
    assert not any(c.plan == "midpoint" for c in generate_cases(specs["exp"], "float32",
                                                                 count=4, seed=0))
