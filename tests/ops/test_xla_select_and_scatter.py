"""XLA SelectAndScatter (ops/xla_select_and_scatter.py): the oracle on hand-worked cases of the
text (seeds/004_c11ff90b720ca9d5.txt, "SelectAndScatter"): overlapping windows accumulate, GE
keeps a window's first maximum and GT its last, padding is never selected, a NaN window is
open; the numpy backend's tap-by-tap select agrees with the oracle's closed form; the lax hook
emits StableHLO's own op and the real jax backend passes."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators._suite import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from conform.ops.xla_select_and_scatter import numpy_select_and_scatter


def attrs(window, strides, padding, select):
    return {"window_dimensions": window, "window_strides": strides, "padding": padding,
            "select": select}


def test_overlapping_windows_add_their_source_values_to_init():
    x = np.array([1.0, 9.0, 3.0, 2.0, 5.0])
    # windows [1 9 3], [3 2 5]; with stride 1: [1 9 3], [9 3 2], [3 2 5]
    (out,) = evaluate("select_and_scatter", [x, np.array([2.0, 6.0, 4.0]), np.array(0.5)],
                      attrs([3], [1], [[0, 0]], "GE"))
    np.testing.assert_array_equal(out, [0.5, 8.5, 0.5, 0.5, 4.5])


def test_ge_selects_the_first_maximum_and_gt_the_last():
    x, source, init = np.array([[4.0, 4.0], [4.0, 1.0]]), np.array([[10.0]]), np.array(0.0)
    window = attrs([2, 2], [1, 1], [[0, 0], [0, 0]], "GE")
    (first,) = evaluate("select_and_scatter", [x, source, init], window)
    (last,) = evaluate("select_and_scatter", [x, source, init], {**window, "select": "GT"})
    np.testing.assert_array_equal(first, [[10.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(last, [[0.0, 0.0], [10.0, 0.0]])   # (1, 0) is last of the 4s


def test_padding_is_never_selected():
    x = np.full(3, -np.inf)   # kSame, window 3: each window pads; -inf ties with nothing outside
    for select, want in (("GE", [11.0, 100.0, 0.0]), ("GT", [0.0, 1.0, 110.0])):
        (out,) = evaluate("select_and_scatter", [x, np.array([1.0, 10.0, 100.0]), np.array(0.0)],
                          attrs([3], [1], [[1, 1]], select))
        np.testing.assert_array_equal(out, want)


def test_a_window_holding_nan_is_open_and_others_are_not():
    x = np.array([1.0, np.nan, 3.0, 2.0, 5.0, 0.0])
    args = [x, np.array([1.0, 1.0, 1.0]), np.array(0.0)]
    (opened,) = evaluate("select_and_scatter", args, {**attrs([2], [2], [[0, 0]], "GE"),
                                                      "dtypes": ("float32",) * 3,
                                                      "open_elements": True})
    np.testing.assert_array_equal(opened, [True, True, False, False, False, False])


@pytest.mark.parametrize("select", ["GE", "GT"])
def test_the_numpy_tap_by_tap_select_agrees_with_the_closed_form(select):
    rng = np.random.default_rng(0)
    x = rng.integers(-2, 3, (5, 4)).astype(np.int32)   # many ties
    source, init = rng.integers(1, 9, (3, 4)).astype(np.int32), np.array(3, np.int32)
    case = attrs([3, 1], [1, 1], [[0, 0], [0, 0]], select)
    (want,) = evaluate("select_and_scatter", [x, source, init], case)
    np.testing.assert_array_equal(numpy_select_and_scatter(x, source, init, **case), want)


def test_the_lax_hook_emits_stablehlo_select_and_scatter():
    import jax
    from jax import lax
    from conform.ops.xla_select_and_scatter import lax_select_and_scatter
    fn = lax_select_and_scatter(lax, attrs([2], [1], [[0, 0]], "GT"))
    x, s = np.ones(3, np.float32), np.ones(2, np.float32)
    text = jax.jit(fn).lower(x, s, np.float32(0)).as_text()
    assert "stablehlo.select_and_scatter" in text and "stablehlo.compare GT" in text


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_jax_passes(specs, dtype):
    from conform.harness.backends.jax_backend import JaxBackend
    from conform.harness.backends.models import run_case
    spec, backend = specs["select_and_scatter"], JaxBackend()
    verdicts = [judge_outputs(spec, case, run_case(backend, spec, case), "ftz").verdict
                for case in generate_cases(spec, dtype, count=8, seed=0)]
    assert "fail" not in verdicts and "error" not in verdicts and "pass" in verdicts


def test_bool_scatters_by_or_and_complex_selects_lexicographically():
    """StableHLO's compare and add: on bool false < true and + is OR; complex numbers compare
    by (real, imag) and add part by part; a complex NaN part opens its window's elements."""
    from conform.ops.xla_select_and_scatter import oracle_select_and_scatter

    window = attrs([2], [1], [[0, 0]], "GE")
    x, source = np.array([False, True, True]), np.array([True, False])
    (out,) = evaluate("select_and_scatter", [x, source, np.array(False)], window)
    assert out.dtype == np.bool_ and out.tolist() == [False, True, False]
    x = np.array([2 - 1j, 2 + 1j, 1 + 9j])
    source, init = np.array([1 + 1j, complex(1e16, 2)]), np.array(complex(-1e16, 0))
    (out,) = evaluate("select_and_scatter", [x, source, init], window)
    assert out.tolist() == [complex(-1e16, 0), complex(1, 3), complex(-1e16, 0)]
    x[2] = complex(np.nan, 0)
    (held,) = oracle_select_and_scatter(x, source, init, **window, dtypes=("complex128",) * 3,
                                        open_elements=True)
    assert held.tolist() == [False, True, True]
