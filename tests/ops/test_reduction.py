"""Tests of the reduction oracles (conform/ops/reduction.py): Reduce (sum, max), DotGeneral,
ConvWithGeneralPadding and ReduceWindow.

Spec references are to the XLA operation semantics text, ../shared/seeds/004_c11ff90b720ca9d5.txt.
The "alternative formulations" below are deliberately naive loops written from the spec text.
"""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from conform.oracles import evaluate

I64_MIN = int(np.iinfo(np.int64).min)
I64_MAX = int(np.iinfo(np.int64).max)
INF, NAN = math.inf, math.nan


def run(name, *inputs, **attrs):
    (out,) = evaluate(name, [np.asarray(x) for x in inputs], attrs)
    return out


def assert_within_one_ulp(actual, exact):
    actual, exact = np.asarray(actual, np.float64), np.asarray(exact, np.float64)
    assert actual.shape == exact.shape
    np.testing.assert_array_less(np.abs(actual - exact), np.spacing(np.abs(exact)) * 1.000001)


# --- Reduce (sum) -------------------------------------------------------------------------------

# Reduce section, 3-D example: shape [4, 2, 3], values 1..6 copied along dimension 0.
SPEC_3D = np.tile(np.arange(1.0, 7.0).reshape(1, 2, 3), (4, 1, 1))


@pytest.mark.parametrize("dimensions, expected", [
    ([0], [[4, 8, 12], [16, 20, 24]]),
    ([2], [[6, 15]] * 4),
    ([0, 1], [20, 28, 36]),
    ([0, 1, 2], 84),
    ([], SPEC_3D),                       # reducing no dimension is the identity
])
def test_reduce_sum_spec_example(dimensions, expected):
    out = run("reduce_sum", SPEC_3D, dimensions=dimensions)
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.float64


def _fsum_reference(x, dimensions):
    """Correctly rounded sum over ``dimensions`` (math.fsum), by explicit iteration."""
    keep = [d for d in range(x.ndim) if d not in dimensions]
    moved = np.moveaxis(x, keep, list(range(len(keep))))
    out_shape = tuple(x.shape[d] for d in keep)
    out = np.empty(out_shape)
    for index in itertools.product(*(range(n) for n in out_shape)):
        out[index] = math.fsum(moved[index].ravel().tolist())
    return out


@pytest.mark.parametrize("shape, dimensions", [
    ((17,), [0]), ((3, 5), [1]), ((3, 5), [0]), ((2, 3, 4), [0, 2]), ((4, 1, 6), [1]),
    ((2, 3, 4), [0, 1, 2]), ((3, 0), [1]),
])
def test_reduce_sum_matches_fsum(shape, dimensions):
    rng = np.random.default_rng(len(shape) * 100 + sum(shape))
    x = rng.uniform(-10, 10, shape) * 10.0 ** rng.integers(-3, 4, shape)
    out = run("reduce_sum", x, dimensions=dimensions)
    assert_within_one_ulp(out, _fsum_reference(x, dimensions))


def test_reduce_sum_dyadic_inputs_are_exact():
    x = np.random.default_rng(7).integers(-800, 800, (5, 6, 7)) / 8.0
    out = run("reduce_sum", x, dimensions=[0, 2])
    np.testing.assert_array_equal(out, _fsum_reference(x, [0, 2]))


def test_reduce_sum_accumulates_beyond_float64_on_every_platform():
    # Plain float64 summation loses the 1: 1e16 + 1 == 1e16 in binary64 (double-double keeps it,
    # with no long double).
    out = run("reduce_sum", np.float64([1e16, 1.0, -1e16]), dimensions=[0])
    assert float(out) == 1.0


def test_reduce_sum_of_negative_zeros_starts_from_init_zero():
    # Reduce pseudocode: result <- 0; result += operand[...]; +0 + -0 = +0 under round-to-nearest.
    out = run("reduce_sum", np.float64([-0.0, -0.0]), dimensions=[0])
    assert float(out) == 0.0 and not np.signbit(out)


@pytest.mark.parametrize("x, expected", [
    ([1.0, INF, 2.0], INF), ([INF, -INF], NAN), ([NAN, 1.0], NAN), ([1e308, 1e308, -1e308], 1e308),
])
def test_reduce_sum_specials(x, expected):
    np.testing.assert_array_equal(run("reduce_sum", np.float64(x), dimensions=[0]), expected)


