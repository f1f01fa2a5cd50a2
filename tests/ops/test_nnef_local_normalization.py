"""NNEF's local_mean, local_variance, local_response and local_contrast normalizations
(ops/nnef_local_normalization.py): values worked by hand from the fragments' bodies (the ``nnef``
package's stdlib_source.h; box's window average with zero padding, automatic padding split
either way for even sizes), the derived bounds (the fragments in float32 pass; a float16
evaluation, a count of the covered elements only and a wrong beta fail), and the real backends
(numpy; the nnef executor, which lowers the fragments, local_contrast_normalization's body
included)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.generators import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from conform.ops.nnef_local_normalization import auto_padding
from tests.ops.test_nnef_ops import same

LMN, LVN = "nnef_local_mean_normalization", "nnef_local_variance_normalization"
LRN, LCN = "nnef_local_response_normalization", "nnef_local_contrast_normalization"
NORM = {"bias": 0.0, "epsilon": 0.0}
RESPONSE = {"alpha": 1.0, "beta": 0.5, "bias": 1.0}


def run(op, x, **attrs):
    return evaluate(op, [np.asarray(x, np.float64)], attrs)[0]


def test_automatic_padding_splits_size_minus_one():
    assert auto_padding([1, 2, 3, 4]) == [(0, 0), (0, 1), (1, 1), (1, 2)]
    assert auto_padding([1, 2, 3, 4], reading=1) == [(0, 0), (1, 0), (1, 1), (2, 1)]


def test_local_mean_normalization_hand_worked():
    x = [1.0, 2.0, 3.0, 6.0]
    # size 3: windows (0, 1, 2), (1, 2, 3), (2, 3, 6), (3, 6, 0), each divided by 3
    assert run(LMN, x, size=[3]).tolist() == pytest.approx([0.0, 0.0, 3 - 11 / 3, 3.0], abs=1e-15)
    # size 2: the zero behind (reading 0) or in front (reading 1)
    assert run(LMN, x, size=[2]).tolist() == [-0.5, -0.5, -1.5, 3.0]
    assert run(LMN, x, size=[2], reading=1).tolist() == [0.5, 0.5, 0.5, 1.5]
    # every dimension has its window: size [1, 3] averages along the second only
    two = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 9.0]])
    expected = [0, 0, 4 / 3, 1, -1, 13 / 3]
    assert run(LMN, two, size=[1, 3]).ravel().tolist() == pytest.approx(expected)


def test_local_variance_and_contrast_normalization_hand_worked():
    y = run(LVN, [3.0, 4.0], size=[2], **NORM)      # windows (3, 4), (4, 0)
    assert y.tolist() == pytest.approx([3 / math.sqrt(12.5), 4 / math.sqrt(8)], rel=1e-15)
    assert run(LVN, [3.0, 4.0], size=[1], bias=1.0, epsilon=0.0).tolist() == [0.75, 0.8]
    assert run(LVN, [0.0, 0.0], size=[1], bias=0.0, epsilon=0.5).tolist() == [0.0, 0.0]
    centred = run(LMN, [1.0, 2.0, 3.0, 6.0], size=[3])
    contrast = run(LCN, [1.0, 2.0, 3.0, 6.0], size=[3], **NORM)
    assert same(contrast, run(LVN, centred, size=[3], **NORM))
    assert math.isnan(contrast[0])     # the window (0, 0, 0) of centred values: 0 / max(0, 0)


def test_local_response_normalization_hand_worked():
    assert run(LRN, [2.0], size=[1], **RESPONSE).tolist() == [2 / math.sqrt(5)]
    y = run(LRN, [2.0, 4.0], size=[2], alpha=0.5, beta=0.75, bias=2.0)   # windows (2, 4), (4, 0)
    assert y.tolist() == pytest.approx([2 / (2 + 0.5 * 10) ** 0.75, 4 / (2 + 0.5 * 8) ** 0.75])


def _case(op, x, **attrs):
    x = np.asarray(x, np.float32)
    return Case(id=f"{op}.float32.hand", op=op, dtype="float32", input_dtypes=("float32",),
                out_dtype="float32", inputs=[x], attrs=attrs, plan="hand", seed=0)


X = np.random.default_rng(6).uniform(-10, 10, (2, 3, 9, 7)).astype(np.float32)
SIZE = [1, 3, 3, 3]
ATTRS = {LMN: {}, LVN: NORM, LCN: {"bias": 1.0, "epsilon": 0.0}, LRN: RESPONSE}


@pytest.mark.parametrize("op", [LMN, LVN, LRN, LCN])
def test_the_fragment_in_float32_passes_and_a_float16_evaluation_fails(specs, op):
    from conform.ops import definitions

    numpy = definitions()[op].numpy
    case = _case(op, X, size=SIZE, **ATTRS[op])
    assert judge_outputs(specs[op], case, [numpy(X, size=SIZE, **ATTRS[op])]).verdict == "pass"
    coarse = numpy(X.astype(np.float16), size=SIZE, **ATTRS[op]).astype(np.float32)
    assert judge_outputs(specs[op], case, [coarse]).verdict == "fail"


def test_a_mean_over_the_covered_elements_only_fails(specs):
    """The border is 'constant' (zeros counted): averaging over the input elements a window
    covers (border 'ignore') is wrong at the edges."""
    from conform.ops.nnef_pooling import numpy_box

    case = _case(LMN, X, size=SIZE)
    ignoring = X - numpy_box(X, size=SIZE, border="ignore", padding=auto_padding(SIZE),
                             stride=[], dilation=[], normalize=True)
    assert judge_outputs(specs[LMN], case, [ignoring]).verdict == "fail"


def test_a_wrong_beta_fails(specs):
    from conform.ops.nnef_local_normalization import numpy_lrn

    case = _case(LRN, X, size=SIZE, **RESPONSE)
    wrong = numpy_lrn(X, size=SIZE, **{**RESPONSE, "beta": 0.75})
    assert judge_outputs(specs[LRN], case, [wrong]).verdict == "fail"


def test_even_sizes_are_the_reading_differs_region(specs):
    x = np.float32([1.0, 2.0, 3.0, 6.0])
    case = _case(LMN, x, size=[2])
    either = [np.float32([-0.5, -0.5, -1.5, 3.0]), np.float32([0.5, 0.5, 0.5, 1.5])]
    assert {judge_outputs(specs[LMN], case, [y]).verdict for y in either} == {"impl_defined"}


@pytest.mark.parametrize("op", [LMN, LVN, LRN, LCN])
def test_the_nnef_executor_runs_the_lowered_fragments(specs, op):
    from conform.harness.backends.models import run_case
    from conform.harness.backends.nnef_backend import NnefBackend

    case = _case(op, X, size=SIZE, **ATTRS[op])
    outputs = run_case(NnefBackend(), specs[op], case)
    assert judge_outputs(specs[op], case, outputs).verdict == "pass"
