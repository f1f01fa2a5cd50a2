"""An op with two named outputs (TopK) runs end to end on real backends: each output judged under
its own error model, both in every result line, and repro writes and checks the output that
holds the worst element."""
from __future__ import annotations

import json

import onnx
import pytest

from conform.spec import BUILTIN_DIR


def _records(out):
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("backend, op", [("onnxruntime", "onnx_top_k"), ("jax", "top_k"),
                                         ("numpy", "onnx_top_k")])
def test_both_outputs_are_judged_in_every_line(tmp_path, conform_cli, backend, op):
    out = tmp_path / "run"
    conform_cli("run", "--backend", backend, "--ops", op, "--dtypes", "float32,int32",
                "--max-examples", "12", "--out", out, "--quiet", check_status=0)
    records = _records(out)
    judged = [r for r in records if r["verdict"] in ("pass", "fail", "impl_defined")]
    assert len(judged) >= 20 and not [r for r in records if r["verdict"] == "fail"]
    for record in judged:
        assert [o["name"] for o in record["outputs"]] == ["values", "indices"]
        assert record["checked"] == sum(o["checked"] for o in record["outputs"])


def test_a_wrong_tie_order_fails_and_its_repro_checks_the_indices(tmp_path, conform_cli):
    """onnxruntime with an injected bug (equal values: the later index first) fails on the
    indices alone; repro names that output, writes the two-output model and reproduces."""
    out = tmp_path / "run"
    conform_cli("run", "--backend", "tests.harness.tie_breaking_backend:TieBreakingBackend",
                "--ops", "onnx_top_k", "--dtypes", "int32", "--max-examples", "30", "--out", out,
                "--quiet")
    failing = [r for r in _records(out) if r["verdict"] == "fail"]
    assert failing, "the judge let a wrong tie order pass"
    for record in failing:
        verdicts = {o["name"]: o["verdict"] for o in record["outputs"]}
        assert verdicts == {"values": "pass", "indices": "fail"}, record["message"]
        assert record["worst"]["output"] == "indices" and "worst indices[" in record["message"]
    repro = tmp_path / "repro"
    conform_cli("repro", failing[0]["id"], "--from", out, "--out", repro,
                "--format", "onnx", check_status=0)
    model = onnx.load(repro / "model.onnx")
    assert [o.name for o in model.graph.output] == ["out0", "out1"]
    checked = json.loads((repro / "case.json").read_text())
    assert (checked["output"], checked["output_name"]) == (1, "indices")
