"""XLA BatchNormInference, BatchNormTraining and BatchNormGrad on float64 (issue 36 item 7): the
references beyond float64 (ops/_batch_norm_exact.py) against mpmath, the bounds holding for the
text's formulas evaluated in float64 (the numpy backend) and failing a result one bound away,
and the real jax backend judged on drawn cases."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

from conform.generators import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate_refined
from tests.ops.xla_judging import jax_verdicts

ATTRS = {"epsilon": 0.001, "feature_index": 1}
EPS = mpmath.mpf(float(np.float32(0.001)))


def _inputs(op, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-10, 10, (4, 2, 3)) + 1e6    # a large common part: the statistics cancel
    per = [rng.uniform(-10, 10, 2) for _ in range(2)]
    if op == "batch_norm_training":
        return [x] + per
    mean, variance = x.mean(axis=(0, 2)) + rng.uniform(-1, 1, 2), rng.uniform(0, 10, 2)
    if op == "batch_norm_inference":
        return [x] + per + [mean, variance]
    return [x, per[0], mean, variance, rng.uniform(-10, 10, x.shape)]


def _mp_outputs(op, inputs):
    """The text's formulas in mpmath at 300 bits, per feature l, element (0, l, 0)."""
    mpmath.mp.prec = 300
    f = lambda v: mpmath.mpf(float(v))   # noqa: E731
    outs = []
    for l in range(2):
        row = [f(v) for v in inputs[0][:, l, :].ravel()]
        if op == "batch_norm_grad":
            _, scale, mean, var, dy = inputs
            dys, mu, total = [f(v) for v in dy[:, l, :].ravel()], f(mean[l]), f(var[l]) + EPS
            c = sum(g * (x - mu) for g, x in zip(dys, row)) / total / len(row)
            grad = f(scale[l]) / mpmath.sqrt(total) * (dys[0] - sum(dys) / len(row) - c * (row[0] - mu))
            outs.append((grad, sum(g * (x - mu) for g, x in zip(dys, row)) / mpmath.sqrt(total),
                         sum(dys)))
            continue
        if op == "batch_norm_training":
            mu = sum(row) / len(row)
            var = sum((x - mu) ** 2 for x in row) / len(row)
            stats = (mu, var)
        else:
            mu, var, stats = f(inputs[3][l]), f(inputs[4][l]), ()
        y = f(inputs[1][l]) * (row[0] - mu) / mpmath.sqrt(var + EPS) + f(inputs[2][l])
        outs.append((y,) + stats)
    return outs


@pytest.mark.parametrize("op", ["batch_norm_inference", "batch_norm_training", "batch_norm_grad"])
def test_float64_references_are_within_2_to_the_minus_100(op):
    inputs = _inputs(op)
    outputs, residuals = evaluate_refined(op, inputs, ATTRS)
    for l, wanted in enumerate(_mp_outputs(op, inputs)):
        for k, want in enumerate(wanted):
            at = (0, l, 0) if outputs[k].ndim == 3 else (l,)
            got = mpmath.mpf(float(outputs[k][at])) + mpmath.mpf(float(residuals[k][at]))
            assert abs(got - want) <= abs(want) * 2.0 ** -100, (op, k, l)
    # the float64 evaluation alone is off by more than the residual carries: it matters here
    assert any(np.abs(r).max() > 0 for r in residuals)


@pytest.mark.parametrize("op", ["batch_norm_inference", "batch_norm_training", "batch_norm_grad"])
def test_float64_formula_passes_and_a_result_one_bound_away_fails(specs, op):
    from conform.ops import definition
    inputs = _inputs(op, seed=5)
    spec = specs[op]
    case = Case(id=f"{op}.float64.cancel", op=op, dtype="float64", input_dtypes=("float64",) * len(inputs),
                out_dtype="float64", inputs=inputs, attrs=ATTRS, plan="normal", seed=0)
    formula = definition(op).numpy(*inputs, **ATTRS)
    formula = list(formula) if isinstance(formula, tuple) else [formula]
    judged = judge_outputs(spec, case, formula)
    assert judged.verdict == "pass", judged
    for k, output in enumerate(judged.outputs or [(spec.outputs[0], judged)]):
        worst = output[1].worst
        index = tuple(worst["index"])
        wrong = [o.copy() for o in formula]
        ulp = np.spacing(abs(float(wrong[k][index])))
        wrong[k][index] += (output[1].bound + 2) * ulp * 2   # past the bound, whatever its sign
        assert judge_outputs(spec, case, wrong).verdict == "fail", (op, k)


@pytest.mark.parametrize("op", ["batch_norm_inference", "batch_norm_training", "batch_norm_grad"])
def test_jax_float64_passes(specs, jax_backend, op):
    verdicts = jax_verdicts(specs[op], jax_backend, "float64", count=6)
    assert "fail" not in verdicts and "pass" in verdicts
