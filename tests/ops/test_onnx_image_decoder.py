"""ONNX ImageDecoder (ops/onnx_image_decoder.py): the oracle against the text (channel order,
gray pictures, the empty matrix) and the onnx package's node-test examples of lossless formats,
every format's edge cases and drawn cases decoded by the numpy backend (Pillow), the judge
catching swapped channels and a picture where the text gives the empty matrix, and onnxruntime
having no kernel."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators._shape_edges import boundary_cases
from conform.harness.judge.judging import judge_outputs
from conform.model_formats import Unsupported
from conform.ops.onnx_image_decoder import (FORMATS, LOSSY, UNDECODABLE, arranged,
                                           numpy_image_decoder)
from tests.ops.backend_runs import assert_all_pass, boundary_verdicts, numpy_backend
from tests.ops.backend_runs import onnxruntime  # noqa: F401 - the fixture
from tests.ops.onnx_node_cases import node_cases

OP = "onnx_image_decoder"
#: the node examples' formats Pillow codes losslessly by default (its WebP and JPEG are lossy)
LOSSLESS_EXAMPLES = ("bmp_rgb", "jpeg2k_rgb", "png_rgb", "pnm_rgb", "tiff_rgb")


def test_pixel_format_orders_the_channels_and_a_gray_value_is_the_same_picture():
    colour = np.array([[[1, 2, 3], [4, 5, 6]]], np.uint8)
    assert arranged(colour, "RGB").tolist() == [[[1, 2, 3], [4, 5, 6]]]
    assert arranged(colour, "BGR").tolist() == [[[3, 2, 1], [6, 5, 4]]]
    gray = np.array([[[7], [255]]], np.uint8)
    assert arranged(gray, "RGB").tolist() == [[[7, 7, 7], [255, 255, 255]]]
    assert arranged(gray, "Grayscale").tolist() == [[[7], [255]]]


def test_the_node_examples_of_lossless_formats_are_their_pictures():
    """The examples code a checkerboard (np.random.seed(12345), 32x32, squares of 5) in each
    format: for the lossless ones the expected output is that picture, channel-last in RGB."""
    from onnx.backend.test.case.node import image_decoder

    np.random.seed(12345)
    picture = image_decoder.generate_checkerboard(32, 32, 5)
    seen = set()
    for name, node, inputs, outputs in node_cases("image_decoder"):
        if name.removeprefix("test_image_decoder_decode_") in LOSSLESS_EXAMPLES:
            fmt = node.attribute[0].s.decode()
            np.testing.assert_array_equal(outputs[0], arranged(picture, fmt), err_msg=name)
            seen.add(name)
    assert len(seen) == len(LOSSLESS_EXAMPLES)


def test_every_format_s_edge_cases_decode_on_numpy(specs):
    """A 1x1 picture, a 1x13 strip and a 13x1 column in every format and source pass, exactly,
    except where a region is declared (lossy formats, a colour picture in Grayscale); each
    undecodable stream gives the empty matrix."""
    verdicts = boundary_verdicts(specs, numpy_backend(), OP, "uint8")
    cases = {c.id: c for c in boundary_cases(specs[OP], "uint8", seed=0)}
    assert len(cases) == 3 * sum(len(s) for _, s in FORMATS.values()) + 3 * len(UNDECODABLE)
    for key, verdict in verdicts.items():
        attrs = cases[key].attrs
        open_ = attrs["image_format"] in LOSSY or (attrs["image_format"] in FORMATS and (
            attrs["source"] == "colour" and attrs.get("pixel_format") == "Grayscale"))
        assert verdict == ("impl_defined" if open_ else "pass"), (key, attrs, verdict)


def test_drawn_cases_pass_on_numpy(specs):
    assert_all_pass(specs, numpy_backend(), OP, "uint8", count=12, allowed=("pass", "impl_defined"))


def _case(specs, **wanted):
    """The first edge case whose attributes include ``wanted``."""
    return next(c for c in boundary_cases(specs[OP], "uint8", seed=0)
                if wanted.items() <= c.attrs.items())


def test_the_judge_fails_swapped_channels(specs):
    case = next(c for c in boundary_cases(specs[OP], "uint8", seed=0)
                if c.attrs["source"] == "colour" and c.attrs.get("pixel_format", "RGB") != "Grayscale"
                and c.attrs["image_format"] == "png" and c.attrs["width"] > 1)
    (right,) = numpy_image_decoder(case.inputs[0], **case.attrs)
    assert judge_outputs(specs[OP], case, [right]).verdict == "pass"
    assert judge_outputs(specs[OP], case, [right[..., ::-1].copy()]).verdict == "fail"


@pytest.mark.parametrize("fmt", UNDECODABLE)
def test_an_undecodable_stream_gives_any_empty_matrix_and_nothing_else(specs, fmt):
    case = _case(specs, image_format=fmt)
    channels = 1 if case.attrs.get("pixel_format") == "Grayscale" else 3
    assert numpy_image_decoder(case.inputs[0], **case.attrs)[0].shape == (0, 0, channels)
    for empty in (np.zeros((0,), np.uint8), np.zeros((0, 0, channels), np.uint8)):
        assert judge_outputs(specs[OP], case, [empty]).verdict == "pass"
    picture = np.zeros((5, 3, channels), np.uint8)
    assert judge_outputs(specs[OP], case, [picture]).verdict == "fail"


def test_onnxruntime_has_no_kernel(specs, onnxruntime):  # noqa: F811
    """onnxruntime 1.32 implements no ImageDecoder: its cases are unsupported."""
    from conform.harness.backends.models import run_case

    case = _case(specs, image_format="png")
    with pytest.raises(Unsupported, match="ImageDecoder"):
        run_case(onnxruntime, specs[OP], case)
