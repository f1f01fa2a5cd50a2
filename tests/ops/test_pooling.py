"""ONNX pooling (MaxPool with Indices, AveragePool, GlobalMaxPool, GlobalAveragePool): the
oracles reproduce the onnx package's node test cases and the texts' rules (output shapes,
windows starting in the right padding, SAME padding, dilations, count_include_pad, Indices and
storage_order), the regions mark what the texts leave open, and the judge catches injected bugs
run through onnxruntime."""
from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest

from conform.generators._case import Case
from conform.harness.backends.onnx_models import build_model
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from conform.oracles.expectations import expect
from tests.ops.ort_graphs import node_test_cases, run_mutated

ONNX_OPS = {"MaxPool": "onnx_max_pool", "AveragePool": "onnx_average_pool",
            "GlobalMaxPool": "onnx_global_max_pool", "GlobalAveragePool": "onnx_global_average_pool",
            "LpPool": "onnx_lp_pool"}
#: Node test cases whose inputs and expected values the onnx package gives to four decimals only
#: (taken from another implementation's unrounded run): the oracle agrees within 1e-4 (the
#: expected value's rounding, 5e-5, plus the inputs', 5e-5 per term at most).
FOUR_DECIMALS = {"test_averagepool_2d_ceil_last_window_starts_on_pad"}


def _attrs(op, node_attrs, rank):
    """The node's attributes with the texts' defaults for those it leaves out."""
    n = rank - 2
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node_attrs}
    attrs = {k: v.decode() if isinstance(v, bytes) else list(v) if isinstance(v, list) else v
             for k, v in attrs.items()}
    if op in ("onnx_max_pool", "onnx_average_pool", "onnx_lp_pool"):
        defaults = {"strides": [1] * n, "pads": [0] * 2 * n, "auto_pad": "NOTSET", "ceil_mode": 0}
        defaults.update({"onnx_max_pool": {"storage_order": 0}, "onnx_lp_pool": {"p": 2},
                         "onnx_average_pool": {"count_include_pad": 0}}[op])
        attrs = {**defaults, **attrs}
    return attrs


def test_the_onnx_node_test_cases_are_reproduced(specs, onnx_node_cases):
    """Every MaxPool, AveragePool, LpPool, GlobalMaxPool and GlobalAveragePool node test case of the onnx
    package (built in memory: this install ships no test data files) is reproduced, Indices
    included: its expected outputs, made in float32, are judged against the oracle under the
    spec's error model (maxima exactly, averages within the accumulation bound). One case's
    values are printed to four decimals (triaged: compared to that precision); one falls in the
    region reading_differs and takes the oracle's reading of it."""
    seen, impl_defined = 0, []
    with np.errstate(all="ignore"):
        cases = list(node_test_cases(onnx_node_cases, ONNX_OPS))
    for name, op, node, data_sets in cases:
        for inputs, outputs in data_sets:
            attrs = _attrs(op, node.attribute, inputs[0].ndim)
            got = evaluate(op, inputs, attrs)
            if name in FOUR_DECIMALS:
                np.testing.assert_allclose(got[0], outputs[0], atol=1e-4, err_msg=name)
            else:
                dtype = str(inputs[0].dtype)
                case = Case(id=name, op=op, dtype=dtype, input_dtypes=(dtype,), out_dtype=dtype,
                            inputs=list(inputs), attrs=attrs, plan="normal", seed=0)
                judgement = judge_outputs(specs[op], case, list(outputs) + list(got[len(outputs):]))
                assert judgement.verdict == "pass", (name, judgement.worst)
                if judgement.impl_defined:   # takes the oracle's reading there too
                    np.testing.assert_allclose(got[0], outputs[0], atol=1e-6, err_msg=name)
                    impl_defined.append(name)
            seen += 1
    assert seen >= 50
    # the one case in a region: a ceil_mode window past the end padding, count_include_pad 1
    assert impl_defined == ["test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True"]


