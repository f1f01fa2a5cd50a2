"""report.html: one self-contained page (Jinja2, autoescaped, no external resources).

Everything from specs, adapters and backends reaches the page through Jinja2's autoescaping,
after :func:`~conform.reports._text.neutral` (the environment's ``finalize``: control characters
and bidi overrides become visible escapes); the Python side only prepares plain data (numbers,
strings, geometry) for the templates.
"""
from __future__ import annotations

import functools
import math
import re
import shlex
from collections import Counter
from fractions import Fraction

import jinja2

from conform.reports._accuracy import error_plot

from conform.reports._coverage import (REASONS, SHORT_REASONS, coverage_text, not_expressible_text,
                                      rate_text, reasons_text)
from conform.reports._failing import COLUMNS, embedded_json, failing_rows, plan_groups
from conform.reports._portability import portability_rows
from conform.reports._summary import PROBLEMS as BAD
from conform.reports._summary import Tally, pass_rate, severity, special_value_failure
from conform.reports._text import neutral
from conform.verdicts import BROKEN, CORE


def _finalize(value):
    """What every ``{{ expression }}`` outputs: plain strings made neutral (Markup, which the
    templates build themselves, is left as it is)."""
    return neutral(value) if type(value) is str else value


ENV = jinja2.Environment(loader=jinja2.PackageLoader("conform.reports", "templates"),
                         autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
                         trim_blocks=True, lstrip_blocks=True, finalize=_finalize)
# No compiled templates are kept on disk: Jinja2's bytecode cache stores a pickle and marshalled
# code, which a cache directory from elsewhere could turn into code run by the next report.

CORE_VERDICTS = CORE
DETAILS_PER_CELL = 5          # failure details rendered per op x dtype; the rest are counted
MESSAGE_CHARS = 2000          # longer messages are cut (the full text stays in results.jsonl)
TRACEBACK_CHARS = 2000        # tracebacks keep their tail, where the exception is
CARD_INPUT_CHARS = 160        # the worst element's inputs on an op x dtype card (a slice may be long)

ENV_FIELDS = (("backend_name", "backend"), ("backend", "loaded as (--backend)"), ("backend_version", "runtime version"), ("device", "device"),
              ("model_format", "model format"), ("subnormals_declared", "subnormals declared"),
              ("subnormals_applied", "subnormals applied"),
              ("subnormal_excused", "cases passing only under the ftz policy"),
              ("conform_version", "conform version"),
              ("seed", "seed"), ("max_examples", "max examples"),
              ("worker_restarts", "worker restarts"), ("wall_seconds", "wall time (s)"))

_KIND_ORDER = {"float": 0, "bfloat": 0, "int": 1, "uint": 2, "bool": 3}


def dtype_key(name: str) -> tuple:
    """Sort key for dtype names: floats, signed ints, unsigned ints, bool; by width within a kind."""
    match = re.fullmatch(r"([a-z]+?)(\d*)", name)
    if not match:
        return (9, 0, name)
    kind, bits = match.groups()
    return (_KIND_ORDER.get(kind, 8), int(bits or 0), name)


def anchor(*parts: str) -> str:
    """An HTML id made of ``parts`` with anything outside [A-Za-z0-9_-] replaced."""
    return re.sub(r"[^\w-]+", "_", "-".join(parts).replace("->", "-to-"))


def cell_class(counts: dict) -> str:
    """The matrix colour of an op x dtype cell from its verdict counts."""
    if any(counts.get(v) for v in BROKEN):
        return "err"
    if counts.get("fail"):
        return "fail"
    if counts.get("pass") or counts.get("xpass"):
        return "pass"
    return "impl" if counts.get("impl_defined") else "na"


#: A pass rate as text, as everywhere (:func:`conform.reports.rate_text`: rounded down).
percent = rate_text


