"""Tests of the comparison, bitwise, shift and bit-count oracles (conform/ops/logical.py) and of
the ``shift_out_of_range`` region.

Spec references are to the XLA operation semantics text, ../shared/seeds/004_c11ff90b720ca9d5.txt
(Chinese translation): "元素级比较运算" (Eq, Ne, Ge, Gt, Le, Lt under IEEE 754 comparison),
"元素级二进制算术运算" (And, Or, Xor, ShiftLeft, ShiftRightArithmetic, ShiftRightLogical) and
"元素级单元函数" (Not, Clz, PopulationCount). Integer references are computed here with Python's
unbounded integers on the two's-complement pattern of the dtype's width.
"""
from __future__ import annotations

import math
from functools import lru_cache

import ml_dtypes
import numpy as np
import pytest

from conform.ops import definitions
from conform.oracles import evaluate
from conform.op_registry import regions
from conform.ops.regions import RegionContext
from conform.spec import dtype_class, load_specs
from conform.dtypes import int_info, np_dtype, result_dtype

INF, NAN = math.inf, math.nan
I32_MIN, I32_MAX = -2**31, 2**31 - 1
I64_MIN, I64_MAX = -2**63, 2**63 - 1
INT_DTYPES = ["int8", "int32", "int64", "uint8", "uint32"]


def run(name, *inputs):
    """The single output of oracle ``name`` as the judge sees it (inputs widened)."""
    (out,) = evaluate(name, [np.asarray(x) for x in inputs], {})
    return out


def native(name, *inputs):
    """The single output of oracle ``name`` called on arrays of their own dtype (no widening)."""
    with np.errstate(all="ignore"):
        (out,) = definitions()[name](*(np.asarray(x) for x in inputs))
    return np.asarray(out)


def width(dtype) -> int:
    return int_info(str(np.dtype(dtype))).bits   # int4: 4, though stored in a byte


def pattern(value: int, dtype) -> int:
    """The two's-complement bit pattern of ``value`` in ``dtype``, as a non-negative int."""
    return int(value) % (1 << width(dtype))


def from_pattern(bits: int, dtype) -> int:
    """The value of ``dtype`` holding the bit pattern ``bits``."""
    w = width(dtype)
    bits %= 1 << w
    signed = not str(np.dtype(dtype)).startswith("uint")   # ml_dtypes' int4 has kind 'V'
    return bits - (1 << w) if signed and bits >= 1 << (w - 1) else bits


def samples(dtype, n=400, seed=0) -> np.ndarray:
    """Random full-range values of an integer ``dtype`` plus its extremes, 0, 1 and -1."""
    info = int_info(dtype)   # np.iinfo knows no int4
    rng = np.random.default_rng(seed)
    kind = np.uint64 if info.max > np.iinfo(np.int64).max else np.int64
    raw = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=kind)
    raw = raw >> rng.integers(0, info.bits, size=n).astype(kind)   # every magnitude, not only huge ones
    edges = [v for v in (0, 1, -1, int(info.min), int(info.max), int(info.min) + 1, int(info.max) - 1)
             if info.min <= v <= info.max]
    return np.concatenate([raw.astype(np_dtype(dtype)), np.array(edges, np_dtype(dtype))])


# --- comparisons: IEEE 754-2019 §5.11 --------------------------------------------------------------

@pytest.mark.parametrize("op, lhs, rhs, expected", [
    # NaN is unordered with everything, itself included: every predicate but ne is false
    ("ne", NAN, NAN, True), ("gt", NAN, NAN, False), ("ge", NAN, NAN, False), ("le", NAN, NAN, False),
    ("ne", NAN, 1.0, True), ("gt", NAN, -INF, False), ("ge", INF, NAN, False), ("le", NAN, INF, False),
    ("le", -INF, NAN, False), ("gt", 0.0, NAN, False),
    # -0 == +0
    ("ne", -0.0, 0.0, False), ("gt", 0.0, -0.0, False), ("ge", -0.0, 0.0, True),
    ("le", 0.0, -0.0, True), ("gt", -0.0, 0.0, False),
    # infinities are ordered and equal to themselves
    ("ge", INF, INF, True), ("gt", INF, INF, False), ("le", -INF, -INF, True), ("ne", INF, -INF, True),
    ("gt", INF, 1.7976931348623157e308, True), ("le", -INF, -1.7976931348623157e308, True),
    # subnormals are not zero
    ("gt", 5e-324, 0.0, True), ("ne", -5e-324, -0.0, True),
    ("gt", 2.0, 1.0, True), ("ge", 1.0, 2.0, False), ("le", 1.0, 1.0, True), ("ne", 1.0, 1.0, False),
])
def test_float_comparisons(op, lhs, rhs, expected):
    out = run(op, lhs, rhs)
    assert out.dtype == np.bool_
    assert bool(out) is expected


