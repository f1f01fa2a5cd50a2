"""ONNX's signal windows (ops/onnx_windows.py): the texts' rules, the onnx package's node test
cases, the float32 bound, runs on onnxruntime and numpy, and the judge catching the classic
Hamming coefficients (0.54, 0.46) where the text's body uses 25/46 and 21/46."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.ops.onnx_windows import float32_error, open_integers, window
from conform.oracles import evaluate

sys.path.insert(0, str(Path(__file__).parent))
from backend_runs import judged, onnxruntime  # noqa: E402,F401 - a fixture
from onnx_node_cases import node_cases  # noqa: E402

WINDOWS = ("onnx_hann_window", "onnx_hamming_window", "onnx_blackman_window")


def test_hann_is_sine_squared_and_periodic_is_the_first_size_points_of_size_plus_one():
    n = np.arange(8)
    assert np.allclose(window("hann", 8, 1), np.sin(np.pi * n / 8) ** 2, atol=1e-15)
    assert np.array_equal(window("hann", 8, 1), window("hann", 9, 0)[:-1])
    assert window("hann", 0).shape == (0,)


def test_symmetric_windows_are_symmetric_and_peak_at_the_centre():
    for kind in ("hann", "hamming", "blackman"):
        values = window(kind, 9, 0)
        assert np.allclose(values, values[::-1], atol=1e-15) and values.argmax() == 4
        assert values[4] == pytest.approx(1.0)


def test_hamming_uses_the_bodys_25_over_46():
    assert window("hamming", 4, 1)[0] == pytest.approx(25 / 46 - 21 / 46)


def test_float32_bound_is_about_a_micro_at_two_pi():
    bound = float32_error("blackman", 64, 0)
    assert 1e-7 < bound[-1] < 3e-6 and bound[0] < bound[-1]


@pytest.mark.parametrize("module", ["hannwindow", "hammingwindow", "blackmanwindow"])
def test_oracle_reproduces_the_node_tests_within_the_float32_bound(module):
    """The examples' values are evaluated in float32 by the case functions: within the bound."""
    kind = module[:-len("window")]
    cases = node_cases(module)
    assert len(cases) == 2
    for name, node, (size,), (want,) in cases:
        attrs = {a.name: a.i for a in node.attribute}
        periodic = attrs.get("periodic", 1)
        (got,) = evaluate(f"onnx_{kind}_window", [size], {"periodic": periodic})
        assert got.shape == want.shape, name
        assert np.all(np.abs(got - want) <= float32_error(kind, int(size), periodic)), name


def test_integer_outputs_are_judged_only_near_zero():
    (open_,) = evaluate("onnx_hann_window", [np.int64(8)],
                        {"output_datatype": "int32", "open_elements": True})
    assert open_.tolist() == (window("hann", 8) >= 0.5 - 1e-6).tolist()
    assert not open_integers("hann", 8, 1)[0]
    (floats_open,) = evaluate("onnx_hann_window", [np.int64(8)], {"open_elements": True})
    assert not floats_open.any()



@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_onnxruntime_passes(specs, onnxruntime, name, dtype):
    for case, judgement in judged(specs, onnxruntime, name, dtype, count=12, seed=5):
        assert judgement.verdict in ("pass", "impl_defined"), (case.id, judgement.reason)
        if dtype.startswith("float"):
            assert judgement.verdict == "pass", (case.id, judgement.reason)


@pytest.mark.parametrize("name", ["onnx_hann_window", "onnx_blackman_window"])
@pytest.mark.parametrize("dtype", ["float16", "float64", "uint8"])
def test_numpy_passes(specs, name, dtype):
    from conform.harness.backends.numpy_backend import NumpyBackend

    for case, judgement in judged(specs, NumpyBackend(), name, dtype, count=12, seed=5):
        assert judgement.verdict in ("pass", "impl_defined"), (case.id, judgement.reason)


def test_judge_catches_the_classic_hamming_coefficients(specs):
    """numpy.hamming's 0.54 and 0.46 differ from 25/46 and 21/46 by 1.6e-3: far past the bound."""
    spec, caught = specs["onnx_hamming_window"], 0
    for case in generate_cases(spec, "float64", count=16, seed=3):
        size, periodic = int(case.inputs[0]), case.attrs.get("periodic", 1)
        classic = np.hamming(size + 1)[:-1] if periodic else np.hamming(size)
        if size == 0:
            continue
        judgement = judge_outputs(spec, case, [classic])
        assert judgement.verdict == "fail", case.id
        caught += 1
    assert caught


def test_the_size_feeds_no_window_element():
    """The size is a count (the window's length), no term: the failure message shows none."""
    from conform.oracles.feeding import feeding_elements
    assert feeding_elements("onnx_hann_window", [np.asarray(4, np.int64)], {}, [1]) == [None]
