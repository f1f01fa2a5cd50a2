"""summary.json and results.jsonl against their JSON Schemas (on a real numpy run); junit.xml and
summary.md shapes."""
from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from xml.etree import ElementTree as ET

import jsonschema
import pytest

from conform.reports import build_summary, render_markdown, write_junit


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads(resources.files("conform.reports").joinpath("schemas", name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator, document) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)][:5]


@pytest.fixture(scope="module")
def numpy_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("numpy-run")
    proc = subprocess.run([sys.executable, "-m", "conform.harness.cli", "run", "--backend", "numpy",
                           "--max-examples", "2", "--out", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_real_summary_matches_its_schema(numpy_run):
    summary = json.loads((numpy_run / "summary.json").read_text())
    assert _errors(_validator("summary.schema.json"), summary) == []


def test_every_real_result_line_matches_its_schema(numpy_run):
    validator = _validator("result.schema.json")
    lines = (numpy_run / "results.jsonl").read_text().splitlines()
    assert len(lines) > 100
    for line in lines:
        record = json.loads(line)
        assert _errors(validator, record) == [], record["id"]


def test_schemas_reject_broken_documents(numpy_run):
    summary = json.loads((numpy_run / "summary.json").read_text())
    summary["pass_rate"] = 1.5
    del summary["counts"]["crash"]
    assert len(_errors(_validator("summary.schema.json"), summary)) == 2
    record = next(line for line in map(json.loads, (numpy_run / "results.jsonl").read_text()
                                       .splitlines()) if "bound" in line)   # a judged case
    record["verdict"] = "passed"
    del record["bound"]
    assert len(_errors(_validator("result.schema.json"), record)) == 2


def test_synthetic_records_of_every_verdict_match_the_schema(record):
    validator = _validator("result.schema.json")
    for verdict in ("pass", "fail", "impl_defined", "unsupported", "error", "crash", "timeout"):
        assert _errors(validator, record("add", "float32", verdict, error=2.0 * (verdict == "fail"))) == []


def test_real_junit_has_one_testcase_per_op_and_dtype(numpy_run):
    summary = json.loads((numpy_run / "summary.json").read_text())
    cells = {f"{op}[{dtype}]" for op, cells in summary["by_op"].items() for dtype in cells}
    suite = ET.parse(numpy_run / "junit.xml").getroot()
    names = [case.get("name") for case in suite.iter("testcase")]
    assert sorted(names) == sorted(cells)
    assert len((numpy_run / "summary.md").read_text().splitlines()) < 60


def test_junit_failure_carries_the_worst_elements_message(record, tmp_path):
    records = [record("add", "float32", "fail", 0, error=2.0, message="mild: worst out[1] actual=1"),
               record("add", "float32", "fail", 1, error=90.0, message="bad: worst out[3] actual=7"),
               record("add", "float32", "pass", 2), record("abs", "int32", "crash", 0),
               record("neg", "int32", "unsupported", 0)]
    summary = build_summary(records, {"backend": "synthetic"}, "0")
    write_junit(tmp_path / "junit.xml", records, summary)
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"add[float32]", "abs[int32]", "neg[int32]"}
    failure = cases["add[float32]"].find("failure")
    assert failure.get("message") == "2/3 cases fail; worst: bad: worst out[3] actual=7"
    assert failure.text.splitlines()[0].startswith("bad:")
    assert cases["abs[int32]"].find("error") is not None
    assert cases["neg[int32]"].find("skipped") is not None
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("1", "1", "1")


def test_summary_md_stays_short_with_many_failing_cells(record):
    records = [record(f"op{i}", dtype, "fail", 0, error=3.0)
               for i in range(60) for dtype in ("float16", "float32", "float64")]
    text = render_markdown(build_summary(records, {"backend": "synthetic", "backend_version": "1",
                                                    "seed": 0}, "0"))
    assert len(text.splitlines()) < 60 and "more op x dtype cells below 100%" in text


def test_the_cases_a_format_cannot_express_are_said_to_be_left_out(record, capsys):
    """A run's ``not_expressible`` (cases the model format cannot express, not part of its
    suite) is shown beside the coverage in summary.md and report.html, and is in the schema."""
    from conform.harness.cli.main import _print_table
    from conform.reports import render_html

    left_out = [{"op": "pad", "dtype": "float32", "reason": "NNEF pad has no interior padding",
                 "cases": 16},
                {"op": "pad", "dtype": "float16", "reason": "NNEF pad has no interior padding",
                 "cases": 4}]
    summary = build_summary([record("pad", "float32", "pass", 0)],
                            {"backend": "nnef", "backend_version": "1", "seed": 0,
                             "model_format": "nnef", "not_expressible": left_out}, "0")
    said = ("Not in the suite: 20 drawn cases the nnef model format cannot express (never run, "
            "not counted): pad: NNEF pad has no interior padding (20).")
    assert said.replace("(", "\\(").replace(")", "\\)") in render_markdown(summary)
    assert said in render_html(summary, [])
    _print_table(summary)   # the terminal's table after a run
    assert "not in the suite: 20 drawn cases the nnef model format cannot express" \
        in capsys.readouterr().out
    entry = jsonschema.Draft202012Validator(
        _validator("summary.schema.json").schema["properties"]["not_expressible"])
    assert _errors(entry, left_out) == [] and _errors(entry, [{"op": "pad"}])


@pytest.mark.parametrize("record, expected", [
    ({"worst": None, "error": 1.5e-05, "message": "a null here"},
     {"worst": None, "error": 1.5e-05, "message": "a null here"}),
    ({"max_error": float("nan"), "bound": float("inf"), "worst": None},
     {"max_error": "nan", "bound": "inf", "worst": None}),
    ({"worst": {"inputs": [None, -float("inf")]}, "attrs": {"alpha": float("nan")}},
     {"worst": {"inputs": [None, "-inf"]}, "attrs": {"alpha": "nan"}}),
    ({"seed": 2**70, "ratio": 0.1, "shape": (2, 3)}, {"seed": 2**70, "ratio": 0.1, "shape": [2, 3]}),
    ({"worst": {"inputs": [None, 2.5], "index": [0]}, "plan": None},
     {"worst": {"inputs": [None, 2.5], "index": [0]}, "plan": None}),
    ({"worst": {"inputs": [None, float("nan")]}, "message": None},
     {"worst": {"inputs": [None, "nan"]}, "message": None}),
])
def test_a_result_line_is_strict_json_with_non_finite_floats_as_strings(record, expected):
    import numpy as np

    from conform.reports import dumps

    line = dumps(record)
    assert "NaN" not in line and "Infinity" not in line
    assert json.loads(line) == expected
    assert json.loads(dumps({"x": np.float64(0.5)})) == {"x": 0.5}


def test_summary_cell_sums_histograms_and_names_the_first_worst_case_in_any_arrival_order(record):
    records = [record("add", "float32", "pass", 10, error=0.25), record("add", "float32", "pass", 9, error=0.25),
               record("add", "float32", "fail", 2, error=float("nan")), record("add", "float32", "pass", 3),
               record("add", "float32", "fail", 4, histogram=[], max_error=None, checked=0)]
    for order in (records, records[::-1]):
        cell = build_summary(order, {"backend": "synthetic"}, "0")["by_op"]["add"]["float32"]
        # NaN (a special value) is never the worst ratio; 9 precedes 10 in suite order
        assert (cell["worst_case"], cell["worst_error"], cell["bound"]) == ("add.float32.9", 0.25, 0.5)
        assert cell["histogram"] == [12, 0, 0, 0, 4, 0, 0, 0, 0, 0] and "worst_order" not in cell


def test_merging_per_reply_tallies_gives_the_tally_of_every_record_added_in_order(record):
    import random

    from conform.reports import Tally

    rng = random.Random(5)
    verdicts = ["pass", "pass", "fail", "impl_defined", "unsupported", "crash", "waived", "xpass"]
    records = []
    for i in range(400):
        op, dtype, verdict = rng.choice(["add", "exp"]), rng.choice(["float32", "int8"]), rng.choice(verdicts)
        extra = {"manifest": {"entry": "m.yaml:3", "kind": "waiver"}} if verdict in ("waived", "xpass") else {}
        records.append(record(op, dtype, verdict, i, error=rng.choice([0.0, 0.25, 0.5, 2.0]),
                              seconds=rng.random() / 1000, **extra))
    whole = Tally.of(records)
    merged, start = Tally(), 0
    while start < len(records):   # replies of random sizes, as workers send them
        reply = records[start:start + rng.randint(1, 60)]
        part = Tally()
        for i, r in enumerate(reply):
            part.add(r, ref=i)
        merged.merge(part.cells, reply.__getitem__)
        start += len(reply)
    assert merged.summary({}, "0") == whole.summary({}, "0")
    for key, cell in whole.cells.items():
        other = merged.cells[key]
        assert other["problems"] == cell["problems"] and other["first"] is cell["first"]
        assert other["tagged"] == cell["tagged"] and abs(other["seconds"] - cell["seconds"]) < 1e-12
        assert other["worst_record"] is cell["worst_record"]
    assert merged.manifest_records() == whole.manifest_records()


def test_a_full_disk_while_writing_results_names_the_file(tmp_path, monkeypatch):
    """The error a full disk gives while results.jsonl is written names that file (the CLI
    prints it as one line)."""
    import errno

    from conform.reports import ResultWriter

    path = tmp_path / "results.jsonl"
    with pytest.raises(OSError) as caught:
        with ResultWriter(path) as writer:
            def full(_data):
                raise OSError(errno.ENOSPC, "No space left on device")
            monkeypatch.setattr(writer._file, "write", full, raising=False)
            writer.write({"id": "add.float32.0"})
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(path)