@pytest.mark.parametrize("op, lhs, rhs, expected", [
    ("gt", I64_MAX, I64_MIN, True), ("gt", I64_MIN, I64_MAX, False), ("ge", I64_MIN, I64_MIN, True),
    ("le", I64_MIN, -1, True), ("ne", I64_MIN, I64_MIN, False),
    # 2**53 + 1 and 2**53 are one float64: an int64 comparison must not go through float64
    ("gt", 2**53 + 1, 2**53, True), ("ne", 2**53 + 1, 2**53, True), ("le", 2**53 + 1, 2**53, False),
    ("ge", I64_MAX, I64_MAX - 1, True), ("ne", I64_MAX, I64_MAX - 1, True),
])
def test_int64_comparisons_are_exact(op, lhs, rhs, expected):
    assert bool(run(op, np.int64(lhs), np.int64(rhs))) is expected


FLOAT_GRID = np.array([NAN, -INF, -1e308, -2.5, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1.0, 2.5, 1e308, INF])


def test_comparisons_are_the_ieee_relations_of_lt_and_eq():
    # §5.11: the four mutually exclusive relations are less, equal, greater, unordered; every
    # predicate is a union of them: gt(a, b) = lt(b, a), ge = gt | eq, le = lt | eq, ne = not eq.
    lhs, rhs = np.meshgrid(FLOAT_GRID, FLOAT_GRID, indexing="ij")
    lt, eq = run("lt", lhs, rhs), run("eq", lhs, rhs)
    np.testing.assert_array_equal(run("gt", lhs, rhs), run("lt", rhs, lhs))
    np.testing.assert_array_equal(run("ge", lhs, rhs), run("gt", lhs, rhs) | eq)
    np.testing.assert_array_equal(run("le", lhs, rhs), lt | eq)
    np.testing.assert_array_equal(run("ne", lhs, rhs), ~eq)
    unordered = np.isnan(lhs) | np.isnan(rhs)
    for op in ("gt", "ge", "le"):
        assert not run(op, lhs, rhs)[unordered].any()


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_narrow_float_comparisons(dtype):
    lhs = np.array([NAN, -0.0, 1.0, INF, 0.0], dtype)
    rhs = np.array([NAN, 0.0, 1.0, 65504.0, NAN], dtype)
    np.testing.assert_array_equal(run("ne", lhs, rhs), [True, False, False, True, True])
    np.testing.assert_array_equal(run("ge", lhs, rhs), [False, True, True, True, False])
    np.testing.assert_array_equal(native("ge", lhs, rhs), [False, True, True, True, False])


# --- And, Or, Xor, Not: logical on PRED, bitwise on integers -----------------------------------------

BOOLS = np.array([False, False, True, True]), np.array([False, True, False, True])


@pytest.mark.parametrize("op, table", [
    ("bitwise_and", [False, False, False, True]),
    ("bitwise_or", [False, True, True, True]),
    ("bitwise_xor", [False, True, True, False]),
])
def test_bool_truth_tables(op, table):
    out = run(op, *BOOLS)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, table)


def test_not_on_bool_is_logical():
    out = run("bitwise_not", np.array([True, False]))
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, [False, True])


@pytest.mark.parametrize("op, lhs, rhs, expected", [
    ("bitwise_and", 0b1100, 0b1010, 0b1000), ("bitwise_or", 0b1100, 0b1010, 0b1110),
    ("bitwise_xor", 0b1100, 0b1010, 0b0110),
    ("bitwise_and", -1, I32_MIN, I32_MIN), ("bitwise_or", I32_MIN, I32_MAX, -1),
    ("bitwise_xor", -1, I32_MAX, I32_MIN), ("bitwise_and", -8, 7, 0), ("bitwise_or", -8, 7, -1),
])
def test_int32_bitwise(op, lhs, rhs, expected):
    assert int(run(op, np.int32(lhs), np.int32(rhs)).astype(np.int32)) == expected
    assert int(native(op, np.int32(lhs), np.int32(rhs))) == expected


