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



def test_a_document_per_fragment_runs_on_every_consumer(tmp_path):
    """Issue 32's round trip: generated documents of every NNEF-bound op (float32, one example
    per op) through each installed consumer's loader (the executor and nnef-tools read them with
    nnef.load_graph, tract with its own). Each consumer is handed nearly every op (the rest: no
    float32 case NNEF can express), and every failing record is explained by that consumer's
    failure catalog (docs/failures/<backend>.yaml)."""
    import subprocess

    from conform.generators import dtype_labels
    from conform.reports import census, load_catalog
    from conform.spec import load_specs

    specs = load_specs()
    ops = sorted(op for op, spec in specs.items() if "nnef" in spec.bindings
                 and any(label.split("->")[0] == "float32" for label in dtype_labels(spec)))
    assert len(ops) >= 100
    for backend in _script().nnef_consumers():
        out = tmp_path / backend
        subprocess.run([sys.executable, "-m", "conform.harness.cli", "run", "--backend", backend,
                        "--ops", ",".join(ops), "--dtypes", "float32", "--max-examples", "1",
                        "--no-manifest", "--quiet", "--out", str(out)], check=False,
                       capture_output=True, timeout=900)
        records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        missing = set(ops) - {r["op"] for r in records}
        assert len(missing) <= len(ops) // 20, (backend, sorted(missing))
        catalog = ROOT / "docs" / "failures" / f"{backend}.yaml"
        unexplained = census(load_catalog(catalog), records).unmatched
        assert not unexplained, (backend, unexplained)
