"""End-to-end: after real runs no file in conform's cache directory is a pickle, and crafted
pickles planted in every cache file are never run: the next run warns, remakes them and gives
the same results."""
from __future__ import annotations

import json
import os
import pickletools
import subprocess
import sys

from tests.spec.test_cache import crafted_pickle


def is_pickle(data: bytes) -> bool:
    """Whether ``data`` parses as a whole pickle (any protocol)."""
    if data[:1] == b"\x80" and len(data) > 1 and 2 <= data[1] <= 5:
        return True
    try:
        opcodes = list(pickletools.genops(data))
    except Exception:
        return False
    return bool(opcodes) and opcodes[-1][0].name == "STOP" and opcodes[-1][2] == len(data) - 1


def test_is_pickle_knows_a_pickle():
    assert is_pickle(crafted_pickle("x")) and is_pickle(b"(lp0\n.") and not is_pickle(b"{}")


def _run(tmp_path, out):
    env = {**os.environ, "CONFORM_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "conform.harness.cli", "run", "--backend", "onnxruntime",
         "--ops", "add,abs,reduce_sum", "--dtypes", "float32,int32", "--max-examples", "4",
         "--workers", "1", "--out", str(tmp_path / out)],
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    return proc, (tmp_path / out / "results.jsonl").read_text(encoding="utf-8")


def _strip_timing(results: str) -> list[str]:
    import json

    return [json.dumps({k: v for k, v in json.loads(line).items()
                        if not k.endswith("seconds") and k != "stderr"})
            for line in results.splitlines()]


def test_no_cache_file_is_a_pickle_and_a_planted_one_never_runs(tmp_path):
    _, first = _run(tmp_path, "first")
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    kinds = {p.relative_to(tmp_path / "cache").parts[0] for p in files}
    assert {"corpus", "specs", "manifests"} <= kinds, kinds
    assert [p for p in files if is_pickle(p.read_bytes())] == []

    sentinel = tmp_path / "ran"
    for path in files:
        path.write_bytes(crafted_pickle(sentinel))
    proc, second = _run(tmp_path, "second")
    assert not sentinel.exists()
    warnings = [line for line in proc.stderr.splitlines() if "damaged cache entry" in line]
    # the model store's entries are read in the workers: their warnings reach the records of
    # the cases that read them (a record's "stderr"); the store's ".pruned" marker is read for
    # its time only
    worker_lines = {text for record in second.splitlines()
                    for text in json.loads(record).get("stderr", "").splitlines()}
    warnings += [text for text in worker_lines if "damaged cache entry" in text]
    assert len(warnings) == len([p for p in files if p.name != ".pruned"]), proc.stderr
    assert _strip_timing(second) == _strip_timing(first)
    assert [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.name != ".pruned"
            and is_pickle(p.read_bytes())] == []