def fmt(value) -> str:
    """A number for display: short for floats, as-is otherwise; '–' for missing."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def value_text(value, nested: bool = False) -> str:
    """An element value exactly as recorded (repr of floats keeps every digit); a list of inputs
    in parentheses, and within it, the elements feeding one (a slice, window or patch) in brackets."""
    if value is None:
        return "?"
    if isinstance(value, list):
        inner = ", ".join(value_text(v, nested=True) for v in value)
        return f"[{inner}]" if nested else f"({inner})"
    return repr(value) if isinstance(value, float) else str(value)


def shapes_text(shapes) -> str:
    """Input shapes as '4×5×6, scalar'."""
    return ", ".join("×".join(map(str, s)) if s else "scalar" for s in shapes or [])


def clip(text, limit: int, tail: bool = False) -> str:
    """``text`` cut to ``limit`` characters, saying so."""
    text = text or ""
    if len(text) <= limit:
        return text
    if tail:
        return f"[… {len(text) - limit} characters cut; see results.jsonl]\n" + text[-limit:]
    return text[:limit] + f"\n[… {len(text) - limit} characters cut; see results.jsonl]"


@functools.lru_cache(maxsize=64)   # every cell's histogram has the same edges
def bin_label(edge) -> str:
    """'1/16', '4', '∞' for a histogram bin edge (floats or 'inf')."""
    value = float(edge)
    if math.isinf(value):
        return "∞"
    frac = Fraction(value).limit_denominator(1 << 20)
    return str(frac.numerator) if frac.denominator == 1 else f"{frac.numerator}/{frac.denominator}"


def histogram(counts, bins, width: int = 22, height: int = 44) -> dict | None:
    """Bar geometry for the error/bound histogram (log-scaled counts); None when empty.

    Bins are (lo, hi], the first [0, 1/16]; bins whose upper edge is at most 1 are within the
    bound and drawn as passing, the others as exceeding it.
    """
    if not counts or not any(counts):
        return None
    top = math.log1p(max(counts))
    labels = [bin_label(b) for b in bins]
    bars = []
    for i, count in enumerate(counts):
        h = 0.0 if not count else max(1.5, round(height * math.log1p(count) / top, 1))
        lo = "[" if i == 0 else "("
        bars.append({"x": i * width, "h": h, "y": round(height - h, 1), "n": count,
                     "over": float(bins[i + 1]) > 1.0,
                     "title": f"{lo}{labels[i]}, {labels[i + 1]}]: {count} elements"})
    limit = next((i for i, b in enumerate(bins) if float(b) >= 1.0), len(bins) - 1)
    return {"bars": bars, "labels": labels, "w": width, "h": height,
            "width": width * len(counts), "bound_x": limit * width}


def problems_by_cell(tally: Tally, limit: int = DETAILS_PER_CELL) -> dict:
    """Per (op, dtype): the ``limit`` worst problem records and a Counter of the verdicts left out."""
    out = {}
    for key, cell in tally.cells.items():
        if cell["problems"]:
            bad = sorted(cell["problems"], key=severity, reverse=True)
            out[key] = (bad[:limit], Counter(r["verdict"] for r in bad[limit:]))
    return out


def worst_elements(tally: Tally) -> dict:
    """Per (op, dtype): the record of its worst judged case, where that names a worst element
    (a case whose every element matched exactly names none)."""
    return {key: cell["worst_record"] for key, cell in tally.cells.items()
            if cell["worst_record"] is not None and cell["worst_record"].get("worst")}


def matrix(summary: dict) -> tuple[list[str], list[dict]]:
    """Columns and rows of the op x dtype matrix. A conversion label 'a->b' goes to the row
    'op → b', column 'a', so conversions do not widen the table."""
    rows: dict = {}
    columns = set()
    for op, cells in summary["by_op"].items():
        for label, cell in cells.items():
            source, _, target = label.partition("->")
            columns.add(source)
            row = rows.setdefault((op, target), {"op": op, "target": target, "cells": {}, "bad": False})
            row["cells"][source] = {"label": label, "cell": cell, "id": anchor("c", op, label)}
            row["bad"] = row["bad"] or any(cell["counts"].get(v) for v in BAD)
    return sorted(columns, key=dtype_key), [rows[k] for k in sorted(rows)]


def label_key(label: str) -> tuple:
    """Sort key for dtype labels, conversions ('a->b') after their source type's plain label."""
    source, _, target = label.partition("->")
    return dtype_key(source), dtype_key(target) if target else ()


