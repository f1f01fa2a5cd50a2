"""The correctly rounded float64 references (ops/_rounded.py, the ops' rounded64 hooks) against
exact rational arithmetic with a rounding written out here, on random operands over the whole
float64 range and on operands whose exact results are float64 midpoints; the narrow-type
references (the float64 oracle rounded once) against the same; and the expectations the judge
reads for a float64 tie."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from conform.ops import _midpoints as mid
from conform.ops._rounded import (converted64, exact_add, exact_divide, exact_multiply,
                                  exact_sqrt, exact_subtract)
from conform.oracles import evaluate
from conform.dtypes import FLOAT_FORMATS

P, EMIN, EMAX = 53, -1022, 1023


def round_half_even(value: Fraction, p=P, emin=EMIN, emax=EMAX) -> float:
    """``value`` rounded to nearest, ties to even, into the binary format (p, emin, emax): the
    significand scaled to an integer and rounded by hand (an independent path: no float division)."""
    if value == 0:
        return 0.0
    sign, magnitude = (-1 if value < 0 else 1), abs(value)
    e = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if magnitude < Fraction(2) ** e:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - p + 1)
    scaled = magnitude / quantum
    whole, rest = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rest
    if twice > scaled.denominator or (twice == scaled.denominator and whole % 2 == 1):
        whole += 1
    result = whole * quantum
    if result > (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax:
        return sign * math.inf
    return sign * math.ldexp(whole, int(math.log2(quantum)))


def _random_floats(rng, n):
    exponents = rng.integers(-1074, 1024, n)
    return rng.uniform(1, 2, n) * np.exp2(exponents.astype(float)) * rng.choice([-1, 1], n)


OPERATIONS = [(exact_add, lambda a, b: a + b), (exact_subtract, lambda a, b: a - b),
              (exact_multiply, lambda a, b: a * b), (exact_divide, lambda a, b: a / b)]


@pytest.mark.parametrize("function, exact", OPERATIONS)
def test_basic_operations_match_exact_rational_rounding_on_random_operands(function, exact):
    rng = np.random.default_rng(7)
    a, b = _random_floats(rng, 1500), _random_floats(rng, 1500)
    b[::7] = a[::7] * rng.uniform(0.5, 2, len(a[::7]))    # cancellations and quotients near 1
    for x, y in zip(a.tolist(), b.tolist()):
        got = function(x, y)
        want = round_half_even(exact(Fraction(x), Fraction(y)))
        assert got == want, f"{function.__name__}({x!r}, {y!r}) = {got!r}, want {want!r}"


@pytest.mark.parametrize("construct, function, exact", [
    (mid.sum_midpoints, exact_add, lambda a, b: a + b),
    (mid.product_midpoints, exact_multiply, lambda a, b: a * b),
    (mid.quotient_midpoints, exact_divide, lambda a, b: a / b),
])
def test_float64_ties_round_to_even(construct, function, exact):
    a, b = construct(np.random.default_rng(3), "float64")
    ties = 0
    for x, y in zip(a.tolist(), b.tolist()):
        value = exact(Fraction(x), Fraction(y))
        ties += mid.is_midpoint(value, "float64")
        assert function(x, y) == round_half_even(value), (function.__name__, x, y)
    assert ties >= len(a) // 2


def test_square_root_is_the_correctly_rounded_root():
    rng = np.random.default_rng(11)
    for x in np.abs(_random_floats(rng, 1500)).tolist() + [5e-324, 2.0, 1.7976931348623157e308]:
        r = Fraction(exact_sqrt(x))
        ulp = Fraction(2) ** (max(math.frexp(float(r))[1] - 1, EMIN) - P + 1)
        assert (r - ulp / 2) ** 2 < x < (r + ulp / 2) ** 2, x


@pytest.mark.parametrize("x, y, want", [
    (-0.0, -0.0, -0.0), (-0.0, 0.0, 0.0), (1.0, -1.0, 0.0),
    (math.inf, -math.inf, math.nan), (1e308, 1e308, math.inf),
])
def test_add_special_values_and_zero_signs(x, y, want):
    got = exact_add(x, y)
    assert (math.isnan(got) and math.isnan(want)) or (got == want and
                                                      math.copysign(1, got) == math.copysign(1, want))


@pytest.mark.parametrize("function, x, y, want", [
    (exact_multiply, -0.0, 3.0, -0.0), (exact_multiply, 0.0, math.inf, math.nan),
    (exact_multiply, -1e-300, 1e-300, -0.0), (exact_divide, 1.0, -0.0, -math.inf),
    (exact_divide, 0.0, 0.0, math.nan), (exact_divide, -1.0, math.inf, -0.0),
    (exact_divide, 5e-324, 2.0, 0.0), (exact_divide, 1.5e-323, 2.0, 1e-323),
])
def test_products_and_quotients_special_values(function, x, y, want):
    got = function(x, y)
    assert (math.isnan(got) and math.isnan(want)) or (got == want and
                                                      math.copysign(1, got) == math.copysign(1, want))


def test_integer_conversion_to_float64_rounds_once_to_even():
    values = np.array([2**53 + 1, 2**53 + 3, -(2**63), 2**62 + 2**10 + 1], np.int64)
    assert converted64(values, "int64").tolist() == [
        round_half_even(Fraction(int(v))) for v in values]
    as_uint = np.array([2**64 - 1], np.uint64).astype(np.int64)
    assert converted64(as_uint, "uint64").tolist() == [2.0 ** 64]


@pytest.mark.parametrize("op, construct", [("add", mid.sum_midpoints), ("onnx_add", mid.sum_midpoints),
                                           ("nnef_mul", mid.product_midpoints),
                                           ("divide", mid.quotient_midpoints)])
def test_the_rounded64_hooks_give_the_exact_rounding(op, construct):
    a, b = construct(np.random.default_rng(5), "float64")
    (got,) = evaluate(op, [a, b], {}, rounded64=True)
    exact = {"add": Fraction.__add__, "onnx_add": Fraction.__add__, "nnef_mul": Fraction.__mul__,
             "divide": Fraction.__truediv__}[op]
    assert got.tolist() == [round_half_even(exact(Fraction(x), Fraction(y)))
                            for x, y in zip(a.tolist(), b.tolist())]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("op, construct, exact", [
    ("add", mid.sum_midpoints, Fraction.__add__),
    ("multiply", mid.product_midpoints, Fraction.__mul__),
    ("divide", mid.quotient_midpoints, Fraction.__truediv__),
])
def test_narrow_references_round_the_float64_oracle_once_correctly(dtype, op, construct, exact):
    """Figueroa 1995: the float64 result rounded once more is the correct rounding for p-bit
    operands, p <= 24; here on ties and their neighbours, the hardest inputs."""
    from conform.harness.judge.compare import round_to_dtype

    fmt = FLOAT_FORMATS[dtype]
    a, b = construct(np.random.default_rng(9), dtype)
    (wide,) = evaluate(op, [a, b], {})
    got = round_to_dtype(wide, dtype).astype(np.float64).tolist()
    want = [round_half_even(exact(Fraction(float(x)), Fraction(float(y))), fmt.precision,
                            fmt.emin, fmt.emax) for x, y in zip(a, b)]
    assert got == want


def test_expectations_of_a_float64_tie_are_the_exact_rounding():
    """A float64 case whose sum is a float64 midpoint: the judge's expected value is the even
    neighbour, computed by the rounded64 hook, not the oracle's hardware sum."""
    from conform.generators._case import Case
    from conform.oracles.expectations import expect
    from conform.spec import load_specs

    a = np.array([1.0 + 2.0 ** -52, 1.0])
    b = np.array([2.0 ** -53, 2.0 ** -53])
    case = Case(id="add.float64.t", op="add", dtype="float64", input_dtypes=("float64",) * 2,
                out_dtype="float64", inputs=[a, b], attrs={}, plan="midpoint", seed=0)
    (answer,) = expect(load_specs()["add"], case)
    assert answer.expected.tolist() == [1.0 + 2.0 ** -51, 1.0]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float8_e4m3fn",
                                   "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"])
def test_narrow_rounding_is_single_and_ties_to_even(dtype):
    """round_to_dtype (round_to_format for bfloat16 and float 8) on every kind of midpoint of
    the format, normal and subnormal, and on the float64 values one float64 ULP either side:
    the hand-written rounding of the exact value (ml_dtypes' float64 -> bfloat16 cast goes
    through float32 and would round twice)."""
    from conform.harness.judge.compare import round_to_dtype

    fmt = FLOAT_FORMATS[dtype]
    ties = mid.midpoints_of(np.random.default_rng(2), dtype, 400)
    values = np.concatenate([ties, np.nextafter(ties, np.inf), np.nextafter(ties, -np.inf)])
    values = values[np.abs(values) < fmt.max_finite]          # overflow: judged elsewhere
    with np.errstate(all="ignore"):
        got = round_to_dtype(values, dtype).astype(np.float64)
    want = [round_half_even(Fraction(v), fmt.precision, fmt.emin, fmt.emax) for v in values.tolist()]
    if not fmt.has_negative_zero:
        want = [w if w != 0 else 0.0 for w in want]
    assert got.tolist() == want
    assert np.array_equal(np.signbit(got), np.signbit(np.array(want)))
