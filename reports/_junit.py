"""junit.xml: one testcase per op x dtype; failures carry the worst case's message."""
from __future__ import annotations

from xml.etree import ElementTree as ET

from conform.reports._summary import Tally, severity


def write_junit(path, records, summary: dict, tally: Tally | None = None) -> None:
    """One testcase per op x dtype; a failure's message names the worst case's worst element and
    its text lists up to 20 failing cases, worst first. ``tally``, if given, has added every
    record (and ``records`` is not read again)."""
    tally = tally or Tally.of(records)
    suite = ET.Element("testsuite", name=f"conform.{summary['backend']}", tests=str(len(tally.cells)))
    failures = errors = skipped = 0
    for (op, dtype), cell in sorted(tally.cells.items()):
        testcase = ET.SubElement(suite, "testcase", classname=f"conform.{summary['backend']}.{op}",
                                 name=f"{op}[{dtype}]", time=f"{cell['seconds']:.6f}")
        bad = sorted(cell["problems"], key=severity, reverse=True)
        if bad:
            kinds = sorted({c["verdict"] for c in bad})
            tag = "failure" if kinds == ["fail"] else "error"
            failures += tag == "failure"
            errors += tag == "error"
            worst = bad[0].get("message", bad[0]["verdict"])
            summary_line = f"{len(bad)}/{cell['cases']} cases {'/'.join(kinds)}; worst: {worst}"
            element = ET.SubElement(testcase, tag, type=",".join(kinds), message=summary_line)
            element.text = "\n".join(c.get("message", c["verdict"]) for c in bad[:20])
        elif cell["counts"].get("unsupported", 0) == cell["cases"]:
            skipped += 1
            ET.SubElement(testcase, "skipped", message=cell["first"].get("message", "unsupported"))
    if summary.get("complete") is False:   # a CI reading junit.xml alone must see it
        errors += 1
        testcase = ET.SubElement(suite, "testcase", classname=f"conform.{summary['backend']}",
                                 name="run complete", time="0")
        ET.SubElement(testcase, "error", type="incomplete",
                      message=f"the run is incomplete: {summary['cases']} of "
                              f"{summary['cases_planned']} cases ran")
        suite.set("tests", str(len(tally.cells) + 1))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
