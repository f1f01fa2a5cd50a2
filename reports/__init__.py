"""Result writers: results.jsonl, summary.json, junit.xml, summary.md and report.html."""
from __future__ import annotations

import json
from pathlib import Path

from conform.reports._atomic import atomic_path, write_atomically
from conform.reports._certificate import write_certificate
from conform.reports._compare import write_comparison
from conform.reports._coverage import coverage_text, judged, rate_text
from conform.reports._definitions import op_definitions
from conform.reports._failures import (FAILING, CatalogEntry, CatalogError, census, explain,
                                       load_catalog)
from conform.reports._html import render_html
from conform.reports._jsonl import ResultWriter, dumps, encode, read_results, to_json_safe
from conform.reports._junit import write_junit
from conform.reports._markdown import render_markdown
from conform.reports._summary import Tally, build_summary, pass_rate
from conform.reports._text import neutral, neutral_value

OUTPUT_FILES = ("results.jsonl", "summary.json", "report.html", "junit.xml", "summary.md")


def write_reports(out_dir: Path, meta: dict, conform_version: str, records: list | None = None,
                  tally: Tally | None = None) -> dict:
    """Write summary.json, report.html, junit.xml and summary.md (each replaced atomically:
    summary.json first) from ``tally`` (a
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
    summary = write_summary(out_dir, meta, conform_version, tally)
    write_atomically(out_dir / "summary.md", render_markdown(summary))
    with atomic_path(out_dir / "junit.xml") as junit:
        write_junit(junit, records, summary, tally)
    write_atomically(out_dir / "report.html",
                     render_html(summary, records, run_dir=out_dir.resolve(), tally=tally))
    return summary


def write_summary(out_dir: Path, meta: dict, conform_version: str, tally: Tally) -> dict:
    """Write summary.json alone (atomically) from ``tally``; returns the summary."""
    summary = tally.summary(neutral_value(meta), conform_version)
    write_atomically(Path(out_dir) / "summary.json",
                     json.dumps(to_json_safe(summary), indent=2, allow_nan=False))
    return summary


__all__ = ["FAILING", "OUTPUT_FILES", "CatalogEntry", "CatalogError", "census", "explain", "load_catalog", "ResultWriter", "Tally", "build_summary", "coverage_text", "dumps", "encode",
           "judged", "neutral", "op_definitions", "pass_rate", "rate_text", "read_results",
           "render_html", "render_markdown", "to_json_safe", "write_atomically", "write_certificate", "write_comparison",
           "write_junit", "write_reports", "write_summary"]
