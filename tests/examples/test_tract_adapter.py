"""The tract example adapter (examples/tract-adapter), installed as a package: the real CLI finds
both of its backends by their entry points and judges NNEF cases in float16 on tract; plus the
adapter's own logic on real tract (NNEF's scalar as float16 through tract's f32-to-f16 transform,
integer as int64, subnormals kept, what tract lacks -> unsupported with tract's message, arrays
read at their own dtype, ONNX models run by tract's ONNX loader).

No importorskip: CI installs the adapter, and a missing install must fail here, not skip.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import conform_tract
from conform.harness.backends import Unsupported
from conform.harness.backends.models import run_case
from conform.reports import read_results
from conform_tract.values import from_numpy, to_numpy


def test_small_run_judges_float16_on_tract(conform_cli, tmp_path):
    out = tmp_path / "run"
    conform_cli("run", "--backend", "tract", "--ops", "abs", "--dtypes", "float16,int64,float64",
                "--max-examples", "1", "--quiet", "--out", out, check_status=0)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "tract" and summary["backend_version"] == "tract 0.21.7"
    counts = summary["counts"]
    assert counts["error"] == counts["crash"] == counts["timeout"] == counts["fail"] == 0, counts
    verdicts: dict = {}
    for line in read_results(out / "results.jsonl"):
        verdicts.setdefault(line["dtype"], set()).add(line["verdict"])
    # abs is exact: judged in the precision tract takes for NNEF's scalar besides float32;
    # float64, which tract has not, is unsupported; int64 is not drawn at all, since NNEF's abs
    # takes tensor<scalar> only (the standard rules it out, not tract)
    assert verdicts["float16"] == {"pass"}
    assert "int64" not in verdicts
    assert verdicts["float64"] == {"unsupported"}


@pytest.fixture(scope="module")
def nnef():
    return conform_tract.TractNnefBackend()


def test_float16_runs_in_float16(specs, nnef, one_op_case):
    """The model tract runs is float16 (its result tensor's datum type, which the adapter reads
    as it is), and float16 subnormals are kept."""
    (out,) = run_case(nnef, specs["nnef_add"], one_op_case(
        "nnef_add", "float16", np.float16([2048, 6e-8]), np.float16([1, 6e-8])))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, np.float16([2048, 1.2e-7]))   # subnormals kept


def test_subnormals_are_kept_in_float32(specs, nnef, one_op_case):
    (out,) = run_case(nnef, specs["nnef_mul"], one_op_case(
        "nnef_mul", "float32", np.float32([1e-20, 1e-38]), np.float32([1e-20, 0.5])))
    np.testing.assert_array_equal(out, np.float32([1e-40, 5e-39]))


def test_integer_is_int64(specs, nnef, one_op_case):
    (out,) = run_case(nnef, specs["nnef_add"], one_op_case(
        "nnef_add", "int64", np.int64([2**40, -3]), np.int64([1, 2**62])))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, np.int64([2**40 + 1, 2**62 - 3]))


def test_what_tract_lacks_is_unsupported(specs, nnef, one_op_case):
    x = np.float32([1.5, -2.0])
    with pytest.raises(Unsupported, match=r'^tract: No definition for operator Identifier\("rcp"\)'):
        run_case(nnef, specs["reciprocal"], one_op_case("reciprocal", "float32", x))
    with pytest.raises(Unsupported, match="^tract: Not does not support I64"):
        run_case(nnef, specs["bitwise_not"], one_op_case("bitwise_not", "int64", np.int64([5])))
    # float16 and float32 in one model: tract's f32-to-f16 transform would make both float16
    with pytest.raises(Unsupported, match="never both in one model"):
        run_case(nnef, specs["convert_element_type"],
                 one_op_case("convert_element_type", "float16->float32", np.float16([1]),
                             out_dtype="float32", attrs={"new_dtype": "float32"}))


@pytest.mark.parametrize("dtype, x", [("float16", np.float16([[1.5, -0.0], [6e-8, 65504]])),
                                      ("int64", np.int64([2**62, -1])),
                                      ("bool", np.array([[True], [False]]))])
def test_variables_are_read_from_their_tensor_files(specs, nnef, dtype, x, one_op_case):
    """A variable's data is written as the NNEF tensor file its label names, which tract reads
    while loading; other data is another model (tract's compiled model holds the weights)."""
    (out,) = run_case(nnef, specs["nnef_variable"], one_op_case("nnef_variable", dtype, x))
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, x)
    (out,) = run_case(nnef, specs["nnef_variable"],
                      one_op_case("nnef_variable", dtype, x[::-1]))
    np.testing.assert_array_equal(out, x[::-1])


def test_tract_aborts_on_the_roi_align_fragments(tmp_path):
    """A deviation of tract 0.21.7: loading a document that invokes avg_roi_align or
    max_roi_align (compound fragments of the standard library, whose bodies build a list by
    comprehension) panics in tract's NNEF deserializer ('panic in a function that cannot
    unwind'): the process aborts (SIGABRT), where an operator tract lacks is otherwise an error
    it returns ('No definition for operator', as for avg_roi_pool). conform's workers make it a
    crash. Repro: the document below, in a folder, read by tract.nnef().model_for_path."""
    import signal
    import subprocess
    import sys

    (tmp_path / "graph.nnef").write_text(
        "version 1.0;\n\ngraph g( x, r, b ) -> ( y )\n{\n"
        "    x = external<scalar>(shape = [1, 1, 3, 3]);\n"
        "    r = external<scalar>(shape = [1, 4]);\n"
        "    b = external<integer>(shape = [1]);\n"
        "    y = avg_roi_align(x, r, b, output_size = [2, 2], sampling_rate = [1, 1]);\n}\n")
    load = f"import tract; tract.nnef().model_for_path({str(tmp_path)!r})"
    proc = subprocess.run([sys.executable, "-c", load], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -signal.SIGABRT, proc.stderr[-2000:]
    assert "panic in a function that cannot unwind" in proc.stderr


def test_arrays_cross_at_their_own_dtype():
    """tract's Value.to_numpy reads every result as float32 and from_numpy makes a scalar 1-d;
    the adapter's helpers keep dtype and rank."""
    for x in (np.float16([1.5, -0.0, 6e-8]), np.float64(0.1), np.int64([[2**62], [-1]]),
              np.array([True, False]), np.zeros((0, 3), np.float32)):
        back = to_numpy(from_numpy(np.asarray(x)))
        assert back.dtype == np.asarray(x).dtype and back.shape == np.shape(x)
        np.testing.assert_array_equal(back, x)


def test_onnx_models_run_on_tract(specs, one_op_case):
    onnx = conform_tract.TractOnnxBackend()
    (out,) = run_case(onnx, specs["onnx_add"], one_op_case(
        "onnx_add", "float64", np.float64([1.0, 0.1]), np.float64([1e-12, 0.2])))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, np.float64([1.0 + 1e-12, 0.1 + 0.2]))
    with pytest.raises(Unsupported, match="^tract: Abs does not support F64"):
        run_case(onnx, specs["abs"], one_op_case("abs", "float64", np.float64([-1.0])))
