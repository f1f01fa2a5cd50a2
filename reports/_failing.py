"""Every failing case of the report, for a vendor to work through: per op x dtype, the cases
grouped by the value plan that drew their inputs (the input region: edge values, specials,
wide range, ...), and every case as one row of data the page pages through and exports as CSV.

The rows are embedded in report.html as one JSON document (the page stays self-contained);
its ``<``, ``>`` and ``&`` are written as JSON escapes so that no text can end the script.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict

from conform.reports._summary import severity
from conform.reports._text import neutral

COLUMNS = ("case", "verdict", "plan", "shapes", "error/bound", "index", "inputs", "expected",
           "actual", "message")
MESSAGE_CHARS = 300   # a row's message is cut (the whole one is in results.jsonl)


def _short(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return json.dumps(value)
    return repr(value) if isinstance(value, float) else str(value)


def _row(record: dict) -> list:
    worst = record.get("worst") or {}
    ratio = severity(record)
    message = neutral(record.get("message") or "")
    message = message.split(f"(case {record['id']}): ", 1)[-1][:MESSAGE_CHARS]
    return [neutral(record["id"]), record["verdict"], neutral(str(record.get("plan") or "")),
            json.dumps(record.get("shapes")), "" if ratio == float("inf") else f"{ratio:.4g}",
            _short(worst.get("index")), _short(worst.get("inputs")), _short(worst.get("expected")),
            _short(worst.get("actual")), message]


def plan_groups(problems: list[dict]) -> list[tuple[str, int, Counter]]:
    """``(plan, cases, verdicts)`` of a cell's problem records, the largest group first."""
    groups: dict = defaultdict(Counter)
    for record in problems:
        groups[str(record.get("plan") or "–")][record["verdict"]] += 1
    return sorted(((plan, sum(c.values()), c) for plan, c in groups.items()),
                  key=lambda g: (-g[1], g[0]))


def failing_rows(problems: list[dict]) -> list[list]:
    """One row (see :data:`COLUMNS`) per problem record, grouped by plan as :func:`plan_groups`
    orders them, worst first within a group."""
    rank = {plan: i for i, (plan, _, _) in enumerate(plan_groups(problems))}
    ordered = sorted(problems, key=lambda r: (rank[str(r.get("plan") or "–")], -severity(r), r["id"]))
    return [_row(r) for r in ordered]


def embedded_json(document) -> str:
    """``document`` as JSON that is safe inside ``<script type="application/json">``."""
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
