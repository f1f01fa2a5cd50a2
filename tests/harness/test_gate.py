"""The CI gate as pure functions over summaries and result records."""
from __future__ import annotations

import json
import math

import pytest

from conform.harness.assurance.gate import (Criteria, GateError, RunData, baseline_view, error_growth, evaluate,
                                  load_run, op_pass_rates, ops_below, regressions, worst_ratio)
from conform.reports import build_summary


def _record(case_id, verdict, seed=1, max_error=None, bound=0.5):
    op, dtype, _ = case_id.split(".")
    record = {"id": case_id, "op": op, "dtype": dtype, "verdict": verdict, "seed": seed,
              "shapes": [[4]], "attrs": {}, "message": f"{case_id} went {verdict}"}
    if max_error is not None:
        record.update(checked=4, max_error=max_error, bound=bound, unit="ulp", model="ulp(0.5)",
                      histogram=[0] * 10)
    return record


def _summary(records):
    return build_summary(records, {"backend": "jax", "seed": 0, "max_examples": 3}, "0.1.0")


BASELINE = [_record("mul.float32.0", "pass", max_error=0.25), _record("mul.float32.1", "pass"),
            _record("mul.float16.0", "fail", max_error=3.0), _record("exp.float32.0", "pass"),
            _record("exp.float32.1", "xpass", max_error=0.1), _record("exp.float32.2", "pass", seed=5)]


def test_op_pass_rates_pool_all_dtypes_of_an_op():
    rates = op_pass_rates(_summary(BASELINE))
    assert rates == {"exp": 1.0, "mul": pytest.approx(2 / 3)}
    assert ops_below(_summary(BASELINE), 0.9) == {"mul": pytest.approx(2 / 3)}
    assert ops_below(_summary([_record("mul.float32.0", "unsupported")]), 1.0) == {}


def test_floors():
    summary = _summary(BASELINE)
    report = evaluate(summary, BASELINE, Criteria(min_pass_rate=0.8, min_op_pass_rate=0.7))
    assert report.failures == ["op mul: pass rate 0.6667 < --min-op-pass-rate 0.7"]
    assert report.held == ["pass rate 0.8333 >= 0.8"]
    nothing = _summary([_record("mul.float32.0", "unsupported")])
    assert evaluate(nothing, [], Criteria(min_pass_rate=0.0)).failures == \
        ["pass rate n/a < --min-pass-rate 0.0"]
    assert evaluate(summary, BASELINE, Criteria()).holds


def test_regressions_are_passes_that_now_fail_by_case_id():
    now = [_record("mul.float32.0", "fail", max_error=9.0),   # pass -> fail
           _record("mul.float32.1", "crash"),                 # pass -> crash
           _record("mul.float16.0", "fail", max_error=3.0),   # already failing
           _record("exp.float32.0", "waived"),                # excused by a manifest
           _record("exp.float32.1", "timeout"),               # xpass -> timeout
           _record("exp.float32.2", "fail", seed=6),          # another case under the same id
           _record("exp.float32.3", "fail")]                  # new case
    found, different = regressions(BASELINE, now)
    assert [(o["id"], o["verdict"], n["verdict"]) for o, n in found] == [
        ("mul.float32.0", "pass", "fail"), ("mul.float32.1", "pass", "crash"),
        ("exp.float32.1", "xpass", "timeout")]
    assert different == 1


def test_worst_ratio_of_a_cell():
    assert worst_ratio({"worst_error": 1.0, "bound": 4.0}) == 0.25
    assert worst_ratio({"worst_error": 0, "bound": 0}) == 0.0
    assert worst_ratio({"worst_error": 1.0, "bound": 0.0}) == math.inf
    assert worst_ratio({"worst_error": "inf", "bound": 0.5}) == math.inf
    assert worst_ratio({"worst_error": None, "bound": None}) is None


@pytest.mark.parametrize("old, new, factor, grows", [
    (0.25, 0.45, 2.0, False), (0.1, 0.25, 2.0, True), (0.1, 0.25, 3.0, False),
    (0.0, 0.1, 2.0, True), (0.0, 0.0, 2.0, False), (0.4, 0.1, 2.0, False),
    (0.1, 9.0, math.inf, False), (math.inf, math.inf, 2.0, False),
])
def test_error_growth_compares_worst_error_over_bound_per_op_and_dtype(old, new, factor, grows):
    baseline = _summary([_record("mul.float32.0", "pass", max_error=old)])
    summary = _summary([_record("mul.float32.0", "pass", max_error=new)])
    grown = error_growth(baseline, summary, factor)
    assert [(op, dtype) for op, dtype, _, _ in grown] == ([("mul", "float32")] if grows else [])


