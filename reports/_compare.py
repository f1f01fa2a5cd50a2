"""conform-compare.html: several runs side by side, matched by case id.

For the case ids every run has, it counts where the runs agree (same verdict) and where they
differ, and which run is closer to the oracle (the smaller worst error / bound ratio). A case
that some runs did not run (``unsupported``, ``skip``) while the others agree on it is a
*coverage difference*, not a disagreement: it says what one backend covers, not that the
backends give different answers.
"""
from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from conform.reports._html import ENV, anchor, cell_class, fmt, label_key, percent
from conform.reports._jsonl import check_schema_version, read_results
from conform.reports._portability import open_differences
from conform.reports._coverage import coverage_text
from conform.reports._summary import case_ratio, pass_rate, severity
from conform.reports._text import backend_label

DIFF_ROWS = 1000   # differing cases listed on the page; the rest are counted
from conform.verdicts import BROKEN, NOT_RUN  # noqa: E402


@dataclass
class Run:
    """One run directory: its label, summary.json (if any) and results by case id."""

    label: str
    directory: str
    summary: dict
    records: dict = field(default_factory=dict)


def load_run(directory) -> Run:
    """Read ``directory/results.jsonl`` (and summary.json where present)."""
    directory = Path(directory)
    summary_path = directory / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else {}
    check_schema_version(summary, summary_path)
    records = {r["id"]: r for r in read_results(directory / "results.jsonl")}
    for record in records.values():
        check_schema_version(record, directory / "results.jsonl")
        break
    return Run(backend_label(summary) or directory.name, str(directory), summary, records)


CASE_FIELDS = ("op", "dtype", "input_dtypes", "shapes", "attrs", "plan", "seed")


def same_case_key(record: dict) -> str:
    """What must match for two records with one id to be the same case (same generated inputs)."""
    return json.dumps([record.get(k) for k in CASE_FIELDS], sort_keys=True)


def closeness(record: dict) -> float | None:
    """Distance from the oracle: error/bound (see ``severity``); inf for error/crash/timeout;
    None where nothing was judged."""
    if record["verdict"] in BROKEN:
        return math.inf
    return None if case_ratio(record) is None else severity(record)


def closest(records: list[dict]) -> int | None:
    """Index of the record uniquely closest to the oracle; None for a tie or too few figures."""
    values = [(closeness(r), i) for i, r in enumerate(records)]
    values = sorted((v, i) for v, i in values if v is not None)
    if len(values) < 2 or values[0][0] == values[1][0]:
        return None
    return values[0][1]


def _unique_labels(runs: list[Run]) -> None:
    seen = Counter(run.label for run in runs)
    for run in runs:
        if seen[run.label] > 1:
            run.label = f"{run.label} ({run.directory})"


def _new_cell(n: int) -> dict:
    return {"cases": 0, "agree": 0, "differ": 0, "coverage": 0, "closer": [0] * n, "ties": 0,
            "counts": [Counter() for _ in range(n)]}


def compare_runs(runs: list[Run]) -> dict:
    """Agreement and closeness figures over the cases common to all ``runs`` (same id and inputs)."""
    n = len(runs)
    shared = [cid for cid in runs[0].records if all(cid in run.records for run in runs[1:])]
    common = [cid for cid in shared if len({same_case_key(run.records[cid]) for run in runs}) == 1]
    figures = {"common": len(common), "changed": len(shared) - len(common), "total": _new_cell(n),
               "agreed": Counter(), "differing": [], "coverage_only": [], "pairs": Counter(),
               "only": {run.label: len(run.records) - len(shared) for run in runs}}
    cells: dict = defaultdict(lambda: _new_cell(n))
    for cid in common:
        _compare_case(figures, cells, [run.records[cid] for run in runs])
    for cell in [figures["total"], *cells.values()]:
        cell["rates"] = [pass_rate(c) for c in cell.pop("counts")]
    figures["cells"] = sorted(cells.items(), key=lambda kv: (kv[0][0], label_key(kv[0][1])))
    return figures


def agreement(verdicts: list[str]) -> str:
    """``agree`` (one verdict), ``coverage`` (the runs that ran the case agree, some did not
    run it) or ``differ``."""
    if len(set(verdicts)) == 1:
        return "agree"
    return "coverage" if len({v for v in verdicts if v not in NOT_RUN}) <= 1 else "differ"


def _compare_case(figures: dict, cells: dict, records: list[dict]) -> None:
    verdicts = [r["verdict"] for r in records]
    winner = closest(records)
    kind = agreement(verdicts)
    first = records[0]
    for cell in (figures["total"], cells[(first["op"], first["dtype"])]):
        _tally(cell, verdicts, winner, kind)
    if kind == "agree":
        figures["agreed"][verdicts[0]] += 1
    else:
        figures["differing" if kind == "differ" else "coverage_only"].append(
            {"id": first["id"], "op": first["op"], "dtype": first["dtype"], "runs": records,
             "winner": winner})
    for i in range(len(records)):
        for j in range(i + 1, len(records)):
            pair = agreement([verdicts[i], verdicts[j]])
            figures["pairs"][(i, j, "coverage" if pair == "coverage" else pair == "agree")] += 1


def _tally(cell: dict, verdicts: list[str], winner: int | None, kind: str) -> None:
    cell["cases"] += 1
    cell[kind] += 1
    for counts, verdict in zip(cell["counts"], verdicts):
        counts[verdict] += 1
    if winner is None:
        cell["ties"] += 1
    else:
        cell["closer"][winner] += 1


def render_comparison(directories) -> str:
    """The comparison page for several run directories."""
    runs = [load_run(d) for d in directories]
    _unique_labels(runs)
    figures = compare_runs(runs)
    return ENV.get_template("compare.html.j2").render(
        runs=runs, f=figures, rows=DIFF_ROWS, portability=open_differences(runs, DIFF_ROWS), percent=percent, fmt=fmt, anchor=anchor,
        cell_class=cell_class, closeness=closeness, coverage_text=coverage_text)


def write_comparison(directories, out) -> Path:
    """Write the comparison page of ``directories`` to ``out``; returns its path."""
    out = Path(out)
    out.write_text(render_comparison(directories), encoding="utf-8")
    return out
