"""Manifests of known deviations: loading with located errors, and the verdicts they produce."""
from __future__ import annotations

import datetime
import fnmatch
import re

import numpy as np
import pytest

from conform.generators import Case, dtype_labels
from conform.harness.assurance.manifests import (Manifest, ManifestError, default_manifest_path, load_manifest,
                                       manifest_summary, resolve_manifest, stale_entries)
from conform.reports import Tally, build_summary, pass_rate

MANIFEST = """\
backend: onnxruntime
entries:
  - op: select
    dtype: "float*"
    scope: cell
    kind: waiver
    reason: Where loses the sign of zero
    link: https://example.org/where
  - op: tanh
    dtype: float32
    case: tanh.float32.sweep
    kind: xfail
    reason: smallest normal is 29 ULP off
    link: https://example.org/tanh
  - op: tanh
    dtype: float32
    scope: cell
    kind: skip
    reason: too slow on this machine
    link: https://example.org/slow
    expires: 2999-12-31
  - op: "reduce_*"
    dtype: int64
    scope: cell
    kind: xfail
    reason: imprecise int64 sums
    link: https://example.org/sum
"""


def _write(tmp_path, text, name="m.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _record(case_id, verdict, **extra):
    op, dtype, _ = case_id.split(".")
    return {"id": case_id, "op": op, "dtype": dtype, "verdict": verdict, **extra}


@pytest.fixture
def manifest(tmp_path):
    return load_manifest(_write(tmp_path, MANIFEST), "onnxruntime")


def test_entries_load_in_order_with_their_file_and_line(manifest, tmp_path):
    assert [e.kind for e in manifest.entries] == ["waiver", "xfail", "skip", "xfail"]
    assert manifest.entries[1].where == f"{tmp_path / 'm.yaml'}:9"
    assert manifest.entries[2].expires == datetime.date(2999, 12, 31)
    assert manifest.entries[1].as_json()["case"] == "tanh.float32.sweep"


@pytest.mark.parametrize("old, new, line, field, fragment", [
    ("    kind: waiver\n", "    kind: ignore\n", 6, "entries.0.kind", "'ignore' is not one of"),
    ("    link: https://example.org/where\n", "", 3, "entries.0", "'link' is a required property"),
    ("    expires: 2999-12-31\n", "    expires: someday\n", 21, "entries.2.expires", "not a date"),
    ("backend: onnxruntime\n", "backend: jax\n", 1, "backend", "the run is for 'onnxruntime'"),
    ("    dtype: int64\n", "    dtype: int64\n    owner: me\n", 24, "entries.3.owner", "owner"),
    ("  - op: select\n", "  - op: [select\n", 4, "", "invalid YAML"),
])
def test_a_malformed_manifest_names_file_line_and_field(tmp_path, old, new, line, field, fragment):
    assert old in MANIFEST
    path = _write(tmp_path, MANIFEST.replace(old, new))
    with pytest.raises(ManifestError) as info:
        load_manifest(path, "onnxruntime")
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: field {field or '<top>'}:"), message
    assert fragment in message


def test_a_cached_manifest_follows_edits_and_the_backend_asked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORM_CACHE_DIR", str(tmp_path / "cache"))
    path = _write(tmp_path, MANIFEST)
    assert load_manifest(path, "onnxruntime").entries[0].reason == "Where loses the sign of zero"
    _write(tmp_path, MANIFEST.replace("loses the sign", "drops the sign"))
    assert load_manifest(path, "onnxruntime").entries[0].reason == "Where drops the sign of zero"
    assert list((tmp_path / "cache" / "manifests").iterdir())
    with pytest.raises(ManifestError, match="but the run is for 'jax'"):
        load_manifest(path, "jax")


def test_a_missing_manifest_is_an_error(tmp_path):
    with pytest.raises(ManifestError, match=r"nope.yaml: field <top>: cannot read manifest"):
        load_manifest(tmp_path / "nope.yaml")


def test_an_expired_entry_is_an_error_naming_it(tmp_path):
    path = _write(tmp_path, MANIFEST.replace("2999-12-31", "2020-01-31"))
    manifest = load_manifest(path)
    manifest.check_expiry(datetime.date(2020, 1, 31))  # the expiry day itself still holds
    with pytest.raises(ManifestError, match=rf"{path}:15: field expires: skip entry op=tanh "
                                            r"dtype=float32 expired on 2020-01-31"):
        manifest.check_expiry(datetime.date(2020, 2, 1))
    with pytest.raises(ManifestError, match="expired"):
        resolve_manifest("onnxruntime", [path])


@pytest.mark.parametrize("case_id, earned, verdict", [
    ("select.float32.3", "fail", "waived"),       # waiver: a failure is waived
    ("select.float16.4", "crash", "waived"),
    ("select.float32.5", "pass", "pass"),         # ... a pass stays a pass
    ("tanh.float32.sweep", "fail", "xfail"),      # xfail (first match wins over the skip below)
    ("tanh.float32.sweep", "pass", "xpass"),
    ("tanh.float32.2", "fail", "skip"),           # skip
    ("reduce_sum.int64.1", "timeout", "xfail"),   # op glob
    ("reduce_sum.int64.2", "impl_defined", "impl_defined"),
    ("reduce_sum.int32.1", "fail", "fail"),       # dtype glob does not match
    ("add.float32.0", "fail", "fail"),            # no entry
])
def test_verdicts_under_the_manifest(manifest, case_id, earned, verdict):
    applied = manifest.apply(_record(case_id, earned))
    assert applied["verdict"] == verdict
    assert applied.get("raw_verdict", applied["verdict"]) == earned
    assert ("raw_verdict" in applied) == (verdict != earned)


def test_reapplying_starts_from_the_earned_verdict(manifest):
    waived = manifest.apply(_record("select.float32.3", "fail"))
    assert waived["manifest"]["kind"] == "waiver"
    assert Manifest((), ()).apply(waived) == _record("select.float32.3", "fail")
    assert manifest.apply(manifest.apply(waived)) == waived


def test_skipped_cases_are_not_run_but_recorded(manifest):
    def case(op, dtype, suffix):
        x = np.zeros(3, np.float32)
        return Case(id=f"{op}.{dtype}.{suffix}", op=op, dtype=dtype, input_dtypes=(dtype,),
                    out_dtype=dtype, inputs=[x], attrs={}, plan="normal", seed=7)

    cases = [case("tanh", "float32", "0"), case("tanh", "float32", "sweep"), case("exp", "float32", "0")]
    run, skipped = manifest.partition(cases)
    assert [c.id for c in run] == ["tanh.float32.sweep", "exp.float32.0"]
    assert [(r["id"], r["verdict"], r["shapes"]) for r in skipped] == [("tanh.float32.0", "skip", [[3]])]
    assert "too slow on this machine" in skipped[0]["message"]


def test_stale_entries_are_in_scope_and_changed_nothing(manifest):
    records = [manifest.apply(r) for r in (
        _record("select.float32.0", "pass"),          # waiver in scope, waives nothing: stale
        _record("tanh.float32.sweep", "fail"),        # xfail used
        _record("tanh.float32.1", "pass"),            # not run: skip
        _record("add.int64.0", "fail"))]              # reduce_* int64: out of scope, not stale
    stale = stale_entries(manifest, records)
    assert [e.op for e in stale] == ["select"]
    section = manifest_summary(manifest, records)
    assert [s["entry"] for s in section["stale"]] == [manifest.entries[0].where]
    assert section["entries"] == 4 and section["xpass"] == []


def test_an_entry_naming_suite_cases_is_not_stale_in_an_exhaustive_run(manifest):
    """An exhaustive run holds no edge sweep: the sweep's xfail has had nothing to excuse."""
    sweep_entry = manifest.find("tanh", "float32", "tanh.float32.sweep")
    exhaustive = [manifest.apply(_record(f"tanh.float32.exhaustive{i:04d}", "pass", plan="exhaustive"))
                  for i in range(3)]
    assert sweep_entry not in stale_entries(manifest, exhaustive)
    suite = [manifest.apply(_record("tanh.float32.sweep", "pass"))]   # it ran, and passed
    assert sweep_entry in stale_entries(manifest, suite)


def test_manifest_checks_read_the_same_from_a_tallys_excerpt_as_from_every_record(manifest):
    records = [manifest.apply(r) for r in (
        *(_record(f"select.float32.{i}", "pass") for i in range(5)),
        _record("tanh.float32.sweep", "fail"), _record("tanh.float32.2", "pass"),
        *(_record(f"reduce_sum.int64.{i}", "pass") for i in (3, 1)),
        *(_record(f"exp.float32.{i}", "pass") for i in range(3)))]
    excerpt = Tally.of(records).manifest_records()
    assert len(excerpt) < len(records)
    assert stale_entries(manifest, excerpt) == stale_entries(manifest, records)
    section = manifest_summary(manifest, excerpt)
    assert section == manifest_summary(manifest, records)
    assert section["xpass"] == ["reduce_sum.int64.1", "reduce_sum.int64.3"]


def test_pass_rate_leaves_out_excused_cases_and_counts_xpass_as_passing():
    assert pass_rate({"pass": 8, "fail": 2, "xfail": 5, "waived": 3, "skip": 4}) == 0.8
    assert pass_rate({"xpass": 3, "fail": 1}) == 0.75
    assert pass_rate({"xfail": 3, "waived": 1}) is None


def test_summary_counts_the_new_verdicts_and_excused_cases_have_no_error_figures():
    judged = {"checked": 4, "unit": "ulp", "model": "ulp(5)", "bound": 5.0, "histogram": [4] + [0] * 9}
    records = [_record("tanh.float32.0", "pass", max_error=1.0, **judged),
               _record("tanh.float32.1", "waived", raw_verdict="fail", max_error=90.0, **judged),
               _record("tanh.float32.2", "xpass", raw_verdict="pass", max_error=2.0, **judged)]
    summary = build_summary(records, {"backend": "x"}, "0")
    assert {k: summary["counts"][k] for k in ("pass", "waived", "xpass", "xfail", "skip")} == \
        {"pass": 1, "waived": 1, "xpass": 1, "xfail": 0, "skip": 0}
    cell = summary["by_op"]["tanh"]["float32"]
    assert cell["worst_error"] == 2.0 and cell["worst_case"] == "tanh.float32.2"
    assert cell["elements"] == 8 and summary["pass_rate"] == 1.0


def test_the_builtin_onnxruntime_manifest_is_valid_and_names_real_ops(specs):
    path = default_manifest_path("onnxruntime")
    assert path is not None and path.name == "onnxruntime.yaml"
    manifest = resolve_manifest("onnxruntime")
    assert manifest.files == (str(path),) and len(manifest.entries) >= 4
    for entry in manifest.entries:
        assert entry.expires is None and entry.link.startswith("https://github.com/microsoft/onnxruntime/")
        matching = [s for s in specs.values() if fnmatch.fnmatchcase(s.op, entry.op)]
        assert matching, entry.describe()
        assert any(fnmatch.fnmatchcase(d, entry.dtype) for s in matching
                   for d in dtype_labels(s)), entry.describe()   # e.g. float32->int8
    assert default_manifest_path("jax") is None
    assert default_manifest_path("my_vendor.adapter:Backend") is None
    assert resolve_manifest("onnxruntime", disabled=True) is None


def test_no_shipped_entry_covers_a_whole_cell(specs):
    """Every entry of the shipped manifests names what it excuses: a condition or a case."""
    for entry in resolve_manifest("onnxruntime").entries:
        assert entry.when or entry.case, entry.describe()
        assert entry.scope is None, entry.describe()


def test_an_entry_that_names_no_condition_is_an_error_naming_its_line(tmp_path):
    path = _write(tmp_path, MANIFEST.replace("    scope: cell\n    kind: waiver\n", "    kind: waiver\n"))
    with pytest.raises(ManifestError, match=rf"{path}:3: field entries.0: the waiver entry op=select "
                                            r"dtype=float\* names no condition: give 'when'"):
        load_manifest(path)
    skip = MANIFEST.replace("    scope: cell\n    kind: skip\n", "    when: {inputs: nan}\n    kind: skip\n")
    with pytest.raises(ManifestError, match=r"entries.2.when: a skip entry can only use 'attrs'"):
        load_manifest(_write(tmp_path, skip, "skip.yaml"))


@pytest.mark.parametrize("case", ["*", "select.*", "*.*", "select.float*.*"])
def test_a_case_glob_that_matches_every_case_of_its_cells_is_cell_scope(tmp_path, case):
    """``case: "*"`` waives every case of its cells, as ``scope: cell`` would: it must say so."""
    text = MANIFEST.replace("    scope: cell\n    kind: waiver\n", f"    case: '{case}'\n    kind: waiver\n")
    path = _write(tmp_path, text)
    with pytest.raises(ManifestError, match=rf"{path}:3: field entries.0.case: case='{re.escape(case)}' "
                                            "matches every case of its op x dtype cells: that is "
                                            "cell scope, so say 'scope: cell'"):
        load_manifest(path)
    scoped = text.replace(f"    case: '{case}'\n", f"    case: '{case}'\n    scope: cell\n")
    assert load_manifest(_write(tmp_path, scoped, "scoped.yaml")).entries[0].scope == "cell"
    narrow = text.replace(f"    case: '{case}'\n", "    case: 'select.float32.1?'\n")
    assert load_manifest(_write(tmp_path, narrow, "narrow.yaml")).entries[0].case == "select.float32.1?"


CONDITIONAL = """\
entries:
  - op: tanh
    dtype: float32
    when: {inputs: nan}
    kind: waiver
    reason: NaN goes its own way
    link: https://example.org/nan
  - op: tanh
    dtype: float32
    when: {inputs_below: 1.0e-30, expected: zero}
    kind: xfail
    reason: tiny inputs flush
    link: https://example.org/tiny
  - op: tanh
    dtype: float32
    when: {attrs: {mode: fast}}
    kind: waiver
    reason: the fast mode is approximate
    link: https://example.org/fast
"""


def _failing(elements, **counts):
    profile = {"elements": elements, "profiled": elements, "inputs_nan": 0, "inputs_inf": 0,
               "inputs_nonfinite": 0, "inputs_max_abs": 1.0, "inputs_min_of_max_abs": 1.0,
               "expected_zero": 0, "expected_inf": 0, "expected_nan": 0, "expected_min_abs": 1.0,
               "expected_max_abs": 1.0}
    return {**profile, **counts}


@pytest.mark.parametrize("failing, attrs, verdict", [
    (_failing(3, inputs_nan=3, inputs_max_abs="inf"), {}, "waived"),    # every failing element
    (_failing(3, inputs_nan=2, inputs_max_abs="inf"), {}, "fail"),      # one without a NaN
    (_failing(3, inputs_nan=3, profiled=2), {}, "fail"),                # not all of them known
    (_failing(2, inputs_max_abs=1e-35, expected_zero=2), {}, "xfail"),  # both conditions
    (_failing(2, inputs_max_abs=1e-35, expected_zero=1), {}, "fail"),   # only one of the two
    (_failing(2, inputs_max_abs="inf"), {"mode": "fast"}, "waived"),
    (_failing(2, inputs_max_abs="inf"), {"mode": "exact"}, "fail"),
    (None, {}, "fail"),                                                 # nothing to look at
])
def test_a_condition_excuses_a_case_only_if_every_failing_element_meets_it(tmp_path, failing, attrs,
                                                                         verdict):
    manifest = load_manifest(_write(tmp_path, CONDITIONAL))
    record = _record("tanh.float32.3", "fail", attrs=attrs)
    if failing is not None:
        record["failing"] = failing
    applied = manifest.apply(record)
    assert applied["verdict"] == verdict
    if verdict != "fail":
        assert applied["manifest"]["when"] and applied["raw_verdict"] == "fail"
    assert stale_entries(manifest, [applied]) != []   # some entries excused nothing here