def _max_pool(x, **attrs):
    n = x.ndim - 2
    full = {"strides": [1] * n, "pads": [0] * 2 * n, "auto_pad": "NOTSET", "ceil_mode": 0,
            "storage_order": 0, **attrs}
    return evaluate("onnx_max_pool", [np.asarray(x, np.float64)], full)


def _average_pool(x, **attrs):
    n = x.ndim - 2
    full = {"strides": [1] * n, "pads": [0] * 2 * n, "auto_pad": "NOTSET", "ceil_mode": 0,
            "count_include_pad": 0, **attrs}
    return evaluate("onnx_average_pool", [np.asarray(x, np.float64)], full)[0]


def test_ceil_mode_ignores_a_window_that_would_start_in_the_right_padding():
    """size 4, pad 1 at the end, kernel 2, stride 2: ceil((4 + 1 - 2) / 2 + 1) = 3 windows, but
    the third starts at 4, in the right padding: 'ignored'."""
    x = np.arange(4.0).reshape(1, 1, 4)
    y, _ = _max_pool(x, kernel_shape=[2], strides=[2], pads=[0, 1], ceil_mode=1)
    assert y.ravel().tolist() == [1, 3]
    y, _ = _max_pool(x, kernel_shape=[2], strides=[2], pads=[0, 2], ceil_mode=1)
    assert y.ravel().tolist() == [1, 3]     # floor((4 + 2 - 2) / 2 + 1) = 3, the last ignored
    y, _ = _max_pool(x, kernel_shape=[3], strides=[2], ceil_mode=1)
    assert y.ravel().tolist() == [2, 3]     # the last window starts in the input: kept


@pytest.mark.parametrize("auto_pad, expected", [("SAME_UPPER", [1, 3, 4]), ("SAME_LOWER", [0, 2, 4])])
def test_same_padding_puts_the_odd_pad_at_the_end_or_the_beginning(auto_pad, expected):
    """size 5, stride 2, kernel 2: ceil(5 / 2) = 3 outputs, total pad (3 - 1) * 2 + 2 - 5 = 1."""
    y, _ = _max_pool(np.arange(5.0).reshape(1, 1, 5), kernel_shape=[2], strides=[2],
                     auto_pad=auto_pad)
    assert y.ravel().tolist() == expected


def test_same_padding_uses_the_dilated_kernel():
    """size 2, kernel 3, dilation 2: effective kernel 5, ceil(2 / 1) = 2 outputs, pad 1 + 5 - 2
    = 4 split 2 and 2: the taps of output 0 are -2, 0, 2 and of output 1 are -1, 1, 3."""
    y, indices = _max_pool(np.array([[[5.0, 7.0]]]), kernel_shape=[3], dilations=[2],
                           auto_pad="SAME_UPPER")
    assert y.ravel().tolist() == [5, 7] and indices.ravel().tolist() == [0, 1]


def test_indices_flatten_the_whole_tensor_row_or_column_major():
    x = np.zeros((2, 1, 2, 3))
    x[1, 0, 1, 2] = 1.0
    _, row = _max_pool(x, kernel_shape=[2, 3])
    assert row.ravel().tolist() == [0, 11]          # (1, 0, 1, 2) in 2 x 1 x 2 x 3, row major
    _, column = _max_pool(x, kernel_shape=[2, 3], storage_order=1)
    assert column.ravel().tolist() == [0, 11]       # 1 + 2 * (0 + 1 * (1 + 2 * 2)), column major
    _, plane = evaluate("onnx_max_pool", [x], {"kernel_shape": [2, 3], "strides": [1, 1],
                                               "pads": [0] * 4, "auto_pad": "NOTSET",
                                               "ceil_mode": 0, "storage_order": 1, "reading": 1})
    assert plane.ravel().tolist() == [0, 6 + 1 + 2 * 2]   # plane offset 6, (1, 2) column major


