"""complex64 and complex128 drawn for the ONNX data-movement operators whose schemas allow them
(issue 30, "every type each schema allows"): real numpy passes the drawn cases, a wrong part is
caught, and onnxruntime, which registers no complex tensor type, reports them ``unsupported``
(a vendor's runtime may have the kernel) rather than ``error``."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.model_formats import Unsupported
from tests.ops import real_backends

backends = real_backends.backends   # the fixture


@pytest.mark.parametrize("name, dtype", [("onnx_transpose", "complex64"),
                                         ("onnx_gather_elements", "complex128"),
                                         ("onnx_trilu", "complex64"),
                                         ("onnx_non_zero", "complex128")])
def test_numpy_passes_the_drawn_complex_cases(specs, backends, name, dtype):
    assert real_backends.assert_drawn_cases_pass(specs[name], backends["numpy"], dtype,
                                                 count=6) > 0


def test_a_wrong_imaginary_part_fails(specs, backends):
    """The exact model compares both parts: the conjugate of a copy is no copy."""
    from conform.harness.backends.models import run_case
    from conform.harness.judge.judging import judge_outputs

    spec = specs["onnx_transpose"]
    case = next(c for c in generate_cases(spec, "complex64", count=12, seed=3)
                if np.any(np.imag(c.inputs[0]) != 0) and np.all(np.isfinite(c.inputs[0])))
    outputs = run_case(backends["numpy"], spec, case)
    assert judge_outputs(spec, case, outputs).verdict == "pass"
    wrong = [np.conj(out) for out in outputs]
    assert judge_outputs(spec, case, wrong).verdict == "fail"


def test_onnxruntime_reports_complex_unsupported(specs, backends):
    from conform.harness.backends.models import run_case

    spec = specs["onnx_squeeze"]
    case = next(iter(generate_cases(spec, "complex128", count=1, seed=0)))
    with pytest.raises(Unsupported, match="tensor\\(complex128\\) is not currently registered"):
        run_case(backends["onnxruntime"], spec, dataclasses.replace(case))


def test_complex_scatter_draws_none_and_add_only(specs, backends):
    """Complex numbers have no order (max, min) and a complex product is no single rounding."""
    spec = specs["onnx_scatter_nd"]
    cases = list(generate_cases(spec, "complex64", count=12, seed=5))
    assert {c.attrs["reduction"] for c in cases} == {"none", "add"}
    assert real_backends.assert_drawn_cases_pass(spec, backends["numpy"], "complex64",
                                                 count=8, seed=5) > 0


def test_a_complex_constant_is_two_patterns_per_element_real_first(specs, backends):
    from conform.ops.onnx_shape import from_bits, from_onnx_constant

    value = from_bits([0x3F800000, 0x80000000, 0x7FC00000, 0x40000000], "complex64")
    assert value.dtype == np.complex64 and value[0] == 1 - 0j and np.signbit(value[0].imag)
    assert np.isnan(value[1].real) and value[1].imag == 2
    _, attrs = from_onnx_constant([], {"value": value}, 21)
    assert attrs["bits"] == [0x3F800000, 0x80000000, 0x7FC00000, 0x40000000]
    assert real_backends.assert_drawn_cases_pass(specs["onnx_constant"], backends["numpy"],
                                                 "complex128", count=6) > 0
