"""XLA RngUniform, RngNormal and RngBitGenerator (ops/xla_random.py) on jax: judged
statistically, with injected errors caught (a wrong range, a stuck bit, a generator that is
not a function of its state)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.harness.backends.models import run_case
from conform.harness.judge.judging import judge_outputs


def _first(specs, name, dtype, seed=3):
    spec = specs[name]
    return spec, next(iter(generate_cases(spec, dtype, count=1, seed=seed)))


@pytest.mark.parametrize("name, dtype", [("rng_uniform", "float32"), ("rng_uniform", "int32"),
                                         ("rng_normal", "float32"),
                                         ("rng_bit_generator", "uint32")])
def test_jax_passes(specs, jax_backend, name, dtype):
    spec, case = _first(specs, name, dtype)
    judged = judge_outputs(spec, case, run_case(jax_backend, spec, case))
    assert judged.verdict == "pass", (case.id, judged.reason)


def test_integer_uniform_never_gives_b(specs, jax_backend):
    """[a, b) on integers: b is outside the support, judged exactly."""
    spec, case = _first(specs, "rng_uniform", "int32")
    out = np.asarray(run_case(jax_backend, spec, case)[0]).copy()
    out.flat[7] = case.attrs["second"]
    judged = judge_outputs(spec, case, [out])
    assert judged.verdict == "fail" and "outside the support" in judged.reason


def test_a_normal_of_the_wrong_sigma_by_a_fifth_is_caught(specs, jax_backend):
    spec, case = _first(specs, "rng_normal", "float32")
    out = np.asarray(run_case(jax_backend, spec, case)[0]).astype(np.float64)
    mu = case.attrs["first"]
    judged = judge_outputs(spec, case, [((out - mu) * 1.2 + mu).astype(np.float32)])
    assert judged.verdict == "fail" and "Kolmogorov-Smirnov" in judged.reason


def test_bit_generator_stuck_bit_and_nondeterminism_are_caught(specs, jax_backend):
    spec, case = _first(specs, "rng_bit_generator", "uint32")
    outputs = [np.asarray(o).copy() for o in run_case(jax_backend, spec, case)]
    stuck = list(outputs)
    stuck[1] = outputs[1] | np.uint32(1 << 31)
    stuck[3] = stuck[1]
    judged = judge_outputs(spec, case, stuck)
    assert judged.verdict == "fail" and re.search(r"bit 31: (\d+) ones of n=\1,", judged.reason)
    assert "binomial test per bit position (32 positions, Bonferroni)" in judged.reason
    drifting = list(outputs)
    drifting[3] = outputs[5]   # the second generator on an equal state gives other bits
    judged = judge_outputs(spec, case, drifting)
    assert judged.verdict == "fail" and judged.worst["output"] == "bits_again"


def test_bit_generator_state_keeps_its_shape_and_type(specs, jax_backend):
    spec, case = _first(specs, "rng_bit_generator", "uint8")
    outputs = [np.asarray(o) for o in run_case(jax_backend, spec, case)]
    assert outputs[0].shape == outputs[4].shape == (4,) and outputs[0].dtype == np.uint32
    wrong = list(outputs)
    wrong[0] = outputs[0][:2]
    assert judge_outputs(spec, case, wrong).verdict == "fail"


def test_bit_generator_of_a_sub_byte_type_is_judged_on_its_own_bits(specs, jax_backend):
    """uint4 bits sit in the low half of a byte: four positions are tested (the high half, all
    zeros, is not a stuck bit), and a stuck top bit of the four fails."""
    spec, case = _first(specs, "rng_bit_generator", "uint4")
    outputs = [np.asarray(o).copy() for o in run_case(jax_backend, spec, case)]
    assert judge_outputs(spec, case, outputs).verdict == "pass"
    stuck = list(outputs)
    stuck[1] = (outputs[1].view(np.uint8) | np.uint8(8)).view(outputs[1].dtype)
    stuck[3] = stuck[1]
    judged = judge_outputs(spec, case, stuck)
    assert judged.verdict == "fail" and "(4 positions, Bonferroni)" in judged.reason


def test_xla_gives_signed_and_float_bits_an_unsigned_type(specs, jax_backend):
    """Catalogued (docs/failures/jax.yaml xla-rng-bit-generator-unsigned-result): XLA returns
    int8 random bits as uint8; the same bits read as int8 pass, so only the type is wrong."""
    spec, case = _first(specs, "rng_bit_generator", "int8")
    outputs = [np.asarray(o) for o in run_case(jax_backend, spec, case)]
    assert outputs[1].dtype == np.uint8
    assert judge_outputs(spec, case, outputs).verdict == "fail"
    retyped = [o.view(np.int8) if k % 2 else o for k, o in enumerate(outputs)]
    assert judge_outputs(spec, case, retyped).verdict == "pass"


@pytest.mark.parametrize("dtype", ["int2", "uint2", "int4", "uint8"])
def test_integer_uniform_ranges_fit_the_type(specs, dtype):
    """a and b are scalars of the output's type: every drawn [a, b) has both in it (int2's is
    [0, 1), uint8's never starts at 1000)."""
    from conform.dtypes import int_info
    info = int_info(dtype)
    for case in generate_cases(specs["rng_uniform"], dtype, count=4, seed=2):
        a, b = case.attrs["first"], case.attrs["second"]
        assert info.min <= a < b <= info.max, (case.id, a, b)


