"""``conform hunt``: a bounded search for the input with the largest error/bound ratio.

For each selected element-wise op x float dtype, the search spends ``budget`` input evaluations
(elements): a quarter on a start drawn from the suite's value plans, up to an eighth on the
op's critical regions, the rest climbing. Each round takes the best points found so far and tries neighbours
of each (one input moved by +-2**j units in the last place of the dtype, j drawn from 0 to the
precision, or by a power of two), eight neighbours of one point per case. The cases run in the
same isolated workers as ``conform run`` and are judged by the same judge; a case's record
names its worst element (its inputs, error and bound), which is the best neighbour of its
point. With ``climb=False`` the whole budget is drawn at random (the same plans as the start):
the baseline a benchmark compares with.

Every case's record goes to ``out/results.jsonl`` and its inputs to ``out/hunt-cases.npz``, so
``conform repro ID --from out`` reproduces any of them; ``summary.json`` (and the report) gets a
``hunt`` entry per op x dtype with the worst input, its error, bound, ratio and repro command.
"""
from __future__ import annotations

import math
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from conform.generators import Case, edge_values, fill
from conform.generators import critical_case
from conform.generators import fixed_attrs
from conform.generators import value_range
from conform.harness.judge.judging import result_record
from conform.harness.run.isolation import PoolSettings, WorkerPool
from conform.spec.critical import to_dtype, ulp
from conform.dtypes import FLOAT_FORMATS, np_dtype, result_dtype

CASE_SIZE = 8           # candidates per case: >= 8 elements, the vectorised kernels
KEEP = 4                # points climbed from each round
START_SHARE = 0.25      # of the budget, drawn at random before climbing
START_PLANS = ("normal", "wide", "edge")
CASES_FILE = "hunt-cases.npz"


@dataclass
class Hunted:
    """The search of one op x dtype: the worst record found, how it went, its cases."""

    op: str
    dtype: str
    evaluated: int = 0
    worst: dict | None = None
    trajectory: list = field(default_factory=list)   # (evaluated, best ratio) per round
    records: list = field(default_factory=list)
    cases: dict = field(default_factory=dict)        # case id -> Case

    def summary(self, out: Path) -> dict:
        """The ``hunt`` entry of summary.json for this op x dtype."""
        worst = self.worst or {}
        point = worst.get("worst") or {}
        return {"op": self.op, "dtype": self.dtype, "evaluated": self.evaluated,
                "case": worst.get("id"), "verdict": worst.get("verdict"),
                "inputs": point.get("inputs"), "expected": point.get("expected"),
                "actual": point.get("actual"), "error": worst.get("max_error"),
                "bound": worst.get("bound"), "unit": worst.get("unit"),
                "ratio": ratio(worst) if worst else None, "trajectory": self.trajectory,
                "repro": f"conform repro {worst.get('id')} --from {shlex.quote(str(out))}"}


def ratio(record: dict) -> float:
    """A record's worst error over its bound (inf for a failure with no finite figure, 0 for a
    case with no figures)."""
    if record.get("verdict") in ("error", "crash", "timeout"):
        return math.inf
    err, bound = record.get("max_error"), record.get("bound")
    try:
        err, bound = float(err), float(bound)
    except (TypeError, ValueError):
        return math.inf if record.get("verdict") == "fail" else 0.0
    if math.isnan(err):
        return math.inf
    return err / bound if bound > 0 else (0.0 if err == 0 else math.inf)


class _Search:
    """The points of one op x dtype search and how to move them."""

    def __init__(self, spec, dtype: str, seed: int):
        self.spec, self.dtype = spec, dtype
        self.fmt = FLOAT_FORMATS[dtype]
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def case(self, columns: list[np.ndarray], plan: str) -> Case:
        """A hunt case of the candidate ``columns`` (one float64 array per input)."""
        self.count += 1
        inputs = [np.asarray(c).astype(np_dtype(self.dtype)) for c in columns]
        return Case(id=f"{self.spec.op}.{self.dtype}.hunt{self.count:04d}", op=self.spec.op,
                    dtype=self.dtype, input_dtypes=(self.dtype,) * len(inputs),
                    out_dtype=result_dtype(self.spec.output_dtype, self.dtype),
                    inputs=inputs, attrs=fixed_attrs(self.spec), plan=plan, seed=self.count)

    def random_cases(self, count: int) -> list[Case]:
        """``count`` cases drawn by the suite's value plans, in turn."""
        cases = []
        for k in range(count):
            plan = START_PLANS[k % len(START_PLANS)]
            columns = []
            for name in self.spec.inputs:
                low, high = value_range(self.spec, name, self.dtype)
                columns.append(fill(self.rng, shape=(CASE_SIZE,), dtype=self.dtype, plan=plan,
                                    low=low, high=high, edges=edge_values(self.spec, self.dtype)))
            cases.append(self.case([c.astype(np.float64) for c in columns], "hunt"))
        return cases

    def critical_cases(self) -> list[Case]:
        """The op's critical-region values, CASE_SIZE per case."""
        found = critical_case(self.spec, self.dtype, seed=int(self.rng.integers(1 << 31)))
        if found is None:
            return []
        columns = [x.astype(np.float64) for x in found.inputs]
        return [self.case([c[k:k + CASE_SIZE] for c in columns], "hunt")
                for k in range(0, len(columns[0]), CASE_SIZE)]

    def neighbours(self, point: list[float]) -> Case:
        """CASE_SIZE neighbours of ``point`` (one value per input), the point itself first."""
        columns = np.tile(np.asarray(point, np.float64)[:, None], (1, CASE_SIZE))
        for k in range(1, CASE_SIZE):
            i = int(self.rng.integers(len(point)))
            x = columns[i, k]
            if self.rng.random() < 0.15:   # another binade
                moved = x * 2.0 ** self.rng.choice([-4, -2, -1, 1, 2, 4])
            else:
                steps = 2.0 ** self.rng.integers(0, self.fmt.precision) * self.rng.choice([-1, 1])
                moved = x + steps * float(ulp(x, self.dtype))
            moved = float(to_dtype(moved, self.dtype))
            columns[i, k] = moved if math.isfinite(moved) else x
        return self.case(list(columns), "hunt")


