"""End to end: ONNX Clip and Pad (optional inputs) on onnxruntime, and XLA add with
broadcast_dimensions on jax, through the CLI."""
from __future__ import annotations

import json

import pytest


def _lines(out):
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_clip_and_pad_run_on_onnxruntime_with_absent_inputs(tmp_path, conform_cli):
    pytest.importorskip("onnxruntime")
    out = tmp_path / "ort"
    conform_cli("run", "--backend", "onnxruntime", "--ops", "onnx_pad,onnx_clip", "--dtypes",
                "float32,int32", "--max-examples", "24", "--out", out, "--quiet", "--no-manifest",
                check_status=0)
    lines = _lines(out)
    clip = [r for r in lines if r["op"] == "onnx_clip"]
    absent = [r for r in clip if "absent_inputs" in r["attrs"]]
    assert absent and all(r["verdict"] in ("pass", "impl_defined") for r in clip)
    assert all(len(r["shapes"]) == 3 - len(r["attrs"].get("absent_inputs", [])) for r in clip)
    pad = [r for r in lines if r["op"] == "onnx_pad"]
    assert len({r["attrs"]["mode"] for r in pad if r["verdict"] == "pass"}) >= 2
    assert any("axes" in r["attrs"] and r["verdict"] == "pass" for r in pad)
    # onnxruntime refuses a reflected pad of 2 on an axis of 2, the text's Example 2: an error
    assert all(r["verdict"] == "error" for r in pad if r["attrs"]["mode"] == "reflect"
               and any(p >= 2 for p in r["attrs"]["pads"])
               and all(s == 2 for s in r["shapes"][0]) and "axes" not in r["attrs"])


def test_add_with_broadcast_dimensions_passes_on_jax(tmp_path, conform_cli):
    pytest.importorskip("jax")
    out = tmp_path / "jax"
    conform_cli("run", "--backend", "jax", "--ops", "add", "--dtypes", "float32,int32",
                "--max-examples", "32", "--out", out, "--quiet", check_status=0)
    lines = _lines(out)
    mapped = [r for r in lines if "broadcast_dimensions" in r["attrs"]]
    assert mapped and all(r["verdict"] in ("pass", "impl_defined") for r in lines)
    assert any(len(r["shapes"][0]) != len(r["shapes"][1]) for r in mapped)
