"""Caching, batching and workers change how fast a run is, never what it finds."""
from __future__ import annotations

import json

TIMING = {"seconds", "judge_seconds"}


def _records(directory):
    lines = (directory / "results.jsonl").read_text().splitlines()
    records = [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines]
    return sorted(records, key=lambda r: r["id"])


def test_verdicts_and_error_figures_do_not_depend_on_cache_or_workers(tmp_path, conform_cli,
                                                                      monkeypatch):
    monkeypatch.setenv("CONFORM_CACHE_DIR", str(tmp_path / "cache"))
    selection = ["--backend", "onnxruntime", "--ops", "add,exp,conv,reduce_sum,pad,select",
                 "--max-examples", "8", "--quiet"]
    conform_cli("run", *selection, "--workers", "1", "--no-cache", "--out", tmp_path / "plain",
                check_status=0)
    conform_cli("run", *selection, "--workers", "2", "--out", tmp_path / "cold", check_status=0)
    conform_cli("run", *selection, "--workers", "2", "--out", tmp_path / "warm", check_status=0)
    assert any((tmp_path / "cache" / "corpus").iterdir())
    plain = _records(tmp_path / "plain")
    assert len(plain) > 100
    assert _records(tmp_path / "cold") == plain
    assert _records(tmp_path / "warm") == plain
    by_op = json.loads((tmp_path / "plain" / "summary.json").read_text())["by_op"]
    for run in ("cold", "warm"):   # including the worst case of each op x dtype, ties and all
        assert json.loads((tmp_path / run / "summary.json").read_text())["by_op"] == by_op
