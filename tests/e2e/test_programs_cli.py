"""The program suite end to end: `conform run --programs` on onnxruntime, jax and nnef runs
chains of 2 to 4 ops as one model each, judges them node by node, and `conform repro` writes the
multi-node model in every format."""
from __future__ import annotations

import json
import subprocess
import sys

import onnx
import pytest

EVERY_FORMAT = "chain__exp__tanh__abs"   # ops bound in ONNX, XLA and NNEF alike


def _records(out):
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("backend", ["onnxruntime", "jax", "nnef"])
def test_the_program_suite_runs_judged_node_by_node(tmp_path, conform_cli, backend):
    out = tmp_path / "run"
    conform_cli("run", "--backend", backend, "--programs", "--ops", "chain__*", "--dtypes",
                "float32", "--max-examples", "6", "--out", out, "--quiet")
    records = _records(out)
    judged = [r for r in records if r["verdict"] in ("pass", "fail", "impl_defined")]
    assert len({r["op"] for r in judged}) >= 8, "most of the 12 chains should run"
    for record in judged:
        nodes = record["op"].split("__")[1:]
        assert [o["name"] for o in record["outputs"]] == [f"n{k}_{op}" for k, op in enumerate(nodes)]
    for record in (r for r in records if r["verdict"] == "fail"):
        assert record["worst"]["node"] in record["op"].split("__")
        assert f"worst {record['worst']['output']}[" in record["message"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run_key"]["programs"] is True


def test_repro_writes_a_program_in_every_format(tmp_path, conform_cli):
    out = tmp_path / "run"
    conform_cli("run", "--backend", "jax", "--programs", "--ops", EVERY_FORMAT, "--dtypes",
                "float32", "--max-examples", "3", "--out", out, "--quiet", check_status=0)
    record = _records(out)[0]
    repro = tmp_path / "repro"
    conform_cli("repro", record["id"], "--from", out, "--out", repro, "--format", "onnx",
                "--format", "stablehlo", "--format", "nnef", check_status=0)
    model = onnx.load(repro / "model.onnx")
    assert [n.op_type for n in model.graph.node] == ["Exp", "Tanh", "Abs"]
    assert [o.name for o in model.graph.output] == ["out0", "out1", "out2"]
    mlir = (repro / "model.mlir").read_text()
    assert all(f"stablehlo.{op}" in mlir for op in ("exponential", "tanh", "abs"))
    graph = (repro / "model.nnef" / "graph.nnef").read_text()
    assert "out1 = tanh(out0);" in graph and "out2 = abs(out1);" in graph
    proc = subprocess.run([sys.executable, str(repro / "repro.py")], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "nothing to reproduce: the recorded verdict is pass" in proc.stdout, \
        proc.stdout + proc.stderr
