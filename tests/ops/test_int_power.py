"""Integer power (ops/int_power.py): exact where the power is an integer the type holds, a
negative exponent of a base other than ±1 and an overflow open, and XLA's own integer power
(stablehlo.power, lowered from a jax primitive) judged."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.ops.xla_judging import run


def test_powers_are_exact_and_clipped_past_int64():
    lhs = np.array([2, -3, 0, 1, -1, -1, 5, 2, -2, 7], np.int64)
    rhs = np.array([3, 3, 0, -2, -3, -4, -1, 70, 63, 22], np.int64)
    assert run("power", lhs, rhs).tolist() == [8, -27, 1, 1, -1, 1, 0, 2 ** 63 - 1, -2 ** 63,
                                               7 ** 22 if 7 ** 22 < 2 ** 63 else 2 ** 63 - 1]
    assert run("power", np.array([3], np.int8), np.array([5], np.int8)).tolist() == [243]


def _regions(lhs, rhs, dtype):
    from conform.op_registry import regions
    from conform.ops.regions import RegionContext
    lhs, rhs = np.array(lhs, dtype), np.array(rhs, dtype)
    expected = run("power", lhs.astype(np.int64), rhs.astype(np.int64))
    ctx = RegionContext(inputs=[lhs, rhs], expected=expected, out_dtype=dtype,
                        float_oracle=lambda xs: run("power", *xs))
    found = regions()
    return [found[name](ctx).tolist() for name in ("int_power_negative_exponent", "int_overflow")]


def test_a_negative_exponent_and_an_overflow_are_open():
    negative, overflow = _regions([2, -1, 0, 3, 2, -2], [-1, -3, -2, 4, 7, 7], "int8")
    assert negative == [True, False, True, False, False, False]
    assert overflow == [False, False, False, False, True, False]   # 2**7 = 128; (-2)**7 fits
    negative, overflow = _regions([2, 3], [9, 40], "uint8")
    assert negative == [False, False] and overflow == [True, True]


def _judged(spec, jax_backend, lhs, rhs, dtype, change=None):
    from conform.generators._suite import generate_cases
    from conform.harness.backends.models import run_case
    from conform.harness.judge.judging import judge_outputs
    case = generate_cases(spec, dtype, count=1, seed=0)[0]
    case = dataclasses.replace(case, inputs=[np.array(lhs, dtype), np.array(rhs, dtype)],
                               attrs={}, expectation=None)
    outputs = run_case(jax_backend, spec, case)
    return judge_outputs(spec, case, change(outputs) if change else outputs, "ftz")


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint16", "int4"])
def test_xla_integer_power_is_exact_and_an_off_by_one_fails(specs, jax_backend, dtype):
    lhs, rhs = [2, 3, -1, -1, 1, 0, 5], [5, 2, 3, -3, -7, 0, 1]
    if dtype.startswith("uint"):
        lhs, rhs = [abs(x) for x in lhs], [abs(x) for x in rhs]
    if dtype == "int4":
        lhs, rhs = [2, 3, -1, -1, 1, 0, 5], [2, 1, 3, -3, -7, 0, 1]
    judged = _judged(specs["power"], jax_backend, lhs, rhs, dtype)
    assert judged.verdict == "pass" and judged.checked == 7
    judged = _judged(specs["power"], jax_backend, lhs, rhs, dtype,
                     change=lambda out: [np.asarray(out[0]) + np.asarray(1).astype(out[0].dtype)])
    assert judged.verdict == "fail"
