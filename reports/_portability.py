"""The portability section: per op with implementation-defined regions, what each backend
answered there. Where a standard leaves a value open, runtimes may differ, and the report says
where they do: how many cases fell in the op's open regions throughout (``impl_defined``), how
many were judged on their other elements with some open (``partly open``), how many elements
were open in all (``open elements``: counted, not judged), how many cases the backend answered
differently for the same values at different positions (``inconsistent``, a failure), and a
sample of its answers (the oracle's reading, then the backend's answer). The regions and their
reasons come from the specs (``definitions`` in summary.json)."""
from __future__ import annotations

from conform.reports._text import markdown_text as md

OPEN = ("impl_defined", "inconsistent")
RAN = OPEN + ("pass", "fail", "xpass", "xfail", "waived")   # verdicts of a computed case
SAMPLES = 3   # cases kept per op x dtype cell (those first in suite order)


def has_open(record: dict) -> bool:
    """Whether ``record`` is a case in an open region: wholly (``impl_defined``,
    ``inconsistent``), or with some open elements beside judged ones."""
    return record.get("verdict") in OPEN or bool(record.get("impl_defined_elements"))


def open_sample(record: dict) -> dict | None:
    """What a cell keeps of a record in an open region (:func:`has_open`): its id, verdict and
    first observed ``[answer, reference]`` pairs (as the record's ``observed`` holds them); None
    for other records."""
    if not has_open(record):
        return None
    return {"id": record["id"], "verdict": record["verdict"],
            "observed": [list(pair) for pair in (record.get("observed") or [])[:2]]}


def kept_samples(samples: list, order) -> list:
    """The :data:`SAMPLES` samples first in suite order (``order(case_id)``): the same whatever
    order the workers finished in."""
    return sorted(samples, key=lambda s: order(s["id"]))[:SAMPLES]


def portability_rows(summary: dict) -> list[dict]:
    """One row per op x dtype cell with cases in open regions: op, dtype, the op's regions, the
    counts and the samples."""
    definitions = summary.get("definitions") or {}
    rows = []
    for op, cells in sorted(summary["by_op"].items()):
        for dtype, cell in sorted(cells.items()):
            counts = cell.get("counts", {})
            if not any(counts.get(v) for v in OPEN) and not cell.get("open_elements"):
                continue
            regions = [r["region"] for r in (definitions.get(op) or {}).get("regions", [])]
            rows.append({"op": op, "dtype": dtype, "regions": regions,
                         "impl_defined": counts.get("impl_defined", 0),
                         "partly_open": cell.get("partly_open", 0),
                         "open_elements": cell.get("open_elements", 0),
                         "inconsistent": counts.get("inconsistent", 0),
                         "samples": cell.get("open_samples", [])})
    return rows


def _answers(samples: list) -> str:
    pairs = [f"{pair[1]} → {pair[0]}" for s in samples for pair in s["observed"][:1]]
    return "; ".join(pairs[:SAMPLES]) or "–"


def portability_markdown(summary: dict, limit: int = 15) -> list[str]:
    """The section's lines for summary.md (none where no case fell in an open region)."""
    rows = portability_rows(summary)
    if not rows:
        return []
    lines = ["", "### Portability: implementation-defined regions",
             "", "Where the standard leaves the value open, what this backend answered "
                 "(reference → answer); `impl_defined`: cases open throughout; `partly open`: "
                 "cases judged on their other elements; `open elements`: elements counted, not "
                 "judged; `inconsistent`: the same values answered differently at different "
                 "positions (a failure).",
             "", "| op | dtype | regions | impl_defined | partly open | open elements "
                 "| inconsistent | answers |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows[:limit]:
        lines.append(f"| {md(row['op'])} | {md(row['dtype'])} | {md(', '.join(row['regions']))} "
                     f"| {row['impl_defined']} | {row['partly_open']} | {row['open_elements']} "
                     f"| {row['inconsistent']} | {md(_answers(row['samples']))} |")
    if len(rows) > limit:
        lines.append(f"\n… and {len(rows) - limit} more op x dtype cells with open regions.")
    return lines


def _answered(record: dict | None) -> str:
    """A run's answers in an open region, as text: the backend's values of the first observed
    pairs, or its verdict where it observed none."""
    if record is None:
        return "–"
    if not has_open(record):
        return record.get("verdict", "–")
    answers = [str(pair[0]) for pair in (record.get("observed") or [])[:SAMPLES]]
    return ", ".join(answers) or record["verdict"]


def open_differences(runs, limit: int = 200) -> dict:
    """Where runtimes differ in open regions: the cases (by id, in every run) some run placed in
    an open region and whose answers there differ between the runs. ``runs``: objects with
    ``records`` by case id. Returns ``{"cases": [{id, op, dtype, answers: [text per run],
    inconsistent: [bool per run]}], "count": n}``, the first ``limit`` cases listed."""
    common = set.intersection(*(set(run.records) for run in runs)) if runs else set()
    found = []
    for case_id in sorted(common):
        records = [run.records[case_id] for run in runs]
        if not any(map(has_open, records)) or not all(r.get("verdict") in RAN for r in records):
            continue   # (a run that did not compute the case has no answer to compare)
        answers = [_answered(r) for r in records]
        if len(set(answers)) > 1:
            found.append({"id": case_id, "op": records[0]["op"], "dtype": records[0]["dtype"],
                          "answers": answers,
                          "inconsistent": [r.get("verdict") == "inconsistent" for r in records]})
    return {"cases": found[:limit], "count": len(found)}