def _point(record: dict, count: int) -> list[float] | None:
    """The worst element's inputs of ``record`` (finite), or None."""
    inputs = (record.get("worst") or {}).get("inputs")
    if not inputs or len(inputs) != count:
        return None
    try:
        values = [float(v) for v in inputs]
    except (TypeError, ValueError):
        return None
    return values if all(math.isfinite(v) for v in values) else None


def hunt_one(pool: WorkerPool, spec, dtype: str, *, budget: int, seed: int, backend: str,
             policy: str, climb: bool = True) -> Hunted:
    """Search op ``spec`` under ``dtype`` with ``budget`` evaluations on ``pool``."""
    search, found = _Search(spec, dtype, seed), Hunted(spec.op, dtype)
    rounds = max(1, budget // CASE_SIZE)
    if climb:   # a start by the value plans, and the critical regions (an eighth at most)
        start = search.random_cases(math.ceil(rounds * START_SHARE))
        start += search.critical_cases()[:max(0, min(rounds - len(start), math.ceil(rounds / 8)))]
    else:
        start = search.random_cases(rounds)
    best: list[tuple[float, list]] = []
    batch = start
    while batch:
        for case, outcome in pool.run(batch):
            record = outcome.record or result_record(spec, case, outcome, backend, policy)
            found.records.append(record)
            found.cases[case.id] = case
            found.evaluated += case.inputs[0].size
            if found.worst is None or ratio(record) > ratio(found.worst):
                found.worst = record
            point = _point(record, len(spec.inputs))
            if point is not None:
                best.append((ratio(record), point))
        best = sorted(best, key=lambda b: -b[0])[:KEEP]
        found.trajectory.append([found.evaluated, ratio(found.worst)])
        left = (budget - found.evaluated) // CASE_SIZE
        if not climb or left <= 0:
            break
        parents = [best[k % len(best)][1] for k in range(min(left, 2 * KEEP))] if best else []
        batch = [search.neighbours(p) for p in parents] or search.random_cases(min(left, KEEP))
    return found


def save_cases(out: Path, hunted: list[Hunted]) -> None:
    """Every hunt case's inputs in ``out/hunt-cases.npz`` (``<case id>/<input number>``;
    bfloat16 and float8 as their bits), for ``conform repro``."""
    arrays = {}
    for found in hunted:
        for case_id, case in found.cases.items():
            for k, x in enumerate(case.inputs):
                bits = x.view(np.uint16 if x.dtype.itemsize == 2 else np.uint8) \
                    if x.dtype.name in ("bfloat16",) or x.dtype.name.startswith("float8") else x
                arrays[f"{case_id}/{k}"] = bits
    np.savez(Path(out) / CASES_FILE, **arrays)


def stored_inputs(run_dir: Path, record: dict) -> list[np.ndarray] | None:
    """The inputs of hunt case ``record`` kept in ``run_dir`` (None if the run kept none)."""
    path = Path(run_dir) / CASES_FILE
    if not path.is_file():
        return None
    with np.load(path) as stored:
        keys = sorted((k for k in stored.files if k.startswith(record["id"] + "/")),
                      key=lambda k: int(k.rsplit("/", 1)[1]))
        return [stored[k].view(np_dtype(d)) for k, d in zip(keys, record["input_dtypes"])] \
            if keys else None


def run_hunt(backend: str, pairs: list, specs: dict, *, budget: int, seed: int,
             settings: PoolSettings, climb: bool = True) -> tuple[list[Hunted], dict]:
    """Hunt each (spec, dtype) of ``pairs`` on ``backend``; the searches and the pool's info."""
    started, hunted = time.time(), []
    with WorkerPool(backend, settings, specs=specs) as pool:
        policy = settings.subnormals or pool.info.get("subnormals", "ieee")
        for spec, dtype in pairs:
            hunted.append(hunt_one(pool, spec, dtype, budget=budget, seed=seed, backend=backend,
                                   policy=policy, climb=climb))
        info = {**pool.info, "subnormals_applied": policy,
                "wall_seconds": round(time.time() - started, 3)}
    return hunted, info
