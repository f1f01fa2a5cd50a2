"""A shipped manifest entry excuses the condition it names and nothing else: a new bug in a cell
it covers (tanh x float32 on onnxruntime, whose entry excuses failures on inputs below 2**-124)
stays a failure, through the real CLI and onnxruntime."""
from __future__ import annotations

import json

from conform.harness.assurance.manifests import default_manifest_path

DRIFTING = "tests.harness.wrapping_backend:DriftingTanhOnnxRuntime"


def _records(out) -> list:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_a_narrow_waiver_leaves_a_new_bug_in_its_cell_visible(tmp_path, conform_cli):
    manifest = tmp_path / "onnxruntime.yaml"   # the shipped entries, for a backend of another name
    manifest.write_text(default_manifest_path("onnxruntime").read_text().replace(
        "backend: onnxruntime\n", ""))
    runs = {}
    for name, backend in (("plain", "onnxruntime"), ("drifting", DRIFTING)):
        out = runs[name] = tmp_path / name
        proc = conform_cli("run", "--backend", backend, "--ops", "tanh", "--dtypes", "float32",
                           "--manifest", manifest, "--quiet", "--out", out)
        assert proc.returncode in (0, 1), proc.stderr
    plain = {r["id"]: r for r in _records(runs["plain"])}
    drifting = {r["id"]: r for r in _records(runs["drifting"])}
    assert {r["verdict"] for r in plain.values()} <= {"pass", "waived", "xfail", "impl_defined"}
    assert any(r["verdict"] == "waived" for r in plain.values())   # the entry is in use
    failed = [r for r in drifting.values() if r["verdict"] == "fail"]
    assert failed, "the drift between 1/2 and 4 must stay visible under the tiny-input waiver"
    for record in failed:
        assert float(record["failing"]["inputs_max_abs"]) >= 0.5
        assert "manifest" not in record or record["manifest"]["kind"] != "waiver"
    # the cases the entry excused on plain onnxruntime are excused for the same reason here
    for case_id, record in plain.items():
        if record["verdict"] == "waived" and drifting[case_id]["verdict"] == "waived":
            assert drifting[case_id]["manifest"]["when"] == {"inputs_below": 4.70197740328915e-38}
