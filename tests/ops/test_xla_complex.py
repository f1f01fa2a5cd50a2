"""XLA's complex numbers (ops/xla_complex.py and the complex forms of ops/elementwise.py): the
dtype vocabulary, the drawn values, the judge of complex outputs (exact per part, numeric models
by the modulus of the difference), the oracles on the text's definitions, and the real jax and
numpy backends judged, with the judge catching wrong answers."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from conform.dtypes import complex_array, component_dtype, is_complex, resolve_edge_value
from conform.generators._values import edge_values, fill
from conform.harness.judge.compare import compare
from conform.dtypes import flush_subnormals
from conform.spec import dtype_class
from tests.ops.xla_judging import jax_verdicts, run

ROUNDED = {"correctly_rounded": True, "why": "each part one IEEE addition"}
ULP2 = {"ulp": 2, "why": "two ULPs of |e| in modulus"}


# -- the vocabulary and the drawn values ----------------------------------------------------------

def test_complex_dtypes_name_their_component():
    assert [is_complex(d) for d in ("complex64", "complex128", "float32")] == [True, True, False]
    assert [component_dtype(d) for d in ("complex64", "complex128")] == ["float32", "float64"]
    assert dtype_class("complex64") == "complex"
    assert resolve_edge_value("-max_finite", "complex64") == -np.finfo(np.float32).max
    assert complex_array(np.array([np.inf]), np.array([np.nan]))[0].real == np.inf


class _Spec:
    edge_values, values, input_values = {}, {}, {}


def test_edges_are_every_pair_of_the_component_edges():
    parts = edge_values(_Spec(), "float32")
    edges = edge_values(_Spec(), "complex64")
    assert edges.dtype == np.complex64 and edges.size == parts.size ** 2
    assert any(np.isinf(e.real) and np.isnan(e.imag) for e in edges)
    assert any(e.real == 0 and np.signbit(e.real) and np.signbit(e.imag) for e in edges)


@pytest.mark.parametrize("plan", ["normal", "wide", "edge", "special"])
def test_each_part_is_drawn_as_the_component_type(plan):
    rng = np.random.default_rng(1)
    values = fill(rng, shape=(400,), dtype="complex128", plan=plan, low=-10, high=10,
                  edges=edge_values(_Spec(), "complex128"))
    assert values.dtype == np.complex128
    assert not np.array_equal(values.real, values.imag)
    if plan == "normal":
        assert np.all(np.abs(values.real) <= 10) and np.all(np.abs(values.imag) <= 10)
    if plan == "wide":   # log-uniform magnitudes over the whole range, in each part
        assert np.abs(values.imag).max() > 1e200 and np.abs(values.real).min() < 1e-200
    if plan == "special":
        assert np.isnan(values.imag).any() and np.isinf(values.real).any()


# -- the judge --------------------------------------------------------------------------------

def test_exact_parts_signed_zeros_and_nan_per_part():
    expected = np.array([1 + 2j, complex(np.inf, 0.0), complex(np.nan, 1.0), 0j])
    actual = expected.astype(np.complex64)
    assert compare(actual, expected, out_dtype="complex64", model=ROUNDED).verdict == "pass"
    zero = actual.copy()
    zero[3] = complex(0.0, -0.0)
    judged = compare(zero, expected, out_dtype="complex64", model=ROUNDED)
    assert (judged.verdict, judged.worst["index"]) == ("fail", [3])
    assert judged.reason == "special value mismatch (NaN, infinity or signed zero)"
    step = actual.copy()
    step[0] = complex(1.0, float(np.nextafter(np.float32(2), np.float32(3))))
    judged = compare(step, expected, out_dtype="complex64", model=ROUNDED)
    assert judged.verdict == "fail" and judged.worst["expected"] == "(1+2j)"


def test_numeric_models_measure_the_modulus_in_ulps_of_the_modulus():
    expected = np.array([3 + 4j])   # |e| = 5: float32 ULP 2**-21
    off = lambda re, im: np.array([complex(3 + re * 2.0 ** -21, 4 + im * 2.0 ** -21)], np.complex64)
    judged = compare(off(1.5, 0), expected, out_dtype="complex64", model=ULP2)
    assert judged.verdict == "pass" and judged.max_error == pytest.approx(1.5)
    judged = compare(off(1.5, 2), expected, out_dtype="complex64", model=ULP2)   # each part <= 2
    assert judged.verdict == "fail" and judged.max_error == pytest.approx(2.5)


def test_special_parts_are_settled_first():
    expected = np.array([complex(np.inf, 0.0), complex(np.nan, np.nan)])
    good = np.array([complex(np.inf, 0.0), complex(np.nan, 3.0)], np.complex64)
    judged = compare(good, expected, out_dtype="complex64", model=ULP2)
    assert judged.verdict == "fail" and judged.worst["index"] == [1]   # a number for a NaN part
    good[1] = complex(np.nan, np.nan)
    assert compare(good, expected, out_dtype="complex64", model=ULP2).verdict == "pass"


def test_ftz_flushes_each_part():
    tiny = np.float32(1e-40)   # a float32 subnormal
    x = np.array([complex(tiny, 1.0), complex(tiny, -tiny)], np.complex64)
    flushed = flush_subnormals(x)
    assert flushed[0] == complex(0, 1) and np.signbit(flushed[1].imag) and flushed[1] == 0
    expected = x.astype(np.complex128)
    judged = compare(flushed, expected, out_dtype="complex64", model=ULP2, subnormals="ftz")
    assert judged.verdict == "pass" and judged.subnormal_excused == 1   # the second: both parts
    judged = compare(flushed, expected, out_dtype="complex64", model=ULP2)
    assert judged.verdict == "fail" and judged.worst["index"] == [1]


def test_a_finite_part_of_a_sum_with_an_infinite_term_has_its_own_parts_bound(specs):
    """reduce_sum of (-inf + 4.08i, 9.02 + 4.80i, -6.00 - 2.58i, -8.42 - 6.36i): the real part
    is -inf, the imaginary one a finite sum that cancels (0.0615 of terms summing to 17.8 in
    magnitude). It is judged by gamma_n times its own terms' magnitudes (jax's 64-ULP error
    is within it), not by the final rounding alone (the sum of moduli is infinite), and a
    wrong imaginary part still fails."""
    import dataclasses

    from conform.generators import generate_cases
    from conform.harness.judge.judging import judge_outputs

    spec = specs["reduce_sum"]
    (case,) = generate_cases(spec, "complex64", count=1, seed=0)[:1]
    terms = np.complex64([[complex(-np.inf, 4.076955), 9.021299 + 4.800235j],
                          [-6.003540 - 2.578840j, -8.416288 - 6.359853j]])
    case = dataclasses.replace(case, inputs=[terms], attrs={"dimensions": [0, 1]},
                               expectation=None)
    imag = float(np.sum(terms.imag.astype(np.float64)))
    off = lambda ulps: np.complex64(complex(-np.inf, imag + ulps * 2.0 ** -27))   # ULP(0.06)
    assert judge_outputs(spec, case, [np.asarray(off(64))], "ftz").verdict == "pass"
    judged = judge_outputs(spec, case, [np.asarray(off(2 ** 12))], "ftz")
    assert judged.verdict == "fail"


# -- the oracles --------------------------------------------------------------------------------

def test_complex_real_imag_copy_parts():
    out = run("complex", np.float32([1.5, -0.0]), np.float32([np.inf, -2.0]))
    assert out.dtype == np.complex128 and out[0] == complex(1.5, np.inf) and np.signbit(out[1].real)
    z = np.array([complex(-0.0, 3.0)], np.complex64)
    assert np.signbit(run("real", z)[0]) and run("imag", z)[0] == 3.0
    assert run("real", np.float32([2.5]))[0] == 2.5 and run("imag", np.float32([-2.5]))[0] == 0.0


def test_complex128_product_is_correctly_rounded_per_part():
    x, y = complex(1 + 2.0 ** -30, 1.0), complex(1 - 2.0 ** -30, 1.0)   # ac - bd = -2**-60
    assert run("multiply", np.array([x]), np.array([y]))[0].real == -(2.0 ** -60)
    assert (x * y).real != -(2.0 ** -60)   # the float64 textbook formula cancels


def test_complex128_exp_beyond_float64():
    z = complex(0.5, 1e22)   # sin and cos of a huge argument need a wide reduction
    got = run("exp", np.array([z]))[0]
    assert got.real == pytest.approx(math.exp(0.5) * 0.5232147853951389, rel=1e-15)
    assert got.imag == pytest.approx(math.exp(0.5) * -0.8522008497671888, rel=1e-15)


def test_product_bound_is_sqrt5_u():
    from conform.ops.xla_complex import complex_product_bound
    x, y = np.array([3 + 4j]), np.array([1 - 2j])
    (bound,) = complex_product_bound([x, y], {}, (x * y,), out_dtype="complex64", u=2.0 ** -24,
                                     constants={}, dtypes=("complex64", "complex64"))
    assert bound[0] == pytest.approx(math.sqrt(5) * 2.0 ** -24 * 5 * math.sqrt(5), rel=1e-6)
    big = np.array([3e38 + 3e38j])
    (bound,) = complex_product_bound([big, big], {}, (big * big,), out_dtype="complex64",
                                     u=2.0 ** -24, constants={}, dtypes=())
    assert np.isnan(bound[0])   # unbounded_evaluation: the partial products overflow


def test_complex128_sin_cosh_beyond_float64():
    """sin(a + bi) = sin a cosh b + i cos a sinh b, against mpmath at 50 digits, where the
    float64 formula cancels (a near pi: sin a is the rounding error of pi's float64)."""
    import mpmath
    z = complex(math.pi, 1e-3)
    for op, function in (("sin", mpmath.sin), ("cosh", mpmath.cosh)):
        with mpmath.workdps(50):
            want = complex(function(mpmath.mpc(z.real, z.imag)))
        got = run(op, np.array([z]))[0]
        assert abs(got.real - want.real) <= 2.0 ** -52 * abs(want.real)
        assert abs(got.imag - want.imag) <= 2.0 ** -52 * abs(want.imag)


def test_complex_sign_follows_stablehlo():
    """StableHLO sign: (NaN, NaN) where a part is NaN (an infinite other part too), 0 for 0,
    else x / |x| (to float64 for complex128, beyond NumPy's quotient)."""
    z = np.array([3 - 4j, complex(np.inf, np.nan), complex(np.nan, 1), 0j, 1e-300 + 1e-300j])
    out = run("sign", z)
    assert out[0] == 0.6 - 0.8j and out[3] == 0
    assert np.isnan(out[1].real) and np.isnan(out[1].imag) and np.isnan(out[2].imag)
    assert out[4] == complex(math.sqrt(0.5), math.sqrt(0.5))


def test_trig_bound_is_two_functions_and_a_rounding():
    from conform.ops.xla_complex import complex_circular_bound, complex_hyperbolic_bound
    u, z = 2.0 ** -24, np.array([0.5 + 2j, 1 + 90j])
    constants = {"trig_ulp": 4, "hyperbolic_ulp": 4}
    (bound,) = complex_circular_bound([z], {}, (np.sin(z),), out_dtype="complex64", u=u,
                                      constants=constants, dtypes=("complex64",))
    assert bound[0] == pytest.approx(((1 + 8 * u) ** 2 * (1 + u) - 1) * abs(np.sin(z[0])))
    assert np.isnan(bound[1])   # unbounded_evaluation: cosh 90 overflows float32
    (bound,) = complex_hyperbolic_bound([z], {}, (np.sinh(z),), out_dtype="complex64", u=u,
                                        constants=constants, dtypes=("complex64",))
    assert np.isfinite(bound).all()   # cosh 1 does not overflow


# -- the real backends ---------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["add", "negate", "complex", "real", "multiply", "exp", "sqrt"])
def test_jax_passes_complex64(specs, jax_backend, op):
    verdicts = jax_verdicts(specs[op], jax_backend, "complex64", 6)
    assert "fail" not in verdicts and "error" not in verdicts


def _chop(values):
    """``values`` rounded to a 12-bit significand: a low-precision evaluation's answer."""
    mantissa, exponent = np.frexp(values)
    return np.ldexp(np.round(mantissa * 2 ** 12) / 2 ** 12, exponent)


def _low_precision(outputs, case):
    out = np.asarray(outputs[0]).astype(np.complex128)
    with np.errstate(all="ignore"):
        return [complex_array(_chop(out.real), _chop(out.imag), "complex64")]


@pytest.mark.parametrize("op", ["multiply", "exp", "log", "sqrt"])
def test_a_low_precision_evaluation_fails(specs, jax_backend, op):
    verdicts = jax_verdicts(specs[op], jax_backend, "complex64", 6, change=_low_precision)
    assert "fail" in verdicts


def _judged_on_jax(spec, jax_backend, values, dtype, change=None):
    """The judgement of jax's answer (altered by ``change(outputs, case)``) for one case holding
    ``values`` (complex, in ``dtype``)."""
    import dataclasses

    from conform.generators._suite import generate_cases
    from conform.harness.backends.models import run_case
    from conform.harness.judge.judging import judge_outputs
    case = generate_cases(spec, dtype, count=1, seed=0)[0]
    case = dataclasses.replace(case, inputs=[np.array(values, dtype)], expectation=None)
    outputs = run_case(jax_backend, spec, case)
    return judge_outputs(spec, case, change(outputs, case) if change else outputs, "ftz")


#: operands of sin and cos: moderate, near a zero of a part or of the result (pi + small i), a
#: large circular argument, near the hyperbolic part's overflow; of sinh and cosh: those jax's
#: evaluation keeps within the bound (a small real part or a large one loses it: see
#: test_jax_sinh_loses_a_small_real_part); of sign: moderate, tiny and huge parts
OPERANDS = {"sin": [0.5 + 2j, complex(math.pi, 1e-3), -1.5707964 - 0.25j, 1e4 + 0.5j,
                    3 + 80j, -2 - 1e-30j, 1e-20 + 1j],
            "sinh": [-2 + 0.5j, 0.25 - 1.5707964j, -0.5 + 1e4j, 1 + 1e-30j, 3 - 3j],
            "sign": [3 - 4j, -1e-15 + 1e-15j, 1e15 - 2e14j, -7 + 0j, 1 + 1e-30j],
            "rsqrt": [4 + 0j, -3 + 4j, 1e-10 + 1e-10j, 1e30 - 1e30j, -1 + 1e-30j, -2 - 1e-3j],
            "expm1": [1e-5 + 1e-5j, 0.1 - 6.33j, -3 + 2j, 1e-20 + 1e-3j, 5 + 0.5j],
            "logistic": [0.5 - 2j, -0.028 + 3.12j, 30 + 1j, -20 - 0.5j, 1e-20j],
            "tan": [0.5 + 2j, 1.5707964 + 1e-3j, -3 - 0.5j, 1e-20 + 20j, 4.7 - 1e-6j],
            "tanh": [2 + 0.5j, 1e-3 + 1.5707964j, -0.5 - 3j, 20 + 1e-20j, -1e-6 + 4.7j]}


@pytest.mark.parametrize("op", ["sin", "cos", "sinh", "cosh", "sign", "rsqrt", "expm1",
                                "logistic", "tan", "tanh"])
def test_jax_within_the_bound_and_a_low_precision_answer_fails(specs, jax_backend, op):
    operands = OPERANDS[op.replace("cos", "sin")]
    assert _judged_on_jax(specs[op], jax_backend, operands, "complex64").verdict == "pass"
    judged = _judged_on_jax(specs[op], jax_backend, operands, "complex64", change=_low_precision)
    assert judged.verdict == "fail"


def test_jax_log_reads_a_subnormal_part_two_ways(specs, jax_backend):
    """A real XLA:CPU deviation (jax 0.10.2), pinned: complex log of an operand with subnormal
    parts reads them as zero in ln|z| but not in arg z, which neither the operand's value nor
    its flushed reading (the ftz policy) gives. Repro:
    python3 -c "import jax; jax.config.update('jax_enable_x64', True); import numpy as np;
    print(jax.lax.log(np.array([complex(-1, 5e-324), 5e-324 + 5e-324j, 2.225073858507201e-308j])))"
    gives [-pi j, -inf + pi/2 j, -inf + pi/2 j]: the ieee reading is [pi j, -744.09 + pi/4 j,
    -708.40 + pi/2 j], the flushed one [pi j, -inf + 0j, -inf + 0j]."""
    values = [complex(-1, 5e-324), 5e-324 + 5e-324j, 2.225073858507201e-308j, 2 + 1j]
    judged = _judged_on_jax(specs["log"], jax_backend, values, "complex128")
    assert judged.verdict == "fail" and list(judged.failing) == [0, 1, 2]
    judged = _judged_on_jax(specs["log"], jax_backend, [0.5 + 3j, -4 - 1e-30j, 1 + 1e-20j],
                            "complex128")
    assert judged.verdict == "pass"
    # complex64, both parts subnormal: -inf + NaN i, where either reading has a number (the
    # flushed one -inf + 0i); repro: jax.lax.log(np.complex64(1.4e-45 + 1.1754942e-38j))
    judged = _judged_on_jax(specs["log"], jax_backend, [complex(1.4e-45, 1.1754942e-38), 2j],
                            "complex64")
    assert judged.verdict == "fail" and list(judged.failing) == [0]
    assert judged.reason == "special value mismatch (NaN, infinity or signed zero)"


def test_sqrt_branch_cut_side_of_negative_zero_is_open(specs, jax_backend):
    """jax gives sqrt(-4 - 0i) = +2i (-0 read as 0), C11 Annex G -2i: the text says neither, so
    the element is the region negative_zero_on_branch_cut; +0 is judged (+2i)."""
    judged = _judged_on_jax(specs["sqrt"], jax_backend, [complex(-4, -0.0), 9 + 0j], "complex64")
    assert (judged.verdict, judged.impl_defined, judged.checked) == ("pass", 1, 1)
    judged = _judged_on_jax(specs["sqrt"], jax_backend, [complex(-4, 0.0), 9 + 0j], "complex64")
    assert judged.verdict == "pass" and judged.checked == 2


def test_expm1_as_exp_minus_one_fails(specs, jax_backend):
    """e**z - 1 evaluated as written cancels near z = 0: the bound (the real part's cancellation
    kept exact) catches it."""
    def naive(outputs, case):
        return [(np.exp(case.inputs[0]) - np.complex64(1)).astype(np.complex64)]
    judged = _judged_on_jax(specs["expm1"], jax_backend, [1e-5 + 1e-5j, 2 + 1j], "complex64",
                            change=naive)
    assert judged.verdict == "fail" and list(judged.failing) == [0]


def test_jax_sinh_loses_a_small_real_part(specs, jax_backend):
    """A real XLA:CPU deviation (jax 0.10.2), pinned: complex sinh of an operand with a small
    real part and a zero imaginary part loses the real part's relative accuracy (sinh a cancels
    as (e**a - e**-a) / 2 would), while the real sinh of the same number is accurate. Repro:
    python3 -c "import jax; jax.config.update('jax_enable_x64', True); import numpy as np;
    print(jax.lax.sinh(np.complex128(1e-5)), jax.lax.sinh(np.float64(1e-5)))"
    gives 1.0000000000065512e-05 (60,000 ULP off) and 1.0000000000166668e-05."""
    judged = _judged_on_jax(specs["sinh"], jax_backend, [1e-5 + 0j, 0.5 + 2j], "complex128")
    assert judged.verdict == "fail" and list(judged.failing) == [0]


def test_jax_rsqrt_crosses_the_cut_at_a_subnormal_imaginary_part(specs, jax_backend):
    """A real XLA:CPU deviation (jax 0.10.2), pinned: rsqrt(-1 + 5e-324i) = 6e-17 + 1i, where
    both the operand's value and its flushed reading (-1 + 0i) give 1 / sqrt(x) = -i (its
    argument by XLA's atan2, -pi there). Repro: python3 -c "import jax;
    jax.config.update('jax_enable_x64', True); import numpy as np;
    print(jax.lax.rsqrt(np.array([complex(-1, 5e-324), complex(-1, 0.0)])))"."""
    judged = _judged_on_jax(specs["rsqrt"], jax_backend, [complex(-1, 5e-324), -1 + 0j, 4j],
                            "complex128")
    assert judged.verdict == "fail" and list(judged.failing) == [0]


def test_numpy_sign_of_a_nan_and_an_infinite_part_is_a_unit(specs):
    """A real deviation of the numpy backend, pinned (numpy has no failure catalog yet):
    np.sign(-inf + nan j) = -1 + 0j where StableHLO's sign gives '(NaN, NaN)' if x.real is NaN
    or x.imag is NaN. Repro: python3 -c "import numpy as np;
    print(np.sign(np.array([complex(-np.inf, np.nan), complex(np.nan, -np.inf)])))"."""
    import dataclasses

    from conform.generators._suite import generate_cases
    from conform.harness.judge.judging import judge_outputs
    case = generate_cases(specs["sign"], "complex128", count=1, seed=0)[0]
    z = np.array([complex(-np.inf, np.nan), complex(np.nan, -np.inf), 3 + 4j])
    case = dataclasses.replace(case, inputs=[z], expectation=None)
    judged = judge_outputs(specs["sign"], case, [np.sign(z)], "ieee")
    assert judged.verdict == "fail" and list(judged.failing) == [0, 1]


# -- abs: a complex operand, a result of its component type ----------------------------------

def test_abs_result_is_the_component_type_and_abs_stays_a_chain_link(specs):
    from types import SimpleNamespace

    from conform.generators.kit import out_dtype
    from conform.spec.programs import chainable
    abs_spec = specs["abs"]
    assert [out_dtype(abs_spec, d) for d in ("complex64", "complex128", "float16", "int8")] \
        == ["float32", "float64", "float16", "int8"]
    assert out_dtype(specs["eq"], "complex64") == "bool" and out_dtype(specs["exp"], "int8") == "int8"
    assert abs_spec.model_for("float32")["exact"]   # a real operand: |x| clears the sign bit
    complex_case = SimpleNamespace(dtype="complex64")
    assert abs_spec.model_for("float32", 0, complex_case)["ulp"] == 4   # |z|: hypot's bound
    assert chainable(abs_spec)


def test_complex128_abs_beyond_float64_and_overflow_free():
    from conform.ops.xla_complex import exact_modulus
    z = np.array([complex(3 * 2.0 ** 600, 4 * 2.0 ** 600), complex(2.0 ** 1023, -2.0 ** 1023),
                  complex(1e-170, 1e-170), 1 + 2 ** -30 * 1j])
    got = exact_modulus(z, dtypes=("complex128",))
    assert got[0] == 5 * 2.0 ** 600 and got[1] == math.sqrt(2) * 2.0 ** 1023 and got[2] > 0
    assert got[3] == 1   # sqrt(1 + 2**-60) = 1 + 2**-61 - ...: below half an ULP
    # a modulus float64's own hypot misses by an ULP: the rounding checked on exact squares
    z = complex(float.fromhex("0x1.b4c7b7180edb0p-3"), float.fromhex("0x1.95bf0364f901ep-1"))
    got = exact_modulus(np.array([z]), dtypes=("complex128",))[0]
    square = Fraction(z.real) ** 2 + Fraction(z.imag) ** 2
    below, above = (Fraction(np.nextafter(got, t)) for t in (0, 2))
    assert ((below + Fraction(got)) / 2) ** 2 < square < ((above + Fraction(got)) / 2) ** 2
    assert got != np.abs(z)


def test_jax_abs_within_hypot_bound_and_a_naive_modulus_fails(specs, jax_backend):
    """jax's |z| is within hypot's 4 ULPs, complex parts that are no real number are no
    fixed point of abs (2 + 3i is not read as 2), and sqrt(a*a + b*b) evaluated in float32,
    which overflows for |z| near 1e30 and underflows near 1e-30, fails."""
    operands = [3 + 4j, 2 + 3j, 2 + 0j, 1e30 - 1e30j, -1e-30 + 1e-30j, -0.0 - 7j, 1e38 + 3e38j]

    def naive(outputs, case):
        z = case.inputs[0]
        with np.errstate(all="ignore"):
            return [np.sqrt(z.real * z.real + z.imag * z.imag).astype(np.float32)]
    assert _judged_on_jax(specs["abs"], jax_backend, operands, "complex64").verdict == "pass"
    judged = _judged_on_jax(specs["abs"], jax_backend, operands, "complex64", change=naive)
    assert judged.verdict == "fail" and set(judged.failing) >= {3, 4, 6}


@pytest.mark.parametrize("op, dtype", [("real", "float16"), ("imag", "float8_e4m3fn")])
def test_real_and_imag_of_a_float_operand_run_on_jax(specs, jax_backend, op, dtype):
    """A float operand (jax.lax.real refuses it) lowered to stablehlo.real / imag: jax passes;
    an Imag that copies the operand, or a Real that gives 0, fails."""
    assert set(jax_verdicts(specs[op], jax_backend, dtype, 2)) <= {"pass"}
    wrong = jax_verdicts(specs[op], jax_backend, dtype, 2,
                         change=lambda outputs, case: [case.inputs[0] if op == "imag" else
                                                       np.zeros_like(case.inputs[0])])
    assert "fail" in wrong