def test_padding_never_wins_and_indices_ignore_padding():
    x = -np.arange(1.0, 5.0).reshape(1, 1, 4)      # all negative: a padded 0 would win
    y, indices = _max_pool(x, kernel_shape=[3], pads=[2, 2])
    assert y.ravel().tolist() == [-1, -1, -1, -2, -3, -4]
    assert indices.ravel().tolist() == [0, 0, 0, 1, 2, 3]


def test_count_include_pad_and_dilations_count_the_taps():
    x = np.array([[[2.0, 4.0, 6.0]]])
    assert _average_pool(x, kernel_shape=[2], pads=[1, 0]).ravel().tolist() == [2, 3, 5]
    counted = _average_pool(x, kernel_shape=[2], pads=[1, 0], count_include_pad=1)
    assert counted.ravel().tolist() == [1, 3, 5]
    # dilation 2: taps 0 and 2 only, the element between them is not counted
    assert _average_pool(x, kernel_shape=[2], dilations=[2]).ravel().tolist() == [4]


def test_ceil_mode_overhang_is_counted_by_the_padded_extent_else_a_region(specs):
    """With count_include_pad 1 a window's pad elements count; where a ceil_mode window reaches
    past the end padding the text does not say whether those taps count: a region."""
    attrs = {"kernel_shape": [3], "strides": [2], "pads": [0, 1], "auto_pad": "NOTSET",
             "ceil_mode": 1, "count_include_pad": 1}
    x = np.float32([[[3, 3, 3, 3]]])
    (y,) = evaluate("onnx_average_pool", [x], attrs)
    assert y.ravel().tolist() == [3, 2]                  # (3 + 3 + 0) / 3
    case = _case("onnx_average_pool", x, attrs)
    (answer,) = expect(specs["onnx_average_pool"], case)
    assert answer.impl_mask is None                      # every tap within the padded extent
    x = np.float32([[[3, 3, 3, 3, 3, 3]]])
    attrs = {**attrs, "pads": [0, 0]}    # size 6: ceil(3 / 2) + 1 = 3 windows, the last 4, 5, (6)
    (y,) = evaluate("onnx_average_pool", [x], attrs)
    assert y.ravel().tolist() == [3, 3, 3]               # (3 + 3) / 2; every tap: (3 + 3) / 3
    (answer,) = expect(specs["onnx_average_pool"], _case("onnx_average_pool", x, attrs))
    assert answer.impl_mask.ravel().tolist() == [False, False, True]


def _case(op, x, attrs, dtype="float32"):
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype, input_dtypes=(dtype,), out_dtype=dtype,
                inputs=[np.asarray(x, dtype)], attrs=attrs, plan="normal", seed=3)


MAX_ATTRS = {"kernel_shape": [2], "strides": [1], "pads": [0, 0], "auto_pad": "NOTSET",
             "ceil_mode": 0, "storage_order": 0, "dilations": [1]}


def test_a_nan_opens_both_outputs_of_its_windows_only(specs):
    x = np.float32([[[1, np.nan, 2, 3]]])
    y, indices = expect(specs["onnx_max_pool"], _case("onnx_max_pool", x, MAX_ATTRS))
    assert y.impl_mask.ravel().tolist() == [True, True, False]
    assert indices.impl_mask.ravel().tolist() == [True, True, False]


def test_an_empty_dilated_window_is_a_region(specs):
    """size 1, kernel 2, dilation 2, pads 1 and 2: the taps -1 and 1 of the first window miss
    the one element, the taps 0 and 2 of the second hold it."""
    attrs = {**MAX_ATTRS, "dilations": [2], "pads": [1, 2]}
    y, _ = expect(specs["onnx_max_pool"], _case("onnx_max_pool", np.float32([[[4]]]), attrs))
    assert y.impl_mask.ravel().tolist() == [True, False]


