"""References beyond float64 (conform/ops/multiprecision.py): the double-double ``hi + lo`` of
the float64 transcendental oracles against an independent 100-digit mpmath evaluation, the exact
split of a ball's midpoint, the portable path (no oracle reads ``long double``), and the residual
kept in the corpus."""
from __future__ import annotations

import dataclasses
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from conform.generators._corpus_format import answer_arrays, answers_from_arrays
from conform.generators._suite import answer_digest, generate_cases
from conform.ops.multiprecision import ZIV_START, evaluate_pair, evaluate_pairs, refined
from conform.oracles._registry import evaluate, evaluate_refined
from conform.oracles.expectations import Expectation, expect
from conform.spec import load_specs

mpmath = pytest.importorskip("mpmath")
ROOT = Path(__file__).resolve().parents[2]

#: op -> the exact function in mpmath (at 100 digits) and the arguments sampled: ordinary ones,
#: near overflow, tiny (subnormal results too), and classically hard ones (huge trigonometric
#: arguments, results next to a pole or a branch point).
M = mpmath
UNARY = {
    "exp": (M.exp, [0.5, -3.25, 709.78, 709.782712893384, -745.1, -708.4, 1e-300, 2.0 ** -60]),
    "log": (M.log, [0.1, 3.0, 1e308, 5e-324, 1 + 2.0 ** -52, 1 - 2.0 ** -53, 2.2250738585072014e-308]),
    "log2": (lambda x: M.log(x, 2), [0.1, 3.0, 1e308, 5e-324, 1 + 2.0 ** -52, 1023.999]),
    "log1p": (M.log1p, [1e-300, -0.5, 2.0 ** -60, 1e308, -1 + 2.0 ** -53, 5e-324]),
    "expm1": (M.expm1, [1e-300, -0.5, 2.0 ** -60, 709.7, -40.0, 5e-324]),
    "sin": (M.sin, [1e22, 1e300, 3.141592653589793, 355.0, 103993.0, 1e-300, 5e-324, 0.5]),
    "cos": (M.cos, [1e22, 1e300, 1.5707963267948966, 355.0, 1e-300, 0.5]),
    "tan": (M.tan, [1e22, 1.5707963267948966, -1.5707963267948966, 1e-300, 0.5]),
    "atan": (M.atan, [1e308, 1e-300, 0.5, -7.25, 5e-324]),
    "asin": (M.asin, [1 - 2.0 ** -53, -0.5, 1e-300, 5e-324]),
    "acos": (M.acos, [1 - 2.0 ** -53, -1 + 2.0 ** -53, 0.5, 1e-300]),
    "sinh": (M.sinh, [710.475, -710.4, 1e-300, 0.25, 5e-324]),
    "cosh": (M.cosh, [710.475, -710.4, 1e-300, 0.25]),
    "tanh": (M.tanh, [19.0625, -0.25, 1e-300, 5e-324]),
    "asinh": (M.asinh, [1e308, -1e-300, 0.75]),
    "acosh": (M.acosh, [1 + 2.0 ** -52, 1e308, 2.5]),
    "atanh": (M.atanh, [1 - 2.0 ** -53, -0.5, 1e-300]),
    "cbrt": (lambda x: M.sign(x) * M.cbrt(abs(x)), [3.0, -1e308, 5e-324, 1e-300]),
    "rsqrt": (lambda x: 1 / M.sqrt(x), [3.0, 5e-324, 1e308, 2.0 ** -1022]),
    "logistic": (lambda x: 1 / (1 + M.exp(-x)), [-745.0, -700.0, 0.5, 40.0, 1e-300]),
    "erf": (M.erf, [0.8, 5.9, -1e-300, 5e-324, 0.001]),
    "softplus": (lambda x: M.log1p(M.exp(x)), [-745.0, 1e-300, 0.5, 36.0, 700.0]),
    "elu": (M.expm1, [-0.5, -1e-300, -40.0, -2.0 ** -60]),
}
BINARY = {
    "atan2": (M.atan2, [(1e-300, 1e300), (1.0, -1e-300), (-3.0, 2.0), (5e-324, -1.0)]),
    "power": (M.power, [(10.0, 308.2), (2.0, -1074.0), (1 + 2.0 ** -52, 2.0 ** 60),
                        (-2.0, 1023.0), (-3.0, -5.0), (0.5, 1074.5), (7.0, 0.5)]),
}


