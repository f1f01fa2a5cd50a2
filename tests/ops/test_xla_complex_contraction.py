"""XLA Dot, DotGeneral, Conv and ConvWithGeneralPadding on complex64 and complex128 (issue 36 item
7; ops/complex_contraction.py): the reference against exact rational sums, the bound holding for
a complex64 evaluation and failing a result past it, the non-finite regions, and the real jax
backend judged on drawn cases, where a conjugated operand fails."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from conform.generators import Case
from conform.generators._suite import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from conform.oracles.expectations import expect

CONV = {"window_strides": [1, 1], "padding": [[1, 0], [0, 1]], "rhs_dilation": [1, 1]}


def _complex(rng, shape, scale=1.0):
    return (rng.uniform(-4, 4, shape) + 1j * rng.uniform(-4, 4, shape)) * scale


def _exact_dot(a, b):
    """sum_k a_k b_k with each part a Fraction (every float64 is one)."""
    re = sum(Fraction(x.real) * Fraction(y.real) - Fraction(x.imag) * Fraction(y.imag)
             for x, y in zip(a, b))
    im = sum(Fraction(x.real) * Fraction(y.imag) + Fraction(x.imag) * Fraction(y.real)
             for x, y in zip(a, b))
    return re, im


def _within_half_ulp(got, exact):
    got = float(got)
    return abs(Fraction(got) - exact) <= Fraction(float(np.spacing(abs(got)))) / 2 \
        + Fraction(2.0 ** -1074)


def test_dot_reference_parts_are_the_rounded_exact_sums():
    rng = np.random.default_rng(0)
    # a cancelling pair of large terms: float64 complex arithmetic loses the small ones
    a = np.concatenate([_complex(rng, 6), [1e17 + 1e17j, -1e17 - 1e17j]])
    b = np.concatenate([_complex(rng, 6), [1 + 1j, 1 + 1j]])
    (out,) = evaluate("dot", [a, b], {})
    re, im = _exact_dot(a, b)
    assert _within_half_ulp(out.real, re) and _within_half_ulp(out.imag, im)
    assert not (_within_half_ulp(np.dot(a, b).real, re) and _within_half_ulp(np.dot(a, b).imag, im))


def test_conv_reference_is_the_exact_sum_over_the_window_taps_inside():
    rng = np.random.default_rng(1)
    lhs, rhs = _complex(rng, (1, 2, 3, 3)), _complex(rng, (2, 2, 2, 2))
    (out,) = evaluate("conv", [lhs, rhs], CONV)
    padded = np.pad(lhs, [(0, 0), (0, 0), (1, 0), (0, 1)])
    for o, y, x in [(0, 0, 0), (1, 2, 1), (1, 1, 2)]:
        re, im = _exact_dot(padded[0, :, y:y + 2, x:x + 2].ravel(), rhs[o].ravel())
        got = out[0, o, y, x]
        assert _within_half_ulp(got.real, re) and _within_half_ulp(got.imag, im)


def _case(op, lhs, rhs, attrs, dtype):
    return Case(id=f"{op}.{dtype}.t", op=op, dtype=dtype, input_dtypes=(dtype, dtype),
                out_dtype=dtype, inputs=[lhs, rhs], attrs=attrs, plan="normal", seed=0)


@pytest.mark.parametrize("op, attrs", [("dot_general", {}), ("conv", CONV)])
def test_a_complex64_evaluation_passes_and_a_result_past_the_bound_fails(specs, op, attrs):
    rng = np.random.default_rng(2)
    shapes = ((3, 24), (24, 2)) if op == "dot_general" else ((1, 3, 4, 4), (2, 3, 2, 2))
    lhs, rhs = (_complex(rng, s).astype(np.complex64) for s in shapes)
    case = _case(op, lhs, rhs, attrs, "complex64")
    (expected,) = expect(specs[op], case)
    # the textbook products and a sequential complex64 accumulation, one of the orders covered
    if op == "dot_general":
        ours = np.zeros((3, 2), np.complex64)
        for k in range(24):
            ours = ours + lhs[:, k:k + 1] * rhs[k:k + 1, :]
    else:
        ours = evaluate(op, [lhs, rhs], attrs)[0].astype(np.complex64)
    assert judge_outputs(specs[op], case, [ours]).verdict == "pass"
    bound = expected.accumulation[0].flat[0]
    wrong = ours.copy()
    wrong.flat[0] += np.complex64(2 * bound + np.spacing(np.float32(abs(expected.expected.flat[0]))))
    judged = judge_outputs(specs[op], case, [wrong])
    assert judged.verdict == "fail" and judged.worst["index"] == [0] * ours.ndim


def test_a_nonfinite_part_or_a_weight_over_padding_is_open(specs):
    lhs = np.ones((1, 1, 2, 2), np.complex64)
    rhs = np.ones((2, 1, 2, 2), np.complex64)
    rhs[1, 0, 0, 0] = complex(np.inf, 0)
    lhs[0, 0, 1, 1] = complex(1, np.nan)
    case = _case("conv", lhs, rhs, {**CONV, "padding": [[1, 0], [1, 0]]}, "complex64")
    (expected,) = expect(specs["conv"], case)
    # out[0, 0] reads the NaN operand at (1, 1) only through the window at (1, 1); out[0, 1]
    # puts its infinite weight over padding at (0, *) and (*, 0), and over lhs at (1, 1)
    assert expected.impl_mask[0, 0].tolist() == [[False, False], [False, True]]
    assert expected.impl_mask[0, 1].all()


@pytest.mark.parametrize("op, dtype", [("dot", "complex64"), ("conv_shorthand", "complex128")])
def test_jax_passes_and_a_conjugated_operand_fails(specs, jax_backend, op, dtype):
    from conform.harness.backends.models import run_case
    spec, judged = specs[op], 0
    for case in generate_cases(spec, dtype, count=4, seed=0):
        if case.plan != "normal":
            continue
        outputs = run_case(jax_backend, spec, case)
        assert judge_outputs(spec, case, outputs).verdict == "pass", case.id
        # what a backend conjugating lhs returns
        conjugated = evaluate(op, [np.conj(case.inputs[0]), case.inputs[1]], case.attrs)[0]
        wrong = [conjugated.astype(outputs[0].dtype)]
        assert judge_outputs(spec, case, wrong).verdict == "fail", case.id
        judged += 1
    assert judged
