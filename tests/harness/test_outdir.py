"""The output folder's helpers: reading what a killed run wrote, and files replaced whole."""
from __future__ import annotations

import json

import pytest

from conform.harness.run.outdir import (NotResumable, STALE, check_same_run, complete_lines,
                                    read_previous, remove_stale_reports)
from conform.reports._atomic import atomic_path, write_atomically


def test_a_line_cut_short_by_a_kill_is_dropped_and_its_bytes_not_counted(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id": "a.0", "verdict": "pass"}\n\n{"id": "a.1", "verdict": "fail"}\n{"id": "a.2", "ver')
    records, valid = complete_lines(path)
    assert [r["id"] for r in records] == ["a.0", "a.1"]
    assert path.read_bytes()[:valid].endswith(b'"fail"}\n') and valid == 67


@pytest.mark.parametrize("line, message", [(b"{not json", "results.jsonl:2 is not JSON"),
                                           (b'["a list"]', "results.jsonl:2 is not a result record")])
def test_a_malformed_complete_line_is_named(tmp_path, line, message):
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id": "a.0"}\n' + line + b"\n")
    with pytest.raises(ValueError, match=message):
        complete_lines(path)
    (tmp_path / "summary.json").write_text(json.dumps({"run_key": {}}))
    with pytest.raises(NotResumable, match=f"cannot resume the run in {tmp_path}: .*{message}"):
        read_previous(tmp_path)


def test_previous_run_needs_its_key_and_must_match_it(tmp_path):
    assert read_previous(tmp_path) is None   # nothing there: a fresh start
    (tmp_path / "results.jsonl").write_bytes(b'{"id": "a.0"}\n')
    with pytest.raises(NotResumable, match="no summary.json"):
        read_previous(tmp_path)
    (tmp_path / "summary.json").write_text(json.dumps({"backend": "numpy"}))
    with pytest.raises(NotResumable, match="older conform"):
        read_previous(tmp_path)
    (tmp_path / "summary.json").write_text(json.dumps({"run_key": {"seed": 0, "ops": ["add"]}}))
    previous = read_previous(tmp_path)
    assert previous.done == {"a.0"}
    check_same_run(previous, {"seed": 0, "ops": ["add"]}, tmp_path)
    with pytest.raises(NotResumable, match=r"had ops=\['add'\], this one has ops=None"):
        check_same_run(previous, {"seed": 0, "ops": None}, tmp_path)


def test_stale_reports_go_and_summary_goes_unless_resuming(tmp_path):
    for name in (*STALE, "summary.json", "results.jsonl"):
        (tmp_path / name).write_text("old")
    remove_stale_reports(tmp_path, keep_summary=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl", "summary.json"]
    remove_stale_reports(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["results.jsonl"]


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "summary.json"
    write_atomically(path, "old")
    with pytest.raises(RuntimeError):
        with atomic_path(path) as temporary:
            temporary.write_text("half")
            raise RuntimeError("killed half-way")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["summary.json"]
    write_atomically(path, "new")
    assert path.read_text() == "new" and oct(path.stat().st_mode & 0o777) == "0o644"
