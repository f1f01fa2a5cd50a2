"""ONNX Col2Im (ops/onnx_col2im.py): the onnx package's node test cases, fold's sums of
overlapping blocks with strides, dilations and pads, numpy on drawn cases, onnxruntime on 2-D
cases, swapped pads failing, and onnxruntime's 3-D dilation deviation pinned."""
from __future__ import annotations

import numpy as np
import pytest
from conform.generators import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate

from tests.ops import real_backends
from tests.ops.onnx_node_cases import node_attributes, node_cases
from tests.ops.ort_graphs import run_mutated

C2I = "onnx_col2im"
backends = real_backends.backends   # the fixture


def _attrs(image, block, **given):
    return {"strides": None, "dilations": None, "pads": None, **given,
            "image_shape": list(image), "block_shape": list(block)}


def _case(x, attrs, dtype="float32"):
    return Case(id=f"{C2I}.{dtype}.0", op=C2I, dtype=dtype, input_dtypes=(dtype,), out_dtype=dtype,
                inputs=[np.asarray(x, dtype)], attrs=attrs, plan="normal", seed=0)


def test_the_onnx_node_test_cases_are_reproduced(specs):
    cases = node_cases("col2im")
    assert len(cases) == 5
    for name, node, (x, image, block), (want,) in cases:
        attrs = _attrs(image.tolist(), block.tolist(), **node_attributes(node))
        got = evaluate(C2I, [x], attrs)[0]
        assert got.shape == want.shape, name
        assert judge_outputs(specs[C2I], _case(x, attrs), [want]).verdict == "pass", name


def test_overlapping_blocks_add_up_and_padding_drops_elements():
    """1 x 3 image, blocks of 1 x 2 with pads (0, 1) before and after on the last axis: three
    blocks at -1, 0 and 1; offsets (k = 0, 1) in rows, blocks in columns."""
    x = np.array([[[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]]])
    (out,) = evaluate(C2I, [x], _attrs([1, 3], [1, 2], pads=[0, 1, 0, 0]))
    assert out.tolist() == [[[[10 + 2, 20 + 3, 30]]]]
    dilated = evaluate(C2I, [x[:, :, :1]], _attrs([1, 3], [1, 2], dilations=[1, 2]))[0]
    assert dilated.tolist() == [[[[1.0, 0.0, 10.0]]]]


def test_numpy_passes_drawn_cases(specs, backends):
    assert real_backends.assert_drawn_cases_pass(specs[C2I], backends["numpy"], "float32",
                                                 count=8) > 0


@pytest.mark.parametrize("strides, dilations, pads", [
    ([1, 2], [1, 1], [0, 1, 1, 0]), ([2, 1], [2, 1], [1, 0, 0, 2]), ([1, 1], [1, 2], [0, 0, 0, 0])])
def test_onnxruntime_passes_2d_cases_and_swapped_pads_fail(specs, strides, dilations, pads):
    """(Swapping each axis's begin and end pads keeps the block count and moves the blocks.)"""
    spec = specs[C2I]
    image, block = [4, 5], [2, 2]
    attrs = _attrs(image, block, strides=strides, dilations=dilations, pads=pads)
    count = np.prod([(image[i] + pads[i] + pads[2 + i] - dilations[i] - 1) // strides[i] + 1
                     for i in range(2)])
    x = np.random.default_rng(3).uniform(-2, 2, (1, 8, count))
    case = _case(x, attrs)
    assert judge_outputs(spec, case, run_mutated(spec, case)).verdict == "pass"
    swapped = pads[2:] + pads[:2]
    if swapped != pads:
        shifted = run_mutated(spec, case, pads=swapped)
        assert judge_outputs(spec, case, shifted).verdict == "fail"