# -- bool and the float types of at most 8 bits (issue 36 item 7) -------------------------------

def test_bool_uniform_is_false_everywhere(specs):
    """[false, true) holds false only: NumPy's draw passes, one true element fails."""
    from conform.ops.xla_random import numpy_rng_uniform
    spec, case = _first(specs, "rng_uniform", "bool")
    out = numpy_rng_uniform(*case.inputs, **case.attrs)
    assert out.dtype == np.bool_ and judge_outputs(spec, case, [out]).verdict == "pass"
    out.flat[5] = True
    judged = judge_outputs(spec, case, [out])
    assert judged.verdict == "fail" and "outside the support" in judged.reason


@pytest.mark.parametrize("name, dtype", [("rng_normal", "float8_e4m3fn"),
                                         ("rng_normal", "float8_e8m0fnu"),
                                         ("rng_uniform", "float4_e2m1fn"),
                                         ("rng_uniform", "float6_e3m2fn")])
def test_narrow_draws_pass_and_a_shifted_law_fails(specs, name, dtype):
    """A draw rounded to nearest in the type passes; one moved grossly fails; the operands are
    values of the type, inside its range (E8M0: positive)."""
    from conform.dtypes import FLOAT_FORMATS
    from conform.ops.distributions import Categorical
    from conform.ops.xla_random import numpy_rng_normal, numpy_rng_uniform
    spec, case = _first(specs, name, dtype)
    first, second = (float(x.astype(np.float64)) for x in case.inputs)
    assert (first, second) == (case.attrs["first"], case.attrs["second"])
    assert FLOAT_FORMATS[dtype].has_zero or first > 0
    draw = numpy_rng_normal if name == "rng_normal" else numpy_rng_uniform
    out = draw(*case.inputs, **case.attrs)
    assert judge_outputs(spec, case, [out]).verdict == "pass"
    # two sigmas (a width), and at least four steps of the type there: a law narrower than a
    # step is all but one value, which the test's widening to the neighbours accepts moved less
    fmt = FLOAT_FORMATS[dtype]
    top = abs(first) + 3 * second if name == "rng_normal" else max(abs(first), abs(second))
    step = 2.0 ** (max(np.frexp(top)[1] - 1, fmt.emin) - fmt.precision + 1)
    shift = max(2 * second if name == "rng_normal" else second - first, 4 * step)
    moved = (out.astype(np.float64) - shift).astype(out.dtype)   # (E8M0: no value, NaN)
    assert judge_outputs(spec, case, [moved]).verdict == "fail"
    assert not isinstance(spec.definition.distribution(
        [np.float64(first), np.float64(second)], case.attrs, [out], out_dtypes=(dtype,),
        dtypes=(dtype, dtype))[0], Categorical)


def test_jax_refuses_narrow_rng_before_tracing(specs):
    """XLA:CPU aborts compiling these (a crash per case): refused by the lax hooks instead."""
    from conform.ops.xla_random import lax_rng_normal_refuses, lax_rng_uniform_refuses
    import ml_dtypes
    one = np.ones((), ml_dtypes.float8_e4m3fn)
    assert "rng_expander" in lax_rng_normal_refuses([one, one], {})
    assert lax_rng_normal_refuses([np.float32(1), np.float32(1)], {}) is None
    assert "only support" in lax_rng_uniform_refuses([np.bool_(False), np.bool_(True)], {})