def _relative_error(hi: float, lo: float, exact) -> float:
    with mpmath.workdps(100):
        return float(abs((mpmath.mpf(hi) + mpmath.mpf(lo) - exact) / exact))


def _check(op, exact_fn, args, hi, lo):
    with mpmath.workdps(100):
        exact = exact_fn(*(mpmath.mpf(float(a)) for a in args))
        error = _relative_error(hi, lo, exact)
    nearest = float(exact)
    assert abs(nearest) > 2.0 ** -1022 or hi == nearest, \
        f"{op}{tuple(args)}: subnormal hi={hi!r} is not the nearest float64 {nearest!r}"
    if abs(nearest) >= 2.0 ** -1022:
        assert hi == nearest, f"{op}{tuple(args)}: hi={hi!r} is not the nearest float64 {nearest!r}"
        # lo below 2**-1022 is subnormal: hi + lo then holds fewer bits, to 2**-1075 absolute
        allowed = max(2.0 ** -100, 2.0 ** -1074 / abs(nearest) / 2)
        assert error <= allowed, f"{op}{tuple(args)}: hi+lo relative error {error:.3g}"


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_float64_reference_agrees_with_100_digit_mpmath(op):
    exact_fn, points = UNARY[op]
    x = np.array(points)
    (hi,), (lo,) = evaluate_refined(op, [x], {})
    assert lo is not None, f"{op}: no residual for float64 operands"
    for k, point in enumerate(points):
        _check(op, exact_fn, [point], float(hi[k]), float(lo[k]))


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_float64_reference_agrees_with_100_digit_mpmath(op):
    exact_fn, points = BINARY[op]
    lhs, rhs = (np.array(side) for side in zip(*points))
    (hi,), (lo,) = evaluate_refined(op, [lhs, rhs], {})
    for k, point in enumerate(points):
        _check(op, exact_fn, point, float(hi[k]), float(lo[k]))


@pytest.mark.parametrize("op, fast, exact, mp", [
    ("exp", np.exp, lambda x: x.exp(), mpmath.exp),
    ("log", np.log, lambda x: x.log(), mpmath.log),
    ("sin", np.sin, lambda x: x.sin(), mpmath.sin),
])
def test_hard_to_round_arguments_agree_with_mpmath(op, fast, exact, mp):
    # the arguments whose exact value lies nearest a float64 rounding midpoint (|lo| nearest
    # half an ULP of hi) among 4000 random ones: the hardest to round of the sample
    x = np.random.default_rng(21).uniform(0.001, 30, 4000)
    result = refined(fast, exact, x)
    hi, lo = np.asarray(result), result.residual
    to_midpoint = np.abs(np.abs(lo) / np.spacing(np.abs(hi)) - 0.5)
    hardest = np.argsort(to_midpoint)[:6]
    assert to_midpoint[hardest[-1]] < 2.0 ** -8
    for k in hardest:
        _check(op, mp, [x[k]], float(hi[k]), float(lo[k]))


def test_narrow_operands_take_the_float64_path():
    x = np.array([0.5, 3.0])
    narrow = refined(np.exp, lambda v: v.exp(), x, dtypes=("float32",))
    assert getattr(narrow, "residual", None) is None
    assert np.array_equal(narrow, np.exp(x))


@pytest.mark.parametrize("numerator, denominator, scale", [
    (1, 3, 0), (-2, 7, 0), (1, 3, -1074), (5, 3, -1074), (-1, 3, -1060), (1, 3, 1023),
    (7, 5, 1023), (22, 7, -500),
])
def test_hi_and_lo_are_the_nearest_float64s(numerator, denominator, scale):
    # (numerator / denominator) * 2**scale in Arb, against exact rational arithmetic
    hi, lo = evaluate_pair(lambda one: one * numerator / denominator * one.__class__(2) ** scale,
                           [1.0])
    value = Fraction(numerator, denominator) * Fraction(2) ** scale
    if math.isinf(hi):
        assert abs(value) > Fraction(np.finfo(np.float64).max) and lo == 0
        return
    assert hi == float(value)                    # Fraction -> float rounds once, to nearest even
    assert abs(Fraction(lo) - (value - Fraction(hi))) <= abs(value) * Fraction(2) ** -106 \
        or abs(lo) < 2.0 ** -1022


# --- the portable path -----------------------------------------------------------------------

def test_no_oracle_reads_long_double():
    sources = [*(ROOT / "ops").glob("*.py"), *(ROOT / "oracles").glob("*.py")]
    found = [f"{path.name}:{n}" for path in sources
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"longdouble|float128|float96|clongdouble", line)]
    assert found == []