def test_any_of_tied_maxima_is_a_right_index_and_another_element_is_not(specs):
    spec = specs["onnx_max_pool"]
    x = np.float32([[[0.0, -0.0, 5, 5]]])
    case = _case("onnx_max_pool", x, {**MAX_ATTRS, "kernel_shape": [2]})
    y = np.float32([[[0, 5, 5]]])
    good = judge_outputs(spec, case, [y, np.int64([[[1, 2, 3]]])])    # -0 ties 0, 5 ties 5
    assert good.verdict == "pass"
    wrong = judge_outputs(spec, case, [y, np.int64([[[1, 1, 3]]])])   # element 1 is not a 5
    assert wrong.verdict == "fail" and wrong.worst["output"] == "indices"
    outside = judge_outputs(spec, case, [y, np.int64([[[1, 3, 3]]])])  # a 5 outside window 1
    assert outside.verdict == "fail"


def test_global_pools_keep_the_spatial_dimensions():
    x = np.arange(24.0).reshape(2, 3, 2, 2)
    (y,) = evaluate("onnx_global_max_pool", [x], {})
    assert y.shape == (2, 3, 1, 1) and y.ravel().tolist() == list(range(3, 24, 4))
    (mean,) = evaluate("onnx_global_average_pool", [x], {})
    assert mean.ravel().tolist() == [1.5 + 4 * k for k in range(6)]


def test_the_average_bound_is_gamma_n_times_the_mean_magnitude(specs):
    case = _case("onnx_global_average_pool", np.float32([[[1, -1, 3, 1]]]), {})
    (answer,) = expect(specs["onnx_global_average_pool"], case)
    magnitude, length = answer.accumulation
    assert length == 4 and magnitude.ravel().tolist() == [1.5]


# --- injected bugs, run through onnxruntime ---------------------------------------------------

AVERAGE_ATTRS = {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1],
                 "auto_pad": "NOTSET", "ceil_mode": 0, "count_include_pad": 0, "dilations": [1, 1]}


def test_onnxruntime_passes_and_an_ignored_count_include_pad_fails(specs):
    spec = specs["onnx_average_pool"]
    x = np.random.default_rng(5).uniform(1, 2, (1, 2, 4, 5)).astype(np.float32)
    for flag in (0, 1):
        case = _case("onnx_average_pool", x, {**AVERAGE_ATTRS, "count_include_pad": flag})
        assert judge_outputs(spec, case, run_mutated(spec, case)).verdict == "pass"
        buggy = judge_outputs(spec, case, run_mutated(spec, case, count_include_pad=1 - flag))
        assert buggy.verdict == "fail" and buggy.worst["index"][2] in (0, 3)   # an edge row


def test_an_off_by_one_window_fails_max_pool_through_onnxruntime(specs):
    spec = specs["onnx_max_pool"]
    x = np.random.default_rng(6).permutation(40).astype(np.float32).reshape(1, 2, 4, 5)
    attrs = {**MAX_ATTRS, "kernel_shape": [2, 2], "strides": [2, 1], "pads": [0, 0, 1, 1],
             "dilations": [1, 1]}
    case = _case("onnx_max_pool", x, attrs)
    assert judge_outputs(spec, case, run_mutated(spec, case)).verdict == "pass"
    shifted = run_mutated(spec, case, pads=[1, 0, 0, 1])     # each window one row up
    assert judge_outputs(spec, case, shifted).verdict == "fail"
    row_major = run_mutated(spec, case, storage_order=1)     # Indices column major
    verdict = judge_outputs(spec, case, row_major)
    assert verdict.verdict == "fail" and verdict.worst["output"] == "indices"


def test_valid_padding_gives_the_same_shape_with_ceil_mode_or_not():
    """size 4, kernel 1, stride 2: VALID gives ceil((4 - 1 + 1) / 2) = 2 = floor(3 / 2) + 1,
    where explicit padding with ceil_mode would give ceil(3 / 2) + 1 = 3."""
    x = np.arange(4.0).reshape(1, 1, 4)
    for ceil_mode in (0, 1):
        y, _ = _max_pool(x, kernel_shape=[1], strides=[2], auto_pad="VALID", ceil_mode=ceil_mode)
        assert y.ravel().tolist() == [0, 2]
    y, _ = _max_pool(x, kernel_shape=[1], strides=[2], ceil_mode=1)
    assert y.ravel().tolist() == [0, 2]      # the third window starts at 4: ignored


