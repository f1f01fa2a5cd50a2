"""Sums and sums of products beyond float64 (conform/ops/_double_double.py), against exact rational
arithmetic: cancellation, huge and tiny magnitudes, subnormal products, special values."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from conform.ops._double_double import accurate_matmul, accurate_sum, sum_of_products


def _exact_dot(a, b) -> Fraction:
    return sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)), Fraction(0))


def _nearest(value: Fraction) -> float:
    return float(value)          # Fraction -> float rounds once, to nearest even


@pytest.mark.parametrize("seed", range(6))
def test_dot_products_are_the_nearest_float64_to_the_exact_value(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 60))
    scale = np.ldexp(1.0, rng.integers(-900, 900, size=k) // 2)
    a = rng.normal(size=k) * scale
    b = rng.normal(size=k) / scale                  # products near 1, wildly different factors
    b[: k // 2] *= -1
    got = float(accurate_matmul(a, b))
    assert got == _nearest(_exact_dot(a, b))


def test_catastrophic_cancellation_keeps_the_small_terms():
    a = np.array([1e300, 3.0, -1e300, 1e-300, 2.0 ** -60])
    got = float(accurate_sum(a))
    assert got == _nearest(Fraction(3) + Fraction(1e-300) + Fraction(2.0 ** -60))


def test_subnormal_products_are_exact():
    a, b = np.array([3e-160, 1e-160, 7e-161]), np.array([1.3e-160, 3.3e-161, -2e-161])
    exact = _exact_dot(a, b)
    assert float(accurate_matmul(a, b)) == _nearest(exact)
    assert float(np.dot(a, b)) != _nearest(exact)    # float64 rounds the subnormal products


def test_no_intermediate_overflow_where_the_result_is_finite():
    a = np.array([1.7e308, 1.7e308, -1.7e308])
    assert float(accurate_sum(a)) == 1.7e308
    assert float(accurate_matmul(np.array([1e200, -1e200]), np.array([1e108, 1e108]))) == 0.0


def test_each_output_element_keeps_its_own_scale():
    # a huge element elsewhere in the array must not flush another output's small terms
    x = np.array([[1e300, 1.0], [1e-46, 3e-50]])
    assert accurate_sum(x, axis=1).tolist() == [1e300, _nearest(Fraction(1e-46) + Fraction(3e-50))]
    # nor turn inf * (a tiny factor) into inf * 0 = NaN
    assert float(accurate_matmul(np.array([1e300, 1e-300]), np.array([1e-300, np.inf]))) == np.inf


def test_special_values_follow_ieee_arithmetic():
    assert math.isinf(float(accurate_sum(np.array([np.inf, 1.0]))))
    assert math.isnan(float(accurate_sum(np.array([np.inf, -np.inf]))))
    assert math.isnan(float(accurate_matmul(np.array([0.0, 1.0]), np.array([np.inf, 1.0]))))
    assert float(accurate_matmul(np.array([1e300]), np.array([1e300]))) == np.inf


def test_a_zero_sum_is_positive_zero_as_from_an_initial_zero():
    assert not np.signbit(accurate_sum(np.array([-0.0, -0.0])))
    assert accurate_sum(np.zeros((2, 0)), axis=1).tolist() == [0.0, 0.0]


def test_axes_keepdims_and_divisor_match_numpy_shapes():
    x = np.arange(24.0).reshape(2, 3, 4)
    assert np.array_equal(accurate_sum(x, axis=(0, 2)), x.sum(axis=(0, 2)))
    assert np.array_equal(accurate_sum(x, axis=1, keepdims=True), x.sum(axis=1, keepdims=True))
    counts = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    got = accurate_sum(x, axis=1, divisor=counts)
    want = [[_nearest(Fraction(int(s)) / int(c)) for s, c in zip(row, crow)]
            for row, crow in zip(x.sum(axis=1), counts)]
    assert got.tolist() == want


def test_a_mean_is_rounded_once():
    x = np.array([0.1, 0.2, 0.3])
    exact = (Fraction(0.1) + Fraction(0.2) + Fraction(0.3)) / 3
    assert float(accurate_sum(x, divisor=3)) == _nearest(exact)


def test_three_factor_products_on_a_grid():
    rng = np.random.default_rng(9)
    a, b, c = rng.normal(size=(3, 5)), rng.normal(size=(5,)), rng.normal(size=(1, 5))
    got = sum_of_products([a, b, c], [1])
    for row in range(3):
        exact = sum((Fraction(float(a[row, k])) * Fraction(float(b[k])) * Fraction(float(c[0, k]))
                     for k in range(5)), Fraction(0))
        assert abs(Fraction(float(got[row])) - exact) <= abs(exact) * Fraction(2) ** -52


def test_matmul_promotes_1d_operands_as_numpy():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    assert accurate_matmul(a, b).shape == np.matmul(a, b).shape == (2,)
    assert accurate_matmul(b, a.T).shape == (2,)
    batch = np.ones((4, 1, 2, 3))
    assert accurate_matmul(batch, np.ones((5, 3, 2))).shape == (4, 5, 2, 2)


def test_compensated_sums_over_an_empty_kept_dimension():
    # ops/_exact.py's helper reshaped with -1, which cannot be inferred when a kept dimension is
    # 0: onnx_reduce_l2 on a (1, 4, 0, 3) input crashed a whole run at --max-examples 300
    from conform.ops._exact import compensated_sum
    from conform.oracles import evaluate

    assert compensated_sum(np.zeros((1, 4, 0, 3)), [3]).shape == (1, 4, 0)
    (out,) = evaluate("onnx_reduce_l2", [np.zeros((1, 4, 0, 3))],
                      {"axes": [3], "keepdims": 0, "noop_with_empty_axes": 0})
    assert out.shape == (1, 4, 0)
