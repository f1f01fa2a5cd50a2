"""Helpers of the XLA op tests: an oracle's single output, and the verdicts of a drawn suite on
the real jax backend (the ``jax_backend`` fixture of tests/ops/conftest.py), optionally with
jax's answers altered."""
from __future__ import annotations

import numpy as np

from conform.generators._suite import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate


def run(name, *inputs, **attrs):
    (out,) = evaluate(name, [np.asarray(x) for x in inputs], attrs)
    return out


def jax_verdicts(spec, jax_backend, dtype, count, seed=0, change=None, subnormals="ftz"):
    """The verdicts of the drawn suite on jax; ``change(outputs, case)`` alters jax's answers."""
    from conform.harness.backends.models import run_case
    verdicts = []
    for case in generate_cases(spec, dtype, count=count, seed=seed):
        outputs = run_case(jax_backend, spec, case)
        if change is not None:
            outputs = change(outputs, case)
        verdicts.append(judge_outputs(spec, case, outputs, subnormals).verdict)
    return verdicts
