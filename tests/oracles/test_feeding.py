"""Which input elements feed an output element: checked against the oracles themselves."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import dtype_labels, generate_cases
from conform.oracles import evaluate
from conform.oracles.feeding import feeding_elements
from conform.spec import load_specs


def test_every_op_declared_element_aligned_is(specs):
    """An ``aligned`` op's (first) output has the broadcast shape of its inputs (NumPy's rule, or NNEF's
    for nnef_broadcast), so reading each input at the output's index is right."""
    checked = 0
    for name, spec in specs.items():
        if spec.definition.feeding != "aligned":
            continue
        nnef = spec.signature.get("shapes") == "nnef_broadcast"
        for case in generate_cases(spec, dtype_labels(spec)[0], count=4, seed=2):
            if case.plan == "must_reject":   # no oracle answer: a refusal is expected
                continue
            out = evaluate(spec.oracle, case.inputs, case.attrs)[0]
            shapes = [x.shape for x in case.inputs]
            dims = case.attrs.get("broadcast_dimensions")   # XLA: the lower rank's mapping
            if dims is not None:
                rank = max(map(len, shapes))
                shapes = [s if len(s) == rank else tuple(
                    s[dims.index(d)] if d in dims else 1 for d in range(rank)) for s in shapes]
            if nnef:
                rank = max(map(len, shapes))
                shapes = [s + (1,) * (rank - len(s)) for s in shapes]
            assert out.shape == np.broadcast_shapes(*shapes), (case.id, shapes, out.shape)
            checked += 1
    assert checked > 300


def _influencing(spec, inputs, attrs, index, valued):
    """Per input, the values of the elements whose change moves ``out[index]``: every input
    holds distinct positive values, and each element in turn becomes larger, then smaller, than
    all of them (which moves a sum, a maximum or minimum, a product with positives and a copy).
    Inputs not ``valued`` (indices, conditions) are not changed: none of them is a term.
    A NaN output (an average of no element) that stays NaN has not moved."""
    base = evaluate(spec.oracle, inputs, attrs)[0]
    found = []
    for k, x in enumerate(inputs):
        moved = set()
        if not valued[k]:
            found.append(moved)
            continue
        for j in range(x.size):
            for extreme in (1e9, -1e9):
                changed = x.copy()
                changed.flat[j] = extreme
                out = evaluate(spec.oracle, [*inputs[:k], changed, *inputs[k + 1:]], attrs)[0]
                before, after = base[tuple(index)], out[tuple(index)]
                if not (after == before or (after != after and before != before)):  # NaN stays
                    moved.add(float(x.flat[j]))
        found.append(moved)
    return found