def test_lp_pool_keeps_a_window_starting_in_the_right_padding():
    """The LpPool text's formula alone: size 2, kernel 2, dilation 2 (effective 3), stride 3,
    pads 1 and 1, ceil_mode: ceil((2 + 2 - 3) / 3) + 1 = 2 windows, the second (taps 2 and 4)
    all padding, of norm 0; MaxPool's text ignores it."""
    attrs = {"kernel_shape": [2], "strides": [3], "dilations": [2], "pads": [1, 1],
             "auto_pad": "NOTSET", "ceil_mode": 1}
    x = np.array([[[3.0, -4.0]]])
    (y,) = evaluate("onnx_lp_pool", [x], {**attrs, "p": 2})
    assert y.ravel().tolist() == [4, 0]
    y, _ = _max_pool(x, **attrs)
    assert y.ravel().tolist() == [-4]


@pytest.mark.parametrize("p, expected", [(1, [7, 9]), (2, [5, np.sqrt(41)]), (3, [np.cbrt(91), np.cbrt(189)])])
def test_lp_pool_is_the_p_norm_of_each_window(p, expected):
    attrs = {"kernel_shape": [2], "strides": [1], "pads": [0, 0], "auto_pad": "NOTSET",
             "ceil_mode": 0, "p": p}
    (y,) = evaluate("onnx_lp_pool", [np.array([[[3.0, -4.0, 5.0]]])], attrs)
    np.testing.assert_allclose(y.ravel(), expected, rtol=1e-15)


# --- XLA ReduceWindow with Add (and Max: the shared window placement) ---------------------------

