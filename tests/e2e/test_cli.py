"""End-to-end: the real `conform` command against the real backends, on a small budget."""
from __future__ import annotations

import json
import shutil

from conform.spec import BUILTIN_DIR


def test_onnxruntime_int_min_by_minus_one_is_a_crash_and_the_run_finishes(tmp_path, conform_cli):
    # (seed 2: the other elements of edge case 0 hold no zero divisor, which onnxruntime would
    # report as an error before dividing INT_MIN by -1)
    proc = conform_cli("run", "--backend", "onnxruntime", "--ops", "onnx_div", "--dtypes", "int64",
                   "--max-examples", 4, "--seed", 2, "--out", tmp_path, "--quiet", check_status=0)
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    by_id = {r["id"]: r for r in records}
    assert by_id["onnx_div.int64.edge0"]["verdict"] == "crash"
    assert "SIGFPE" in by_id["onnx_div.int64.edge0"]["message"]
    assert sum(r["verdict"] == "pass" for r in records) >= 6
    assert "crash" in proc.stdout


def test_jax_flushing_subnormals_fails_under_the_ieee_policy(tmp_path, conform_cli):
    conform_cli("run", "--backend", "jax", "--ops", "multiply", "--dtypes", "float32", "--max-examples", 12,
            "--out", tmp_path, "--quiet", "--subnormals", "ieee", check_status=0)
    failures = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()
                if '"fail"' in line]
    assert failures
    assert any(r["worst"]["actual"] == 0.0 and abs(r["worst"]["expected"]) < 2.0 ** -100
               or any(isinstance(v, float) and 0 < abs(v) < 2.0 ** -126 for v in r["worst"]["inputs"])
               for r in failures)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["subnormals_applied"] == "ieee" and summary["subnormals_declared"] == "ftz"


def test_jax_passes_the_same_cases_under_its_declared_ftz_policy(tmp_path, conform_cli):
    conform_cli("run", "--backend", "jax", "--ops", "multiply", "--dtypes", "float32", "--max-examples", 12,
            "--out", tmp_path, "--quiet", "--min-pass-rate", 1.0, check_status=0)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["subnormals_applied"] == "ftz" and summary["counts"]["fail"] == 0


def test_min_pass_rate_above_the_achieved_rate_exits_1(tmp_path, conform_cli):
    proc = conform_cli("run", "--backend", "jax", "--ops", "multiply", "--dtypes", "float32",
                   "--max-examples", 12, "--out", tmp_path, "--quiet", "--min-pass-rate", 1.0,
                   "--subnormals", "ieee", check_status=1)
    assert "GATE FAILED" in proc.stderr
    conform_cli("run", "--backend", "numpy", "--ops", "add", "--max-examples", 3, "--out", tmp_path / "ok",
            "--quiet", "--min-pass-rate", 0.5, check_status=0)


def test_unknown_backend_exits_2_and_lists_the_installed_ones(tmp_path, conform_cli):
    proc = conform_cli("run", "--backend", "tpu9000", "--out", tmp_path, check_status=2)
    assert "unknown backend 'tpu9000'" in proc.stderr
    for name in ("jax", "numpy", "onnxruntime"):
        assert name in proc.stderr


def test_malformed_spec_exits_2_naming_file_and_line(tmp_path, conform_cli):
    specs = tmp_path / "specs"
    shutil.copytree(BUILTIN_DIR, specs)
    broken = specs / "add.yaml"
    summary = next(line for line in broken.read_text().splitlines() if line.startswith("summary:"))
    broken.write_text(broken.read_text().replace(summary, "summary: [add"), encoding="utf-8")
    proc = conform_cli("--specs", specs, "run", "--backend", "numpy", "--out", tmp_path / "o", check_status=2)
    assert f"{broken}:" in proc.stderr and "invalid YAML" in proc.stderr
    broken.write_text(broken.read_text().replace("summary: [add", "summary: 7"), encoding="utf-8")
    proc = conform_cli("--specs", specs, "list", check_status=2)
    line = broken.read_text().splitlines().index("summary: 7") + 1
    assert f"{broken}:{line}: field summary:" in proc.stderr