def test_reduce_sum_int64_exact():
    x = np.int64([[I64_MAX - 5, 3, 2], [-7, I64_MIN, 7]])
    out = run("reduce_sum", x, dimensions=[1])
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [I64_MAX, I64_MIN])
    out32 = run("reduce_sum", np.int32([2**31 - 1, 1]), dimensions=[0])
    assert int(out32) == 2**31                         # widened: no int32 wrap in the oracle


# --- Reduce (max) ------------------------------------------------------------------------------

@pytest.mark.parametrize("x, expected", [
    ([1.0, NAN, 3.0], NAN), ([NAN, 1.0], NAN), ([1.0, NAN], NAN), ([-INF, NAN, INF], NAN),
    ([-INF, -INF], -INF), ([-3.0, -1.0, -2.0], -1.0), ([5e-324, 0.0], 5e-324),
])
def test_reduce_max_float(x, expected):
    np.testing.assert_array_equal(run("reduce_max", np.float64(x), dimensions=[0]), expected)


def test_reduce_max_nan_propagates_only_in_its_row():
    x = np.float64([[1.0, NAN, 3.0], [4.0, 5.0, -6.0]])
    np.testing.assert_array_equal(run("reduce_max", x, dimensions=[1]), [NAN, 5.0])
    np.testing.assert_array_equal(run("reduce_max", x, dimensions=[0]), [4.0, NAN, 3.0])


def test_reduce_max_init_values():
    # Init -inf (float) / INT_MIN of the operand's own type: an empty dimension yields it.
    np.testing.assert_array_equal(run("reduce_max", np.zeros((2, 0)), dimensions=[1]), [-INF, -INF])
    out = run("reduce_max", np.zeros((0,), np.int32), dimensions=[0])
    assert out.dtype == np.int64 and int(out) == np.iinfo(np.int32).min
    np.testing.assert_array_equal(run("reduce_max", np.int64([I64_MIN, I64_MIN]), dimensions=[0]),
                                  I64_MIN)


@pytest.mark.parametrize("name, least, greatest", [
    ("float8_e4m3fn", -448.0, 448.0), ("float4_e2m1fn", -6.0, 6.0), ("float6_e3m2fn", -28.0, 28.0),
    ("float8_e8m0fnu", 2.0 ** -127, 2.0 ** 127), ("float8_e5m2", -INF, INF), ("bfloat16", -INF, INF),
    ("int4", -8, 7), ("uint2", 0, 3), ("bool", False, True)])
def test_max_and_min_identities_are_the_types_extremes(name, least, greatest):
    """Reduce's init for Max and Min: -inf and +inf only where the type holds them."""
    from conform.dtypes import np_dtype
    from conform.ops.reduction import extreme

    dtype = np_dtype(name)
    low, high = extreme(dtype, True), extreme(dtype, False)
    assert low.dtype == high.dtype == dtype
    assert (low.astype(np.float64), high.astype(np.float64)) == (least, greatest)
    empty = np.zeros((2, 0), dtype)
    assert run("reduce_max", empty, dimensions=[1]).tolist() == [least] * 2
    assert run("reduce_min", empty, dimensions=[1]).tolist() == [greatest] * 2


def test_bool_sum_is_or_and_max_min_are_or_and():
    """StableHLO add and maximum of booleans are logical OR, minimum logical AND."""
    x = np.array([[True, True], [True, False], [False, False]])
    for name, expected in (("reduce_sum", [True, True, False]), ("reduce_max", [True, True, False]),
                           ("reduce_min", [True, False, False])):
        out = run(name, x, dimensions=[1])
        assert out.dtype == np.bool_ and out.tolist() == expected, name


def test_complex_max_and_min_are_lexicographic_and_nan_parts_open_their_slice():
    from conform.ops.reduction import oracle_reduce_max

    x = np.array([[1 + 5j, 2 - 1j, 2 - 3j], [complex(np.nan, 0), 1j, 0j]], np.complex64)
    assert run("reduce_max", x[:1], dimensions=[1]).tolist() == [2 - 1j]
    assert run("reduce_min", x[:1], dimensions=[1]).tolist() == [1 + 5j]
    (held,) = oracle_reduce_max(x.astype(np.complex128), dimensions=[1], open_elements=True)
    assert held.tolist() == [False, True]