#: Ops whose feeding elements perturbation cannot find, and why.
NOT_BY_PERTURBATION = {
    "bitcast_convert_type": "a piece of an element's bytes need not change when the element does",
    "onnx_range": "changing start, limit or delta changes the output's length",
    "onnx_unique": "changing an element changes which values are distinct: the outputs' "
                   "lengths and order",
    "onnx_non_zero": "an output is a coordinate: it moves only where an element becomes zero "
                     "or stops being zero, which a change to a large value never does",
    "cholesky": "an operand numbered 1, 2, ... is not positive definite: the factor is NaN "
                "wherever it is read, and no change of one element moves it",
    **{op: "a body of ops such as sqrt of a negative (NaN whatever the element), or a - a and "
           "a / a (SequenceMap with one sequence and no tensor), need not move when an element "
           "changes, though the text combines it (tests/ops/test_onnx_scan.py checks its rule)"
       for op in ("onnx_scan", "onnx_sequence_map")},
    "while": "a loop body of ops such as floor, sign or abs, or of no iteration, need not move "
             "when an element of a or b changes, though the standard combines it",
    "nnef_local_contrast_normalization": "inputs numbered 1, 2, ... make a centred value (x less "
                                         "its window's mean, the middle of an arithmetic run) 0: "
                                         "0 / sigma does not move when an element of sigma's "
                                         "wider window changes, though the fragment divides by it",
    **{op: "where the clamp holds x at min (the perturbation's values are increasing, so x "
           "lies below min), the level is 0 and the result min whatever max is, though the "
           "fragment computes with max" for op in ("nnef_linear_quantize",
                                                   "nnef_min_max_linear_quantize")},
    "get_dimension_size": "its result is a dimension's length, which no element's value moves",
    "nnef_zero_point_linear_quantize": "zero_point is an integer input (not T), left unchanged, "
                                       "yet a term; and where the clamp holds q at z, (q - z) * "
                                       "scale is 0 whatever scale is",
    "onnx_dft": "a term whose twiddle is 0 (sin 0 at bin 0 or at n = 0, a quarter turn's cos) "
                "does not move the bin, though the text's sum takes it",
    "onnx_dft_opset17": "a term whose twiddle is 0 (sin 0 at bin 0 or at n = 0, a quarter "
                        "turn's cos) does not move the bin, though the text's sum takes it",
    "onnx_stft": "as onnx_dft, per frame: a term whose twiddle is 0 does not move the bin, "
                 "though the text's sum takes it",
    **{name: "the softmax of the distinct large values the perturbation draws is one-hot in "
             "float64: a key, value or mask element of a key whose weight is 0 does not move "
             "the output, though the text's sum takes it"
       for name in ("onnx_attention", "onnx_attention_kv_cache", "onnx_attention_opset23",
                    "onnx_attention_kv_cache_opset23")},
    **{name: "as onnx_attention (and the scores 1e9 times larger saturate softcap's tanh: a "
             "query element moves no capped score), and the integer attn_mask is not T, left "
             "unchanged, yet a term added to the scores (tests/ops/test_onnx_attention.py "
             "checks its rule with small changes)"
       for name in ("onnx_attention_integer_mask", "onnx_attention_integer_mask_opset23")},
    "fft": "a term whose twiddle is 0 (sin 0 at bin 0, a quarter turn's cos) does not move the "
           "bin, though the DFT's sum takes it",
    "onnx_mat_mul_integer": "B and b_zero_point are of type T2 (not T), left unchanged, yet "
                            "terms; and an element of A meeting a B element equal to its zero "
                            "point is a product with 0",
    "onnx_conv_integer": "w and w_zero_point are of type T2 (not T), left unchanged, yet terms; "
                         "and an x element under a w tap equal to its zero point is a product "
                         "with 0",
    "onnx_qlinear_mat_mul": "B, the scales and the zero points of B and y are not of type T, "
                            "left unchanged, yet terms; a product with a B element equal to its "
                            "zero point is 0, and a saturated y does not move",
    **{op: "the test's values 1, 2, 3, ... saturate the gates' activations (Sigmoid and Tanh "
           "are 1 in float64): a weight of a saturated gate does not move the state, though "
           "the text's equations combine it" for op in ("onnx_rnn", "onnx_gru", "onnx_lstm")},
    "onnx_qlinear_conv": "w, the scales, the zero points of w and y and the bias are not of type "
                         "T, left unchanged, yet terms; a product with a w tap equal to its zero "
                         "point is 0, and a saturated y does not move",
    "onnx_affine_grid": "a position coordinate of 0 (an odd side's centre, a side of 1) makes "
                        "theta's term 0: it does not move the element, though the text's "
                        "product takes it",
    **{op: "the grid holds coordinates: the test's 1, 2, ... and +-1e9 read outside X (zeros: "
           "nothing moves) or another element, and a tap of weight 0 does not move the output, "
           "though the text reads it" for op in ("onnx_grid_sample", "onnx_grid_sample_opset16")},
    **{op: "rois hold corners: the test's 1, 2, ... and +-1e9 put the samples outside X, and a "
           "neighbour of weight 0 does not move the bin, though the text reads it"
       for op in ("onnx_roi_align", "onnx_roi_align_opset10")},
    "onnx_max_roi_pool": "rois hold a batch index and corners: the test's 1, 2, ... name no "
                         "batch, and a change moves which elements the window holds",
    "onnx_deform_conv": "offsets are coordinates: the test's 1, 2, ... and +-1e9 move taps "
                        "outside the padded tensor; a corner of weight 0 or a tap of mask 0 "
                        "does not move the output, though the text combines it",
    "onnx_non_max_suppression": "an output is an index (a kept box's batch, class or number): "
                                "a change of a box or score moves which rows there are, not "
                                "the element at a fixed row",
    **{op: "the test's values 1, 2, 3, ... are all true, and stay true when changed to "
           "+-1e9: no change of one element moves the or / and of the slice, though the "
           "fragment combines it" for op in ("nnef_any_reduce", "nnef_all_reduce")},
    **{op: "its outputs are random draws (a law, judged statistically): the oracle gives the "
           "law's parameters, which no change of one input element need move elementwise"
       for op in ("onnx_multinomial", "rng_normal", "rng_uniform")},
    **{op: "a text input: the test's numeric changes (+-1e9) are no string, and a token "
           "changed to one outside the pool moves no count (tests/ops/test_onnx_strings.py "
           "checks its rule)" for op in ("onnx_string_normalizer", "onnx_string_split",
                                          "onnx_tfidf_vectorizer")},
    **{op: "the oracle answers on constant planes only (what every reading of the region's "
           "geometry gives, ops/nnef_roi.py): a perturbed element makes its plane vary, whose "
           "elements region roi_plane_not_constant leaves unjudged, so no change moves the "
           "oracle's answer by the rule the feeding states"
       for op in ("nnef_avg_roi_pool", "nnef_max_roi_pool", "nnef_roi_resample",
                  "nnef_avg_roi_align", "nnef_max_roi_align")},
    "nnef_argmax_pool": "an output is a tap: in a window holding one input element (size 1, or "
                        "the rest padding under 'ignore') it is that tap whatever the element is",
}
#: Ops whose output is an index along ``attrs['axis']``: into a slice of one element it is 0
#: whatever that element is, so such cases are left out.
INDEX_OPS = {"onnx_arg_max", "onnx_arg_min", "nnef_argmax_reduce", "nnef_argmin_reduce"}
NON_ALIGNED_OPS = sorted(op for op, spec in load_specs().items()
                         if spec.definition.feeding != "aligned" and op not in NOT_BY_PERTURBATION)