def test_usage_errors_exit_2(tmp_path, conform_cli):
    conform_cli("run", "--backend", "numpy", "--min-pass-rate", "1.5", check_status=2)
    conform_cli("run", "--backend", "numpy", "--ops", "no_such_op", "--out", tmp_path, check_status=2)
    conform_cli("frobnicate", check_status=2)


def test_list_json_shows_ops_with_bindings(conform_cli):
    rows = json.loads(conform_cli("list", "--format", "json", check_status=0).stdout)
    assert len(rows) >= 24
    assert {"op", "bindings", "dtypes", "xla"} <= set(rows[0])
    round_row = next(r for r in rows if r["op"] == "round")
    assert list(round_row["bindings"]) == ["xla", "numpy"]
    assert round_row["bindings"]["numpy"]["unsupported"].startswith("NumPy has no rounding")
    where = next(r for r in rows if r["op"] == "onnx_where")
    assert where["bindings"] == {"onnx": {"op_type": "Where", "opsets": [9, 28]},
                                 "numpy": {"fn": "where"}}
    assert where["signature"]["inputs"][0] == {"name": "condition", "type": "bool"}
    assert where["signature"]["shapes"] == "onnx_broadcast"
    transpose = next(r for r in rows if r["op"] == "transpose")
    assert "permutation" in transpose["signature"]["drawn_by"]


def test_list_json_gives_each_signature_an_adapter_needs(conform_cli):
    """Outputs with their types, attributes with their domains, optional inputs, and with
    --programs a chain's nodes: what an adapter author reads instead of conform's source."""
    rows = {r["op"]: r for r in json.loads(conform_cli(
        "list", "--backend", "onnxruntime", "--programs", "--format", "json",
        check_status=0).stdout)}
    top_k = rows["onnx_top_k"]["signature"]
    assert top_k["outputs"] == [{"name": "values", "type": "T"}, {"name": "indices", "type": "int64"}]
    assert {"axis", "largest", "sorted"} <= set(top_k["attrs"]) and "k" in top_k["drawn_by"]
    clip = rows["onnx_clip"]["signature"]
    assert clip["inputs"][1] == {"name": "min", "type": "T", "optional": True, "scalar": True}
    assert "absent_inputs" in clip["absent_inputs"]
    chain = next(r for op, r in rows.items() if op.startswith("chain__"))["signature"]
    assert [n["output"] for n in chain["nodes"]] == [o["name"] for o in chain["outputs"]]
    assert all(set(n) == {"op", "inputs", "output"} for n in chain["nodes"])


def test_report_rerenders_a_finished_run(tmp_path, conform_cli):
    out = tmp_path / "run"
    conform_cli("run", "--backend", "numpy", "--ops", "add,exp", "--max-examples", 2, "--out", out,
                "--quiet", check_status=0)
    (out / "report.html").unlink()
    conform_cli("report", out, check_status=0)
    assert (out / "report.html").exists()


def test_exhaustive_float16_run_checks_all_65536_inputs(tmp_path, conform_cli):
    conform_cli("run", "--backend", "numpy", "--ops", "sqrt,floor", "--dtypes", "float16", "--exhaustive",
            "--out", tmp_path, "--quiet", check_status=0)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cases"] == 2 and summary["exhaustive"] is True
    assert summary["by_op"]["sqrt"]["float16"]["elements"] == 65536
    conform_cli("run", "--backend", "numpy", "--ops", "add", "--exhaustive", "--out", tmp_path / "no",
            check_status=2)


def test_specs_option_reaches_the_workers(tmp_path, conform_cli):
    specs = tmp_path / "specs"
    specs.mkdir()
    text = (BUILTIN_DIR / "add.yaml").read_text(encoding="utf-8")
    # a spec directory whose add binds to lax.sub: the workers must use it, so add now fails
    (specs / "add.yaml").write_text(text.replace("xla: {lax: add}", "xla: {lax: sub}"), encoding="utf-8")
    conform_cli("--specs", specs, "run", "--backend", "jax", "--ops", "add", "--dtypes", "int32",
                "--max-examples", 4, "--out", tmp_path / "o", "--quiet", "--no-manifest", check_status=0)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["ops"] == 1 and summary["counts"]["fail"] > 0
