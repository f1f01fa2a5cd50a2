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

    case = _case("sort", inputs, attrs, dtype=str(np.asarray(inputs[0]).dtype))
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


def test_complex_keys_with_subnormal_parts_tie_for_a_flushing_backend():
    """-1 + 5e-324i and -1 - 5e-324i are two keys (the imaginary parts order them) but one
    for a backend that reads subnormals as zeros; each part is flushed on its own."""
    tiny = 5e-324
    keys = np.complex128([-1 + 1j, complex(-1, tiny), complex(-1, -tiny)])
    inputs = [keys, np.complex128([1, 2, 3]), np.int32([0, 1, 2])]
    ieee_order = [[keys[2], keys[1], keys[0]], [3, 2, 1], [2, 1, 0]]
    flushed_order = [[keys[1], keys[2], keys[0]], [2, 3, 1], [1, 2, 0]]
    assert _judged(inputs, UNSTABLE, ieee_order, "ieee").verdict == "pass"
    assert _judged(inputs, UNSTABLE, flushed_order, "ieee").verdict == "fail"
    assert _judged(inputs, UNSTABLE, flushed_order, "ftz").verdict == "pass"
    assert _judged(inputs, UNSTABLE, [[keys[1], keys[2], keys[0]], [3, 2, 1], [1, 2, 0]],
                   "ftz").verdict == "fail"   # a tuple split still fails


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


# -- Reduce over (value, index): an arg-max ---------------------------------------------------

def _argmax(x, dimension, dtype="float32"):
    return [o.tolist() for o in evaluate("reduce_argmax", [np.asarray(x, dtype)],
                                         {"dimension": dimension})]


def test_argmax_first_maximum_first_nan_and_the_lower_zero():
    x = [[1, 3, 3], [np.nan, 5, np.nan], [0.0, -0.0, -1], [-0.0, 0.0, -np.inf]]
    values, indices = _argmax(x, 1)
    assert indices == [1, 0, 0, 0] and str(values) == str([3.0, np.nan, 0.0, -0.0])
    assert _argmax([[-np.inf, -np.inf]], 1) == [[-np.inf], [0]]   # a real element beats the init


def test_argmax_of_an_empty_slice_is_the_initial_values():
    assert _argmax(np.zeros((2, 0)), 1) == [[-np.inf, -np.inf], [2**31 - 1] * 2]
    assert _argmax(np.zeros((0, 2)), 0, "int8") == [[-128, -128], [2**31 - 1] * 2]
    assert _argmax(np.zeros((0, 1)), 0, "uint8") == [[0], [2**31 - 1]]


def _body(left, right):
    """The arg-max body of ops/variadic.py, on Python pairs."""
    (value, index), (other, other_index) = left, right
    nan, other_nan = value != value, other != other
    tied = value == other or (nan and other_nan)
    wins = value > other or (nan and not other_nan) or (tied and index < other_index)
    return left if wins else right


def test_every_order_of_evaluating_the_body_gives_the_oracle_s_answer():
    """The XLA text lets a backend apply the body in any order (re-associated, with the
    initial value anywhere): the body is a selection by a total preorder with distinct-index
    tie breaks, so random evaluation trees all agree with the oracle."""
    rng = np.random.default_rng(3)
    pool = [np.nan, -0.0, 0.0, 1.0, 1.0, -np.inf, 2.0, 2.0]
    for _ in range(200):
        x = rng.choice(pool, size=int(rng.integers(1, 7)))
        items = [(-np.inf, 2**31 - 1)] + [(float(v), i) for i, v in enumerate(x)]
        while len(items) > 1:
            k = int(rng.integers(0, len(items) - 1))
            pair = [items.pop(k), items.pop(k)]
            if rng.random() < 0.5:
                pair.reverse()
            items.insert(k, _body(*pair))
        value, index = items[0]
        expected_value, expected_index = evaluate("reduce_argmax", [x], {"dimension": 0})
        assert index == expected_index and str(value) == str(float(expected_value)), x


def test_jax_passes_and_a_body_keeping_the_last_maximum_fails(specs, jax_backend):
    """The real lowering on jax passes drawn cases; a body breaking ties by the higher index
    (the last maximum, as a '>=' comparison in the body gives) fails where slices tie."""
    import jax
    from jax import lax

    from conform.harness.backends.models import run_case

    spec = specs["reduce_argmax"]

    def last_maximum(x, dimension):
        def body(left, right):
            (value, index), (other, other_index) = left, right
            wins = lax.bitwise_or(lax.gt(value, other),
                                  lax.bitwise_and(lax.eq(value, other), lax.gt(index, other_index)))
            return lax.select(wins, value, other), lax.select(wins, index, other_index)
        iota = lax.broadcasted_iota(np.int32, x.shape, dimension)
        return lax.reduce((x, iota), (np.float32(-np.inf), np.int32(-1)), body, (dimension,))

    caught = 0
    for case in generate_cases(spec, "float32", count=30, seed=4):
        policy = jax_backend.subnormals
        assert judge_outputs(spec, case, run_case(jax_backend, spec, case), policy).verdict == "pass"
        (x,) = case.inputs
        if x.size == 0 or np.isnan(x).any():
            continue
        buggy = [np.asarray(o) for o in jax.jit(last_maximum, static_argnums=1)(x, case.attrs["dimension"])]
        caught += judge_outputs(spec, case, buggy, policy).verdict == "fail"
    assert caught


def test_complex_keys_sort_lexicographically_and_unstable_ties_by_both_parts():
    """StableHLO compares complex numbers by (real, imag); an unstable sort's tied tuples are
    ordered by every part's bits (the real part's before the imaginary's), not by the real
    part alone."""
    keys = np.array([2 - 1j, 1 + 5j, 2 - 3j, 1 + 5j])
    second = np.array([1 + 2j, 1 + 1j, 0j, 1 + 0j])
    out, by, third = _sort(keys, second, [0, 1, 2, 3], num_keys=1, is_stable=False)
    assert out == [1 + 5j, 1 + 5j, 2 - 3j, 2 - 1j]
    assert by == [1 + 0j, 1 + 1j, 0j, 1 + 2j] and third == [3, 1, 2, 0]