@pytest.mark.parametrize("op", NON_ALIGNED_OPS)
def test_feeding_elements_are_exactly_those_that_move_the_output(specs, op):
    spec = specs[op]
    rng = np.random.default_rng(0)
    plans = set()
    for case in generate_cases(spec, dtype_labels(spec)[0], count=12, seed=5):
        if case.plan == "must_reject":
            continue
        # every element of every input is perturbed twice: of inputs past 4,096 elements (the
        # random ops' samples of 16,384), one case of each plan
        if sum(x.size for x in case.inputs) > 4096 and case.plan in plans:
            continue
        plans.add(case.plan)
        if op in INDEX_OPS and case.inputs[0].shape[case.attrs["axis"]] == 1:
            continue
        # inputs of the case's type T carry values; the others (indices, a condition: a fixed
        # type or a type variable) keep the case's own, which the op's drawer made valid
        names = spec.present_inputs(case.attrs)
        valued = [spec.input_types[spec.inputs.index(names[min(k, len(names) - 1)])] == "T"
                  for k in range(len(case.inputs))]
        offsets = np.cumsum([0, *(x.size for x in case.inputs)])
        inputs = [(offset + 1 + np.arange(x.size, dtype=np.float64)).reshape(x.shape) if v
                  else x for offset, x, v in zip(offsets, case.inputs, valued)]
        out = evaluate(spec.oracle, inputs, case.attrs)[0]
        # a NaN result (0 / 0 of a one-element group with epsilon 0) moves with no element
        finite = np.flatnonzero(np.isfinite(out)) if out.dtype.kind in "fc" else np.arange(out.size)
        if finite.size == 0:
            continue
        index = [int(i) for i in np.unravel_index(finite[rng.integers(finite.size)], out.shape)]
        feeding = feeding_elements(spec.op, inputs, case.attrs, index)
        got = [set() if f is None else set(f.tolist()) for f in feeding]
        assert got == _influencing(spec, inputs, case.attrs, index, valued), (case.id, index)


def test_a_window_lists_only_operand_elements_not_its_padding():
    x = np.arange(1.0, 5.0)
    (window,) = feeding_elements("reduce_window_max", [x],
                                 {"window_dimensions": [3], "window_strides": [1],
                                  "padding": [[2, 0]]}, [0])
    assert window.tolist() == [1.0]
