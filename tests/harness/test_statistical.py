"""Meta-tests of the statistical error model (harness/judge/statistical.py): a correct
generator passes, an injected bias or range error is caught, and the failure message names
the test, its statistic, its p-value and the threshold."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from scipy import stats

from conform.harness.judge.statistical import binomial_p_values, judge_statistical, ks_rounded
from conform.ops.distributions import Bits, Categorical, Continuous, Given, Unjudged, \
    groups_of_equal

ALPHA = 1e-9
N = 16384
UNIFORM = Continuous(stats.uniform(-1.0, 4.0), -1.0, 3.0, "uniform on [-1, 3)")
NORMAL = Continuous(stats.norm(0.5, 2.0), -np.inf, np.inf, "normal(mean=0.5, scale=2)")


def _cast(values, dtype):
    return np.asarray(values).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("seed", [1])
def test_correct_draws_pass(dtype, seed):
    rng = np.random.default_rng(seed)
    for law, draws in ((UNIFORM, rng.uniform(-1, 3, N)), (NORMAL, rng.normal(0.5, 2.0, N))):
        judged = judge_statistical(_cast(draws, dtype), (N,), dtype, law, ALPHA)
        assert judged.verdict == "pass", judged.reason


def test_a_uniform_shifted_by_one_percent_of_its_range_is_caught_by_the_support():
    draws = np.random.default_rng(3).uniform(-1, 3, N) + 0.04
    judged = judge_statistical(draws.astype(np.float32), (N,), "float32", UNIFORM, ALPHA)
    assert judged.verdict == "fail" and judged.mismatched > 0
    assert re.search(r"^output out float32\[16384\]: \d+ / 16384 elements outside the support "
                     r"of uniform on \[-1, 3\); first out\[\d+\]=3\.0\d*", judged.reason)


def test_a_skewed_uniform_inside_its_range_is_caught_by_kolmogorov_smirnov():
    """u**1.1 stays in [0, 1): only the fit test can see it."""
    draws = -1 + 4 * np.random.default_rng(4).random(N) ** 1.1
    judged = judge_statistical(draws.astype(np.float32), (N,), "float32", UNIFORM, ALPHA)
    assert judged.verdict == "fail"
    assert re.fullmatch(r"output out float32\[16384\]: Kolmogorov-Smirnov test \(widened for "
                        r"rounding\) rejects uniform on \[-1, 3\): D=0\.0\d+ over n=16384, "
                        r"p=[\d.e-]+ < threshold 1e-09", judged.reason), judged.reason


@pytest.mark.parametrize("mean, scale", [(0.7, 2.0), (0.5, 2.2)])
def test_a_normal_with_a_wrong_mean_or_scale_is_caught(mean, scale):
    draws = np.random.default_rng(5).normal(mean, scale, N)
    assert judge_statistical(draws.astype(np.float32), (N,), "float32", NORMAL, ALPHA).verdict \
        == "fail"


def test_a_bernoulli_off_by_two_hundredths_is_caught_and_a_fair_one_passes():
    p = np.full(65536, 0.5)
    law = Categorical(groups_of_equal(p), "Bernoulli(p) per element")
    rng = np.random.default_rng(6)
    fair = (rng.random(p.shape) < 0.5).astype(np.float32)
    biased = (rng.random(p.shape) < 0.52).astype(np.float32)
    assert judge_statistical(fair, p.shape, "float32", law, ALPHA).verdict == "pass"
    judged = judge_statistical(biased, p.shape, "float32", law, ALPHA)
    assert judged.verdict == "fail"
    assert re.search(r"binomial test per value and group \(2 tests, Bonferroni\) rejects "
                     r"Bernoulli\(p\) per element: value \d in group 0: \d+ of n=65536, "
                     r"expected 32768, p=[\d.e-]+ < threshold 1e-09", judged.reason)


def test_a_bias_shared_by_several_groups_is_caught_by_the_pooled_bound():
    """Four groups of p = 1/4, 1/2 (twice) and 3/4, each drawn 0.015 too high: no group alone
    shows it at 1e-9, their sum does."""
    p = np.repeat([0.25, 0.5, 0.5, 0.75], 16384) + np.repeat([0, 0, 1e-9, 0], 16384)
    law = Categorical(groups_of_equal(p), "Bernoulli(p) per element")
    draws = (np.random.default_rng(10).random(p.shape) < p + 0.015).astype(np.float32)
    judged = judge_statistical(draws, p.shape, "float32", law, ALPHA)
    assert judged.verdict == "fail"
    assert "Bernstein bound per value (10 tests, Bonferroni)" in judged.reason
    assert "in all groups (Bernstein bound)" in judged.reason


def test_certain_outcomes_are_judged_exactly():
    """p = 0 allows only 0 and p = 1 only 1: one wrong element fails, with no test."""
    p = np.array([0.0, 1.0] * 100)
    law = Categorical(groups_of_equal(p), "Bernoulli(p) per element")
    good = p.astype(np.int32)
    assert judge_statistical(good, p.shape, "int32", law, ALPHA).verdict == "pass"
    bad = good.copy()
    bad[4] = 1
    judged = judge_statistical(bad, p.shape, "int32", law, ALPHA)
    assert judged.verdict == "fail" and judged.mismatched == 1 and "out[4]=1" in judged.reason


def test_random_bits_pass_and_a_stuck_bit_is_caught():
    bits = np.random.default_rng(7).integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    assert judge_statistical(bits, (N,), "uint32", Bits(), ALPHA).verdict == "pass"
    judged = judge_statistical(bits & np.uint32(0xFFFFFFF7), (N,), "uint32", Bits(), ALPHA)
    assert judged.verdict == "fail"
    assert "binomial test per bit position (32 positions, Bonferroni)" in judged.reason
    assert "bit 3: 0 ones of n=16384" in judged.reason


def test_shape_and_type_are_exact_whatever_the_law():
    draws = np.random.default_rng(8).uniform(-1, 3, N)
    for actual, shape, dtype in ((draws.astype(np.float64), (N,), "float32"),
                                 (draws.astype(np.float32), (N // 2, 2), "float32")):
        judged = judge_statistical(actual, shape, dtype, UNIFORM, ALPHA)
        assert judged.verdict == "fail" and judged.reason.startswith("output is ")
    assert judge_statistical(np.zeros(3, np.uint32), (3,), "uint32", Unjudged(), ALPHA).verdict \
        == "pass"


def test_given_values_are_judged_under_their_model():
    expected = np.array([1.0, 2.0, 0.0])
    law = Given(expected, {"exact": True, "why": "determined by the mask"})
    assert judge_statistical(np.float32([1, 2, 0]), (3,), "float32", law, ALPHA).verdict == "pass"
    assert judge_statistical(np.float32([1, 2.5, 0]), (3,), "float32", law, ALPHA).verdict == "fail"


def test_the_rounding_widening_accepts_any_faithful_rounding():
    """Draws rounded down (toward -inf) and up, in float16, are within the widened test."""
    draws = np.random.default_rng(9).uniform(-1, 3, N)
    for rounded in (np.float16(draws), np.nextafter(np.float16(draws), np.float16(np.inf))):
        statistic, n = ks_rounded(rounded.astype(np.float64), UNIFORM.law.cdf, "float16")
        assert stats.kstwo.sf(statistic, n) > 1e-3 if statistic else True


def test_binomial_p_values_are_exact_tails():
    p = binomial_p_values(np.array([0, 10, 5]), 10, np.array([0.5, 0.5, 0.5]))
    assert p[0] == pytest.approx(2 * 0.5 ** 10) and p[1] == p[0] and p[2] == 1.0
