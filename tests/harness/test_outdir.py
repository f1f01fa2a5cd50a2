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


def test_results_and_the_lock_are_never_written_through_a_symbolic_link(tmp_path):
    """A results.jsonl or .conform.lock that is a link to a user's file: the run replaces the
    link (results.jsonl) or refuses (the lock), and the user's file is untouched."""
    from conform.harness.run.outdir import LOCK_FILE, OutputBusy, locked
    from conform.reports import ResultWriter

    victim = tmp_path / "precious.txt"
    victim.write_text("mine")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").symlink_to(victim)
    with ResultWriter(out / "results.jsonl") as writer:
        writer.write({"id": "a.0", "verdict": "pass"})
    assert victim.read_text() == "mine" and not (out / "results.jsonl").is_symlink()
    assert json.loads((out / "results.jsonl").read_text())["id"] == "a.0"
    (out / "results.jsonl").unlink()
    (out / "results.jsonl").symlink_to(victim)
    with pytest.raises(OSError):   # a resumed run appends to the file itself, never to a link
        ResultWriter(out / "results.jsonl", keep_bytes=0).__enter__()
    (out / LOCK_FILE).symlink_to(victim)
    with pytest.raises(OutputBusy, match="a symbolic link is never followed"):
        with locked(out):
            pass
    assert victim.read_text() == "mine"


def test_out_refuses_a_folder_conform_did_not_write_unless_forced(tmp_path, conform_cli):
    from conform.harness.cli.values import MARKER, UnusableDirectory, writable_directory

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "report.html").write_text("their own report")
    with pytest.raises(UnusableDirectory, match="holds files that conform did not write"):
        writable_directory(theirs, "--out")
    proc = conform_cli("run", "--backend", "numpy", "--ops", "add", "--dtypes", "float32",
                       "--max-examples", "1", "--out", theirs, "--quiet")
    assert proc.returncode == 2 and "pass --force" in proc.stderr
    assert (theirs / "report.html").read_text() == "their own report"
    assert writable_directory(theirs, "--out", force=True) == theirs and (theirs / MARKER).is_file()
    assert writable_directory(theirs, "--out") == theirs   # conform's now: written again freely
    assert writable_directory(tmp_path / "new" / "folder", "--out").is_dir()
