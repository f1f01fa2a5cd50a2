"""ONNX CenterCropPad (ops/onnx_movement.py): the text's rules (which side an odd difference
favours, zero padding, axes), the onnx package's node test cases, onnxruntime and numpy on drawn
cases, and the judge catching a shifted window from the real onnxruntime."""
from __future__ import annotations

import numpy as np
import pytest
from conform.generators import Case
from conform.oracles import evaluate

from tests.ops import real_backends
from tests.ops.onnx_node_cases import node_attributes, node_cases
from tests.ops.ort_graphs import run_mutated

CCP = "onnx_center_crop_pad"
backends = real_backends.backends   # the fixture


def _ccp(x, shape, **attrs):
    return evaluate(CCP, [np.asarray(x)], {"shape": shape, "shape_type": "int64", **attrs})[0]


def test_an_odd_crop_starts_rounded_down_and_an_odd_pad_adds_on_the_right():
    """Crop 5 to 2: start floor(3 / 2) = 1 (half a pixel left of centre); pad 2 to 5: 1 zero
    before, 2 after."""
    assert _ccp([1, 2, 3, 4, 5], [2]).tolist() == [2, 3]
    assert _ccp([1, 2, 3, 4, 5], [4]).tolist() == [1, 2, 3, 4]
    assert _ccp([7, 8], [5]).tolist() == [0, 7, 8, 0, 0]
    assert _ccp([7, 8], [0]).shape == (0,)


def test_axes_pick_the_dimensions_and_count_from_the_back():
    x = np.arange(12).reshape(3, 4)
    assert _ccp(x, [2], axes=[-1]).tolist() == [[1, 2], [5, 6], [9, 10]]
    assert _ccp(x, [1, 6], axes=[0, 1]).tolist() == [[0, 4, 5, 6, 7, 0]]
    assert _ccp(np.zeros((0, 2)), [2], axes=[0]).tolist() == [[0, 0], [0, 0]]


def test_the_onnx_node_test_cases_are_reproduced():
    cases = node_cases("center_crop_pad")
    assert len(cases) == 6
    for name, node, (x, shape), (want,) in cases:
        got = evaluate(CCP, [x], {"shape": shape.tolist(), "shape_type": str(shape.dtype),
                                  **node_attributes(node)})[0]
        assert np.array_equal(got.astype(want.dtype), want), name


@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_drawn_cases_pass_on_onnxruntime_and_numpy(specs, backends, dtype):
    """(int32 shapes and int16/uint16 data are unsupported there: onnxruntime's expansion of
    the function body fails its own type check, or has no Pad kernel.)"""
    real_backends.assert_drawn_cases_pass_everywhere(specs[CCP], backends, dtype, count=6)


def test_a_window_shifted_by_other_axes_fails_through_onnxruntime(specs):
    spec = specs[CCP]
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    case = Case(id=f"{CCP}.float32.0", op=CCP, dtype="float32", input_dtypes=("float32",),
                out_dtype="float32", inputs=[x], plan="normal", seed=0,
                attrs={"shape": [2, 3], "shape_type": "int64", "axes": [0, 1]})
    from conform.harness.judge.judging import judge_outputs

    assert judge_outputs(spec, case, run_mutated(spec, case)).verdict == "pass"
    swapped = run_mutated(spec, case, axes=[-1, -2])[0]   # shape (3, 2): the wrong axes
    assert swapped.shape == (3, 2)
    assert judge_outputs(spec, case, [swapped]).verdict == "fail"


def test_pad_boundaries_crop_an_axis_to_zero_and_one_and_through_the_padding(specs):
    from conform.generators._shape_edges import boundary_cases

    cases = boundary_cases(specs["onnx_pad"], "float32", seed=0)
    outs = [evaluate("onnx_pad", c.inputs, c.attrs)[0] for c in cases]
    assert [o.shape for o in outs] == [(0, 3), (1, 3), (3, 3), (1, 3)]
    data = cases[2].inputs[0].astype(np.float64)
    assert (outs[2] == data[3]).all()   # one kept row, copied by edge padding twice
    assert (outs[3] == 0).all()         # pads [2, -5]: the crop reaches into the begin padding


def test_pad_fills_text_with_the_empty_string_by_default():
    """Pad's constant_value: '(by default it is 0, empty string or False)'."""
    data = np.array(["a", "b"], object)
    attrs = dict(mode="constant", pads=[1, 1], absent_inputs=("constant_value", "axes"))
    (out,) = evaluate("onnx_pad", [data], attrs)
    assert out.tolist() == ["", "a", "b", ""] and all(type(s) is str for s in out)


def test_center_crop_pad_of_text_leaves_only_the_padding_open(specs):
    """'The padding value used is zero', which names no zero of text: the padding is the
    region center_crop_pad_text_zero, the copies are judged."""
    from conform.harness.judge.judging import judge_outputs

    data = np.array(["a", "b", "c"], object)
    case = Case(id="onnx_center_crop_pad.string.0", op="onnx_center_crop_pad", dtype="string",
                input_dtypes=("string",), out_dtype="string", inputs=[data],
                attrs={"shape": [6], "shape_type": "int64"}, plan="normal", seed=0)
    spec = specs["onnx_center_crop_pad"]
    answer = np.array(["0", "a", "b", "c", "0", "0"], object)
    result = judge_outputs(spec, case, [answer])   # 3 copies judged, 3 padding open
    assert (result.verdict, result.checked, result.impl_defined) == ("pass", 3, 3)
    answer[2] = "c"
    assert judge_outputs(spec, case, [answer]).verdict == "fail"


def test_pad_of_e8m0_by_its_default_zero_is_open_and_a_given_value_or_copies_judged(specs):
    """float8e8m0 has no zero, Pad's default constant_value ('by default it is 0'): those
    elements are open; a given constant_value and edge padding are judged (numpy passes; the
    padded side swapped fails)."""
    from conform.dtypes import np_dtype
    from conform.harness.backends.models import run_case
    from conform.harness.backends.numpy_backend import NumpyBackend
    from conform.harness.judge.judging import judge_outputs
    from conform.oracles.expectations import expect

    spec, e8m0 = specs["onnx_pad"], np_dtype("float8_e8m0fnu")
    data = np.array([0.5, 4.0, 64.0]).astype(e8m0)

    def case(mode, *value):
        absent = () if value else ("constant_value",)
        return Case(id="onnx_pad.float8_e8m0fnu.0", op="onnx_pad", dtype="float8_e8m0fnu",
                    input_dtypes=("float8_e8m0fnu",) * (1 + len(value)),
                    out_dtype="float8_e8m0fnu", inputs=[data, *value], plan="normal", seed=0,
                    attrs={"mode": mode, "pads": [2, 1], "absent_inputs": absent})

    (answer,) = expect(spec, case("constant"))
    assert answer.impl_mask.tolist() == [True, True, False, False, False, True]
    for judged in (case("constant", np.asarray(2.0).astype(e8m0)), case("edge")):
        (answer,) = expect(spec, judged)
        assert answer.impl_mask is None or not answer.impl_mask.any()
        out = run_case(NumpyBackend(), spec, judged)
        assert judge_outputs(spec, judged, out).verdict == "pass"
        flipped = [np.asarray(out[0])[::-1].copy()]
        assert judge_outputs(spec, judged, flipped).verdict == "fail"
