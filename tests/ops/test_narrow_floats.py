"""Unary functions in the float types of at most 8 bits (float8, float4): one case holds every
value, the ULP bound the specs state is ops/narrow_floats.py's, the region of results E2M1 and
E8M0 cannot hold, and an op XLA cannot compile for the type is ``unsupported`` on jax."""
from __future__ import annotations

import numpy as np
import pytest

from conform.dtypes import FLOAT_FORMATS, np_dtype
from conform.generators import generate_cases
from conform.ops.narrow_floats import (narrow_float_unrepresentable, narrow_ulp_bound,
                                       scale_format_tie)
from conform.ops.regions import RegionContext
from conform.spec import load_specs


@pytest.fixture(scope="module")
def specs():
    return load_specs()


def test_a_narrow_float_cell_is_one_case_of_every_value(specs):
    """Each bit pattern once (NaN, infinities, -0 included), in one shape: one kernel a cell."""
    for dtype, count in (("float8_e4m3fn", 256), ("float8_e8m0fnu", 256), ("float4_e2m1fn", 16),
                         ("float6_e3m2fn", 64), ("float8_e3m4", 256)):
        (case,) = generate_cases(specs["tanh"], dtype, count=20, seed=0)
        bits = case.inputs[0].view(np.uint8)
        assert case.plan == "every_value" and [tuple(s) for s in case.shapes] == [(count,)]
        assert sorted(bits.tolist()) == list(range(count))
    from conform.generators._edges import every_value_case

    assert every_value_case(specs["tanh"], "float16") is None            # 65,536 values: drawn
    assert every_value_case(specs["add"], "float8_e5m2") is None         # binary: drawn


def test_the_specs_narrow_bound_is_derived_from_their_float16_bound(specs):
    """A spec citing narrow_ulp_bound states 0.5 + b/128 for its float16 bound b; the bound
    admits a float16 evaluation's double rounding and not the wrong neighbour off a midpoint."""
    citing = [s for s in specs.values()
              if "narrow_ulp_bound" in s.error_model.get("float", {}).get("why", "")]
    assert len(citing) >= 25
    for spec in citing:
        assert spec.model_for("float8_e4m3fn")["ulp"] == \
            narrow_ulp_bound(spec.model_for("float16")["ulp"]), spec.op
        # float8_e3m4's 5 significant bits: a float16 ULP is 2**-6 of its ULP, not 2**-7
        assert spec.model_for("float8_e3m4")["ulp"] == \
            narrow_ulp_bound(spec.model_for("float16")["ulp"], 5), spec.op
    # exp(-0.375) = 0.68729: float16 gives 0.6875, a float8 e5m2 midpoint, ties to even 0.75
    error = (0.75 - np.exp(-0.375)) / 0.125
    assert 0.5 < error <= narrow_ulp_bound(2) < 0.6


def test_only_the_cells_the_region_can_reach_get_its_consistency_case(specs):
    """cbrt declares no region but narrow_float_unrepresentable and the complex ones (whose
    only cells are complex): its float16 cell needs no consistency case; exp's other regions
    keep float16's."""
    from conform.generators._consistency import _open_in

    assert not _open_in(specs["cbrt"], "float16") and _open_in(specs["cbrt"], "float4_e2m1fn")
    assert _open_in(specs["cbrt"], "complex64")
    assert _open_in(specs["exp"], "float16")


def _mask(values, dtype):
    context = RegionContext(inputs=[], expected=np.array(values), out_dtype=dtype,
                            float_oracle=None)
    return narrow_float_unrepresentable(context).tolist()


def test_the_region_holds_what_float4_and_e8m0_cannot():
    assert _mask([7.0, 6.9, np.nan, -np.inf, 0.25, -0.0], "float4_e2m1fn") == \
        [True, False, True, True, False, False]
    assert _mask([-1.0, 0.0, 2.0**-129, 2.0**-127, 3.0, np.nan, 2.0**129], "float8_e8m0fnu") == \
        [True, True, True, False, False, False, True]
    assert _mask([1e9, np.nan, -np.inf], "float8_e4m3fn") == [False] * 3   # NaN: judged


def test_xla_failing_to_legalize_an_op_for_a_type_is_unsupported():
    """XLA has no lowering of chlo.bessel_i1e for float8 (jax 0.10.2), nor its runtime a float6
    buffer: each refusal is ``unsupported`` with the reason; another runtime error stays an
    error."""
    import jax

    from conform.harness.backends.base import Unsupported
    from conform.harness.backends.jax_backend import _type_refusals

    operand = np.zeros(4, np_dtype("float8_e4m3fn"))
    with pytest.raises(Unsupported, match="failed to legalize operation 'chlo.bessel_i1e'"):
        with _type_refusals():
            np.asarray(jax.jit(jax.lax.bessel_i1e)(operand))
    with pytest.raises(Unsupported, match="no buffer of the element type"), _type_refusals():
        np.asarray(jax.jit(jax.lax.abs)(np.zeros(4, np_dtype("float6_e2m3fn"))))
    with pytest.raises(RuntimeError), _type_refusals():
        raise RuntimeError("something else")
    assert FLOAT_FORMATS["float8_e4m3fn"].bits == 8


def test_a_tie_between_two_powers_of_two_is_open_in_e8m0_only():
    """2**k + 2**(k-1) = 1.5 * 2**k lies midway between E8M0's 2**k and 2**(k+1), whose one-digit
    significands are both odd: roundTiesToEven picks neither."""
    def tie(values, dtype):
        context = RegionContext(inputs=[], expected=np.array(values), out_dtype=dtype,
                                float_oracle=None)
        return scale_format_tie(context).tolist()
    assert tie([3.0, 0.75, 1.25, 2.0, 1.5 * 2.0 ** -100], "float8_e8m0fnu") == \
        [True, True, False, False, True]
    assert tie([3.0, 0.75], "float8_e4m3fn") == [False, False]


def _open_elements(spec, dtype, inputs):
    """The implementation-defined mask of ``spec``'s first drawn case in ``dtype`` with its
    inputs' values replaced (shapes and attributes kept)."""
    import dataclasses
    from conform.oracles.expectations import expect
    case = generate_cases(spec, dtype, count=1, seed=0)[0]
    values = [fill(x) for fill, x in zip(inputs, case.inputs)]
    (answer,) = expect(spec, dataclasses.replace(case, inputs=values, expectation=None))
    impl = np.zeros(answer.expected.shape, bool) if answer.impl_mask is None else answer.impl_mask
    return impl, answer.expected


def test_a_sum_with_init_zero_is_open_in_e8m0_and_an_update_sum_at_its_ties_only(specs):
    """Reduce's and ReduceWindow's init value must be Add's identity, which E8M0 (no zero) lacks:
    every result open; Scatter with Add has no init value: 1 + 0.5 is a tie E8M0's rounding
    cannot break (open), an element no update reaches stays 1 (judged)."""
    e8m0 = np_dtype("float8_e8m0fnu")
    ones = lambda x: np.ones_like(x, e8m0)   # noqa: E731
    for name in ("reduce_sum", "reduce_window_sum"):
        impl, _ = _open_elements(specs[name], "float8_e8m0fnu", [ones])
        assert impl.all()
        assert not _open_elements(specs[name], "float16", [np.ones_like])[0].any()
    halves = lambda x: np.full_like(x, 0.5, e8m0)   # noqa: E731
    impl, expected = _open_elements(specs["scatter_add"], "float8_e8m0fnu",
                                    [ones, lambda x: x, halves])
    assert (expected == 1.5).any() and (expected == 1.0).any()
    assert impl.tolist() == (expected == 1.5).tolist()
