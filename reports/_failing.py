"""Every failing case of the report, for a vendor to work through: per op x dtype, the cases
grouped by the value plan that drew their inputs (edge values, specials, wide range, ...) and
by the region of their worst element (a NaN, subnormal, infinite or zero input, else a
subnormal, zero, infinite or NaN expected result, else ordinary values), and every case as one
row of data the page pages through and exports as CSV.

The rows are embedded in report.html as one JSON document (the page stays self-contained);
its ``<``, ``>`` and ``&`` are written as JSON escapes so that no text can end the script.
"""
from __future__ import annotations

import json
import math
from collections import Counter, defaultdict

from conform.reports._summary import severity
from conform.reports._text import neutral
from conform.dtypes import COMPLEX_COMPONENTS, FLOAT_FORMATS, STRING

COLUMNS = ("case", "verdict", "plan", "region", "shapes", "error/bound", "index", "inputs", "expected",
           "actual", "message")
MESSAGE_CHARS = 300   # a row's message is cut (the whole one is in results.jsonl)


def _short(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return json.dumps(value)
    return repr(value) if isinstance(value, float) else str(value)


def _kind(value, dtype: str) -> str:
    """nan, inf, subnormal, zero or normal: the class of one recorded element value."""
    if isinstance(value, list):   # the elements feeding one output (a slice, window)
        kinds = {_kind(v, dtype) for v in value}
        return next((k for k in _PRIORITY if k in kinds), "normal")
    if dtype == STRING:   # text: no special values
        return "normal"
    if isinstance(value, str) and value.endswith(("j", "j)")):   # complex: "(1-2j)", "1j"
        number = complex(value)
        return _kind([number.real, number.imag], COMPLEX_COMPONENTS.get(dtype, dtype))
    if isinstance(value, str):
        value = float(value)   # 'nan', 'inf', '-inf'
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "normal"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf"
    if value == 0:
        return "zero"
    fmt = FLOAT_FORMATS.get(dtype)
    return "subnormal" if fmt is not None and abs(value) < fmt.min_normal else "normal"


_PRIORITY = ("nan", "subnormal", "inf", "zero")   # the rarer the class, the likelier the trigger


def worst_region(record: dict) -> str:
    """The input region of a case's worst element: '<kind> input' for the first special kind
    among its inputs (NaN, subnormal, infinity, zero), else '<kind> result' for its expected
    value, else 'ordinary values'; '–' where no element was judged (errors, crashes)."""
    worst = record.get("worst")
    if not worst:
        return "–"
    dtypes = record.get("input_dtypes") or []
    kinds = {_kind(v, dtypes[i] if i < len(dtypes) else record.get("dtype", ""))
             for i, v in enumerate(worst.get("inputs") or []) if v is not None}
    for kind in _PRIORITY:
        if kind in kinds:
            return f"{kind} input"
    result = _kind(worst.get("expected"), record.get("out_dtype") or "")
    return "ordinary values" if result == "normal" else f"{result} result"


def _row(record: dict) -> list:
    worst = record.get("worst") or {}
    ratio = severity(record)
    message = neutral(record.get("message") or "")
    message = message.split(f"(case {record['id']}): ", 1)[-1][:MESSAGE_CHARS]
    return [neutral(record["id"]), record["verdict"], neutral(str(record.get("plan") or "")),
            worst_region(record),
            json.dumps(record.get("shapes")), "" if ratio == float("inf") else f"{ratio:.4g}",
            _short(worst.get("index")), _short(worst.get("inputs")), _short(worst.get("expected")),
            _short(worst.get("actual")), message]


def _group(record: dict) -> tuple[str, str]:
    return str(record.get("plan") or "–"), worst_region(record)


def plan_groups(problems: list[dict]) -> list[tuple[str, str, int, Counter]]:
    """``(plan, region, cases, verdicts)`` of a cell's problem records, grouped by value plan
    and the region of the worst element (:func:`worst_region`), the largest group first."""
    groups: dict = defaultdict(Counter)
    for record in problems:
        groups[_group(record)][record["verdict"]] += 1
    return sorted(((plan, region, sum(c.values()), c) for (plan, region), c in groups.items()),
                  key=lambda g: (-g[2], g[0], g[1]))


def failing_rows(problems: list[dict]) -> list[list]:
    """One row (see :data:`COLUMNS`) per problem record, in the order of :func:`plan_groups`,
    worst first within a group."""
    rank = {(plan, region): i for i, (plan, region, _, _) in enumerate(plan_groups(problems))}
    ordered = sorted(problems, key=lambda r: (rank[_group(r)], -severity(r), r["id"]))
    return [_row(r) for r in ordered]


def embedded_json(document) -> str:
    """``document`` as JSON that is safe inside ``<script type="application/json">``."""
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
