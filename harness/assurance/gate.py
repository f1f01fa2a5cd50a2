"""The CI gate: pass-rate floors, new failures against a baseline run, growth of the worst error.

Everything here is a pure function over summaries (summary.json documents) and result records
(results.jsonl lines); ``conform run`` and ``conform gate`` print the :class:`GateReport`.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from conform.harness.assurance.manifests import FAILING
from conform.reports import pass_rate, read_results
from conform.records import SchemaVersionError, check_schema_version
from conform.reports import coverage_text, judged
from conform.reports import neutral
from conform import verdicts

PASSED = verdicts.PASSED
SHOWN = 200  # lines per kind of failure before the rest are only counted


class GateError(Exception):
    """A baseline or run directory cannot be read (a usage error: exit status 2)."""


@dataclass
class RunData:
    """A finished run: its summary.json and its result records."""

    summary: dict
    records: list[dict]
    where: Path


def load_run(path: Path | str) -> RunData:
    """A run directory, or a summary.json with its results.jsonl beside it."""
    path = Path(path)
    directory = path.parent if path.suffix == ".json" else path
    summary_path = path if path.suffix == ".json" else path / "summary.json"
    results_path = directory / "results.jsonl"
    for needed in (summary_path, results_path):
        if not needed.is_file():
            raise GateError(f"{needed} does not exist (expected a conform run directory or its "
                            "summary.json, with results.jsonl beside it)")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        records = list(read_results(results_path))
        check_schema_version(summary, summary_path)
        if records:
            check_schema_version(records[0], results_path)
    except (json.JSONDecodeError, UnicodeDecodeError, SchemaVersionError) as exc:
        raise GateError(f"{directory}: not a readable conform run: {exc}") from None
    return RunData(summary, records, directory)


def finished_run(path: Path | str) -> RunData:
    """:func:`load_run`, refusing (:class:`GateError`) a run that did not finish or whose
    summary.json counts other results than its results.jsonl holds: a gate (or a baseline)
    never judges an interrupted run, a run still going, or a summary left beside other results."""
    run = load_run(path)
    summary, lines, directory = run.summary, len(run.records), run.where
    if summary.get("complete") is False:
        raise GateError(f"{directory}: the run is incomplete ({summary.get('cases')} of "
                        f"{summary.get('cases_planned')} cases): it was interrupted or is still "
                        "running; finish it with `conform run ... --resume` and gate again")
    if summary.get("cases") != lines:
        raise GateError(f"{directory}: summary.json counts {summary.get('cases')} cases but "
                        f"results.jsonl holds {lines}: they do not describe the same run")
    return run


@dataclass(frozen=True)
class Criteria:
    """What the gate requires. ``None`` disables a pass-rate floor; ``inf`` disables growth."""

    min_pass_rate: float | None = None
    min_op_pass_rate: float | None = None
    min_coverage: float | None = None
    max_error_growth: float = 2.0
    strict_xfail: bool = False


@dataclass
class GateReport:
    """Failed checks (each a printable line), checks that held, and notes."""

    failures: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return not self.failures


def _figure(value) -> float:
    return float(value) if isinstance(value, str) else value


def _rate(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def op_pass_rates(summary: dict) -> dict[str, float | None]:
    """Each op's pass rate over all its dtypes."""
    rates = {}
    for op, cells in summary["by_op"].items():
        counts = Counter()
        for cell in cells.values():
            counts.update(cell["counts"])
        rates[op] = pass_rate(counts)
    return rates


def ops_below(summary: dict, floor: float) -> dict[str, float]:
    """Ops whose pass rate over all their dtypes is below ``floor`` (ops with nothing judged are
    not held to it)."""
    return {op: rate for op, rate in op_pass_rates(summary).items()
            if rate is not None and rate < floor}


def coverage_figures(summary: dict) -> tuple[int, int]:
    """``(judged, cases)`` of a summary (from its counts: a summary.json written before
    coverage was recorded has them too)."""
    return judged(summary["counts"]), sum(summary["counts"].values())


