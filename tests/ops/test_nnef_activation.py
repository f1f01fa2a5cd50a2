"""NNEF's gelu, silu, selu, softabs and prelu fragments (ops/nnef_activation.py): values worked by
hand from the fragments' bodies (the ``nnef`` package's stdlib_source.h), float64 references
against mpmath, the derived bounds (a float32 evaluation of the fragment passes; x * Phi(x) for
gelu, a float16 evaluation and a cancelling selu fail), and the real backends (numpy, nnef)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.generators import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate, evaluate_refined
from tests.ops.test_nnef_ops import same

try:
    import mpmath
except ImportError:
    mpmath = None

INF, NAN = math.inf, math.nan
ALPHA, LAMBDA = 1.67326319, 1.05070102
ATTRS = {"nnef_selu": {"alpha": ALPHA, "lambda": LAMBDA}, "nnef_softabs": {"epsilon": 0.25}}


def run(op, *inputs):
    return evaluate(op, [np.asarray(x, np.float64) for x in inputs], ATTRS.get(op, {}))[0]


def _sigmoid(t):
    return 1 / (1 + math.exp(-t))


def test_hand_worked_values():
    x = np.array([1.0, -2.0, 0.0, -0.0, INF, -INF, NAN])
    silu, gelu = run("nnef_silu", x), run("nnef_gelu", x)
    assert same(silu[2:], [0.0, -0.0, INF, NAN, NAN]) and same(gelu[2:], silu[2:])
    assert silu[:2] == pytest.approx([_sigmoid(1), -2 * _sigmoid(-2)], rel=1e-15)
    assert gelu[:2] == pytest.approx([_sigmoid(1.702), -2 * _sigmoid(-3.404)], rel=1e-15)
    selu = run("nnef_selu", np.array([2.0, -1.0, -0.0, -INF, NAN]))
    assert same(selu[[2, 4]], [-0.0, NAN]) and selu[0] == 2 * LAMBDA
    assert selu[1] == pytest.approx(LAMBDA * ALPHA * math.expm1(-1), rel=1e-15)
    assert selu[3] == pytest.approx(-LAMBDA * ALPHA, rel=1e-15)
    assert same(run("nnef_softabs", np.array([0.0, -1.5, INF, -INF, NAN])),
                [0.5, math.sqrt(2.5), INF, INF, NAN])
    # a ~1e300 square overflows float64; the value does not
    assert run("nnef_softabs", np.array([-1e300]))[0] == 1e300


def test_a_prelu_aligning_trailing_dimensions_fails_and_names_the_alpha_it_met(specs):
    x = np.float32([[-2.0, -4.0], [-8.0, -16.0]])
    alpha = np.float32([0.5, 0.25])     # [2] is [2, 1] in NNEF: one alpha per row
    case = Case(id="nnef_prelu.float32.hand", op="nnef_prelu", dtype="float32",
                input_dtypes=("float32",) * 2, out_dtype="float32", inputs=[x, alpha],
                attrs={}, plan="hand", seed=0)
    assert judge_outputs(specs["nnef_prelu"], case, [x * alpha[:, None]]).verdict == "pass"
    judged = judge_outputs(specs["nnef_prelu"], case, [x * alpha])   # NumPy's alignment
    row = judged.worst["index"][0]
    assert judged.verdict == "fail" and judged.worst["inputs"][1] == [float(alpha[row])]


def test_prelu_broadcasts_with_leading_dimensions_aligned():
    x = np.array([[-2.0, 3.0, -0.0], [-1.0, NAN, -INF]])
    alpha = np.array([0.5, -3.0])            # shape [2] stands for [2, 1]
    assert same(run("nnef_prelu", x, alpha), [[-1.0, 3.0, -0.0], [3.0, NAN, INF]])
    assert run("nnef_prelu", np.array([-4.0]), np.array([[0.25, 2.0]])).tolist() == [[-1.0, -8.0]]


@pytest.mark.skipif(mpmath is None, reason="mpmath is not installed")
@pytest.mark.parametrize("op, exact", [
    ("nnef_silu", lambda x: x / (1 + mpmath.exp(-x))),   # (mpmath: looked up when called)
    ("nnef_gelu", lambda x: x / (1 + mpmath.exp(-mpmath.mpf(1702) / 1000 * x))),
    ("nnef_selu", lambda x: mpmath.mpf(105070102) / 10**8 * (
        mpmath.mpf(167326319) / 10**8 * mpmath.expm1(x) if x < 0 else x)),
])
def test_float64_references_agree_with_mpmath(op, exact):
    x = np.array([-700.0, -40.0, -3.0, -1e-3, -1e-200, 1e-300, 0.5, 2.0, 30.0])
    (out,), (residual,) = evaluate_refined(op, [x], ATTRS.get(op, {}))
    with mpmath.workprec(200):
        for xi, hi, lo in zip(x, out, residual):
            want = exact(mpmath.mpf(float(xi)))
            error = abs((mpmath.mpf(float(hi)) + float(lo)) - want)
            assert error <= abs(want) * 2.0 ** -100 + 2.0 ** -1074, (xi, error)


def _case(op, x, dtype="float32"):
    x = np.asarray(x, dtype)
    return Case(id=f"{op}.{dtype}.hand", op=op, dtype=dtype, input_dtypes=(dtype,),
                out_dtype=dtype, inputs=[x], attrs=ATTRS.get(op, {}), plan="hand", seed=0)


def _fragment32(op, x):
    """The fragment evaluated in float32, operation by operation, as written."""
    one = np.float32(1)
    sig = lambda t: one / (one + np.exp(-t))   # noqa: E731
    if op == "nnef_silu":
        return x * sig(x)
    return x * sig(np.float32(1.702) * x)


@pytest.mark.parametrize("op", ["nnef_silu", "nnef_gelu"])
def test_the_fragment_in_float32_passes_and_a_float16_evaluation_fails(specs, op):
    x = np.random.default_rng(0).uniform(-40, 40, 64).astype(np.float32)
    case = _case(op, x)
    with np.errstate(over="ignore"):
        assert judge_outputs(specs[op], case, [_fragment32(op, x)]).verdict == "pass"
    coarse = _fragment32(op, x.astype(np.float16).astype(np.float32))
    assert judge_outputs(specs[op], case, [coarse]).verdict == "fail"


def test_gelu_as_x_times_phi_fails(specs):
    x = np.linspace(-4, 4, 33, dtype=np.float32)
    phi = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x.tolist()])
    case = _case("nnef_gelu", x)
    judged = judge_outputs(specs["nnef_gelu"], case, [(x * phi).astype(np.float32)])
    assert judged.verdict == "fail"


def test_gelu_where_exp_overflows_float32_is_the_region_not_a_failure(specs):
    x = np.float32([-60.0, -55.0, 1.0])
    spec, case = specs["nnef_gelu"], _case("nnef_gelu", x)
    judged = judge_outputs(spec, case, [np.float32([-0.0, -0.0, _sigmoid(1.702)])])
    assert (judged.verdict, judged.impl_defined, judged.checked) == ("pass", 2, 1)
    wrong = judge_outputs(spec, case, [np.float32([-0.0, -0.0, 0.8458])])
    assert wrong.verdict == "fail"


def test_selu_cancelling_exp_minus_one_fails(specs):
    x = np.float32([-1e-3, -1e-10, -2.0])
    good = (np.float32(LAMBDA) * (np.float32(ALPHA) * np.expm1(x))).astype(np.float32)
    cancelling = np.float32(LAMBDA) * (np.float32(ALPHA) * (np.exp(x) - np.float32(1)))
    assert judge_outputs(specs["nnef_selu"], _case("nnef_selu", x), [good]).verdict == "pass"
    assert judge_outputs(specs["nnef_selu"], _case("nnef_selu", x), [cancelling]).verdict == "fail"


@pytest.mark.parametrize("op", ["nnef_gelu", "nnef_silu", "nnef_softabs", "nnef_prelu"])
def test_the_nnef_executor_runs_the_fragments(specs, nnef_backend, op):
    """The executor's own kernels (gelu, silu) and the lowered bodies (softabs, prelu) pass on
    ordinary values in [-10, 10]."""
    from conform.harness.backends.models import run_case

    rng = np.random.default_rng(2)
    inputs = [rng.uniform(-10, 10, (3, 4)).astype(np.float32)]
    if op == "nnef_prelu":
        inputs.append(rng.uniform(-2, 2, (3,)).astype(np.float32))
    case = Case(id=f"{op}.float32.hand", op=op, dtype="float32",
                input_dtypes=("float32",) * len(inputs), out_dtype="float32", inputs=inputs,
                attrs=ATTRS.get(op, {}), plan="hand", seed=0)
    assert judge_outputs(specs[op], case, run_case(nnef_backend, specs[op], case)).verdict == "pass"


def test_the_nnef_executor_cancels_selu_near_zero(specs, nnef_backend):
    """A deviation the suite reports: the executor computes exp(x) - 1.0 in float32, which
    cancels near 0 (selu(-1e-3) is 152 ULP off, selu(-1e-10) is 0)."""
    from conform.harness.backends.models import run_case

    case = _case("nnef_selu", [-1e-3, -1e-10, 2.0])
    out = run_case(nnef_backend, specs["nnef_selu"], case)
    assert out[0][1] == 0.0
    assert judge_outputs(specs["nnef_selu"], case, out).verdict == "fail"


def test_derived_bound_ops_are_left_out_of_programs(specs):
    """A program's nodes are judged by their ops' models, but a node's derived bound (the op's
    error_bound hook) is not computed: silu and gelu are no links of a chain, selu is."""
    from conform.spec.programs import chain_names, chainable

    assert not chainable(specs["nnef_silu"]) and not chainable(specs["nnef_gelu"])
    assert chainable(specs["nnef_selu"]) and chainable(specs["nnef_softabs"])
    names = chain_names(specs, "nnef", count=40)
    assert not any("nnef_silu" in name or "nnef_gelu" in name for name in names)


def test_prelu_alpha_feeds_only_a_negative_x():
    """select(x < 0.0, alpha * x, x): alpha is a term only where x is negative."""
    from conform.oracles.feeding import feeding_elements
    x, alpha = np.array([[-2.0, 3.0]]), np.array([[0.5], ])
    negative = feeding_elements("nnef_prelu", [x, alpha], {}, [0, 0])
    positive = feeding_elements("nnef_prelu", [x, alpha], {}, [0, 1])
    assert [f.tolist() for f in negative] == [[-2.0], [0.5]]
    assert positive[0].tolist() == [3.0] and positive[1] is None
