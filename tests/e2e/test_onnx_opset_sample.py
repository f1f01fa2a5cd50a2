"""`conform run --onnx-opset N` works for every N from 11 to the newest opset onnxruntime loads
(28, the pinned onnx's newest; at 22 and above onnxruntime 1.32 lacks kernels for some
operators, which are unsupported there): a sample runs at each opset but the default, whose run
is the recorded baseline's (tests/e2e/test_baseline.py).

The sample at opset N is where the text in force changes at N: every op whose binding's opset
range starts at N or ends at N (below the newest), and every op whose ONNX operator has a schema
version at N, one example per op and dtype (float32, int64). At each opset:

* no sampled op bound there is ruled out by its range, and cases are judged (unsupported stays
  what onnxruntime lacks: a kernel, a type);
* every sampled op bound elsewhere is ruled out, case by case, with the range in its message;
* every failing record is explained by onnxruntime's failure catalog (docs/failures/
  onnxruntime.yaml), where deviations seen only at some opsets name them.
"""
from __future__ import annotations

import json
from pathlib import Path

import onnx.defs
import pytest

from conform.model_formats import DEFAULT_ONNX_OPSET, ONNX_OPSET_NEWEST
from conform.reports import census, load_catalog
from conform.spec import BUILTIN_DIR, load_specs

CATALOG = Path(__file__).resolve().parents[2] / "docs" / "failures" / "onnxruntime.yaml"
JUDGED = {"pass", "fail", "impl_defined", "waived", "xfail", "xpass", "error", "crash",
          "timeout", "inconsistent", "accepts_invalid"}


def _changed_at(op_type: str, opset: int) -> bool:
    try:
        return onnx.defs.get_schema(op_type, opset).since_version == opset
    except onnx.defs.SchemaError:
        return False


def sample(specs: dict, opset: int) -> dict[str, bool]:
    """The sampled ops at ``opset``, each with whether its binding holds there."""
    chosen = {}
    for name, spec in sorted(specs.items()):
        bound = spec.bindings.get("onnx")
        if bound is None:
            continue
        low, high = bound["opsets"]
        if opset == low or opset == high < ONNX_OPSET_NEWEST \
                or _changed_at(bound["op_type"], opset):
            chosen[name] = low <= opset <= high
    return chosen


@pytest.fixture(scope="module")
def specs():
    return load_specs(BUILTIN_DIR)


@pytest.mark.parametrize("opset", [n for n in range(11, ONNX_OPSET_NEWEST + 1)
                                   if n != DEFAULT_ONNX_OPSET])
def test_a_sample_runs_at_each_opset(opset, specs, tmp_path, conform_cli):
    ops = sample(specs, opset)
    assert ops, f"no op's text changes at opset {opset}"
    out = tmp_path / "run"
    proc = conform_cli("run", "--backend", "onnxruntime", "--onnx-opset", opset,
                       "--ops", ",".join(ops), "--dtypes", "float32,int64",
                       "--max-examples", "1", "--out", out, "--quiet")
    assert proc.returncode in (0, 1), proc.stderr   # 1: the default gate, on failures
    assert json.loads((out / "summary.json").read_text())["onnx_opset"] == opset
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    by_op: dict[str, list] = {}
    for record in records:
        by_op.setdefault(record["op"], []).append(record)
    for op, held in ops.items():
        mine = by_op.get(op, [])
        ruled_out = [r for r in mine if "is bound at opsets" in r.get("message", "")]
        if held:   # judged, or unsupported for another reason: a dtype, a missing kernel
            assert not ruled_out, f"{op} is bound at opset {opset}: {ruled_out[0]['message']}"
        else:
            assert {r["verdict"] for r in mine} <= {"unsupported"}, op
            assert ruled_out or not mine, f"{op} is not bound at {opset}: {mine[0]['message']}"
    judged = {r["op"] for r in records if r["verdict"] in JUDGED}
    assert judged & {op for op, held in ops.items() if held}, f"nothing judged at opset {opset}"
    unexplained = census(load_catalog(CATALOG), records).unmatched
    assert not unexplained, f"opset {opset}: failures no catalog entry explains: {unexplained}"
