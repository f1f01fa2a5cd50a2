"""Record, or check, what the default corpus gives on each built-in backend: per case its verdict,
error figures and a digest of the case itself (corpus hash), so that a refactor that must change no
result can show it changed none.

    python3 bench/baseline.py record            # writes tests/fixtures/baseline/<backend>.json
    python3 bench/baseline.py check [BACKEND..] # exit 1 and a diff where anything differs

Each backend runs a fixed small budget (``RUNS``) so the check fits in the test suite.
"""
from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "baseline"
#: backend -> the run's extra options: every op at two examples where a run is cheap, a sample of
#: ops where each case costs a compilation.
RUNS = {
    "numpy": ["--max-examples", "2"],
    "onnxruntime": ["--max-examples", "2"],
    "jax": ["--max-examples", "1", "--ops", "add,exp,tanh,dot_general,reduce_sum,gather,convert_element_type,sort,conv"],
    "nnef": ["--max-examples", "1", "--ops", "nnef_*,exp,tanh"],
}
CASE_FIELDS = ("op", "dtype", "input_dtypes", "out_dtype", "shapes", "attrs", "plan", "seed")
RESULT_FIELDS = ("verdict", "model", "checked", "mismatched", "impl_defined_elements", "max_error",
                 "bound", "worst")
#: An ``impl_defined`` record's figures are the backend's value where the standard leaves it
#: open: recorded, not judged, and not always repeatable (NumPy's out-of-range float-to-integer
#: casts differ between its vectorised and scalar loops), so only its counts are compared.
OPEN_FIELDS = ("verdict", "model", "checked", "mismatched", "impl_defined_elements")


def _digest(record: dict, fields) -> str:
    picked = {name: record.get(name) for name in fields}
    return hashlib.sha256(orjson.dumps(picked, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def execute(backend: str, out) -> subprocess.CompletedProcess:
    """Run ``backend``'s baseline run (:data:`RUNS`) with its outputs in the folder ``out``."""
    command = ["conform", "run", "--backend", backend, "--out", str(out), "--quiet",
               "--no-manifest", *RUNS[backend]]
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=1800)


def digests(out) -> dict[str, list[str]]:
    """Case id -> [verdict, case digest, result digest] of the run whose outputs are in ``out``."""
    lines = (Path(out) / "results.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines if line.strip()]
    return {r["id"]: [r["verdict"], _digest(r, CASE_FIELDS), _digest(r, _compared(r))]
            for r in sorted(records, key=lambda r: r["id"])}


def run(backend: str) -> dict[str, list[str]]:
    """Case id -> [verdict, case digest, result digest] of ``backend``'s baseline run."""
    with tempfile.TemporaryDirectory() as out:
        execute(backend, out)
        return digests(out)


def _compared(record: dict) -> tuple:
    """The result fields compared: a random op's figures come from its draws (they differ from
    run to run, under a false-alarm rate its model states), so only its verdict and model."""
    if record["op"] in _random_ops():
        return ("verdict", "model")
    return OPEN_FIELDS if record["verdict"] == "impl_defined" else RESULT_FIELDS


@functools.lru_cache(maxsize=1)
def _random_ops() -> frozenset:
    """The ops whose outputs are random draws (a ``distribution`` hook)."""
    from conform.spec import load_specs

    return frozenset(op for op, spec in load_specs().items()
                     if spec.definition.distribution is not None)


def differences(backend: str, now: dict | None = None) -> list[str]:
    """Lines naming each case whose verdict, case or result differs from the recorded baseline
    (``now``: the run's :func:`digests`, else a new run)."""
    recorded = json.loads((FIXTURES / f"{backend}.json").read_text())
    now = run(backend) if now is None else now
    ops = {case.split(".")[0] for case in recorded}   # an op added since is not a difference
    found = [f"{backend}: {case} missing now" for case in recorded if case not in now]
    found += [f"{backend}: {case} new" for case in now
              if case not in recorded and case.split(".")[0] in ops]
    found += [f"{backend}: {case} {recorded[case]} -> {now[case]}"
              for case in recorded if case in now and recorded[case] != now[case]]
    return found


def main(argv: list[str]) -> int:
    action, backends = argv[0], argv[1:] or list(RUNS)
    if action == "record":
        FIXTURES.mkdir(parents=True, exist_ok=True)
        for backend in backends:
            cases = run(backend)
            lines = [f"{json.dumps(case)}: {json.dumps(value)}" for case, value in cases.items()]
            (FIXTURES / f"{backend}.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")
            print(f"{backend}: {len(cases)} cases recorded")
        return 0
    found = [line for backend in backends for line in differences(backend)]
    print("\n".join(found[:50]) or "identical")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
