"""report.html: one self-contained page (Jinja2, autoescaped, no external resources)."""
from __future__ import annotations

import jinja2

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("conform.reports", "templates"),
                          autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
                          trim_blocks=True, lstrip_blocks=True)

CELL_CLASS = {"pass": "ok", "fail": "bad", "error": "bad", "crash": "bad", "timeout": "bad",
              "impl_defined": "impl", "unsupported": "na"}


def _cell_class(cell: dict) -> str:
    counts = cell["counts"]
    if any(counts[v] for v in ("fail", "error", "crash", "timeout")):
        return "bad"
    if counts["pass"]:
        return "ok"
    return "impl" if counts["impl_defined"] else "na"


def _fmt(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def render_html(summary: dict, records: list[dict]) -> str:
    dtypes = sorted({d for cells in summary["by_op"].values() for d in cells})
    problems = [r for r in records if r["verdict"] in ("fail", "error", "crash", "timeout")]
    return _ENV.get_template("report.html.j2").render(
        summary=summary, dtypes=dtypes, problems=problems, cell_class=_cell_class, fmt=_fmt,
        rate=lambda v: "n/a" if v is None else f"{100 * v:.2f}%")
