"""junit.xml: one testcase per op x dtype; failures carry the worst case's message.

Every text from a backend passes :func:`~conform.reports._text.neutral` first, so the file is
valid XML whatever a backend says (XML 1.0 cannot hold NUL, most control characters or lone
surrogates, even escaped).
"""
from __future__ import annotations

from xml.etree import ElementTree as ET

from conform.reports._coverage import coverage_text, rate_text
from conform.reports._summary import Tally, severity
from conform.reports._text import backend_label, neutral


def _message(record: dict) -> str:
    return neutral(record.get("message") or record["verdict"])


def write_junit(path, records, summary: dict, tally: Tally | None = None) -> None:
    """One testcase per op x dtype; a failure's message names the worst case's worst element and
    its text lists up to 20 failing cases, worst first. ``tally``, if given, has added every
    record (and ``records`` is not read again). The suite's properties and its system-out give
    the pass rate beside the coverage ("judged N of M cases (coverage x%)"), and so does each
    testcase's system-out for its op x dtype."""
    tally = tally or Tally.of(records)
    backend = neutral(backend_label(summary))
    suite = ET.Element("testsuite", name=f"conform.{backend}", tests=str(len(tally.cells)))
    properties = ET.SubElement(suite, "properties")
    for name in ("pass_rate", "judged", "cases", "coverage"):
        value = summary.get(name)
        ET.SubElement(properties, "property", name=name, value="" if value is None else str(value))
    failures = errors = skipped = 0
    for (op, dtype), cell in sorted(tally.cells.items()):
        testcase = ET.SubElement(suite, "testcase", classname=neutral(f"conform.{backend}.{op}"),
                                 name=neutral(f"{op}[{dtype}]"), time=f"{cell['seconds']:.6f}")
        bad = sorted(cell["problems"], key=severity, reverse=True)
        if bad:
            kinds = sorted({c["verdict"] for c in bad})
            tag = "failure" if kinds == ["fail"] else "error"
            failures += tag == "failure"
            errors += tag == "error"
            summary_line = f"{len(bad)}/{cell['cases']} cases {'/'.join(kinds)}; worst: {_message(bad[0])}"
            element = ET.SubElement(testcase, tag, type=",".join(kinds), message=summary_line)
            element.text = "\n".join(_message(c) for c in bad[:20])
        elif cell["counts"].get("unsupported", 0) == cell["cases"]:
            skipped += 1
            ET.SubElement(testcase, "skipped", message=_message(cell["first"]))
        counts = summary["by_op"][op][dtype]["counts"]
        ET.SubElement(testcase, "system-out").text = (
            f"pass rate {rate_text(summary['by_op'][op][dtype]['pass_rate'])}, {coverage_text(counts)}")
    ET.SubElement(suite, "system-out").text = (
        f"pass rate {rate_text(summary.get('pass_rate'))}, {coverage_text(summary['counts'])}")
    if summary.get("complete") is False:   # a CI reading junit.xml alone must see it
        errors += 1
        testcase = ET.SubElement(suite, "testcase", classname=f"conform.{backend}",
                                 name="run complete", time="0")
        ET.SubElement(testcase, "error", type="incomplete",
                      message=f"the run is incomplete: {summary['cases']} of "
                              f"{summary['cases_planned']} cases ran")
        suite.set("tests", str(len(tally.cells) + 1))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
