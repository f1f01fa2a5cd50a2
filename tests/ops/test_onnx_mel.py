"""ONNX MelWeightMatrix (ops/onnx_mel.py): the text's shape, mel scale and unit peaks, the onnx
package's node test triaged (its construction is one of the readings left open), runs on
onnxruntime, and the judge catching area-normalised bands (peaks below 1.0)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.ops.onnx_mel import READINGS, edge_bins, mel, triangles
from conform.oracles import evaluate

sys.path.insert(0, str(Path(__file__).parent))
from backend_runs import assert_all_pass, onnxruntime  # noqa: E402,F401 - a fixture
from onnx_node_cases import node_cases  # noqa: E402

PARAMETERS = [np.int64(8), np.int64(16), np.int64(8192), np.float32(0), np.float32(4096)]


def test_the_mel_scale_and_the_shape():
    assert mel(700.0) == 2595 * np.log10(2)
    (out,) = evaluate("onnx_mel_weight_matrix", PARAMETERS, {})
    assert out.shape == (9, 8)


def test_each_band_peaks_at_one_on_a_bin_and_the_edges_span_lower_to_upper():
    (out,) = evaluate("onnx_mel_weight_matrix", PARAMETERS, {})
    assert (out.max(axis=0) == 1.0).all() and ((out >= 0) & (out <= 1)).all()
    bins = edge_bins(8, 16, 8192, 0.0, 4096.0)
    assert bins[0] == 0 and bins[-1] == 8   # 4096 Hz is bin 16 * 4096 / 8192


def test_node_test_is_the_onnx_packages_reading_and_differs_only_where_open():
    """Triaged: the node test spaces the edges by 1/(num_mel_bins + 2) of the mel range (its
    top edge falls short of upper_edge_hertz, 'the desired top edge of the highest frequency
    band') and maps f to floor((dft_length + 1) f / sample_rate). The oracle's reading 1 is
    that construction and gives the example exactly; the reference differs only on open
    elements."""
    ((name, _node, inputs, (want,)),) = node_cases("melweightmatrix")
    bands, length, rate = (int(x) for x in inputs[:3])
    low, high = float(inputs[3]), float(inputs[4])
    theirs = triangles(edge_bins(bands, length, rate, low, high, READINGS[1]), length // 2 + 1)
    assert np.array_equal(theirs.astype(np.float32), want), name
    (ours,) = evaluate("onnx_mel_weight_matrix", inputs, {})
    (opened,) = evaluate("onnx_mel_weight_matrix", inputs, {"open_elements": True})
    assert np.array_equal(ours[~opened], want[~opened]) and opened.any()


def test_integer_outputs_leave_fractions_open():
    (opened,) = evaluate("onnx_mel_weight_matrix", PARAMETERS,
                         {"output_datatype": "int32", "open_elements": True})
    (out,) = evaluate("onnx_mel_weight_matrix", PARAMETERS, {})
    assert opened[(out > 0) & (out < 1)].all()


def test_onnxruntime_passes(specs, onnxruntime):
    for dtype in ("float32", "float64", "int32"):
        assert_all_pass(specs, onnxruntime, "onnx_mel_weight_matrix", dtype,
                        allowed=("pass", "impl_defined"))


def test_judge_catches_area_normalised_bands(specs):
    """Bands divided by their sums (Slaney's normalisation, peaks below 1.0) fail."""
    spec, caught = specs["onnx_mel_weight_matrix"], 0
    for case in generate_cases(spec, "float32", count=20, seed=1):
        (want,) = evaluate(spec.op, case.inputs, case.attrs)
        (opened,) = evaluate(spec.op, case.inputs, {**case.attrs, "open_elements": True})
        normalised = (want / np.maximum(want.sum(axis=0), 1e-30)).astype(np.float32)
        if not np.any((normalised != want) & ~opened):
            continue
        assert judge_outputs(spec, case, [normalised]).verdict == "fail", case.id
        caught += 1
    assert caught
