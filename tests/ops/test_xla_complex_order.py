"""StableHLO's lexicographic order of complex numbers (ops/xla_complex_order.py): compare's
GE, GT, LE, LT and maximum, minimum on complex operands, the NaN part open, and the real jax
backend judged (its max and min pass, a pick of the other operand fails; it refuses ordered
comparisons of complex numbers: unsupported)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.ops.xla_judging import run

LHS = np.array([1 + 2j, 1 + 2j, 1 + 3j, complex(0.0, 1), 2 + 0j, -np.inf + 5j])
RHS = np.array([1 + 3j, 0 + 9j, 1 + 3j, complex(-0.0, 1), 1 + 100j, -1e308 + 0j])


def _by_pairs(direction, x, y):
    """The text's lexicographic order written out on (real, imag) tuples of Python floats."""
    a, b = (x.real, x.imag), (y.real, y.imag)
    a, b = tuple(v + 0.0 for v in a), tuple(v + 0.0 for v in b)   # -0 == +0
    return {"ge": a >= b, "gt": a > b, "le": a <= b, "lt": a < b}[direction]


@pytest.mark.parametrize("direction", ["ge", "gt", "le", "lt"])
def test_comparisons_are_lexicographic(direction):
    expected = [_by_pairs(direction, x, y) for x, y in zip(LHS, RHS)]
    assert run(direction, LHS, RHS).tolist() == expected


def test_maximum_and_minimum_pick_the_lexicographic_extreme():
    assert run("maximum", LHS, RHS).tolist() == [1 + 3j, 1 + 2j, 1 + 3j, 1j, 2 + 0j,
                                                 -1e308 + 0j]
    assert run("minimum", LHS, RHS).tolist() == [1 + 2j, 9j, 1 + 3j, 1j, 1 + 100j,
                                                 -np.inf + 5j]


def test_a_nan_part_is_open():
    from conform.op_registry import regions
    from conform.ops.regions import RegionContext
    lhs, rhs = np.array([complex(np.nan, 1), 1 + 1j, 2 + 0j]), np.array([1j, complex(3, np.nan), 1j])
    ctx = RegionContext(inputs=[lhs, rhs], expected=run("ge", lhs, rhs), out_dtype="bool",
                        float_oracle=lambda xs: run("ge", *xs))
    assert regions()["complex_nan_part"](ctx).tolist() == [True, True, False]


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_jax_picks_the_lexicographic_extreme_and_the_other_operand_fails(specs, jax_backend, op):
    import dataclasses

    from conform.generators._suite import generate_cases
    from conform.harness.backends.models import run_case
    from conform.harness.judge.judging import judge_outputs
    case = generate_cases(specs[op], "complex64", count=1, seed=0)[0]
    lhs, rhs = np.array([1 + 2j, 2 - 1j, -3 + 0.5j], np.complex64), \
        np.array([1 + 3j, 2 + 1j, -4 + 9j], np.complex64)
    case = dataclasses.replace(case, inputs=[lhs, rhs], attrs={}, expectation=None)
    outputs = run_case(jax_backend, specs[op], case)
    assert judge_outputs(specs[op], case, outputs, "ftz").verdict == "pass"
    other = np.where(np.asarray(outputs[0]) == lhs, rhs, lhs)   # the operand not picked
    assert judge_outputs(specs[op], case, [other], "ftz").verdict == "fail"


def test_jax_refuses_ordered_comparisons_of_complex_numbers(specs, jax_backend):
    from conform.generators._suite import generate_cases
    from conform.harness.backends.models import run_case
    case = generate_cases(specs["lt"], "complex64", count=1, seed=0)[0]
    with pytest.raises(Exception, match="lt does not accept dtype complex64"):
        run_case(jax_backend, specs["lt"], case)


def test_clamp_is_the_lexicographic_minimum_of_the_maximum_and_on_bool_and_or():
    low, high = np.array([1 + 0j, 1 + 0j, 1 + 0j]), np.array([2 + 0j, 2 + 0j, 2 + 0j])
    operand = np.array([1 + 5j, 2 + 5j, 0.5 + 99j])
    assert run("clamp", low, operand, high).tolist() == [1 + 5j, 2 + 0j, 1 + 0j]
    bools = np.array([False, True])
    grid = [(a, x, b) for a in bools for x in bools for b in bools]
    got = run("clamp", *(np.array(column) for column in zip(*grid)))
    assert got.tolist() == [bool((a or x) and b) for a, x, b in grid]


@pytest.mark.parametrize("dtype", ["complex64", "bool"])
def test_jax_clamp_passes_and_an_unclamped_answer_fails(specs, jax_backend, dtype):
    import dataclasses

    from conform.generators._suite import generate_cases
    from conform.harness.backends.models import run_case
    from conform.harness.judge.judging import judge_outputs
    if dtype == "bool":
        low, operand, high = [True, False, False], [False, True, False], [True, True, False]
    else:
        low, operand, high = [1 + 0j, -1 - 1j, 0j], [0.5 + 5j, 3 + 0j, -2j], [2 + 0j, 2 + 2j, 1j]
    case = generate_cases(specs["clamp"], dtype, count=1, seed=0)[0]
    case = dataclasses.replace(case, inputs=[np.array(x, dtype) for x in (low, operand, high)],
                               attrs={}, expectation=None)
    outputs = run_case(jax_backend, specs["clamp"], case)
    assert judge_outputs(specs["clamp"], case, outputs, "ftz").verdict == "pass"
    assert judge_outputs(specs["clamp"], case, [np.array(operand, dtype)], "ftz").verdict == "fail"


def test_xla_clamp_of_complex_numbers_whose_real_parts_tie_is_not_lexicographic(specs,
                                                                               jax_backend):
    """A real XLA:CPU deviation (jax 0.10.2), pinned: stablehlo.clamp on complex numbers does
    not follow StableHLO's minimum(maximum(operand, min), max) in the lexicographic order where
    the operand's real part equals a bound's (jax's max and min, stablehlo.maximum and minimum,
    do). Repro: python3 -c "import jax, numpy as np; print(jax.lax.clamp(np.complex64(1),
    np.array([1+5j, 2+1j, 1.5+7j], np.complex64), np.complex64(2)))" gives [1+0j, 2+1j,
    1.5+7j]; the text gives [1+5j, 2+0j, 1.5+7j]."""
    import dataclasses

    from conform.generators._suite import generate_cases
    from conform.harness.backends.models import run_case
    from conform.harness.judge.judging import judge_outputs
    case = generate_cases(specs["clamp"], "complex64", count=1, seed=0)[0]
    inputs = [np.array(x, np.complex64) for x in ([1, 1, 1], [1 + 5j, 2 + 1j, 1.5 + 7j], [2, 2, 2])]
    case = dataclasses.replace(case, inputs=inputs, attrs={}, expectation=None)
    judged = judge_outputs(specs["clamp"], case, run_case(jax_backend, specs["clamp"], case), "ftz")
    assert judged.verdict == "fail" and list(judged.failing) == [0, 1]
