"""ONNX models are built at the run's opset (--onnx-opset), and a binding's opset range rules
the op out elsewhere."""
from __future__ import annotations

import json

import collections

import onnx
import onnx.defs
from onnxruntime.capi import _pybind_state

from conform.model_formats import DEFAULT_ONNX_OPSET, ONNX_OPSET_NEWEST
from conform.spec import BUILTIN_DIR


def _summary(out):
    return json.loads((out / "summary.json").read_text())


def test_a_run_at_another_opset_builds_its_models_there(tmp_path, conform_cli):
    out = tmp_path / "run"
    conform_cli("run", "--backend", "onnxruntime", "--ops", "onnx_add", "--dtypes", "float32",
                "--max-examples", "4", "--onnx-opset", "14", "--out", out, "--quiet",
                check_status=0)
    summary = _summary(out)
    assert summary["onnx_opset"] == 14 and summary["counts"]["pass"] >= 4
    record = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    conform_cli("repro", record["id"], "--from", out, "--out", tmp_path / "repro", check_status=0)
    model = onnx.load(tmp_path / "repro" / "model.onnx")
    assert [o.version for o in model.opset_import] == [14]


def test_an_op_bound_at_other_opsets_is_ruled_out(tmp_path, conform_cli):
    specs = tmp_path / "specs"
    specs.mkdir()
    text = (BUILTIN_DIR / "onnx_add.yaml").read_text(encoding="utf-8")
    assert "onnx: {op_type: Add, opsets: [7, 28]}" in text
    (specs / "onnx_add.yaml").write_text(
        text.replace("onnx: {op_type: Add, opsets: [7, 28]}", "onnx: {op_type: Add, opsets: [22, 28]}"))
    out = tmp_path / "run"
    conform_cli("--specs", specs, "run", "--backend", "onnxruntime", "--ops", "onnx_add",
                "--dtypes", "float32", "--max-examples", "4", "--onnx-opset", "21",
                "--out", out, "--quiet", check_status=3)   # nothing judged: exit 3
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["verdict"] for r in lines} == {"unsupported"}
    assert "is bound at opsets 22 to 28, not at the opset of this run (21)" in lines[0]["message"]


def test_an_opset_conform_cannot_build_is_a_usage_error(tmp_path, conform_cli):
    proc = conform_cli("run", "--backend", "onnxruntime", "--onnx-opset", "99", "--out", tmp_path,
                       check_status=2)
    assert "--onnx-opset 99" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def _operators_without_a_kernel(opset: int) -> list[str]:
    """The default-domain operators onnxruntime's CPU provider implements at some version but not
    at the version in force at ``opset``. onnxruntime's kernel lookup takes an open-ended kernel
    (registered from version a onwards) only for a node of since-version a itself, so a kernel
    registered at 16 does not run RoiAlign-22."""
    ranges = collections.defaultdict(list)
    for kernel in _pybind_state.get_all_opkernel_def():
        if kernel.domain in ("", "ai.onnx") and kernel.provider == "CPUExecutionProvider":
            ranges[kernel.op_name].append(tuple(kernel.version_range))
    missing = []
    for op_type, held in ranges.items():
        try:
            since = onnx.defs.get_schema(op_type, opset).since_version
        except onnx.defs.SchemaError:
            continue
        if not any(low == since or low < since <= high < 2 ** 31 - 1 for low, high in held):
            missing.append(f"{op_type}-{since}")
    return missing


def test_the_default_opset_is_the_newest_onnxruntime_runs_every_operator_at():
    deprecated = {"Scatter-11", "Upsample-10"}   # replaced by ScatterElements and Resize
    assert set(_operators_without_a_kernel(DEFAULT_ONNX_OPSET)) <= deprecated
    later = [n for n in range(DEFAULT_ONNX_OPSET + 1, ONNX_OPSET_NEWEST + 1)
             if set(_operators_without_a_kernel(n)) <= deprecated]
    assert not later, f"onnxruntime runs every operator at opset {later[-1]}: make it the default"
