"""summary.md: short enough for a pull-request comment."""
from __future__ import annotations


def _rate(value) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}%"


def render_markdown(summary: dict, limit: int = 15) -> str:
    counts = summary["counts"]
    lines = [
        f"## conform: {summary['backend']} ({summary['backend_version']})",
        "",
        f"**Pass rate {_rate(summary['pass_rate'])}** over {summary['cases']} cases in "
        f"{summary['ops']} ops (seed {summary['seed']}, conform {summary['conform_version']}).",
        *([] if summary.get("complete", True) else [
            "", f"**Incomplete run: {summary['cases']} of {summary['cases_planned']} cases ran** "
                "(it was interrupted; `conform run ... --resume` finishes it)."]),
        "",
        "| " + " | ".join(counts) + " |",
        "|" + "---|" * len(counts),
        "| " + " | ".join(str(v) for v in counts.values()) + " |",
    ]
    bad = [(op, dtype, cell) for op, cells in summary["by_op"].items() for dtype, cell in cells.items()
           if cell["pass_rate"] is not None and cell["pass_rate"] < 1.0]
    if bad:
        lines += ["", "| op | dtype | pass rate | fail | error | crash | timeout |", "|---|---|---|---|---|---|---|"]
        for op, dtype, cell in sorted(bad, key=lambda t: t[2]["pass_rate"])[:limit]:
            c = cell["counts"]
            lines.append(f"| {op} | {dtype} | {_rate(cell['pass_rate'])} | {c['fail']} | {c['error']} "
                         f"| {c['crash']} | {c['timeout']} |")
        if len(bad) > limit:
            lines.append(f"\n… and {len(bad) - limit} more op x dtype cells below 100%.")
    return "\n".join(lines) + "\n"