def _window_loops(x, init, combine, window, strides, padding, base, spacing):
    """ReduceWindow by loops over the StableHLO definition: dilate by base (init holes), pad
    with init, take taps spaced ``spacing`` apart from every ``strides``-th start."""
    dilated = [(n - 1) * b + 1 for n, b in zip(x.shape, base)]
    padded = [d + lo + hi for d, (lo, hi) in zip(dilated, padding)]
    reach = [(w - 1) * d + 1 for w, d in zip(window, spacing)]
    out_shape = [(p - r) // s + 1 for p, r, s in zip(padded, reach, strides)]
    out = np.empty(out_shape, dtype=np.float64)
    for index in itertools.product(*(range(n) for n in out_shape)):
        acc = init
        for tap in itertools.product(*(range(w) for w in window)):
            at = [i * s + t * d - lo for i, s, t, d, (lo, _) in zip(index, strides, tap, spacing, padding)]
            if all(0 <= a <= (n - 1) * b and a % b == 0 for a, n, b in zip(at, x.shape, base)):
                acc = combine(acc, x[tuple(a // b for a, b in zip(at, base))])
        out[index] = acc
    return out


WINDOWS = [
    ((4, 6), [2, 3], [2, 3], [[0, 0], [0, 0]], [1, 1], [1, 1]),   # the ReduceWindow section's
    ((5,), [3], [2], [[1, 1]], [1], [1]),                          # kSame of its min example
    ((3, 4), [2, 2], [1, 2], [[1, 0], [0, 1]], [2, 1], [1, 2]),
    ((2, 3, 2), [1, 2, 3], [1, 1, 2], [[0, 1], [1, 1], [2, 0]], [1, 3, 2], [2, 1, 1]),
    ((4,), [3], [1], [[2, 2]], [2], [2]),
]


@pytest.mark.parametrize("shape, window, strides, padding, base, spacing", WINDOWS)
def test_reduce_window_sum_and_max_follow_the_dilated_window_placement(shape, window, strides,
                                                                      padding, base, spacing):
    x = np.random.default_rng(len(shape) + sum(window)).uniform(-10, 10, shape)
    attrs = {"window_dimensions": window, "window_strides": strides, "padding": padding,
             "base_dilation": base, "window_dilation": spacing}
    (total,) = evaluate("reduce_window_sum", [x], attrs)
    np.testing.assert_allclose(total, _window_loops(x, 0.0, lambda a, b: a + b, window, strides,
                                                    padding, base, spacing), rtol=1e-14, atol=1e-13)
    (largest,) = evaluate("reduce_window_max", [x], attrs)
    np.testing.assert_array_equal(largest, _window_loops(x, -np.inf, max, window, strides, padding,
                                                         base, spacing))


def test_reduce_window_sum_of_the_texts_min_example_layout():
    """The ReduceWindow section's padding example, summed: [10000, 1000, 100, 10, 1], window 3,
    stride 2: kValid windows [10000, 1000, 100] and [100, 10, 1]; kSame pads one init value (0)
    each side: [0, 10000, 1000], [1000, 100, 10], [10, 1, 0]."""
    x = np.float64([10000, 1000, 100, 10, 1])
    base = {"window_dimensions": [3], "window_strides": [2]}
    (valid,) = evaluate("reduce_window_sum", [x], {**base, "padding": [[0, 0]]})
    (same,) = evaluate("reduce_window_sum", [x], {**base, "padding": [[1, 1]]})
    assert valid.tolist() == [11100, 111] and same.tolist() == [11000, 1110, 11]


def test_a_window_of_holes_and_padding_gives_the_init_value_of_the_operand_type():
    attrs = {"window_dimensions": [1], "window_strides": [1], "padding": [[1, 0]],
             "base_dilation": [2], "window_dilation": [1]}
    (largest,) = evaluate("reduce_window_max", [np.int32([5, 7])], attrs)
    assert largest.tolist() == [np.iinfo(np.int32).min, 5, np.iinfo(np.int32).min, 7]
    (total,) = evaluate("reduce_window_sum", [np.int32([5, 7])], attrs)
    assert total.tolist() == [0, 5, 0, 7]


def test_jax_passes_and_a_shifted_or_undilated_window_fails(specs):
    """jax's reduce_window with add passes; the same computation with each window one row off
    (the low padding moved to the high side: same shape) or with window_dilation left out
    (taps adjacent: another shape) is caught."""
    import jax
    from jax import lax

    from conform.ops.reduction import lax_reduce_window_sum

    spec = specs["reduce_window_sum"]
    x = np.random.default_rng(9).uniform(-4, 4, (3, 7)).astype(np.float32)
    attrs = {"window_dimensions": [2, 3], "window_strides": [1, 2], "padding": [[1, 0], [1, 1]],
             "base_dilation": [1, 1], "window_dilation": [1, 2]}
    case = Case(id="reduce_window_sum.float32.0", op="reduce_window_sum", dtype="float32",
                input_dtypes=("float32",), out_dtype="float32", inputs=[x], attrs=attrs,
                plan="normal", seed=1)

    def run(**changed):
        return [np.asarray(jax.jit(lax_reduce_window_sum(lax, {**attrs, **changed}))(x))]

    assert judge_outputs(spec, case, run()).verdict == "pass"
    shifted = run(padding=[[0, 1], [1, 1]])
    assert shifted[0].shape == (3, 3) and judge_outputs(spec, case, shifted).verdict == "fail"
    assert judge_outputs(spec, case, run(window_dilation=[1, 1])).verdict == "fail"


# --- NNEF box and avg_pool ----------------------------------------------------------------------

def _box(x, border, normalize, size=(3,), padding=((1, 1),), stride=(1,), dilation=(1,)):
    attrs = {"size": list(size), "border": border, "padding": [list(p) for p in padding],
             "stride": list(stride), "dilation": list(dilation)}
    if normalize:
        return evaluate("nnef_avg_pool", [np.float64(x)], attrs)[0]
    return evaluate("nnef_box", [np.float64(x)], {**attrs, "normalize": False})[0]


@pytest.mark.parametrize("border, sums", [
    ("constant", [3, 6, 9, 7]),       # 0 | 1 2 3 4 | 0
    ("ignore", [3, 6, 9, 7]),         # the padding left out: for a sum the same
    ("replicate", [4, 6, 9, 11]),     # 1 | 1 2 3 4 | 4
    ("reflect", [5, 6, 9, 10]),       # 2 | 1 2 3 4 | 3
    ("reflect-even", [4, 6, 9, 11]),  # 1 | 1 2 3 4 | 4 (the edge element repeated)
])
def test_box_sums_over_each_border_extension(border, sums):
    assert _box([1, 2, 3, 4], border, False).tolist() == sums


def test_reflect_and_reflect_even_differ_two_elements_out():
    x = [1, 2, 3, 4]
    assert _box(x, "reflect", False, size=(1,), padding=((2, 2),)).tolist() == [3, 2, 1, 2, 3, 4, 3, 2]
    assert _box(x, "reflect-even", False, size=(1,), padding=((2, 2),)).tolist() == [2, 1, 1, 2, 3, 4, 4, 3]


def test_avg_pool_ignore_counts_only_the_input_elements():
    assert _box([3, 6, 9], "ignore", True).tolist() == [4.5, 6, 7.5]
    assert _box([3, 6, 9], "constant", True).tolist() == [3, 6, 5]
    # dilation 2, stride 1, size 2, padding (2, 2) over one element: the window starting at
    # -1 taps -1 and 1, no element: an average of nothing, a region; its neighbours are not
    got = _box([8], "ignore", True, size=(2,), padding=((2, 2),), dilation=(2,))
    assert got[0] == 8 and np.isnan(got[1]) and got[2] == 8


def _nnef_case(op, x, attrs):
    return Case(id=f"{op}.float32.0", op=op, dtype="float32", input_dtypes=("float32",),
                out_dtype="float32", inputs=[np.asarray(x, np.float32)], attrs=attrs,
                plan="normal", seed=2)


def test_the_nnef_executor_passes_and_a_constant_border_for_ignore_fails(specs, tmp_path):
    """The NNEF reference executor's avg_pool with border 'ignore' passes; the same document
    with 'constant' (the padding counted, as with count_include_pad ignored) is caught."""
    nnef = pytest.importorskip("nnef")
    from conform.harness.backends.nnef_models import build_document, prelude

    spec = specs["nnef_avg_pool"]
    x = np.random.default_rng(4).uniform(1, 2, (1, 2, 5)).astype(np.float32)
    attrs = {"size": [1, 1, 3], "border": "ignore", "padding": [[0, 0], [0, 0], [1, 2]],
             "stride": [1, 1, 2], "dilation": [1, 1, 1]}
    case = _nnef_case("nnef_avg_pool", x, attrs)
    document = build_document(spec, case)

    def run(text):
        path = tmp_path / "graph.nnef"
        path.write_text(text, encoding="utf-8")
        with nnef.Session(str(path), stdlib=prelude(*document.operations), lowered=[]) as session:
            return [document.finish(o) for o in session(*document.feeds(case))]

    assert judge_outputs(spec, case, run(document.text)).verdict == "pass"
    counted = document.text.replace("border = 'ignore'", "border = 'constant'")
    assert counted != document.text
    judgement = judge_outputs(spec, case, run(counted))
    assert judgement.verdict == "fail" and judgement.worst["index"][2] in (0, 2)


def _reference_is_known_wrong(op, case):
    """Configurations where onnx.reference (1.23) contradicts the texts, triaged by hand: its
    GlobalMaxPool shapes are wrong but for rank 4 ((5, 3, 4) gives (5, 1), (4, 3, 3, 1, 1)
    gives (4, 3, 3, 1, 1, 1): the text keeps N, C and makes each spatial dimension 1); it leaves dilations out of
    the SAME and VALID output sizes and pads (the texts spell (kernel - 1) * dilations + 1),
    and gives SAME_LOWER over a 1-element axis 0 outputs (the text: ceil(size / stride)); it
    refuses ceil_mode with auto_pad; storage_order 1 is a region (reading_differs). With a pad
    at least the kernel's size its LpPool is wrong: kernel 3, dilations 2, strides 3, pads
    [4, 0, 1, 1] on a 5 x 5 plane gives 5.41 (|x[0, 1]|) for the window of rows {0} and columns
    {0, 2, 4}, whose 3-norm is 8.21 (summed by hand over the text's window; onnxruntime refuses
    such pads: "Pad should be smaller than kernel", which the text does not say)."""
    attrs = case.attrs
    if op == "onnx_global_max_pool":
        return case.inputs[0].ndim != 4
    kernel = attrs.get("kernel_shape", ())
    wide_pad = any(pad >= kernel[k % len(kernel)] for k, pad in enumerate(attrs.get("pads", ())))
    return (attrs.get("auto_pad", "NOTSET") != "NOTSET" or attrs.get("storage_order", 0) == 1
            or (op == "onnx_lp_pool" and wide_pad))


@pytest.mark.parametrize("op", ["onnx_max_pool", "onnx_average_pool", "onnx_lp_pool",
                                "onnx_global_max_pool", "onnx_global_average_pool"])
def test_onnx_reference_agrees_where_it_is_not_known_wrong(specs, op):
    """onnx.reference as a second opinion (never the oracle): on drawn float32 cases with
    explicit padding its answers agree with the oracles."""
    from onnx.reference import ReferenceEvaluator

    from conform.generators import generate_cases

    compared = 0
    for case in generate_cases(specs[op], "float32", count=120, seed=3):
        if case.plan != "normal" or _reference_is_known_wrong(op, case):
            continue
        model = build_model(specs[op], case)
        got = ReferenceEvaluator(model).run(None, {"in0": case.inputs[0]})
        for actual, expected in zip(got, evaluate(op, case.inputs, case.attrs)):
            assert actual.shape == expected.shape, case.attrs
            np.testing.assert_allclose(actual, expected, rtol=2e-6, atol=1e-6, err_msg=str(case.attrs))
        compared += 1
    assert compared >= 5


def test_ceil_mode_also_ignores_a_window_starting_past_the_padding():
    """size 1, kernel 2, stride 3, pads 1 and 1, ceil_mode: ceil((1 + 2 - 2) / 3) + 1 = 2, but
    the second window would start at 3, past the padded extent (0 to 2): it holds nothing."""
    y, _ = _max_pool(np.array([[[7.0]]]), kernel_shape=[2], strides=[3], pads=[1, 1], ceil_mode=1)
    assert y.ravel().tolist() == [7]


# --- GlobalLpPool -----------------------------------------------------------------------------

@pytest.mark.parametrize("p, expected", [(1, 15.0), (2, 55.0 ** 0.5), (3, 225.0 ** (1 / 3))])
def test_global_lp_pool_is_the_p_norm_of_each_plane(p, expected):
    """'equivalent to LpPool with kernel size equal to the spatial dimension': |3|, |-4|, |5|,
    |1|, |2| of one plane (2-D spatial), kept as 1 x 1."""
    x = np.array([[[[3.0, -4.0, 5.0], [1.0, 2.0, 0.0]]]])
    (y,) = evaluate("onnx_global_lp_pool", [x], {"p": p})
    assert y.shape == (1, 1, 1, 1) and y.item() == pytest.approx(expected, rel=1e-15)


def test_global_lp_pool_passes_on_onnxruntime_and_a_wrong_p_fails(specs):
    """onnxruntime reads p; the default p = 2 in place of the case's p fails."""
    spec = specs["onnx_global_lp_pool"]
    x = np.random.default_rng(7).uniform(-3, 3, (2, 3, 4, 2)).astype(np.float32)
    for p in (1, 3):
        case = _case("onnx_global_lp_pool", x, {"p": p})
        assert judge_outputs(spec, case, run_mutated(spec, case)).verdict == "pass"
        assert judge_outputs(spec, case, run_mutated(spec, case, p=2)).verdict == "fail"