def _floor_checks(report: GateReport, summary: dict, criteria: Criteria) -> None:
    """The overall floors of pass rate and coverage (a run with nothing judged fails them) and
    the per-op floor."""
    if criteria.min_pass_rate is not None:
        rate = summary["pass_rate"]
        if rate is None or rate < criteria.min_pass_rate:
            report.failures.append(f"pass rate {_rate(rate)} < --min-pass-rate {criteria.min_pass_rate}")
        else:
            report.held.append(f"pass rate {_rate(rate)} >= {criteria.min_pass_rate}")
    if criteria.min_coverage is not None:
        judged, cases = coverage_figures(summary)
        rate = judged / cases if cases else None
        line = f"coverage {_rate(rate)} (judged {judged} of {cases} cases)"
        if rate is None or rate < criteria.min_coverage:
            report.failures.append(f"{line} < --min-coverage {criteria.min_coverage}")
        else:
            report.held.append(f"{line} >= {criteria.min_coverage}")
    if criteria.min_op_pass_rate is not None:
        low = ops_below(summary, criteria.min_op_pass_rate)
        report.failures += [f"op {op}: pass rate {_rate(rate)} < --min-op-pass-rate "
                            f"{criteria.min_op_pass_rate}" for op, rate in low.items()]
        if not low:
            report.held.append(f"every op's pass rate >= {criteria.min_op_pass_rate}")


def _same_case(old: dict, new: dict) -> bool:
    return all(old.get(k) == new.get(k) for k in ("seed", "shapes", "attrs"))


def regressions(baseline_records, records) -> tuple[list[tuple[dict, dict]], int]:
    """``([(old, new), ...], not_comparable)``: cases (matched by id) that passed in the baseline
    and fail now (or were ``impl_defined`` and are ``inconsistent`` now), and how many ids name
    a different case (other seed, shapes or attributes)."""
    old_by_id = {r["id"]: r for r in baseline_records}
    found, different = [], 0
    for new in records:
        old = old_by_id.get(new["id"])
        if old is None:
            continue
        if not _same_case(old, new):
            different += 1
        elif (old["verdict"] in PASSED and new["verdict"] in FAILING) or (
                old["verdict"] == "impl_defined" and new["verdict"] == "inconsistent"):
            found.append((old, new))   # (an open answer that now depends on the position)
    return found, different


def worst_ratio(cell: dict) -> float | None:
    """Worst error / bound of an op x dtype cell of summary.json (None if nothing was judged)."""
    error, bound = cell.get("worst_error"), cell.get("bound")
    if error is None or bound is None:
        return None
    error, bound = _figure(error), _figure(bound)
    if bound:
        return error / bound
    return 0.0 if error == 0 else math.inf


def error_growth(baseline: dict, summary: dict, factor: float) -> list[tuple[str, str, dict, dict]]:
    """``(op, dtype, old cell, new cell)`` where the worst error / bound grew by more than
    ``factor`` (from zero, any growth counts)."""
    grown = []
    for op, cells in summary["by_op"].items():
        for dtype, cell in cells.items():
            old_cell = baseline["by_op"].get(op, {}).get(dtype)
            old, new = (worst_ratio(old_cell) if old_cell else None), worst_ratio(cell)
            if old is None or new is None or new == old:
                continue
            if new > (factor * old if old else 0.0):
                grown.append((op, dtype, old_cell, cell))
    return grown


def _error_text(cell: dict) -> str:
    unit = cell.get("unit") or ""
    return (f"{_figure(cell['worst_error']):.6g} {unit} (bound {_figure(cell['bound']):.6g} {unit}, "
            f"case {cell.get('worst_case')})")


def _growth_line(op, dtype, old_cell, cell, factor) -> str:
    old, new = worst_ratio(old_cell), worst_ratio(cell)
    times = f"x{new / old:.3g}" if old else "from 0"
    return (f"error growth {op} {dtype}: worst {_error_text(old_cell)} -> {_error_text(cell)}: "
            f"error/bound {old:.4g} -> {new:.4g} ({times} > --max-error-growth {factor:g})")


def _regression_line(old: dict, new: dict) -> str:
    message = (new.get("message") or "").split(f"(case {new['id']}): ", 1)[-1][:240]  # drop the head
    message = neutral(message)   # printed on a terminal: no escape sequence of the backend's
    return f"regression {new['id']}: {old['verdict']} -> {new['verdict']}" + (
        f": {message}" if message else "")