@pytest.mark.parametrize("dtype, operand, expected", [
    ("int32", 0, -1), ("int32", I32_MIN, I32_MAX), ("int64", I64_MAX, I64_MIN), ("int64", -1, 0),
    ("uint8", 0, 255), ("uint8", 0x5A, 0xA5), ("uint32", 0, 2**32 - 1), ("uint32", 0xAAAAAAAA, 0x55555555),
])
def test_bitwise_not_is_the_complement(dtype, operand, expected):
    assert int(run("bitwise_not", np.array(operand, dtype)).astype(dtype)) == expected
    assert int(native("bitwise_not", np.array(operand, dtype))) == expected


# --- shifts ------------------------------------------------------------------------------------------

def shift_reference(op, value: int, amount: int, dtype) -> int:
    """The shift on the dtype's bit pattern, for 0 <= amount < width, with Python integers."""
    w, bits = width(dtype), pattern(value, dtype)
    if op == "shift_left":
        return from_pattern(bits << amount, dtype)
    if op == "shift_right_logical":
        return from_pattern(bits >> amount, dtype)
    signed = bits - (1 << w) if bits >> (w - 1) else bits            # the arithmetic shift reads
    return from_pattern(signed >> amount, dtype)                       # the pattern as signed


@pytest.mark.parametrize("op, dtype, lhs, rhs, expected", [
    ("shift_left", "int32", 1, 31, I32_MIN),            # into the sign bit
    ("shift_left", "int32", I32_MAX, 1, -2),            # bits shifted out of the top are lost
    ("shift_left", "int32", I32_MIN, 1, 0),
    ("shift_left", "int64", 1, 63, I64_MIN),
    ("shift_left", "uint32", 0xFFFFFFFF, 4, 0xFFFFFFF0),
    ("shift_left", "int32", -5, 0, -5),                 # shift by 0 is the identity
    ("shift_right_arithmetic", "int32", -7, 1, -4),     # floor(-7 / 2), not trunc
    ("shift_right_arithmetic", "int32", 7, 1, 3),
    ("shift_right_arithmetic", "int32", I32_MIN, 31, -1),
    ("shift_right_arithmetic", "int64", I64_MIN, 63, -1),
    ("shift_right_arithmetic", "int64", I64_MAX, 62, 1),
    ("shift_right_arithmetic", "uint32", 0x80000000, 4, 0xF8000000),   # the top bit is copied
    ("shift_right_logical", "int32", -1, 1, I32_MAX),   # zeros come in, whatever the sign
    ("shift_right_logical", "int32", I32_MIN, 31, 1),
    ("shift_right_logical", "int64", -1, 63, 1),
    ("shift_right_logical", "int64", -1, 0, -1),
    ("shift_right_logical", "uint32", 0x80000000, 31, 1),
    ("shift_right_logical", "uint8", 0xFF, 7, 1),
])
def test_shift_examples(op, dtype, lhs, rhs, expected):
    # Native: the oracle shifts the pattern of its own width.
    assert int(native(op, np.array(lhs, dtype), np.array(rhs, dtype))) == expected


@pytest.mark.parametrize("op", ["shift_left", "shift_right_arithmetic", "shift_right_logical"])
@pytest.mark.parametrize("dtype", INT_DTYPES + ["int2", "int4", "uint4", "uint64"])
def test_shifts_against_python_integers(op, dtype):
    """In the operand's own width, as the judge sees it (widened, the dtype given)."""
    lhs = samples(dtype)
    amounts = np.arange(min(width(dtype), int(int_info(dtype).max) + 1))   # int2: 0 and 1
    rhs = np.resize(amounts, lhs.shape).astype(np_dtype(dtype))   # every in-range amount
    (out,) = evaluate(op, [lhs, rhs], {})
    want = [shift_reference(op, int(a), int(s), np_dtype(dtype)) for a, s in zip(lhs, rhs)]
    assert [int(v) for v in out.astype(np_dtype(dtype))] == want