def test_onnxruntime_misplaces_3d_blocks_dilated_on_a_later_axis(specs):
    """A real deviation, pinned: image 2 x 3 x 1, block 2 x 2 x 1, dilations (1, 2, 1), one
    block per offset: the text's fold puts column [1, 2, 3, 4] at (0,0), (0,2), (1,0), (1,2)
    (out [1, 0, 2, 3, 0, 4], as onnx.reference and the node test's 5-D example agree);
    onnxruntime 1.32 gives [1, 0, 2, 4, 0, 0] (2-D cases pass). Repro: conform run --backend
    onnxruntime --ops onnx_col2im --out /tmp/c2i; conform repro onnx_col2im.float32.18 --from
    /tmp/c2i."""
    spec = specs[C2I]
    case = _case(np.arange(1.0, 5.0).reshape(1, 4, 1),
                 _attrs([2, 3, 1], [2, 2, 1], dilations=[1, 2, 1], strides=[1, 1, 1],
                        pads=[0] * 6))
    assert evaluate(C2I, case.inputs, case.attrs)[0].ravel().tolist() == [1, 0, 2, 3, 0, 4]
    (got,) = run_mutated(spec, case)
    assert got.ravel().tolist() == [1, 0, 2, 4, 0, 0]
    assert judge_outputs(spec, case, [got]).verdict == "fail"


def test_text_blocks_are_copied_and_the_unreached_image_is_left_open(specs):
    """Strings (blocks drawn apart: the text sums no text): each element placed is copied;
    the elements no block reaches hold fold's zero, which the text does not define for text
    (region col2im_text_zero); numpy's answer passes and a wrong copy fails."""
    from conform.harness.backends.numpy_backend import NumpyBackend
    from conform.harness.backends.models import run_case

    x = np.empty((1, 1, 4), object)
    x[:] = [[["a", "b", "", "d"]]]
    case = Case(id=f"{C2I}.string.0", op=C2I, dtype="string", input_dtypes=("string",),
                out_dtype="string", inputs=[x], plan="normal", seed=0,
                attrs=_attrs((2, 3), (1, 1), strides=[1, 2], dilations=[1, 1], pads=[0] * 4))
    (out,) = evaluate(C2I, [x], case.attrs)
    assert out.tolist() == [[[["a", "", "b"], ["", "", "d"]]]]
    spec = specs[C2I]
    (answer,) = run_case(NumpyBackend(), spec, case)
    result = judge_outputs(spec, case, [answer])   # 4 copies judged, 2 unreached open
    assert (result.verdict, result.checked, result.impl_defined) == ("pass", 4, 2)
    answer[0, 0, 1, 0] = "0"   # a copied empty string, not an unreached element
    assert judge_outputs(spec, case, [answer]).verdict == "fail"


def test_complex_blocks_add_up_part_by_part(specs, backends):
    """Complex addition adds the parts: the overlapping example's parts, an infinite imaginary
    part leaving its real part finite (not the nan a complex product 1j * inf would make);
    numpy passes drawn complex cases; a finite real part off by 1e-3, beside an infinite
    imaginary part, fails, as does a lost term."""
    x = np.array([[[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]]]) * (1 - 2j)
    x[0, 1, 2] = complex(30.0, np.inf)
    attrs = _attrs([1, 3], [1, 2], pads=[0, 1, 0, 0])
    (out,) = evaluate(C2I, [x], attrs)
    assert out.real.tolist() == [[[[12.0, 23.0, 30.0]]]]
    assert out.imag.tolist() == [[[[-24.0, -46.0, np.inf]]]]
    case = _case(x, {**attrs, "strides": [1, 1], "dilations": [1, 1]}, "complex64")
    import onnx

    from conform.harness.backends.onnx_models import build_model
    onnx.checker.check_model(build_model(specs[C2I], case), full_check=True)
    assert judge_outputs(specs[C2I], case, [out.astype(np.complex64)]).verdict == "pass"
    off = out.astype(np.complex64)
    off.real[..., 2] += np.float32(1e-3)
    assert judge_outputs(specs[C2I], case, [off]).verdict == "fail"
    lost = evaluate(C2I, [x[:, :, :2]], _attrs([1, 2], [1, 2], pads=[0, 1, 0, 0]))[0]
    wrong = out.astype(np.complex64)
    wrong[..., :2] = lost.astype(np.complex64) - 1j
    assert judge_outputs(specs[C2I], case, [wrong]).verdict == "fail"
    for dtype in ("complex64", "complex128"):
        assert real_backends.assert_drawn_cases_pass(specs[C2I], backends["numpy"], dtype,
                                                     count=8) > 0
