"""XLA ops jax cannot express (ops/xla_unrunnable.py): their binding says why, every case is
unsupported on jax with that reason, and ``conform list`` shows them as not runnable; and the
two jax can express after all: GetDimensionSize and CompositeCall (ops/xla_dimension_size.py,
ops/xla_call.py) pass on jax."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conform.generators._suite import generate_cases
from conform.harness.backends.base import Unsupported
from conform.oracles._registry import evaluate
from tests.ops.xla_judging import jax_verdicts

UNRUNNABLE = ["infeed", "outfeed", "send", "recv", "custom_call", "after_all", "set_dimension_size"]


@pytest.mark.parametrize("name", UNRUNNABLE)
def test_each_case_is_unsupported_on_jax_with_the_bindings_reason(specs, jax_backend, name):
    from conform.harness.backends.models import run_case
    spec = specs[name]
    dtype = spec.dtypes[0]
    (case,) = generate_cases(spec, dtype, count=1, seed=0)
    with pytest.raises(Unsupported) as raised:
        run_case(jax_backend, spec, case)
    assert str(raised.value) == f"op {name}: {spec.bindings['xla']['unsupported']}"


def test_the_oracles_follow_the_texts():
    x = np.arange(12.0).reshape(3, 4)
    for name in ["infeed", "outfeed", "send", "recv", "custom_call"]:
        np.testing.assert_array_equal(evaluate(name, [x], {})[0], x)
    cut = evaluate("set_dimension_size", [x], {"size": 2, "dimension": 1})[0]
    np.testing.assert_array_equal(cut, x[:, :2])
    assert evaluate("after_all", [], {"tokens": 3})[0].size == 0
    assert evaluate("get_dimension_size", [np.zeros((2, 0, 5))], {"dimension": 2})[0] == 5


def test_conform_list_says_not_runnable_on_jax_rather_than_leaving_out(capsys):
    from conform.harness.cli.main import main
    assert main(["list", "--backend", "jax", "--format", "json"]) == 0
    rows = {r["op"]: r for r in json.loads(capsys.readouterr().out)}
    for name in UNRUNNABLE:
        assert rows[name]["runnable"] is False and rows[name]["not_runnable"]["xla"]
    assert rows["get_dimension_size"]["runnable"] is True and not rows["exp2"]["not_runnable"]
    assert main(["list", "--backend", "jax"]) == 0
    table = capsys.readouterr().out
    assert "infeed_v1                  numpy!,xla!          not runnable on jax: jax cannot " \
           "express Infeed" in table
    assert f"{len(UNRUNNABLE)} ops bound for xla that jax cannot run" in table


@pytest.mark.parametrize("name, dtype", [("get_dimension_size", "float32"),
                                         ("composite_call", "float32")])
def test_jax_expresses_and_passes(specs, jax_backend, name, dtype):
    verdicts = set(jax_verdicts(specs[name], jax_backend, dtype, 4))
    assert "pass" in verdicts and verdicts <= {"pass", "impl_defined"}   # a body op's region


def test_the_lax_hooks_emit_the_stablehlo_ops():
    import jax
    from jax import lax
    from conform.ops.control_flow import lax_control
    from conform.ops.xla_dimension_size import lax_get_dimension_size
    text = jax.jit(lax_get_dimension_size(lax, {"dimension": 1})).lower(
        np.zeros((2, 3), np.float32)).as_text()
    assert "stablehlo.get_dimension_size" in text
    body = [{"op": "exp", "lax": "exp", "arity": 1}]
    fn = lax_control(lax, {"body": body, "call": True, "composite": True})
    assert "stablehlo.composite" in jax.jit(fn).lower(np.ones(2, np.float32),
                                                       np.ones(2, np.float32)).as_text()



def test_every_type_moves_bit_for_bit(specs):
    """Issue 36: every element type is drawn; each oracle's answer is the data itself, bit for
    bit, in the types the run draws (bool, complex, uint64 above 2**63, float8, int4, float4)."""
    import ml_dtypes
    data = [np.array([True, False]), np.array([1 - 2j, complex(-0.0, np.inf)], np.complex64),
            np.array([2**63 + 5, 1], np.uint64), np.array([-0.0, 57344], ml_dtypes.float8_e5m2),
            np.array([-8, 7], ml_dtypes.int4), np.array([-6, 0.5], ml_dtypes.float4_e2m1fn)]
    for name in ["infeed", "outfeed", "send", "recv", "custom_call", "set_dimension_size"]:
        assert "bool" in specs[name].dtypes and "float8_e8m0fnu" in specs[name].dtypes
        attrs = {"size": 2, "dimension": 0} if name == "set_dimension_size" else {}
        for x in data:
            out = np.asarray(evaluate(name, [x], attrs)[0]).astype(x.dtype)
            assert out.tobytes() == x.tobytes(), (name, x.dtype)