def test_complex_sums_are_exact_part_by_part():
    """Each part in double-double (the real parts cancel to 1 exactly); an infinite imaginary
    part stays inf, with no NaN from 1j * inf."""
    x = np.array([1e16 + 1j, complex(1, np.inf), -1e16 + 0j])
    out = run("reduce_sum", x, dimensions=[0])
    assert out.real == 1.0 and out.imag == INF
    windows = run("reduce_window_sum", x, window_dimensions=[3], window_strides=[1],
                  padding=[[0, 0]])
    assert windows.real.tolist() == [1.0] and windows.imag.tolist() == [INF]


def test_complex_sum_overflow_is_open_part_by_part():
    """Rows whose real (or imaginary) terms can overflow float32 in some order are open; the
    row of small terms is not."""
    from conform.ops.reduction import complex_accumulation_overflow
    from conform.ops.regions import RegionContext

    big = 3e38
    x = np.array([[complex(big, 1), complex(big, 1), complex(-big, 1)],
                  [complex(1, big), complex(1, -big), 1j], [1 + 1j, 2 + 2j, 3 - 3j]], np.complex64)
    ctx = RegionContext(inputs=[x], expected=run("reduce_sum", x, dimensions=[1]),
                        out_dtype="complex64", accumulation_length=3,
                        float_oracle=lambda xs: run("reduce_sum", xs[0], dimensions=[1]))
    assert complex_accumulation_overflow(ctx).tolist() == [True, True, False]


def test_reduce_max_spec_3d_example():
    np.testing.assert_array_equal(run("reduce_max", SPEC_3D, dimensions=[0, 2]), [3.0, 6.0])


# --- DotGeneral ---------------------------------------------------------------------------------

