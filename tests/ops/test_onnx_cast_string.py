"""ONNX Cast to and from strings (ops/onnx_cast_string.py): numerals and reserved literals read
as the text says, plain numerals written, the judge's canonical reading, and onnxruntime's
deviations pinned with the case that shows each."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from conform.generators._case import Case
from conform.harness.backends.models import run_case
from conform.harness.judge.judging import judge_outputs
from conform.ops.onnx_cast_string import (numeral_value, odd_rounded, reads_back,
                                          representation)
from conform.oracles import evaluate
from tests.ops.backend_runs import assert_all_pass, numpy_backend
from tests.ops.backend_runs import onnxruntime  # noqa: F401 - the fixture

OP = "onnx_cast_string"
#: a 20-digit numeral 3.75e-19 above the midpoint of two float32 neighbours: correctly
#: rounded (IEEE 754 §5.12.2) it is the upper one; read into float64 first, the midpoint, whose
#: rounding to even is the lower one
BESIDE_MIDPOINT = "1.3740999698638916016e+1"
UPPER, LOWER = np.float32(13.741000175476074), np.float32(13.740999221801758)


def texts(*values) -> np.ndarray:
    out = np.empty(len(values), object)
    out[:] = list(values)
    return out


def case(source: str, target: str, values) -> Case:
    return Case(id=f"{OP}.{source}->{target}.pinned", op=OP, dtype=f"{source}->{target}",
                input_dtypes=(source,), out_dtype=target, inputs=[values],
                attrs={"new_dtype": target}, plan="normal", seed=0)


def test_the_text_s_numerals_and_reserved_literals():
    assert [numeral_value(t) for t in ("3.14", "1000", "1e-5", "1E8")] == [
        Fraction(314, 100), 1000, Fraction(1, 100000), 10**8]
    assert [numeral_value(t) for t in ("+INF", "inf", "-Inf")] == [np.inf, np.inf, -np.inf]
    assert np.isnan(numeral_value("nAn"))
    with pytest.raises(ValueError, match="no numeral"):
        numeral_value("Hello World!")


def test_a_numeral_beside_a_midpoint_is_rounded_once():
    assert np.float32(odd_rounded(Fraction(BESIDE_MIDPOINT))) == UPPER
    (out,) = evaluate(OP, [texts(BESIDE_MIDPOINT, "-INF")], {"new_dtype": "float32"})
    assert np.float32(out[0]) == UPPER and out[1] == -np.inf


def test_plain_numerals_that_read_back_are_representations():
    value = float(np.float32(314.15926))
    assert representation(value, "float32") == "314.15927"
    assert reads_back("314.15926", value, "float32")   # the text's own example
    assert not reads_back("3.1415927e2", value, "float32")   # scientific, not plain
    assert not reads_back("314.1593", value, "float32")   # another float32
    assert reads_back("0", -0.0, "float32") and representation(-0.0, "float64") == "-0"
    assert reads_back("nan", np.nan, "float16") and reads_back("+Inf", np.inf, "float64")
    (out,) = evaluate(OP, [np.array([-2**63, 7])], {"new_dtype": "string"})
    assert out.tolist() == [str(-2**63), "7"]


@pytest.mark.parametrize("label", ["string->int64", "int32->string", "string->float64"])
def test_numpy_passes_integers_and_float64_numerals(specs, label):
    assert_all_pass(specs, numpy_backend(), OP, label, count=8)


@pytest.mark.parametrize("label", ["string->int8", "uint64->string"])
def test_onnxruntime_passes_integer_numerals(specs, onnxruntime, label):  # noqa: F811
    assert_all_pass(specs, onnxruntime, OP, label, count=8)


def _verdict(specs, backend, pinned):
    return judge_outputs(specs[OP], pinned, run_case(backend, specs[OP], pinned))


def test_onnxruntime_writes_exponents_and_8_digits(specs, onnxruntime):  # noqa: F811
    """Deviations: onnxruntime writes a float as with printf's %.8g: 1e-5 as '9.9999997e-06'
    (scientific, where the text says plain) and a float64 with 8 significant digits, which
    reads back as another float64."""
    small = _verdict(specs, onnxruntime, case("float32", "string", np.array([1e-5], np.float32)))
    assert small.verdict == "fail" and small.worst["actual"] == "9.9999997e-06"
    digits = _verdict(specs, onnxruntime, case("float64", "string", np.array([116.637493598])))
    assert digits.verdict == "fail" and digits.worst["actual"] == "116.63749"


def test_onnxruntime_reads_numerals_through_float64(specs, onnxruntime):  # noqa: F811
    """Deviations: a float32 numeral is read into float64 first (double rounding: the value
    beside a midpoint comes out one ULP low), and a float64 subnormal numeral is refused
    ('stod': its ERANGE) though the text defines it."""
    judged = _verdict(specs, onnxruntime, case("string", "float32", texts(BESIDE_MIDPOINT)))
    assert judged.verdict == "fail" and judged.worst["actual"] == float(LOWER)
    with pytest.raises(Exception, match="stod"):
        run_case(onnxruntime, specs[OP], case("string", "float64", texts("5e-324")))
