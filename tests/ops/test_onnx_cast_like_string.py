"""ONNX CastLike to and from strings (ops/onnx_cast_like_string.py): Cast's string rules by
CastLike's function body, target_type's values unused, run through onnxruntime."""
from __future__ import annotations

import numpy as np

from conform.generators._case import Case
from conform.harness.backends.models import run_case
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate
from tests.ops.backend_runs import onnxruntime  # noqa: F401 - the fixture

OP = "onnx_cast_like_string"


def texts(*values) -> np.ndarray:
    out = np.empty(len(values), object)
    out[:] = list(values)
    return out


def test_the_answer_is_cast_s_whatever_target_type_holds():
    numerals = texts("3.14", "1E8", "-inf", "1e-5")
    (cast,) = evaluate("onnx_cast_string", [numerals], {"new_dtype": "float32"})
    for like in (np.float32(7), np.full((4,), np.nan, np.float32)):
        (got,) = evaluate(OP, [numerals, like], {"new_dtype": "float32"})
        assert got.tolist() == cast.tolist()
    (written,) = evaluate(OP, [np.int16([-7, 300]), texts("x")], {"new_dtype": "string"})
    assert written.tolist() == ["-7", "300"]


def test_onnxruntime_reads_numerals_and_a_wrong_value_fails(specs, onnxruntime):
    spec = specs[OP]
    case = Case(id=f"{OP}.string->int32.0", op=OP, dtype="string->int32",
                input_dtypes=("string", "int32"), out_dtype="int32",
                inputs=[texts("100", "-2147483648", "7"), np.int32(0)],
                attrs={"new_dtype": "int32"}, plan="normal", seed=0)
    (out,) = run_case(onnxruntime, spec, case)
    assert judge_outputs(spec, case, [out]).verdict == "pass"
    assert judge_outputs(spec, case, [out + 1]).verdict == "fail"