def test_shift_out_of_range_amounts_give_a_placeholder_not_a_crash():
    # Region shift_out_of_range: any value is unjudged there; the oracle stays well-defined.
    lhs, rhs = np.int32([5, 5, -5, -5]), np.int32([32, -1, 40, I32_MIN])
    np.testing.assert_array_equal(native("shift_left", lhs, rhs), [0, 0, 0, 0])
    np.testing.assert_array_equal(native("shift_right_logical", lhs, rhs), [0, 0, 0, 0])
    np.testing.assert_array_equal(native("shift_right_arithmetic", lhs, rhs), [0, 5, -1, -5])


# --- PopulationCount, Clz ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, operand, popcount, clz", [
    ("int64", 0, 0, 64), ("int64", 1, 1, 63), ("int64", -1, 64, 0), ("int64", I64_MIN, 1, 0),
    ("int64", I64_MAX, 63, 1), ("int64", 2**32, 1, 31),
    ("int32", -1, 32, 0), ("int32", 1, 1, 31), ("int32", 0, 0, 32), ("int32", I32_MIN, 1, 0),
    ("uint32", 0xAAAAAAAA, 16, 0), ("uint32", 0xFFFF, 16, 16),
    ("uint8", 0, 0, 8), ("uint8", 1, 1, 7), ("uint8", 0x80, 1, 0), ("int8", -1, 8, 0),
])
def test_bit_count_examples(dtype, operand, popcount, clz):
    x = np.array(operand, dtype)
    assert int(native("population_count", x)) == popcount
    assert int(native("count_leading_zeros", x)) == clz


@pytest.mark.parametrize("dtype, operand, popcount, clz", [
    ("int4", -1, 4, 0), ("int4", -4, 2, 0), ("int4", -8, 1, 0), ("int4", 1, 1, 3), ("int4", 7, 3, 1),
    ("uint4", 15, 4, 0), ("uint4", 1, 1, 3), ("uint4", 0, 0, 4),
    ("int16", -1, 16, 0), ("uint16", 1, 1, 15), ("uint64", 2**64 - 1, 64, 0), ("uint64", 2**63, 1, 0),
])
def test_bit_counts_in_the_original_width_as_the_judge_sees_them(dtype, operand, popcount, clz):
    """The registry widens integers to int64; the oracles count in the input's own width."""
    x = np.array([operand], np_dtype(dtype))
    assert run("population_count", x).tolist() == [popcount]
    assert run("count_leading_zeros", x).tolist() == [clz]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_bit_counts_against_python_integers(dtype):
    x = samples(dtype, seed=1)
    bits = [pattern(int(v), dtype) for v in x]
    np.testing.assert_array_equal(native("population_count", x), [bin(b).count("1") for b in bits])
    np.testing.assert_array_equal(native("count_leading_zeros", x),
                                  [width(dtype) - b.bit_length() for b in bits])


# --- the registry widens integers to int64: each spec lists only dtypes where that is harmless -------

LOGICAL_OPS = ["ne", "gt", "ge", "le", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
          "shift_left", "shift_right_arithmetic", "shift_right_logical", "population_count",
          "count_leading_zeros"]


@lru_cache(maxsize=1)
def specs():
    return load_specs()


def _inputs(spec, dtype, seed):
    if dtype == "bool":
        rng = np.random.default_rng(seed)
        return [rng.random(64) < 0.5 for _ in spec.inputs]
    if dtype_class(dtype) in ("float", "complex"):
        with np.errstate(over="ignore"):    # 1e308 overflows the narrow types: inf, also an edge
            grid = [np.resize(np.roll(FLOAT_GRID, k), 64) for k in range(len(spec.inputs) + 1)]
            if dtype_class(dtype) == "complex":   # every pair of grid values as (real, imag)
                return [(grid[k] + 1j * grid[k + 1]).astype(np_dtype(dtype))
                        for k in range(len(spec.inputs))]
            return [g.astype(np_dtype(dtype)) for g in grid[:len(spec.inputs)]]
    values = [samples(dtype, n=200, seed=seed + k) for k in range(len(spec.inputs))]
    if spec.inputs == ("lhs", "rhs") and spec.op.startswith("shift"):
        values[1] = np.resize(np.arange(-2, width(dtype) + 3), values[0].shape).astype(dtype)
    return values


