"""The portability section (reports/_portability.py): per op x dtype with cases in open regions,
the backend's answers and its inconsistent cases, in summary.json, summary.md and report.html;
and on the comparison page, the open-region cases whose answers differ between runtimes."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from conform.reports import build_summary
from conform.reports._compare import load_run, render_comparison
from conform.reports._markdown import render_markdown
from conform.reports._portability import open_differences, portability_rows

SCHEMAS = Path(__file__).resolve().parents[2] / "reports" / "schemas"
REGIONS = [{"region": "nan_operand", "why": "the text says nothing of NaN"}]


def _open(record, verdict, index, answer, **extra):
    return record("relu", "float32", verdict, index, observed=[[answer, "nan"]],
                  **({"message": "relu inconsistent"} if verdict == "inconsistent" else {}), **extra)


def test_the_summary_keeps_the_first_open_cases_and_the_markdown_shows_them(record):
    records = [record("relu", "float32", "pass", 0), _open(record, "impl_defined", 12, 0.0),
               _open(record, "inconsistent", 3, "nan"), _open(record, "impl_defined", 4, "nan"),
               _open(record, "impl_defined", 2, 0.0),
               _open(record, "pass", 13, 7.0, impl_defined_elements=2)]   # partly open
    summary = build_summary(records, {"backend": "b", "seed": 0}, "0.0.test")
    summary["definitions"] = {"relu": {"defined_by": [], "why": {}, "regions": REGIONS}}
    cell = summary["by_op"]["relu"]["float32"]
    assert [s["id"] for s in cell["open_samples"]] == ["relu.float32.2", "relu.float32.3",
                                                       "relu.float32.4"]
    (row,) = portability_rows(summary)
    assert (row["regions"], row["impl_defined"], row["inconsistent"]) == (["nan_operand"], 3, 1)
    assert (row["partly_open"], row["open_elements"]) == (1, 2 + 3)   # (make_record: 1 each)
    text = render_markdown({**summary, "backend_version": "1", "conform_version": "0"})
    assert "### Portability: implementation-defined regions" in text
    assert "| relu | float32 | nan\\_operand | 3 | 1 | 5 | 1 | nan → 0.0; nan → nan; nan → nan |" \
        in text
    schema = json.loads((SCHEMAS / "summary.schema.json").read_text(encoding="utf-8"))
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(summary))
    assert not [e for e in errors if "open_samples" in str(e.path) or "regions" in str(e.path)]


def test_the_report_and_the_comparison_page_show_where_runtimes_differ(record, run_dir, tmp_path):
    a = [_open(record, "impl_defined", 0, 0.0), _open(record, "impl_defined", 1, "nan"),
         record("relu", "float32", "pass", 2),
         _open(record, "pass", 3, 0.0, impl_defined_elements=1)]   # partly open
    b = [_open(record, "impl_defined", 0, "nan"), _open(record, "inconsistent", 1, "nan"),
         record("relu", "float32", "unsupported", 2, message="no kernel"),
         _open(record, "pass", 3, 7.0, impl_defined_elements=1)]
    run_dir(tmp_path / "a", a, backend="alpha")
    run_dir(tmp_path / "b", b, backend="beta")
    assert 'id="portability"' in (tmp_path / "a" / "report.html").read_text(encoding="utf-8")
    runs = [load_run(tmp_path / "a"), load_run(tmp_path / "b")]
    found = open_differences(runs)
    assert found["count"] == 2 and found["cases"] == [
        {"id": "relu.float32.0", "op": "relu", "dtype": "float32", "answers": ["0.0", "nan"],
         "inconsistent": [False, False]},
        {"id": "relu.float32.3", "op": "relu", "dtype": "float32", "answers": ["0.0", "7.0"],
         "inconsistent": [False, False]}]
    page = render_comparison([tmp_path / "a", tmp_path / "b"])
    assert "Portability: open regions where the runtimes differ (2)" in page
