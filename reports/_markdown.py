"""summary.md: short enough for a pull-request comment.

Nothing from a spec, an adapter or a backend is inserted raw: every such text goes through
:func:`~conform.reports._text.markdown_text` (neutral, one line, Markdown and HTML escaped).
"""
from __future__ import annotations

from collections import Counter

from conform.reports._coverage import REASONS, coverage_text, not_expressible_text, rate_text
from conform.reports._portability import portability_markdown
from conform.reports._text import backend_label, markdown_text as md


def _unsupported_reasons(summary: dict) -> Counter:
    reasons: Counter = Counter()
    for cells in summary["by_op"].values():
        for cell in cells.values():
            for key, entry in (cell.get("unsupported_reasons") or {}).items():
                reasons[key] += entry["cases"]
    return reasons


def render_markdown(summary: dict, limit: int = 15) -> str:
    """The summary.md text of ``summary`` (a summary.json document)."""
    counts = summary["counts"]
    lines = [
        f"## conform: {md(backend_label(summary))} ({md(summary['backend_version'])})",
        "",
        f"**Pass rate {rate_text(summary['pass_rate'])}**, {coverage_text(counts)}, in "
        f"{summary['ops']} ops (seed {md(summary['seed'])}, conform {md(summary['conform_version'])}).",
        *([] if summary.get("complete", True) else [
            "", f"**Incomplete run: {summary['cases']} of {summary['cases_planned']} cases ran** "
                "(it was interrupted; `conform run ... --resume` finishes it)."]),
    ]
    if summary.get("subnormal_excused"):
        lines += ["", f"{summary['subnormal_excused']} cases pass only under the "
                      f"{md(summary.get('subnormals_applied', 'ftz'))} subnormal policy (a flushed "
                      "subnormal input or result accepted): under ieee they would fail."]
    reasons = _unsupported_reasons(summary)
    if reasons:
        lines += ["", "Unsupported: " + ", ".join(f"{n} {REASONS.get(key, key)}"
                                                   for key, n in reasons.most_common()) + "."]
    if not_expressible_text(summary):
        lines += ["", md(not_expressible_text(summary), limit=1000)]
    lines += [
        "",
        "| " + " | ".join(counts) + " |",
        "|" + "---|" * len(counts),
        "| " + " | ".join(str(v) for v in counts.values()) + " |",
    ]
    bad = [(op, dtype, cell) for op, cells in summary["by_op"].items() for dtype, cell in cells.items()
           if cell["pass_rate"] is not None and cell["pass_rate"] < 1.0]
    if bad:
        lines += ["", "| op | dtype | pass rate | judged | fail | error | crash | timeout |",
                  "|---|---|---|---|---|---|---|---|"]
        for op, dtype, cell in sorted(bad, key=lambda t: t[2]["pass_rate"])[:limit]:
            c = cell["counts"]
            lines.append(f"| {md(op)} | {md(dtype)} | {rate_text(cell['pass_rate'])} "
                         f"| {cell.get('judged', '–')} of {cell['cases']} | {c['fail']} | {c['error']} "
                         f"| {c['crash']} | {c['timeout']} |")
        if len(bad) > limit:
            lines.append(f"\n… and {len(bad) - limit} more op x dtype cells below 100%.")
    lines += portability_markdown(summary, limit)
    return "\n".join(lines) + "\n"