def widened_agrees(spec, dtype, seed=0) -> bool:
    """Does the judge's (widened) oracle give, after the cast to the output type, what the oracle
    computes in the dtype's own width, outside implementation-defined regions?"""
    inputs = _inputs(spec, dtype, seed)
    out_dtype = result_dtype(spec.output_dtype, dtype)
    judged = run(spec.oracle, *inputs).astype(np_dtype(out_dtype))
    own = native(spec.oracle, *inputs).astype(np_dtype(out_dtype))
    mask = np.zeros(judged.shape, bool)
    for entry in spec.implementation_defined:
        ctx = RegionContext(inputs=inputs, expected=judged, out_dtype=out_dtype, float_oracle=None)
        mask |= regions()[entry["region"]](ctx)
    return bool(((judged == own) | mask).all())


@pytest.mark.parametrize("op", LOGICAL_OPS)
def test_every_listed_dtype_survives_widening(op):
    spec = specs()[op]
    for dtype in spec.dtypes:
        assert widened_agrees(spec, dtype), f"{op} {dtype}: the widened oracle disagrees"


@pytest.mark.parametrize("op, dtype, lhs, rhs, expected", [
    ("shift_right_logical", "int32", -1, 28, 15),          # zeros come in at bit 31, not 63
    ("shift_right_arithmetic", "uint32", 2**31, 31, 2**32 - 1),   # the top bit is copied
    ("shift_right_arithmetic", "uint4", 8, 3, 15),
    ("shift_right_logical", "int4", -8, 1, 4),
    ("shift_left", "int4", 7, 1, -2),
])
def test_the_shifts_move_the_bits_of_the_types_own_width(op, dtype, lhs, rhs, expected):
    # The registry widens integers to int64; the shift oracles read the width from the dtype.
    x, s = (np.array([v], np_dtype(dtype)) for v in (lhs, rhs))
    (out,) = evaluate(op, [x, s], {})
    assert out.astype(np_dtype(dtype)).astype(np.int64).tolist() == [expected]


# --- region shift_out_of_range ------------------------------------------------------------------------

def shift_mask(lhs, rhs):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    (expected,) = evaluate("shift_left", [lhs, rhs], {})
    ctx = RegionContext(inputs=[lhs, rhs], expected=expected, out_dtype=str(lhs.dtype),
                        float_oracle=lambda xs: evaluate("shift_left", xs, {})[0])
    out = regions()["shift_out_of_range"](ctx)
    assert out.dtype == np.bool_ and out.shape == expected.shape
    return out


@pytest.mark.parametrize("dtype, amounts, outside", [
    ("int32", [0, 31, 32, -1, I32_MIN, I32_MAX], [False, False, True, True, True, True]),
    ("int64", [0, 32, 63, 64, -1], [False, False, False, True, True]),
    ("uint32", [0, 31, 32, 2**32 - 1], [False, False, True, True]),
    ("uint8", [7, 8], [False, True]),
    ("int4", [3, 4, 7, -1], [False, True, True, True]),
    ("uint2", [1, 2, 3], [False, True, True]),
])
def test_shift_out_of_range(dtype, amounts, outside):
    lhs = np.ones(len(amounts), np_dtype(dtype))
    np.testing.assert_array_equal(shift_mask(lhs, np.array(amounts, np_dtype(dtype))), outside)


def test_shift_out_of_range_broadcasts_a_scalar_amount():
    np.testing.assert_array_equal(shift_mask(np.int32([1, 2, 3]), np.int32(32)), [True] * 3)


def test_shift_out_of_range_is_the_region_of_the_shift_specs():
    for op in ("shift_left", "shift_right_arithmetic", "shift_right_logical"):
        assert [r["region"] for r in specs()[op].implementation_defined] == ["shift_out_of_range"]


def test_the_numpy_backend_shifts_right_in_the_views_the_ops_name():
    """NumPy's right_shift is logical on unsigned types and arithmetic on signed ones: the
    numpy backend views the pattern as the op needs it (uint8 255 >> 1: arithmetic 255)."""
    from conform.ops.logical import _numpy_right_shift, numpy_shift_right_logical
    assert _numpy_right_shift("i")(np.uint8([255, 64]), np.uint8([1, 1])).tolist() == [255, 32]
    assert numpy_shift_right_logical(np.int8([-1]), np.int8([1])).tolist() == [127]