def test_evaluate_prints_what_regressed_with_old_and_new_figures():
    now = [dict(r) for r in BASELINE]
    now[0] = _record("mul.float32.0", "fail", max_error=2.0)
    baseline = RunData(_summary(BASELINE), BASELINE, "base")
    report = evaluate(_summary(now), now, Criteria(max_error_growth=2.0), baseline)
    assert report.failures[0] == "regression mul.float32.0: pass -> fail: mul.float32.0 went fail"
    now[1] = _record("mul.float32.1", "fail")
    now[1]["message"] = "mul [jax] attrs={'a': 1} (case mul.float32.1): Mismatched elements: 1 / 4"
    assert "regression mul.float32.1: pass -> fail: Mismatched elements: 1 / 4" in \
        evaluate(_summary(now), now, Criteria(), baseline).failures
    assert report.failures[1].startswith("error growth mul float32: worst 0.25 ulp (bound 0.5 ulp, "
                                         "case mul.float32.0) -> 2 ulp (bound 0.5 ulp, case "
                                         "mul.float32.0): error/bound 0.5 -> 4 (x8 >")
    assert len(report.failures) == 2 and not report.holds
    same = evaluate(_summary(BASELINE), BASELINE, Criteria(), baseline)
    assert same.holds and same.held == ["no regressions against base and no worst-error growth "
                                        "beyond x2"]


def test_xpass_fails_only_under_strict_xfail():
    summary = _summary(BASELINE)
    lenient = evaluate(summary, BASELINE, Criteria())
    assert lenient.holds and "exp.float32.1" in lenient.notes[0]
    strict = evaluate(summary, BASELINE, Criteria(strict_xfail=True))
    assert strict.failures == ["xpass exp.float32.1: expected to fail by the manifest, passed"]


def test_baseline_notes_say_when_ids_may_name_other_cases():
    other = _summary(BASELINE) | {"seed": 1}
    report = evaluate(_summary(BASELINE), BASELINE, Criteria(), RunData(other, BASELINE, "b"))
    assert "baseline seed=1, this run seed=0" in report.notes


def test_load_run_takes_a_directory_or_its_summary(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps(_summary(BASELINE)))
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in BASELINE))
    for path in (tmp_path, tmp_path / "summary.json"):
        run = load_run(path)
        assert run.where == tmp_path and len(run.records) == len(BASELINE)
        assert run.summary["by_op"]["mul"]["float32"]["worst_error"] == 0.25
    (tmp_path / "results.jsonl").unlink()
    with pytest.raises(GateError, match="results.jsonl does not exist"):
        load_run(tmp_path / "summary.json")
    with pytest.raises(GateError, match="summary.json does not exist"):
        load_run(tmp_path / "nowhere")


def test_coverage_floor_counts_only_judged_cases():
    records = [_record("mul.float32.0", "pass"), _record("mul.float32.1", "fail"),
               _record("mul.float16.0", "unsupported"), _record("mul.float16.1", "impl_defined"),
               _record("mul.float16.2", "xfail"), _record("mul.float16.3", "skip"),
               _record("mul.float16.4", "waived"), _record("mul.float16.5", "timeout")]
    summary = _summary(records)
    assert (summary["judged"], summary["cases"], summary["coverage"]) == (3, 8, 3 / 8)
    low = evaluate(summary, records, Criteria(min_coverage=0.5))
    assert low.failures == ["coverage 0.3750 (judged 3 of 8 cases) < --min-coverage 0.5"]
    assert evaluate(summary, records, Criteria(min_coverage=0.375)).holds
    assert not evaluate(_summary([]), [], Criteria(min_coverage=0.0)).holds   # no cases at all


def test_baseline_view_lists_regressions_fixes_and_changed_cells():
    now = [_record("mul.float32.0", "fail"), _record("mul.float32.1", "pass"),
           _record("mul.float16.0", "pass", max_error=0.1), _record("exp.float32.0", "pass"),
           _record("exp.float32.1", "unsupported"), _record("exp.float32.2", "pass")]
    old = RunData(_summary(BASELINE), BASELINE, "base")
    cells = {(op, dtype): cell["counts"] for op, by in _summary(now)["by_op"].items()
             for dtype, cell in by.items()}
    view = baseline_view(old, cells, now)
    assert view["regressions"] == [{"id": "mul.float32.0", "was": "pass", "now": "fail"}]
    assert (view["regression_count"], view["fixed_count"], view["not_comparable"]) == (1, 1, 1)
    changed = {(c["op"], c["dtype"]): c for c in view["cells"]}
    assert set(changed) == {("mul", "float32"), ("mul", "float16"), ("exp", "float32")}
    assert changed[("exp", "float32")]["old_judged"] == 3 and changed[("exp", "float32")]["new_judged"] == 2
    assert view["where"].endswith("base") and view["coverage_text"] == "judged 6 of 6 cases (coverage 100.00%)"


def test_regression_lines_print_no_terminal_escape_of_the_backend():
    old = [_record("mul.float32.0", "pass")]
    new = [{**_record("mul.float32.0", "error"), "message": "\x1b[2J\u202eboom\x00"}]
    report = evaluate(_summary(new), new, Criteria(), RunData(_summary(old), old, "base"))
    assert report.failures == ["regression mul.float32.0: pass -> error: \\x1b[2J\\u202eboom\\x00"]


def test_inconsistent_counts_as_a_failure_and_a_regression_from_impl_defined():
    old = [_record("relu.float32.0", "impl_defined"), _record("relu.float32.1", "pass")]
    new = [_record("relu.float32.0", "inconsistent"), _record("relu.float32.1", "pass")]
    found, _ = regressions(old, new)
    assert [(o["verdict"], n["verdict"]) for o, n in found] == [("impl_defined", "inconsistent")]
    summary = _summary(new)
    assert summary["pass_rate"] == 0.5 and summary["counts"]["inconsistent"] == 1