def _capped(lines: list[str], what: str) -> list[str]:
    if len(lines) <= SHOWN:
        return lines
    return lines[:SHOWN] + [f"... and {len(lines) - SHOWN} more {what}"]


def comparability_notes(baseline: dict, summary: dict) -> list[str]:
    """Warnings where the baseline's case ids may name other cases or another runtime."""
    notes = []
    for key in ("backend", "seed", "max_examples", "conform_version", "subnormals_applied"):
        if baseline.get(key) != summary.get(key):
            notes.append(f"baseline {key}={baseline.get(key)!r}, this run {key}={summary.get(key)!r}")
    return notes


def _baseline_checks(report: GateReport, baseline: RunData, summary: dict, records: list,
                     factor: float) -> None:
    report.notes += comparability_notes(baseline.summary, summary)
    found, different = regressions(baseline.records, records)
    if different:
        report.notes.append(f"{different} case ids name different cases in the baseline "
                            "(seed, shapes or attributes differ); they were not compared")
    report.failures += _capped([_regression_line(o, n) for o, n in found], "regressions")
    grown = error_growth(baseline.summary, summary, factor)
    report.failures += _capped([_growth_line(*g, factor) for g in grown], "cells with error growth")
    if not found and not grown:
        report.held.append(f"no regressions against {baseline.where} and no worst-error growth "
                           f"beyond x{factor:g}")


def baseline_view(baseline: RunData, cell_counts: dict, records: list[dict]) -> dict:
    """What report.html shows of a run made with ``--baseline``: the baseline's pass rate and
    coverage, the regressions (passed there, fail now; the first :data:`SHOWN`) and the cases
    fixed, and each op x dtype whose pass rate or judged cases changed. ``cell_counts`` maps
    (op, dtype) to this run's verdict counts."""
    found, different = regressions(baseline.records, records)
    old_verdicts = {r["id"]: r["verdict"] for r in baseline.records}
    fixed = sum(1 for r in records if r["verdict"] in PASSED and old_verdicts.get(r["id"]) in FAILING)
    cells = []
    old_by_op = baseline.summary.get("by_op", {})
    for op, dtype in sorted({*cell_counts, *((o, d) for o, c in old_by_op.items() for d in c)}):
        old = old_by_op.get(op, {}).get(dtype, {}).get("counts", {})
        new = cell_counts.get((op, dtype), {})
        figures = (pass_rate(old), pass_rate(new), judged(old), judged(new))
        if figures[0] != figures[1] or figures[2] != figures[3]:
            cells.append(dict(zip(("op", "dtype", "old_rate", "new_rate", "old_judged", "new_judged"),
                                  (op, dtype, *figures))))
    return {"where": str(Path(baseline.where).resolve()),
            "backend_version": baseline.summary.get("backend_version"),
            "pass_rate": baseline.summary.get("pass_rate"),
            "coverage_text": coverage_text(baseline.summary.get("counts", {})),
            "regression_count": len(found), "fixed_count": fixed, "not_comparable": different,
            "regressions": [{"id": new["id"], "was": old["verdict"], "now": new["verdict"]}
                            for old, new in found[:SHOWN]],
            "cells": cells}


def evaluate(summary: dict, records: list[dict], criteria: Criteria,
             baseline: RunData | None = None) -> GateReport:
    """Apply every check of ``criteria`` (and the baseline's, if given) to a finished run."""
    report = GateReport()
    _floor_checks(report, summary, criteria)
    xpass = [r["id"] for r in records if r["verdict"] == "xpass"]
    if xpass:
        lines = [f"xpass {case_id}: expected to fail by the manifest, passed" for case_id in xpass]
        if criteria.strict_xfail:
            report.failures += _capped(lines, "xpass cases")
        else:
            report.notes.append(f"{len(xpass)} cases passed that the manifest expects to fail "
                                f"(xpass), e.g. {', '.join(xpass[:5])}")
    if baseline is not None:
        _baseline_checks(report, baseline, summary, records, criteria.max_error_growth)
    return report
