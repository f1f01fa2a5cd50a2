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