PORTABLE_SAMPLE = ["exp", "sin", "power", "atan2", "softplus", "cbrt", "reduce_sum", "dot_general",
                   "onnx_reduce_mean", "onnx_gemm", "conv", "onnx_average_pool", "nnef_matmul"]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_expectations_are_the_same_with_long_double_as_plain_double(monkeypatch, dtype):
    specs = load_specs()
    cases = [(specs[op], case) for op in PORTABLE_SAMPLE
             for case in generate_cases(specs[op], dtype, count=6, seed=3)
             if case.plan != "must_reject"]   # (no answer: an input the text forbids)
    before = [answer_digest(dataclasses.replace(c, expectation=expect(s, c))) for s, c in cases]
    monkeypatch.setattr(np, "longdouble", np.float64)   # what aarch64 macOS and MSVC have
    after = [answer_digest(dataclasses.replace(c, expectation=expect(s, c))) for s, c in cases]
    changed = [c.id for (s, c), b, a in zip(cases, before, after) if b != a]
    assert changed == []


# --- the residual in the corpus --------------------------------------------------------------

def test_the_corpus_keeps_the_residual_and_its_hash_covers_it():
    spec = load_specs()["exp"]
    case = next(c for c in generate_cases(spec, "float64", count=12, seed=1)
                if np.any(expect(spec, c)[0].residual != 0))
    answer = expect(spec, case)
    assert answer[0].residual is not None and np.any(answer[0].residual != 0)
    arrays = answer_arrays(answer)
    assert np.array_equal(arrays["residual"], answer[0].residual)
    (read,) = answers_from_arrays({k: [v] for k, v in arrays.items()}, 1)
    assert np.array_equal(read[0].residual, answer[0].residual)
    nudged = (answer[0]._replace(residual=answer[0].residual + 2.0 ** -80),)
    assert answer_digest(dataclasses.replace(case, expectation=answer)) != \
        answer_digest(dataclasses.replace(case, expectation=nudged))


def test_an_answer_without_residual_is_stored_as_before():
    plain = (Expectation(np.arange(3.0), None, None),)
    assert list(answer_arrays(plain)) == ["expected"]
    specs = load_specs()
    for op in ("exp", "power", "onnx_pow", "nnef_pow", "atan2", "softplus"):
        for dtype in ("float32", "float16"):
            case = generate_cases(specs[op], dtype, count=2, seed=1)[1]
            assert expect(specs[op], case)[0].residual is None, (op, dtype)
        case = generate_cases(specs[op], "float64", count=2, seed=1)[1]
        assert expect(specs[op], case)[0].residual is not None, op


def test_choosing_the_precision_by_dtype_keeps_an_op_chainable():
    from conform.spec.programs import chainable

    specs = load_specs()
    assert specs["exp"].definition.takes_dtypes and chainable(specs["exp"])
    assert not chainable(specs["onnx_clip"])   # optional inputs


def test_a_chain_tells_each_node_that_takes_them_its_operands_type():
    """A program's oracle passes the case's dtype to a node whose oracle takes ``dtypes``:
    clz counts in the operand's width (31 for an int32 1, not 63 as for the widened int64)."""
    from conform.spec.programs import program_spec

    chain = program_spec("chain__count_leading_zeros__bitwise_not", load_specs())
    clz, inverted = evaluate(chain.definition, [np.int32([1, -1])], {})
    assert clz.tolist() == [31, 0] and inverted.tolist() == [-32, -1]


def test_ziv_raises_the_precision_only_until_the_float64_is_decided():
    """Ziv's strategy: a plain value is decided at the first precision; a value whose first
    digits cancel (lgamma's zero near 2, DLMF 5.4.1's Gamma(2) = 1) takes more; both agree
    with the fixed 110-bit evaluation's ``hi`` and ``lo``."""
    from flint import ctx

    seen = []

    def lgamma(x):
        seen.append(ctx.prec)
        return x.lgamma()

    for x, first_only in ((0.3, True), (2.0 + 2.0 ** -40, False)):
        seen.clear()
        (pair,) = evaluate_pairs(lgamma, [[x]], ziv=True)
        assert seen[0] == ZIV_START and (len(seen) == 1) == first_only, seen
        fixed = evaluate_pair(lambda v: v.lgamma(), [x])
        assert pair[0] == fixed[0] and abs(pair[1] - fixed[1]) <= 2.0 ** -20 * math.ulp(fixed[0])
