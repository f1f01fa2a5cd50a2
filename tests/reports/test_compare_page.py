"""The comparison page (`conform report DIR_A DIR_B ...`) on synthetic runs."""
from __future__ import annotations

import re

from conform.harness.cli.main import main
from conform.reports._compare import closest, compare_runs, load_run


def _figure(page: str, name: str) -> int:
    return int(re.search(rf'<b id="{name}">(\d+)</b>', page).group(1))


def _two_runs(record, run_dir, tmp_path):
    a = [record("add", "float32", "pass", 0, error=0.25), record("add", "float32", "pass", 1, error=0.5),
         record("add", "float32", "fail", 2, error=8.0), record("abs", "int32", "crash", 0),
         record("abs", "int32", "pass", 1, error=0.0), record("add", "float32", "pass", 9)]
    b = [record("add", "float32", "pass", 0, error=0.5), record("add", "float32", "pass", 1, error=0.5),
         record("add", "float32", "pass", 2, error=0.1), record("abs", "int32", "pass", 0, error=0.0),
         record("abs", "int32", "pass", 1, error=0.0), record("mul", "float32", "pass", 0)]
    run_dir(tmp_path / "a", a, backend="alpha")
    run_dir(tmp_path / "b", b, backend="beta")
    return tmp_path / "a", tmp_path / "b"


def test_agreement_disagreement_and_closeness_counts(record, run_dir, tmp_path):
    a, b = _two_runs(record, run_dir, tmp_path)
    figures = compare_runs([load_run(a), load_run(b)])
    assert figures["common"] == 5 and figures["total"]["agree"] == 3 and figures["total"]["differ"] == 2
    assert figures["agreed"] == {"pass": 3}
    assert figures["total"]["closer"] == [1, 2]  # a: add.0; b: add.2 and the crash abs.0
    assert figures["total"]["ties"] == 2
    assert figures["only"] == {"alpha": 1, "beta": 1}
    assert [d["id"] for d in figures["differing"]] == ["add.float32.2", "abs.int32.0"]


def test_cli_writes_the_page_with_those_counts(record, run_dir, tmp_path, monkeypatch):
    a, b = _two_runs(record, run_dir, tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(a), str(b)]) == 0
    page = (tmp_path / "conform-compare.html").read_text()
    assert "conform comparison: alpha vs beta" in page
    assert (_figure(page, "common"), _figure(page, "agree"), _figure(page, "differ")) == (5, 3, 2)
    differing = page[page.index('id="differing"'):]
    assert differing.count("<tr><td><code>") == 2 and "add.float32.2" in differing
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "x.html")]) == 0
    assert (tmp_path / "x.html").exists()


def test_same_id_with_different_inputs_is_not_compared(record, run_dir, tmp_path):
    run_dir(tmp_path / "a", [record("add", "float32", "pass", 0), record("add", "float32", "pass", 1)])
    run_dir(tmp_path / "b", [record("add", "float32", "fail", 0, error=3.0, seed=77),
                             record("add", "float32", "pass", 1)])
    figures = compare_runs([load_run(tmp_path / "a"), load_run(tmp_path / "b")])
    assert figures["common"] == 1 and figures["changed"] == 1 and figures["total"]["differ"] == 0


def test_three_runs_get_pairwise_counts_and_unique_labels(record, run_dir, tmp_path):
    for name, verdict in (("x", "pass"), ("y", "fail"), ("z", "pass")):
        error = 2.0 if verdict == "fail" else 0.0
        run_dir(tmp_path / name, [record("add", "float32", verdict, 0, error=error)])
    out = tmp_path / "cmp.html"
    assert main(["report", *(str(tmp_path / n) for n in "xyz"), "--out", str(out)]) == 0
    page = out.read_text()
    assert 'id="pairs"' in page and f"synthetic ({tmp_path / 'x'})" in page
    assert _figure(page, "differ") == 1


def test_escapes_messages_from_backends(record, run_dir, tmp_path):
    evil = "<script>alert(1)</script>"
    run_dir(tmp_path / "a", [record("add", "float32", "error", 0, message=evil)])
    run_dir(tmp_path / "b", [record("add", "float32", "pass", 0)])
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "c.html")]) == 0
    page = (tmp_path / "c.html").read_text()
    assert evil not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_closest_needs_a_unique_minimum(record):
    fine, worse = record("a", "f", "pass", error=0.1), record("a", "f", "pass", error=0.4)
    assert closest([worse, fine]) == 1 and closest([fine, fine]) is None
    assert closest([record("a", "f", "crash"), worse]) == 1
    assert closest([record("a", "f", "unsupported"), worse]) is None


def test_usage_errors(record, run_dir, tmp_path, capsys):
    run_dir(tmp_path / "a", [record("add", "float32")])
    assert main(["report", str(tmp_path / "a"), "--out", str(tmp_path / "c.html")]) == 2
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "missing")]) == 2
    assert "missing has no results.jsonl" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "a")]) == 0  # one DIR: re-render in place
