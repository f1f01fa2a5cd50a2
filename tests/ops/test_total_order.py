"""XLA's total-order comparisons (ops/total_order.py) and the logical ops on PRED.

The text (seeds/004_c11ff90b720ca9d5.txt, "元素级比较运算"): EqTotalOrder ... LtTotalOrder order
floats as -NaN < -Inf < -Finite < -0 < +0 < +Finite < +Inf < +NaN. And, Or, Xor and Not are
logical on PRED. The oracles are checked on that order, the numpy backend's key and the real
jax backend run the drawn suites, and the judge catches IEEE comparison semantics."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators._suite import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from conform.op_registry import regions
from conform.ops.regions import RegionContext
from conform.dtypes import np_dtype

ORDERED = [-np.nan, -np.inf, -3.5, -1.0, -2.0 ** -20, -0.0, 0.0, 2.0 ** -20, 1.0, 3.5, np.inf,
           np.nan]
DTYPES = ["float16", "bfloat16", "float32", "float64"]


def ordered(dtype):
    """The text's order, one value per place, in ``dtype`` (-NaN with its sign bit set)."""
    values = np.array(ORDERED, np.float64)
    values[0] = np.copysign(np.nan, -1.0)
    return values.astype(np_dtype(dtype))


def grid(dtype):
    values = ordered(dtype)
    i, j = np.meshgrid(np.arange(len(values)), np.arange(len(values)), indexing="ij")
    return values[i.ravel()], values[j.ravel()], i.ravel(), j.ravel()


def run(name, *inputs):
    (out,) = evaluate(name, [np.asarray(x) for x in inputs], {})
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, rule", [
    ("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
    ("gt", np.greater), ("ge", np.greater_equal)])
def test_oracles_follow_the_texts_order(name, rule, dtype):
    lhs, rhs, i, j = grid(dtype)
    np.testing.assert_array_equal(run(f"{name}_total_order", lhs, rhs), rule(i, j))


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_backend_key_agrees_with_the_order(specs, dtype):
    from conform.ops.total_order import numpy_total_order
    lhs, rhs, i, j = grid(dtype)
    np.testing.assert_array_equal(numpy_total_order(lhs, rhs, bound=np.less), i < j)


def test_nan_payloads_of_one_sign_are_open_and_equal_nans_are_not():
    quiet = np.array([0x7FC00000, 0x7FC00000, 0xFFC00001], np.uint32).view(np.float32)
    other = np.array([0x7FC00001, 0x7FC00000, 0xFFC00000], np.uint32).view(np.float32)
    ctx = RegionContext(inputs=[quiet, other], expected=np.zeros(3, bool), out_dtype="bool",
                        float_oracle=None, shapes="xla_broadcast")
    np.testing.assert_array_equal(regions()["nan_payload_order"](ctx), [True, False, True])
    assert run("eq_total_order", quiet[1:2], other[1:2]).tolist() == [True]


def test_broadcast_dimensions_variant():
    lhs = np.array([[-0.0, 0.0], [1.0, np.nan]])
    out = evaluate("lt_total_order", [lhs, np.array([0.0, -np.nan])],
                   {"broadcast_dimensions": [1]})[0]
    np.testing.assert_array_equal(out, [[True, False], [False, False]])


@pytest.fixture(scope="module")
def jax_backend():
    from conform.harness.backends.jax_backend import JaxBackend
    return JaxBackend()


@pytest.mark.parametrize("name", ["eq_total_order", "lt_total_order", "le_total_order"])
def test_jax_total_order_passes_and_ieee_comparison_fails(specs, jax_backend, name):
    from conform.harness.backends.models import run_case
    spec = specs[name]
    (sweep,) = [c for c in generate_cases(spec, "float32", count=2, seed=3) if c.id.endswith("sweep")]
    assert judge_outputs(spec, sweep, run_case(jax_backend, spec, sweep), "ftz").verdict == "pass"
    ieee = {"eq_total_order": np.equal, "lt_total_order": np.less, "le_total_order": np.less_equal}
    assert judge_outputs(spec, sweep, [ieee[name](*sweep.inputs)]).verdict == "fail"


