"""``verdicts(spec, backend, dtype, count, seed)``: the judge's verdicts on a real backend's
outputs for a few generated cases of one op (for op tests: 'numpy passes', 'the executor
passes')."""
from __future__ import annotations


def verdicts(spec, backend, dtype: str, *, count: int, seed: int, keep=None) -> set:
    """The set of verdicts over ``count`` generated cases of ``spec`` in ``dtype`` run on
    ``backend`` (those ``keep(case)`` accepts, if given)."""
    from conform.generators import generate_cases
    from conform.harness.backends.models import run_case
    from conform.harness.judge.judging import judge_outputs

    return {judge_outputs(spec, case, run_case(backend, spec, case)).verdict
            for case in generate_cases(spec, dtype, count=count, seed=seed)
            if (keep is None or keep(case)) and case.plan != "must_reject"}
