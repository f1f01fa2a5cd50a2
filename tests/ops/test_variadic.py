"""XLA's variadic ops (conform/ops/variadic.py): Sort of several operands with lax.sort's
comparator (the XLA text's example, num_keys, NaN last, -0 == +0, stable ties in index order,
an unstable sort's ties canonicalised, under a flushing backend too), and the judge catching
injected bugs run through the real jax."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.generators._case import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate


def _sort(*operands, dimension=-1, num_keys=1, is_stable=True):
    attrs = {"dimension": dimension, "num_keys": num_keys, "is_stable": is_stable}
    return [o.tolist() for o in evaluate("sort", [np.asarray(x) for x in operands], attrs)]


def _case(op, inputs, attrs, dtype="float32"):
    types = tuple(str(np.asarray(x).dtype) for x in inputs)
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype, input_dtypes=types, out_dtype=dtype,
                inputs=[np.asarray(x) for x in inputs], attrs=attrs, plan="normal", seed=5)


def test_sort_text_example():
    """The XLA Sort text's example: three operands sorted by the first with a less-than."""
    assert _sort([3, 1], [42, 50], [-3.0, 1.1]) == [[1, 3], [50, 42], [1.1, -3.0]]


def test_sort_keys_lexicographic_nan_last_zeros_equal():
    keys = [1.0, np.nan, -0.0, 0.0, -np.inf, 1.0]
    second = [2.0, 0.0, 5.0, 4.0, 0.0, 1.0]
    out, by, _ = _sort(keys, second, [0, 1, 2, 3, 4, 5], num_keys=1)
    assert by == [0.0, 5.0, 4.0, 2.0, 1.0, 0.0]
    assert str(out) == str([-np.inf, -0.0, 0.0, 1.0, 1.0, np.nan])   # stable: -0 first (index 2)
    _, by, third = _sort(keys, second, [0, 1, 2, 3, 4, 5], num_keys=2)
    assert third == [4, 3, 2, 5, 0, 1]   # the second key breaks the ties of the first


def test_sort_along_a_negative_dimension_of_a_matrix():
    x = [[3, 1], [2, 5]]
    assert _sort(x, x, [[0, 1], [2, 3]], dimension=-2)[2] == [[2, 1], [0, 3]]


def _judged(inputs, attrs, outputs, subnormals="ieee"):
    from conform.spec import load_specs

    case = _case("sort", inputs, attrs)
    return judge_outputs(load_specs()["sort"], case, [np.asarray(o, np.asarray(i).dtype)
                                                      for o, i in zip(outputs, inputs)],
                         subnormals)


UNSTABLE = {"dimension": 0, "num_keys": 1, "is_stable": False}


def test_an_unstable_sort_may_order_ties_either_way_and_nothing_else():
    inputs = [np.float32([2, 1, 2]), np.float32([7, 8, 9]), np.int32([0, 1, 2])]
    assert _judged(inputs, UNSTABLE, [[1, 2, 2], [8, 9, 7], [1, 2, 0]]).verdict == "pass"
    assert _judged(inputs, UNSTABLE, [[1, 2, 2], [8, 7, 9], [1, 0, 2]]).verdict == "pass"
    # a tuple split (a wrong value), or keys out of order, still fail
    assert _judged(inputs, UNSTABLE, [[1, 2, 2], [8, 9, 7], [1, 0, 2]]).verdict == "fail"
    assert _judged(inputs, UNSTABLE, [[2, 1, 2], [7, 8, 9], [0, 1, 2]]).verdict == "fail"
    stable = {**UNSTABLE, "is_stable": True}
    assert _judged(inputs, stable, [[1, 2, 2], [8, 9, 7], [1, 2, 0]]).verdict == "fail"


def test_subnormal_keys_tie_only_for_a_flushing_backend():
    tiny = np.float32(1e-45)
    inputs = [np.float32([tiny, -tiny, 0]), np.float32([1, 2, 3]), np.int32([0, 1, 2])]
    flushed_order = [[0, tiny, -tiny], [3, 1, 2], [2, 0, 1]]   # all three are zeros for it
    assert _judged(inputs, UNSTABLE, flushed_order, "ftz").verdict == "pass"
    assert _judged(inputs, UNSTABLE, flushed_order, "ieee").verdict == "fail"
    ieee_order = [[-tiny, 0, tiny], [2, 3, 1], [1, 2, 0]]
    assert _judged(inputs, UNSTABLE, ieee_order, "ieee").verdict == "pass"


@pytest.fixture(scope="module")
def jax_backend():
    from conform.harness.backends.jax_backend import JaxBackend

    return JaxBackend()


@pytest.mark.parametrize("wrong", [{"num_keys": 1}])
def test_jax_passes_and_a_wrong_key_count_fails(specs, jax_backend, wrong):
    """jax's lax.sort passes on drawn cases; run with fewer keys (num_keys 1 for 2 or 3: the
    later keys' ties left to the tie rule), its answers differ on some case and the judge
    fails them."""
    from conform.harness.backends.models import run_case

    spec = specs["sort"]
    caught = 0
    for case in generate_cases(spec, "float32", count=30, seed=11):
        policy = jax_backend.subnormals   # XLA:CPU flushes float32 subnormals
        assert judge_outputs(spec, case, run_case(jax_backend, spec, case), policy).verdict == "pass"
        if not all(case.attrs[k] != v for k, v in wrong.items()):
            continue
        buggy = dataclasses.replace(case, attrs={**case.attrs, **wrong}, expectation=None)
        outputs = run_case(jax_backend, spec, buggy)
        if judge_outputs(spec, case, outputs, policy).verdict == "fail":
            caught += 1
    assert caught
