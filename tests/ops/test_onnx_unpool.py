"""ONNX MaxUnpool (ops/onnx_unpool.py): the onnx package's node test cases, the output size with
and without output_shape, pooling the result gives X back, onnxruntime and numpy on drawn cases,
and the judge catching wrong pads from the real onnxruntime."""
from __future__ import annotations

import numpy as np
import pytest
from conform.generators import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles import evaluate

from tests.ops import real_backends
from tests.ops.onnx_node_cases import node_attributes, node_cases
from tests.ops.ort_graphs import run_mutated

MU = "onnx_max_unpool"
backends = real_backends.backends   # the fixture


def _attrs(node, count):
    attrs = {"strides": None, "pads": None, **node_attributes(node)}
    return attrs if count == 3 else {**attrs, "absent_inputs": ["output_shape"]}


def test_the_onnx_node_test_cases_are_reproduced(specs):
    """Without output_shape the example is the oracle's; with it (indices from a 4 x 4 tensor,
    output 5 x 5) the example takes reading 1, in the region reading_differs (triaged)."""
    cases = node_cases("maxunpool")
    assert len(cases) == 2
    for name, node, inputs, (want,) in cases:
        attrs = _attrs(node, len(inputs))
        (got,) = evaluate(MU, inputs, attrs)
        if len(inputs) == 2:
            assert np.array_equal(got.astype(want.dtype), want), name
            continue
        assert not np.array_equal(got.astype(want.dtype), want)
        (other,) = evaluate(MU, inputs, {**attrs, "reading": 1})
        assert np.array_equal(other.astype(want.dtype), want), name
        case = Case(id=name, op=MU, dtype="float32", input_dtypes=("float32", "int64", "int64"),
                    out_dtype="float32", inputs=list(inputs), attrs=attrs, plan="normal", seed=0)
        judged = judge_outputs(specs[MU], case, [want])   # judged where the readings agree
        assert judged.verdict == "pass" and judged.impl_defined > 0, name


def test_the_size_inverts_max_pool_and_pooling_gives_x_back():
    """1-D, kernel 3, stride 2, pads (1, 0): (2 - 1) * 2 + 3 - 1 - 0 = 4 outputs; X placed at
    I, zeros elsewhere; MaxPool of the result with the same attributes gives X ('Pooling the
    result of an unpooling operation should give back the original input')."""
    attrs = {"kernel_shape": [3], "strides": [2], "pads": [1, 0], "absent_inputs": ["output_shape"]}
    x, i = np.array([[[5.0, 7.0]]]), np.array([[[1, 3]]])
    (out,) = evaluate(MU, [x, i], attrs)
    assert out.tolist() == [[[0.0, 5.0, 0.0, 7.0]]]
    pooled, _ = evaluate("onnx_max_pool", [out], {"kernel_shape": [3], "strides": [2],
                                                  "pads": [1, 0], "auto_pad": "NOTSET",
                                                  "ceil_mode": 0, "storage_order": 0})
    assert pooled.tolist() == x.tolist()
    given = {**attrs, "absent_inputs": ()}
    (wider,) = evaluate(MU, [x, i, np.array([1, 1, 5])], given)
    assert wider.tolist() == [[[0.0, 5.0, 0.0, 7.0, 0.0]]]


def test_drawn_cases_pass_on_onnxruntime_and_numpy(specs, backends):
    """(float64 has no onnxruntime kernel: unsupported.)"""
    real_backends.assert_drawn_cases_pass_everywhere(specs[MU], backends, "float32")


def test_wrong_pads_fail_through_onnxruntime(specs):
    spec = specs[MU]
    x, i = np.float32([[[5, -0.0, 7]]]), np.array([[[0, 3, 4]]])
    case = Case(id=f"{MU}.float32.0", op=MU, dtype="float32", input_dtypes=("float32", "int64"),
                out_dtype="float32", inputs=[x, i], plan="normal", seed=0,
                attrs={"kernel_shape": [2], "strides": [2], "pads": [0, 0],
                       "absent_inputs": ["output_shape"]})
    assert judge_outputs(spec, case, run_mutated(spec, case)).verdict == "pass"
    assert judge_outputs(spec, case, run_mutated(spec, case, pads=[1, 0])).verdict == "fail"


def test_onnxruntime_takes_reading_0_on_the_node_test_example(specs):
    """Where the text is ambiguous (output_shape 5 x 5, indices from a 4 x 4 tensor),
    onnxruntime puts X at the flat positions of the output: the oracle's reading."""
    ((name, node, inputs, _),) = [c for c in node_cases("maxunpool") if len(c[2]) == 3]
    attrs = _attrs(node, 3)
    case = Case(id=name, op=MU, dtype="float32", input_dtypes=("float32", "int64", "int64"),
                out_dtype="float32", inputs=list(inputs), attrs=attrs, plan="normal", seed=0)
    (got,) = run_mutated(specs[MU], case)
    assert np.array_equal(got, evaluate(MU, inputs, attrs)[0])
