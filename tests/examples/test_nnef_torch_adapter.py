"""The nnef-torch example adapter (examples/nnef-torch-adapter), installed as a package: the real
CLI finds its backend by its entry point and judges NNEF cases in float16 and float64 on
nnef-tools' PyTorch interpreter; plus the adapter's own logic on the real interpreter (each
width computed at that width, subnormals kept, integer as int64, variables read from their
tensor files, what the interpreter lacks -> unsupported with its message, what cannot be
handed a float16 or float64 module -> unsupported, every other failure an error).

No importorskip: CI installs the adapter, and a missing install must fail here, not skip.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import conform_nnef_torch
from conform.harness.backends import Unsupported
from conform.harness.backends.models import run_case
from conform.reports import read_results


def test_small_run_judges_float16_and_float64(conform_cli, tmp_path):
    out = tmp_path / "run"
    conform_cli("run", "--backend", "nnef-torch", "--ops", "abs,nnef_avg_roi_pool",
                "--dtypes", "float16,float32,float64", "--max-examples", "1", "--quiet",
                "--out", out, check_status=0)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "nnef-torch"
    assert summary["backend_version"] == "nnef_tools 1.0.11, torch 2.13.0+cpu"
    counts = summary["counts"]
    assert counts["error"] == counts["crash"] == counts["timeout"] == counts["fail"] == 0, counts
    verdicts: dict = {}
    lacking = set()   # why the cases of the op the interpreter lacks are unsupported
    for line in read_results(out / "results.jsonl"):
        verdicts.setdefault((line["op"], line["dtype"]), set()).add(line["verdict"])
        if line["op"] == "nnef_avg_roi_pool" and "does not claim" not in line["message"]:
            lacking.add(line["message"])   # (a batch index drawn int32 is not claimed)
    assert lacking == {"nnef-tools: Unsupported operation: avg_roi_pool"}
    # abs is exact: judged, and passing, in every width the adapter claims for NNEF's scalar
    assert {dtype: verdicts[("abs", dtype)] for dtype in ("float16", "float32", "float64")} \
        == dict.fromkeys(("float16", "float32", "float64"), {"pass"})
    # an operation the interpreter has no torch function for is unsupported, not an error
    assert {v for (op, _), found in verdicts.items() if op == "nnef_avg_roi_pool"
            for v in found} == {"unsupported"}


@pytest.fixture(scope="module")
def backend():
    return conform_nnef_torch.NnefTorchBackend()


def test_float64_is_computed_in_float64(specs, backend, one_op_case):
    """Not float32 widened: 1 + 2**-40 and a float64 subnormal survive."""
    (out,) = run_case(backend, specs["nnef_add"], one_op_case(
        "nnef_add", "float64", np.float64([1.0, 1e-310]), np.float64([2.0**-40, 1e-310])))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, np.float64([1.0 + 2.0**-40, 2e-310]))


def test_float16_runs_in_float16_and_subnormals_are_kept(specs, backend, one_op_case):
    (out,) = run_case(backend, specs["nnef_add"], one_op_case(
        "nnef_add", "float16", np.float16([2048, 6e-8]), np.float16([1, 6e-8])))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, np.float16([2048, 1.2e-7]))   # 2049 rounds to even
    (out,) = run_case(backend, specs["nnef_mul"], one_op_case(
        "nnef_mul", "float32", np.float32([1e-20, 1e-38]), np.float32([1e-20, 0.5])))
    np.testing.assert_array_equal(out, np.float32([1e-40, 5e-39]))


@pytest.mark.parametrize("dtype, x", [("float32", np.float32([[1.5, -0.0], [1e-40, 3e38]])),
                                      ("int64", np.int64([2**62, -1])),
                                      ("bool", np.array([[True], [False]]))])
def test_variables_are_read_from_their_tensor_files(specs, backend, dtype, x, one_op_case):
    """A variable's data is the tensor file its label names; other data is another module (the
    module holds its variables), so the cache must not hand back the first one."""
    (out,) = run_case(backend, specs["nnef_variable"], one_op_case("nnef_variable", dtype, x))
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, x)
    (out,) = run_case(backend, specs["nnef_variable"],
                      one_op_case("nnef_variable", dtype, x[::-1]))
    np.testing.assert_array_equal(out, x[::-1])


def test_one_module_per_document(specs, one_op_case):
    backend = conform_nnef_torch.NnefTorchBackend()
    for k in range(3):
        run_case(backend, specs["nnef_add"],
                 one_op_case("nnef_add", "float32", np.float32([k]), np.float32([1])))
    run_case(backend, specs["nnef_add"],
             one_op_case("nnef_add", "float64", np.float64([0]), np.float64([1])))
    assert backend.stats()["compilations"] == 2   # float32 once, float64 once


def test_what_the_interpreter_lacks_is_unsupported(specs, backend, one_op_case):
    x = np.float32(np.arange(16).reshape(1, 1, 4, 4))
    with pytest.raises(Unsupported, match=r"^nnef-tools: nnef\.box .*only implemented for "
                                          r"dilation = 1"):
        run_case(backend, specs["nnef_box"], one_op_case(
            "nnef_box", "float32", x, attrs={"size": [1, 1, 2, 2], "border": "constant",
                                             "padding": [(0, 0)] * 4, "stride": [1] * 4,
                                             "normalize": False,
                                             "dilation": [1, 1, 2, 2]}))
    # the NNEF type system refuses integer operands of 'and' (as for the nnef backend)
    with pytest.raises(Unsupported, match="^NNEF type system: argument of type 'tensor<integer>'"):
        run_case(backend, specs["bitwise_and"],
                 one_op_case("bitwise_and", "int64", np.int64([5]), np.int64([3])))


def test_what_a_float16_or_float64_module_cannot_hold_is_unsupported(specs, backend, one_op_case):
    # one module, one width: a conversion between two is not one module
    with pytest.raises(Unsupported, match="never float16 and float32 in one module"):
        run_case(backend, specs["convert_element_type"], one_op_case(
            "convert_element_type", "float16->float32", np.float16([1]), out_dtype="float32",
            attrs={"new_dtype": "float32"}))
    # the interpreter's reader makes a generic operation's <scalar> float32
    with pytest.raises(Unsupported, match="<scalar> of a generic operation as float32"):
        run_case(backend, specs["nnef_variable"],
                 one_op_case("nnef_variable", "float64", np.float64([1 + 2.0**-40])))
    # the nnef parser holds scalar literals as float32: 0.1 cannot reach a float64 module ...
    with pytest.raises(Unsupported, match=r"scalar literal 0\.1 as float32"):
        run_case(backend, specs["leaky_relu"], one_op_case(
            "leaky_relu", "float64", np.float64([-1.0]), attrs={"alpha": 0.1}))
    # ... and 0.5 can
    (out,) = run_case(backend, specs["leaky_relu"], one_op_case(
        "leaky_relu", "float64", np.float64([-1.0 - 2.0**-40]), attrs={"alpha": 0.5}))
    np.testing.assert_array_equal(out, np.float64([-0.5 - 2.0**-41]))


def test_other_failures_are_errors_with_the_interpreters_message(specs, backend, one_op_case):
    """A deviation of nnef_tools 1.0.11 (docs/failures/nnef-torch.yaml): transpose of a rank-0
    tensor calls permute() with no axes. It stays an error, not unsupported."""
    with pytest.raises(RuntimeError, match=r"^TypeError: permute\(\) missing"):
        run_case(backend, specs["transpose"], one_op_case(
            "transpose", "float32", np.float32(1.5), attrs={"permutation": []}))
