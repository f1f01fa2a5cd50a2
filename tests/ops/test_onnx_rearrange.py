"""ONNX DepthToSpace, SpaceToDepth, ReverseSequence and Trilu (ops/onnx_rearrange.py): the texts'
examples and rules, the onnx package's node test cases, the drawn cases on onnxruntime and
numpy, and the judge catching a wrong mode from the real onnxruntime."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conform.generators import generate_cases
from conform.oracles import evaluate

from tests.ops import real_backends
from tests.ops.onnx_node_cases import node_attributes, node_cases

DEFAULTS = {"DepthToSpace": {"mode": "DCR"}, "SpaceToDepth": {"mode": "DCR"},
            "ReverseSequence": {"batch_axis": 1, "time_axis": 0}, "Trilu": {"upper": 1}}


@pytest.mark.parametrize("module, op_type, name", [
    ("depthtospace", "DepthToSpace", "onnx_depth_to_space"),
    ("spacetodepth", "SpaceToDepth", "onnx_space_to_depth"),
    ("reversesequence", "ReverseSequence", "onnx_reverse_sequence"),
    ("trilu", "Trilu", "onnx_trilu")])
def test_oracle_reproduces_the_onnx_node_test_cases(module, op_type, name):
    cases = node_cases(module)
    assert cases
    for case_name, node, inputs, (want,) in cases:
        attrs = {**DEFAULTS[op_type], **node_attributes(node)}
        (got,) = evaluate(name, inputs, attrs)
        assert got.shape == want.shape, case_name
        assert np.array_equal(got.astype(want.dtype), want), case_name


def test_reverse_sequence_examples_of_the_text():
    x = np.arange(16.0).reshape(4, 4)
    (out,) = evaluate("onnx_reverse_sequence", [x.T, np.int64([4, 3, 2, 1])],
                      {"batch_axis": 1, "time_axis": 0})
    assert out.tolist() == [[3, 6, 9, 12], [2, 5, 8, 13], [1, 4, 10, 14], [0, 7, 11, 15]]
    (out,) = evaluate("onnx_reverse_sequence", [x, np.int64([1, 2, 3, 4])],
                      {"batch_axis": 0, "time_axis": 1})
    assert out.tolist() == [[0, 1, 2, 3], [5, 4, 6, 7], [10, 9, 8, 11], [15, 14, 13, 12]]


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_inverts_depth_to_space(mode):
    x = np.arange(2 * 18 * 2 * 3, dtype=np.float64).reshape(2, 18, 2, 3)
    (space,) = evaluate("onnx_depth_to_space", [x], {"blocksize": 3, "mode": mode})
    assert space.shape == (2, 2, 6, 9)
    (back,) = evaluate("onnx_space_to_depth", [space], {"blocksize": 3, "mode": mode})
    assert np.array_equal(back, x)


def test_depth_to_space_modes_order_the_depth_differently():
    """DCR: depth = (i * bs + j) * C' + c; CRD: depth = c * bs**2 + i * bs + j."""
    x = np.arange(8.0).reshape(1, 8, 1, 1)
    dcr = evaluate("onnx_depth_to_space", [x], {"blocksize": 2, "mode": "DCR"})[0]
    crd = evaluate("onnx_depth_to_space", [x], {"blocksize": 2, "mode": "CRD"})[0]
    assert dcr[0, :, :, :].tolist() == [[[0, 2], [4, 6]], [[1, 3], [5, 7]]]
    assert crd[0, :, :, :].tolist() == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]


def test_trilu_keeps_diagonals_by_k_and_zeroes_the_rest_positive():
    x = -np.ones((3, 4)) * 0.0   # -0 everywhere: kept ones stay -0, zeroed ones are +0
    (out,) = evaluate("onnx_trilu", [x, np.int64(1)], {"upper": 1})
    assert np.signbit(out).tolist() == [[False, True, True, True], [False, False, True, True],
                                        [False, False, False, True]]
    (out,) = evaluate("onnx_trilu", [np.ones((3, 3))], {"upper": 0, "absent_inputs": ["k"]})
    assert out.tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]


backends = real_backends.backends   # the fixture


def test_judge_catches_the_other_mode_from_onnxruntime(specs, backends):
    """DepthToSpace run on the real onnxruntime in CRD mode fails a DCR case."""
    spec = specs["onnx_depth_to_space"]
    case = next(c for c in generate_cases(spec, "float32", count=40, seed=4)
                if c.attrs["blocksize"] > 1 and c.attrs["mode"] == "DCR"
                and c.inputs[0].shape[1] > c.attrs["blocksize"] ** 2)
    assert real_backends.verdict(spec, case, backends["onnxruntime"])[0] == "pass"
    other = dataclasses.replace(case, attrs={**case.attrs, "mode": "CRD"})
    assert real_backends.verdict(spec, case, backends["onnxruntime"], run=other)[0] == "fail"


def test_trilu_of_text_copies_the_kept_elements_and_leaves_the_zeros_open(specs):
    """Strings: 'All other elements in the matrix are set to zero' names no zero of text, so
    the zeroed elements are the region trilu_text_zero; a wrong kept element still fails."""
    from conform.generators import Case
    from conform.harness.judge.judging import judge_outputs
    from conform.ops.regions import RegionContext, region_mask

    data = np.empty((2, 3), object)
    data[:] = [["a", "b", "c"], ["d", "", "f"]]
    case = Case(id="onnx_trilu.string.0", op="onnx_trilu", dtype="string",
                input_dtypes=("string", "int64"), out_dtype="string",
                inputs=[data, np.array(1, np.int64)], attrs={"upper": 1}, plan="normal", seed=0)
    (out,) = evaluate("onnx_trilu", case.inputs, case.attrs)
    context = RegionContext(inputs=case.inputs, expected=out, out_dtype="string",
                            float_oracle=None, attrs=case.attrs)
    mask = region_mask(["trilu_text_zero"], context)
    assert mask.tolist() == [[True, False, False], [True, True, False]]
    assert out[~mask].tolist() == ["b", "c", "f"]
    spec = specs["onnx_trilu"]
    answer = np.where(mask, "0", data)
    result = judge_outputs(spec, case, [answer])   # the kept elements judged, the zeros open
    assert (result.verdict, result.checked, result.impl_defined) == ("pass", 3, 3)
    answer[0, 2] = "C"
    assert judge_outputs(spec, case, [answer]).verdict == "fail"
