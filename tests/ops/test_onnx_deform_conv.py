"""ONNX DeformConv (ops/onnx_deform_conv.py): the text's offsets, mask, bias and its zero
outside the padded tensor on hand-worked cases, the onnx package's node test cases, and
onnxruntime and numpy judged on drawn cases."""
from __future__ import annotations

import numpy as np
import onnx

from conform.oracles._registry import evaluate
from conform.oracles.feeding import feeding_elements
from tests.ops.backend_runs import judged, numpy_backend, onnxruntime  # noqa: F401 (fixture)
from tests.ops.ort_graphs import node_test_cases

DC = "onnx_deform_conv"
NAMES = ["x", "w", "offset", "b", "mask"]


def _deform(x, w, offset, *rest, absent=("b", "mask"), **attrs):
    inputs = [np.asarray(a, np.float64) for a in (x, w, offset, *rest)]
    if absent:
        attrs["absent_inputs"] = list(absent)
    return evaluate(DC, inputs, attrs)[0]


def test_offsets_move_each_tap_and_outside_the_padded_tensor_is_zero():
    """A 1 x 3 row, a 1 x 1 kernel of weight 1: W offsets of +0.5 read 1.5 and 2.5; the
    third location (2.5) is past the unpadded tensor: zero (reading 0, the text's), 1.5 when
    interpolated with the zero beyond X (reading 1). An H offset (channel 0) of +0.5 on one
    row leaves it too. With pads [0, 1, 0, 1] the location 2.5 is inside the padded tensor and
    interpolates with its zero."""
    x, w = [[[[1.0, 2.0, 3.0]]]], [[[[1.0]]]]
    dx = np.array([[[[0.0, 0.0, 0.0]], [[0.5, 0.5, 0.5]]]])
    assert _deform(x, w, dx).ravel().tolist() == [1.5, 2.5, 0.0]
    assert _deform(x, w, dx, reading=1).ravel().tolist() == [1.5, 2.5, 1.5]
    assert _deform(x, w, dx[:, ::-1]).ravel().tolist() == [0.0, 0.0, 0.0]
    padded = _deform(x, w, np.concatenate([dx[..., :1]] * 5, axis=-1), pads=[0, 1, 0, 1])
    assert padded.ravel().tolist() == [0.5, 1.5, 2.5, 1.5, 0.0]


def test_mask_bias_groups_and_the_offset_layout():
    """A 1 x 2 kernel over two channels (group 2, offset_group 2): per offset group, per tap,
    the H then the W offset; the mask scales each tap; B is added."""
    x = np.array([[[[1.0, 2.0, 4.0]], [[10.0, 20.0, 40.0]]]])
    w = np.array([[[[1.0, 1.0]]], [[[1.0, -1.0]]]])          # oC 2, C/group 1, 1 x 2
    offset = np.zeros((1, 2 * 2 * 2, 1, 2))
    offset[0, 2 * 2 + 2 * 1 + 1] = 1.0    # offset group 1, tap 1, W offset: reads one further
    mask = np.ones((1, 4, 1, 2))
    mask[0, 0] = 0.5                      # offset group 0, tap 0
    y = _deform(x, w, offset, [100.0, 200.0], mask, absent=(), group=2, offset_group=2)
    assert y.tolist() == [[[[100 + 0.5 + 2, 100 + 1 + 4]], [[200 + 10 - 40, 200 + 20 - 0]]]]


def test_node_test_cases_are_reproduced(onnx_node_cases):
    """Every DeformConv node test of the onnx package agrees with the oracle (under either
    reading: their locations stay inside) to the float32 data's precision."""
    seen = 0
    for name, op, node, data_sets in node_test_cases(onnx_node_cases, {"DeformConv": DC}):
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        given = list(node.input) + [""] * (5 - len(node.input))
        absent = [n for n, g in zip(NAMES, given) if not g]
        if absent:
            attrs["absent_inputs"] = absent
        for inputs, outputs in data_sets:
            got = evaluate(op, list(inputs), attrs)[0]
            np.testing.assert_allclose(got, outputs[0], rtol=1e-5, atol=1e-5, err_msg=name)
            seen += 1
    assert seen >= 4


def test_numpy_and_onnxruntime_pass_drawn_cases(specs, onnxruntime):
    for backend in (numpy_backend(), onnxruntime):
        verdicts = {j.verdict for _, j in judged(specs, backend, DC, "float32", count=10)}
        assert verdicts <= {"pass", "impl_defined"} and "pass" in verdicts, (backend, verdicts)


def test_feeding_the_group_s_interpolated_elements_weights_offsets_mask_and_bias():
    """Group 2, offset_group 2, a 1 x 1 kernel over 2 x 3 x 3 numbered 1..18: output channel 1
    reads input channel 1 only, at location (0.5, 0) at output (0, 0) (its group's H offset
    +0.5): rows 0, 1 and columns 0, 1; W[1], B[1], offset group 1's pair and mask there. A
    location past the tensor (W offset +1.5 at output (0, 2): 3.5) reads no element."""
    x = np.arange(1.0, 19.0).reshape(1, 2, 3, 3)
    w, b = np.array([[[[5.0]]], [[[7.0]]]]), np.array([0.25, 0.5])
    offset, mask = np.zeros((1, 4, 3, 3)), np.arange(1.0, 19.0).reshape(1, 2, 3, 3) / 32
    offset[0, 2, 0, 0], offset[0, 3, 0, 2] = 0.5, 1.5
    inputs, attrs = [x, w, offset, b, mask], {"group": 2, "offset_group": 2}
    fed = feeding_elements(DC, inputs, attrs, [0, 1, 0, 0])
    assert [f.tolist() for f in fed] == [[10.0, 11.0, 13.0, 14.0], [7.0], [0.5, 0.0], [0.5],
                                         [mask[0, 1, 0, 0]]]
    assert feeding_elements(DC, inputs, attrs, [0, 1, 0, 2])[0].tolist() == []
    y = evaluate(DC, inputs, attrs)[0]
    assert y[0, 1, 0, 0] == 7 * mask[0, 1, 0, 0] * 11.5 + 0.5 and y[0, 1, 0, 2] == 0.5