def op_panels(summary: dict) -> list[dict]:
    """Per op: total verdict counts, pass rate and its cells in dtype order."""
    panels = []
    for op, cells in summary["by_op"].items():
        counts = Counter()
        for cell in cells.values():
            counts.update(cell["counts"])
        panels.append({"op": op, "counts": counts, "rate": pass_rate(counts),
                       "bad": any(counts[v] for v in BAD),
                       "cells": [(label, cells[label], anchor("c", op, label))
                                 for label in sorted(cells, key=label_key)]})
    return panels


def na_reason(cell: dict) -> str:
    """Why nothing of an op x dtype cell was judged, in short: the reason most of its
    unsupported cases share, else 'impl-defined' or 'excused' (by a manifest)."""
    reasons = cell.get("unsupported_reasons") or {}
    if reasons:
        key = max(reasons, key=lambda k: reasons[k]["cases"])
        return SHORT_REASONS.get(key, key)
    return "impl-defined" if cell["counts"].get("impl_defined") else "excused"


def failing_data(tally: Tally, repro_dir: str) -> dict:
    """The JSON document the page embeds: every problem case of each op x dtype card (keyed by
    the card's id), one row per case, with its repro command."""
    cells = {}
    for (op, label), cell in tally.cells.items():
        if cell["problems"]:
            rows = failing_rows(cell["problems"])
            for row in rows:
                row.append(f"conform repro {shlex.quote(row[0])} --from {repro_dir}")
            cells[anchor("c", op, label)] = {"title": f"{op} {label}", "rows": rows}
    return {"columns": [*COLUMNS, "repro"], "cells": cells}


def render_html(summary: dict, records: list[dict], run_dir=None, tally: Tally | None = None) -> str:
    """The report page for one run; ``run_dir`` (as given) goes into repro commands.
    ``tally``, if given, has added every record (and ``records`` is not read again)."""
    columns, rows = matrix(summary)
    tally = tally or Tally.of(records)
    problems = problems_by_cell(tally)
    repro_dir = shlex.quote(str(run_dir)) if run_dir is not None else "DIR"
    groups = {key: plan_groups(cell["problems"]) for key, cell in tally.cells.items() if cell["problems"]}
    return ENV.get_template("report.html.j2").render(
        summary=summary, columns=columns, rows=rows, problems=problems, ops=op_panels(summary),
        worsts=worst_elements(tally), groups=groups,
        failing=embedded_json(failing_data(tally, repro_dir)),
        definitions=summary.get("definitions") or {}, baseline=summary.get("baseline"),
        portability=portability_rows(summary),
        coverage_text=coverage_text, reasons_text=reasons_text, na_reason=na_reason,
        not_expressible=not_expressible_text(summary),
        reason_names=REASONS,
        core=CORE_VERDICTS, env_fields=ENV_FIELDS, bins=summary.get("histogram_bins", []),
        repro_dir=repro_dir,
        cell_class=cell_class, percent=percent, fmt=fmt, value_text=value_text,
        shapes_text=shapes_text, clip=clip, histogram=histogram, anchor=anchor, quote=shlex.quote,
        error_plot=error_plot, zip=zip,
        special=special_value_failure, limits={"message": MESSAGE_CHARS, "traceback": TRACEBACK_CHARS,
                                                 "card": CARD_INPUT_CHARS})
