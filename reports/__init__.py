"""Result writers: results.jsonl, summary.json, junit.xml, summary.md and report.html."""
from __future__ import annotations

import json
from pathlib import Path

from conform.reports._html import render_html
from conform.reports._jsonl import ResultWriter, dumps, encode, read_results, to_json_safe
from conform.reports._junit import write_junit
from conform.reports._markdown import render_markdown
from conform.reports._summary import Tally, build_summary, pass_rate
from conform.reports._text import neutral_value

OUTPUT_FILES = ("results.jsonl", "summary.json", "report.html", "junit.xml", "summary.md")


def write_reports(out_dir: Path, meta: dict, conform_version: str, records: list | None = None,
                  tally: Tally | None = None) -> dict:
    """Write summary.json, report.html, junit.xml and summary.md from ``tally`` (a
    :class:`Tally` that has added every record) or else from ``records`` (default: read from
    ``out_dir/results.jsonl``).

    The report's repro commands name ``out_dir`` by its absolute path (``conform repro ID
    --from /abs/DIR``), so that they work from any directory. Strings of ``meta`` (the backend's
    version and device come from the adapter) are written neutral.
    """
    out_dir = Path(out_dir)
    if tally is None:
        if records is None:
            records = list(read_results(out_dir / "results.jsonl"))
        tally = Tally.of(records)
    summary = tally.summary(neutral_value(meta), conform_version)
    (out_dir / "summary.json").write_text(json.dumps(to_json_safe(summary), indent=2, allow_nan=False),
                                          encoding="utf-8")
    (out_dir / "summary.md").write_text(render_markdown(summary), encoding="utf-8")
    write_junit(out_dir / "junit.xml", records, summary, tally)
    (out_dir / "report.html").write_text(render_html(summary, records, run_dir=out_dir.resolve(), tally=tally),
                                         encoding="utf-8")
    return summary


__all__ = ["OUTPUT_FILES", "ResultWriter", "Tally", "build_summary", "dumps", "encode", "pass_rate", "read_results",
           "render_html", "render_markdown", "to_json_safe", "write_junit", "write_reports"]
