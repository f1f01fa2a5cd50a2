"""The cases the ftz subnormal policy excuses are counted, and they are exactly the cases that
fail when the same results are judged under ieee (jax on the CPU flushes float32 subnormals)."""
from __future__ import annotations

import json


def test_cases_passing_only_under_ftz_are_counted_and_fail_under_ieee(tmp_path, conform_cli):
    runs = {}
    for policy in ("ftz", "ieee"):
        out = runs[policy] = tmp_path / policy
        conform_cli("run", "--backend", "jax", "--ops", "multiply,add,dot_general", "--dtypes",
                    "float32", "--subnormals", policy, "--quiet", "--out", out)
    records = {policy: {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text()
                                                 .splitlines())} for policy, out in runs.items()}
    excused = {i for i, r in records["ftz"].items() if r.get("subnormal_excused")
               and r["verdict"] in ("pass", "impl_defined")}
    failing = {i for i, r in records["ieee"].items() if r["verdict"] == "fail"}
    assert excused and excused == failing
    summary = json.loads((runs["ftz"] / "summary.json").read_text())
    assert summary["subnormal_excused"] == len(excused)
    assert f"{len(excused)} cases pass only under the ftz" in (runs["ftz"] / "summary.md").read_text()
    assert json.loads((runs["ieee"] / "summary.json").read_text())["subnormal_excused"] == 0