def test_only_the_directions_jax_lowers_with_totalorder_are_bound_to_xla(specs):
    """jax.lax's eq_to_p, le_to_p and lt_to_p lower to stablehlo.compare ..., TOTALORDER; it has
    no GT, GE or NE primitive, and a rewrite of the others would be another op."""
    import jax
    from jax import lax
    x = np.zeros(2, np.float32)
    for name in ("eq", "le", "lt"):
        assert specs[f"{name}_total_order"].bindings["xla"] == {"lax": f"{name}_to_p"}
        text = jax.jit(getattr(lax, f"{name}_to_p").bind).lower(x, x).as_text()
        assert f"stablehlo.compare {name.upper()}," in text and "TOTALORDER" in text
    for name in ("ne", "gt", "ge"):
        assert "xla" not in specs[f"{name}_total_order"].bindings


@pytest.mark.parametrize("name, table", [
    ("bitwise_and", [False, False, False, True]), ("bitwise_or", [False, True, True, True]),
    ("bitwise_xor", [False, True, True, False])])
def test_logical_ops_are_drawn_on_pred_and_run_on_jax(specs, jax_backend, name, table):
    from conform.harness.backends.models import run_case
    spec = specs[name]
    assert "bool" in spec.dtypes
    cases = generate_cases(spec, "bool", count=4, seed=1)
    sweep = next(c for c in cases if c.id.endswith("sweep"))
    pairs = {(bool(a), bool(b)) for a, b in zip(*sweep.inputs)}
    assert pairs == {(False, False), (False, True), (True, False), (True, True)}
    for case in cases:
        assert all(x.dtype == np.bool_ for x in case.inputs)
        assert judge_outputs(spec, case, run_case(jax_backend, spec, case)).verdict == "pass"
    lhs, rhs = np.array([False, False, True, True]), np.array([False, True, False, True])
    np.testing.assert_array_equal(run(name, lhs, rhs), table)


NARROW = ["float4_e2m1fn", "float6_e2m3fn", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz"]


@pytest.mark.parametrize("dtype", NARROW)
def test_numpy_backend_key_orders_the_narrow_floats(dtype):
    """float4 and float6 fill a byte's low bits: its top bit is not their sign."""
    from conform.ops.total_order import numpy_total_order
    values = np.array([-6.0, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 6.0]).astype(np_dtype(dtype))
    values = values[~np.isnan(values.astype(np.float64))]
    i, j = np.meshgrid(np.arange(len(values)), np.arange(len(values)), indexing="ij")
    lhs, rhs = values[i.ravel()], values[j.ravel()]
    distinct = np.signbit(lhs.astype(np.float64)) | (lhs.astype(np.float64) != 0)   # fnuz: one 0
    want = (i < j).ravel() if "fnuz" not in dtype else \
        run("lt_total_order", lhs, rhs)
    np.testing.assert_array_equal(numpy_total_order(lhs, rhs, bound=np.less), want)
    np.testing.assert_array_equal(run("lt_total_order", lhs, rhs), want)
    assert distinct.any()


@pytest.mark.parametrize("dtype, open_", [("float8_e4m3fnuz", True), ("float8_e8m0fnu", True),
                                          ("float8_e4m3fn", False), ("float4_e2m1fn", False)])
def test_a_nan_without_a_sign_has_no_place_in_the_order(dtype, open_):
    lhs = np.array([np.nan, np.nan, 1.0, 1.0]).astype(np_dtype(dtype))
    rhs = np.array([1.0, np.nan, np.nan, 2.0]).astype(np_dtype(dtype))
    (expected,) = evaluate("lt_total_order", [lhs, rhs], {})
    ctx = RegionContext(inputs=[lhs, rhs], expected=expected, out_dtype="bool", float_oracle=None)
    has_nan = np.isnan(lhs.astype(np.float64)).any()
    want = [True, False, True, False] if open_ and has_nan else [False] * 4
    assert regions()["signless_nan_order"](ctx).tolist() == want