def test_dot_general_spec_contracting_example():
    # DotGeneral section: contracting dims lhs 1 / rhs 1. The oracle's fixed form contracts lhs's
    # last dim with rhs's second-to-last, so the same product is lhs x rhs^T.
    lhs = np.float64([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    rhs = np.float64([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    np.testing.assert_array_equal(run("dot_general", lhs, rhs.T), [[6.0, 12.0], [15.0, 30.0]])


def test_dot_general_spec_batch_example():
    # DotGeneral section: batch dim 0 of size 2, each rhs batch the 2x2 identity.
    lhs = np.float64([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]])
    rhs = np.float64([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]])
    np.testing.assert_array_equal(run("dot_general", lhs, rhs), lhs)


def _dot_exact(lhs, rhs):
    """Batched matmul by explicit loops; float sums are exact (Fraction) and rounded once."""
    exact = int if lhs.dtype.kind in "iu" else Fraction
    batch, (m, k), n = lhs.shape[:-2], lhs.shape[-2:], rhs.shape[-1]
    out = np.empty(batch + (m, n), dtype=lhs.dtype)
    for b in itertools.product(*(range(s) for s in batch)):
        for i, j in itertools.product(range(m), range(n)):
            total = sum(exact(lhs[b + (i, t)].item()) * exact(rhs[b + (t, j)].item())
                        for t in range(k))
            out[b + (i, j)] = int(total) if exact is int else float(total)
    return out


@pytest.mark.parametrize("lhs_shape, rhs_shape", [
    ((1, 1), (1, 1)), ((3, 4), (4, 2)), ((2, 3, 5), (2, 5, 4)), ((2, 2, 2, 3), (2, 2, 3, 1)),
    ((4, 7), (7, 4)), ((2, 0), (0, 3)),
])
def test_dot_general_matches_loops(lhs_shape, rhs_shape):
    rng = np.random.default_rng(sum(lhs_shape) * 31 + sum(rhs_shape))
    lhs, rhs = rng.uniform(-4, 4, lhs_shape), rng.uniform(-4, 4, rhs_shape)
    out = run("dot_general", lhs, rhs)
    assert_within_one_ulp(out, _dot_exact(lhs, rhs))
    ints_l, ints_r = rng.integers(-100, 100, lhs_shape), rng.integers(-100, 100, rhs_shape)
    out = run("dot_general", ints_l, ints_r)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, _dot_exact(ints_l, ints_r))


def test_dot_general_int64_no_intermediate_overflow_of_result():
    # (2**62) * 1 + (2**62 - 1) * 1 = 2**63 - 1 fits exactly.
    out = run("dot_general", np.int64([[2**62, 2**62 - 1]]), np.int64([[1], [1]]))
    assert int(out[0, 0]) == I64_MAX


# --- ConvWithGeneralPadding ----------------------------------------------------------------------

def _conv_loops(lhs, rhs, strides, padding, dilation):
    """The ConvWithGeneralPadding pseudocode, with iy = oy*sy + ky*dy - pad_low_y (rhs dilation)."""
    n, c, h, w = lhs.shape
    o, _, kh, kw = rhs.shape
    (sy, sx), ((ly, hy), (lx, hx)), (dy, dx) = strides, padding, dilation
    out_h = (h + ly + hy - ((kh - 1) * dy + 1)) // sy + 1
    out_w = (w + lx + hx - ((kw - 1) * dx + 1)) // sx + 1
    out = np.zeros((n, o, out_h, out_w))
    for b, oz, oy, ox in itertools.product(range(n), range(o), range(out_h), range(out_w)):
        value = 0.0
        for iz, ky, kx in itertools.product(range(c), range(kh), range(kw)):
            iy, ix = oy * sy + ky * dy - ly, ox * sx + kx * dx - lx
            if 0 <= iy < h and 0 <= ix < w:
                value += lhs[b, iz, iy, ix] * rhs[oz, iz, ky, kx]
        out[b, oz, oy, ox] = value
    return out


NINE = np.arange(1.0, 10.0).reshape(1, 1, 3, 3)        # [[1,2,3],[4,5,6],[7,8,9]]


@pytest.mark.parametrize("kernel, strides, padding, dilation, expected", [
    # 2x2 ones, valid: window sums 1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9.
    (np.ones((2, 2)), [1, 1], [[0, 0], [0, 0]], [1, 1], [[12, 16], [24, 28]]),
    # Zero-padded 5x5, stride 2: windows {0,0,0,1}, {0,0,2,3}, {0,4,0,7}, {5,6,8,9}.
    (np.ones((2, 2)), [2, 2], [[1, 1], [1, 1]], [1, 1], [[1, 5], [11, 28]]),
    # Dilation 2: the 2x2 kernel taps the corners of a 3x3 window: 1 + 3 + 7 + 9.
    (np.ones((2, 2)), [1, 1], [[0, 0], [0, 0]], [2, 2], [[20]]),
    # Cross-correlation, no kernel flip: a top-left tap copies the top-left 2x2 block.
    (np.float64([[1, 0], [0, 0]]), [1, 1], [[0, 0], [0, 0]], [1, 1], [[1, 2], [4, 5]]),
    # Asymmetric padding (low 2, high 0) on x only, 1x1 kernel of 10: two zero columns first.
    (np.float64([[10]]), [1, 1], [[0, 0], [2, 0]], [1, 1],
     [[0, 0, 10, 20, 30], [0, 0, 40, 50, 60], [0, 0, 70, 80, 90]]),
])
def test_conv_hand_worked(kernel, strides, padding, dilation, expected):
    out = run("conv", NINE, kernel.reshape(1, 1, *kernel.shape),
              window_strides=strides, padding=padding, rhs_dilation=dilation)
    np.testing.assert_array_equal(out[0, 0], expected)


@pytest.mark.parametrize("lhs_shape, rhs_shape, strides, padding, dilation", [
    ((1, 1, 5, 5), (1, 1, 3, 3), [1, 1], [[0, 0], [0, 0]], [1, 1]),
    ((2, 3, 6, 5), (4, 3, 2, 3), [2, 1], [[1, 0], [2, 1]], [1, 1]),
    ((1, 2, 7, 7), (3, 2, 3, 2), [2, 3], [[1, 2], [0, 2]], [2, 2]),
    ((2, 2, 6, 8), (2, 2, 2, 2), [1, 2], [[2, 2], [1, 1]], [3, 1]),
    ((1, 1, 4, 4), (2, 1, 1, 1), [3, 3], [[0, 0], [0, 0]], [1, 1]),
])
def test_conv_matches_spec_pseudocode(lhs_shape, rhs_shape, strides, padding, dilation):
    rng = np.random.default_rng(sum(lhs_shape) + 7 * sum(rhs_shape))
    lhs = rng.integers(-4, 5, lhs_shape).astype(np.float64)      # small integers: sums are exact
    rhs = rng.integers(-4, 5, rhs_shape).astype(np.float64)
    out = run("conv", lhs, rhs, window_strides=strides, padding=padding, rhs_dilation=dilation)
    np.testing.assert_array_equal(out, _conv_loops(lhs, rhs, strides, padding, dilation))
    fractional = rng.uniform(-4, 4, lhs_shape)
    out = run("conv", fractional, rhs, window_strides=strides, padding=padding,
              rhs_dilation=dilation)
    np.testing.assert_allclose(out, _conv_loops(fractional, rhs, strides, padding, dilation),
                               rtol=1e-12, atol=1e-12)


def test_conv_negative_padding_removes_rows():
    # ConvWithGeneralPadding: "the padding may be negative; its absolute value is the number of
    # elements removed from the dimension before the convolution". Low y padding -1 drops row 0.
    out = run("conv", NINE, np.ones((1, 1, 1, 1)), window_strides=[1, 1],
              padding=[[-1, 0], [0, 0]], rhs_dilation=[1, 1])
    np.testing.assert_array_equal(out[0, 0], [[4, 5, 6], [7, 8, 9]])


# --- ReduceWindow (max) ---------------------------------------------------------------------------

def test_reduce_window_spec_min_example_via_negation():
    # ReduceWindow section: min over [10000, 1000, 100, 10, 1], window 3, stride 2, init MAX_FLOAT.
    # kValid -> [100, 1]; kSame pads one init element each side -> [1000, 10, 1].
    # min(x) == -max(-x), and the max oracle's padding (-inf) is the negation of +inf.
    x = -np.float64([10000, 1000, 100, 10, 1])
    valid = run("reduce_window_max", x, window_dimensions=[3], window_strides=[2], padding=[[0, 0]])
    np.testing.assert_array_equal(-valid, [100, 1])
    same = run("reduce_window_max", x, window_dimensions=[3], window_strides=[2], padding=[[1, 1]])
    np.testing.assert_array_equal(-same, [1000, 10, 1])


@pytest.mark.parametrize("x, window, stride, padding, expected", [
    # All negative, padded by 2 on both sides with -inf: [-inf,-inf,-5,-3,-7,-inf,-inf];
    # windows of 3: [-inf,-inf,-5] [-inf,-5,-3] [-5,-3,-7] [-3,-7,-inf] [-7,-inf,-inf].
    ([-5.0, -3.0, -7.0], 3, 1, [2, 2], [-5.0, -3.0, -3.0, -3.0, -7.0]),
    # A window made only of padding yields the init value -inf: [-inf,-inf,1] windows of 2.
    ([1.0], 2, 1, [2, 0], [-INF, 1.0]),
    # -inf as data is still the maximum of an all -inf window; NaN propagates within its window.
    ([-INF, NAN, 2.0, -1.0], 2, 2, [0, 0], [NAN, 2.0]),
    ([-1e300, -1e308], 1, 1, [1, 1], [-INF, -1e300, -1e308, -INF]),
])
def test_reduce_window_max_padding_never_wins(x, window, stride, padding, expected):
    out = run("reduce_window_max", np.float64(x), window_dimensions=[window],
              window_strides=[stride], padding=[padding])
    np.testing.assert_array_equal(out, expected)


def test_reduce_window_max_int_padding_is_int_min():
    x = np.int32([-2**31, -2**31 + 1, -5])
    out = run("reduce_window_max", x, window_dimensions=[2], window_strides=[1], padding=[[1, 1]])
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [-2**31, -2**31 + 1, -5, -5])


