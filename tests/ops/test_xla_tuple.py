"""XLA Tuple / GetTupleElement (ops/xla_tuple.py): the element at the index, the lax hook
emits StableHLO's own tuple ops, and the real jax backend passes."""
from __future__ import annotations

import numpy as np

from conform.generators._suite import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate


def test_the_element_at_the_index_with_its_own_shape():
    v, s = np.arange(10.0), np.array(5.0)   # the text's example: tuple(f32[10], s32)
    assert evaluate("get_tuple_element", [v, s], {"index": 1})[0] == 5.0
    np.testing.assert_array_equal(evaluate("get_tuple_element", [v, s], {"index": 0})[0], v)


def test_the_lax_hook_emits_stablehlo_tuple_ops():
    import jax
    from jax import lax
    from conform.ops.xla_tuple import lax_get_tuple_element
    fn = lax_get_tuple_element(lax, {"index": 1})
    text = jax.jit(fn).lower(np.ones(3, np.float32), np.float32(2)).as_text()
    assert "stablehlo.tuple" in text and "stablehlo.get_tuple_element" in text
    assert float(fn(np.ones(3, np.float32), np.float32(2))) == 2.0


def test_jax_passes(specs):
    from conform.harness.backends.jax_backend import JaxBackend
    from conform.harness.backends.models import run_case
    spec, backend = specs["get_tuple_element"], JaxBackend()
    verdicts = [judge_outputs(spec, case, run_case(backend, spec, case), "ftz").verdict
                for case in generate_cases(spec, "float32", count=6, seed=0)]
    assert set(verdicts) == {"pass"}
