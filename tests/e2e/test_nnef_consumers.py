"""bench/nnef_consumers.py: the NNEF consumers' verdicts compared case by case (issue 32)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench import nnef_consumers

    return nnef_consumers


def _run_folder(folder: Path, verdicts: dict) -> None:
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(
        json.dumps({"id": case, "dtype": case.split(".")[1], "verdict": verdict}) + "\n"
        for case, verdict in verdicts.items()))


def test_pairs_are_compared_over_the_cases_both_judged(tmp_path, capsys):
    """Unsupported and impl_defined cases are not judged; error counts as failing."""
    _run_folder(tmp_path / "a", {"x.float32.0": "pass", "x.float32.1": "fail",
                                 "x.float32.2": "error", "x.float32.3": "pass",
                                 "x.float16.0": "pass", "x.float32.4": "unsupported"})
    _run_folder(tmp_path / "b", {"x.float32.0": "fail", "x.float32.1": "fail",
                                 "x.float32.2": "pass", "x.float32.3": "pass",
                                 "x.float16.0": "impl_defined", "x.float32.4": "fail"})
    assert _script().main([str(tmp_path), "--backends", "a,b"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "a: judged 5, failing 2"
    assert lines[-1] == ("a vs b: both judged 4; verdicts disagree on 2 (50.0%); both fail 1; "
                         "a alone fails 1, b alone fails 1")


def test_the_installed_consumers_run_and_compare(tmp_path, capsys):
    """The real runs: every NNEF consumer CI installs is found, and two of them judge nnef_add
    in float32 (the width both take)."""
    script = _script()
    assert {"nnef", "tract", "nnef-torch"} <= set(script.nnef_consumers())
    script.main([str(tmp_path), "--backends", "nnef,nnef-torch", "--ops", "nnef_add",
                 "--max-examples", "1"])
    out = capsys.readouterr().out
    assert "    float32 " in out and "    float64 " in out   # the second takes float64 too
    pair = out.splitlines()[-1]
    assert pair.startswith("nnef vs nnef-torch: both judged ") and \
        not pair.startswith("nnef vs nnef-torch: both judged 0;"), pair