def test_uint64_max_and_min_above_2_63():
    """uint64 reaches the oracle as uint64 (issue 36): 2**64 - 1 is the largest, not -1, and
    padding takes uint64's least value, 0."""
    x = np.uint64([2**64 - 1, 2**63, 5])
    assert run("reduce_max", x, dimensions=[0]).tolist() == 2**64 - 1
    assert run("reduce_min", x, dimensions=[0]).tolist() == 5
    out = evaluate("reduce_window_max", [x], {"window_dimensions": [2], "window_strides": [1],
                                              "padding": [[1, 1]], "dtypes": ("uint64",)})[0]
    assert out.tolist() == [2**64 - 1, 2**64 - 1, 2**63, 5]


def _reduce_window_loops(x, window, strides, padding):
    lowest = -INF if x.dtype.kind == "f" else I64_MIN
    out_shape = [(n + lo + hi - k) // s + 1 for n, k, s, (lo, hi) in zip(x.shape, window, strides, padding)]
    out = np.empty(out_shape, dtype=np.float64 if x.dtype.kind == "f" else np.int64)
    for index in itertools.product(*(range(n) for n in out_shape)):
        best = lowest
        for offset in itertools.product(*(range(k) for k in window)):
            src = [i * s + o - lo for i, s, o, (lo, _) in zip(index, strides, offset, padding)]
            if all(0 <= p < n for p, n in zip(src, x.shape)):
                value = x[tuple(src)]
                if not np.isnan(best) and (np.isnan(value) or value > best):
                    best = value                         # Max propagates NaN
        out[index] = best
    return out


@pytest.mark.parametrize("shape, window, strides, padding", [
    ((4, 6), [2, 3], [2, 3], [[0, 0], [0, 0]]),        # the ReduceWindow section's 4x6 example
    ((4, 6), [2, 3], [1, 1], [[1, 0], [0, 2]]),
    ((5, 5), [3, 3], [2, 2], [[1, 1], [1, 1]]),
    ((2, 3, 4), [1, 2, 3], [1, 1, 2], [[0, 1], [1, 1], [2, 0]]),
    ((7,), [4], [3], [[3, 3]]),
])
def test_reduce_window_max_matches_loops(shape, window, strides, padding):
    rng = np.random.default_rng(sum(shape) * 13 + sum(window))
    x = rng.uniform(-10, -1, shape)                      # all negative: zero padding would win
    x.flat[rng.integers(0, x.size)] = NAN                # only the windows holding it become NaN
    out = run("reduce_window_max", x, window_dimensions=window, window_strides=strides,
              padding=padding)
    np.testing.assert_array_equal(out, _reduce_window_loops(x, window, strides, padding))
    ints = rng.integers(-1000, -1, shape)
    out = run("reduce_window_max", ints, window_dimensions=window, window_strides=strides,
              padding=padding)
    np.testing.assert_array_equal(out, _reduce_window_loops(ints, window, strides, padding))


def test_reduce_window_boundaries_count_the_valid_window_positions(specs):
    from conform.generators._shape_edges import boundary_cases
    from conform.ops.reduction import REDUCE_WINDOW_BOUNDARIES, numpy_reduce_window_sum

    cases = boundary_cases(specs["reduce_window_sum"], "float64", seed=0)
    for case, (size, pad, stride) in zip(cases, REDUCE_WINDOW_BOUNDARIES):
        (out,) = evaluate("reduce_window_sum", case.inputs, case.attrs)
        positions = max((size + sum(pad) - 5) // stride + 1, 0)   # the dilated window: 5
        assert out.shape == (1, 2, positions), case.id
        assert np.allclose(numpy_reduce_window_sum(*case.inputs, **case.attrs), out)


def test_max_and_min_identities_in_the_two_and_four_bit_integers():
    """An empty Reduce gives its init value: the type's least (Max) or greatest (Min) integer,
    int2/int4/uint2/uint4 included (np.iinfo refuses ml_dtypes' integers)."""
    from conform.dtypes import np_dtype
    from conform.ops.reduction import numpy_reduce_max, numpy_reduce_min

    for name, low, high in (("int4", -8, 7), ("uint2", 0, 3), ("int2", -2, 1)):
        empty = np.zeros((0, 2), np_dtype(name))
        top = numpy_reduce_max(empty, dimensions=[0])
        bottom = numpy_reduce_min(empty, dimensions=[0])
        assert top.astype(int).tolist() == [low, low] and bottom.astype(int).tolist() == [high, high]
