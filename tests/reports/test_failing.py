"""The report's list of every problem case: the region of a case's worst element, the groups
by value plan and region, the rows' order, and JSON that cannot end its script element."""
from __future__ import annotations

import json

import pytest

from conform.reports._failing import COLUMNS, embedded_json, failing_rows, plan_groups, worst_region


def _failing(record, index, inputs, expected, plan="edge", dtype="float32", error=3.0):
    r = record("mul", dtype, "fail", index, error=error, plan=plan)
    r["worst"].update(inputs=inputs, expected=expected)
    return r


@pytest.mark.parametrize("inputs, expected, dtype, region", [
    ([1.0, "nan"], "nan", "float32", "nan input"),
    (["inf", 1e-40], "inf", "float32", "subnormal input"),     # the rarer class names the trigger
    (["-inf", 2.0], "-inf", "float32", "inf input"),
    ([0.0, 3.0], 0.0, "float32", "zero input"),
    ([1e-30, 1e-10], 1e-40, "float32", "subnormal result"),
    ([1e-30, 1e-10], 1e-40, "float64", "ordinary values"),      # normal in float64
    ([3e38, 10.0], "inf", "float32", "inf result"),
    ([2e-5, 1.0], 2e-5, "float16", "subnormal input"),           # below float16's 2**-14
    ([[1.0, 1e-45, 2.0], None], 4.0, "float32", "subnormal input"),   # a window of elements
    ([5, 7], 35, "int32", "ordinary values"),
])
def test_worst_region(record, inputs, expected, dtype, region):
    assert worst_region(_failing(record, 0, inputs, expected, dtype=dtype)) == region


def test_errors_have_no_region(record):
    assert worst_region(record("mul", "float32", "error", 0)) == "–"


def test_groups_largest_first_and_rows_in_group_order_worst_first(record):
    problems = [_failing(record, 0, [1e-40, 1.0], 1e-40, error=2.0),
                _failing(record, 1, [1e-40, 1.0], 1e-40, error=9.0),
                _failing(record, 2, [1.0, 1.0], 1.0, plan="normal"),
                record("mul", "float32", "crash", 3)]
    groups = plan_groups(problems)
    assert [(plan, region, n) for plan, region, n, _ in groups] == [
        ("edge", "subnormal input", 2), ("normal", "ordinary values", 1), ("normal", "–", 1)]
    rows = failing_rows(problems)
    assert [row[0] for row in rows] == ["mul.float32.1", "mul.float32.0", "mul.float32.2", "mul.float32.3"]
    assert len(rows[0]) == len(COLUMNS) and rows[0][COLUMNS.index("error/bound")] == "18"


def test_embedded_json_cannot_close_its_script():
    text = embedded_json({"m": "</script><script>alert(1)</script> & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"m": "</script><script>alert(1)</script> & \u2028"}
