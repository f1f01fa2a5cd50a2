"""``conform fuzz`` through the adapter API, its outputs (results.jsonl with each graph's nodes,
summary.json, report.html's graphs section, under the result and summary schemas), the
deduplication of its reduced failures, the gate on its results, and ``conform repro`` of a
graph."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "reports" / "schemas"


def _mutant():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.mutants import ConstantFoldedInHalf

    return ConstantFoldedInHalf


def test_a_campaign_on_an_adapter_reduces_dedups_reports_and_repros(tmp_path, conform_cli,
                                                                    specs, monkeypatch):
    """A float16 constant folding injected through the adapter API (bench/mutants/graph.py)
    fails graph 5 of its campaign; the failure is reduced to at most 3 nodes, keyed by backend
    and version, reduced ops and symptom, listed once in summary.json and report.html, and
    ``conform repro`` writes the reduced graph as a valid ONNX model with its inputs and a
    repro.py that runs it."""
    cls = _mutant()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "run"
    conform_cli("fuzz", "--backend", f"bench.mutants:{cls.__name__}", "--ops",
                ",".join(cls.fuzz_ops), "--budget", 6, "--max-nodes", cls.max_nodes,
                "--seed", cls.seed, "--out", out, check_status=1)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    summary = json.loads((out / "summary.json").read_text())
    result_schema = json.loads((SCHEMAS / "result.schema.json").read_text())
    for record in records:
        jsonschema.validate(record, result_schema)
        assert record["op"] == "graph" and record["nodes"]
    jsonschema.validate(summary, json.loads((SCHEMAS / "summary.schema.json").read_text()))

    failed = {r["id"]: r for r in records if r.get("failure", {}).get("reduced")}
    assert "graph.5" in failed, [(r["id"], r["verdict"]) for r in records]
    failure = failed["graph.5"]["failure"]
    assert len(failure["nodes"]) <= 3 and failure["deterministic"]
    assert failure["key"].startswith(f"bench.mutants:{cls.__name__} onnxruntime ")
    distinct = summary["fuzz"]["distinct_failures"]
    assert sorted(f["key"] for f in distinct) == sorted({f["failure"]["key"] for f in failed.values()})
    assert sum(f["graphs"] for f in distinct) == len(failed)
    assert all(f["failure"]["duplicate_of"] in (None, *failed) for f in failed.values())
    page = (out / "report.html").read_text()
    assert 'id="graphs"' in page and "conform repro graph." in page
    from conform.harness.cli.main import main   # the lines feed the gate as any run's do

    assert main(["gate", str(out), "--no-manifest", "--min-pass-rate", "1"]) == 1
    assert main(["gate", str(out), "--no-manifest", "--min-pass-rate", "0.1"]) == 0

    from conform.harness.assurance.repro import write_repro

    written = write_repro(out, "graph.5", specs)
    model = onnx.load(str(written / "model-instrumented.onnx"))
    onnx.checker.check_model(model, full_check=True)
    data = json.loads((written / "graph.json").read_text())
    assert data["signature"] == data["recorded_signature"] and len(data["nodes"]) <= 3
    feeds = dict(np.load(written / "inputs.npz"))
    assert set(feeds) == {i.name for i in model.graph.input}
    assert data["models"]["model-instrumented.onnx"]["outputs"] == \
        [o.name for o in model.graph.output]
    proc = subprocess.run([sys.executable, str(written / "repro.py")], capture_output=True,
                          text=True, timeout=300)   # plain onnxruntime: it runs, printing values
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == ("runs on onnxruntime; the failure was on "
                                           f"{data['backend']} ({data['backend_version']})")
    assert data["backend"] == f"bench.mutants:{cls.__name__}"
    assert proc.stdout.count("farthest at ") == sum(map(len, (
        model_io["outputs"] for model_io in data["models"].values())))
