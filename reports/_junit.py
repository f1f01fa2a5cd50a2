"""junit.xml: one testcase per op x dtype; failures carry the worst case's message."""
from __future__ import annotations

from collections import defaultdict
from xml.etree import ElementTree as ET

from conform.reports._summary import severity

BAD = ("fail", "error", "crash", "timeout")


def write_junit(path, records, summary: dict) -> None:
    """One testcase per op x dtype; a failure's message names the worst case's worst element and
    its text lists up to 20 failing cases, worst first."""
    groups: dict = defaultdict(list)
    for r in records:
        groups[(r["op"], r["dtype"])].append(r)
    suite = ET.Element("testsuite", name=f"conform.{summary['backend']}", tests=str(len(groups)))
    failures = errors = skipped = 0
    for (op, dtype), cases in sorted(groups.items()):
        seconds = sum(c.get("seconds", 0.0) for c in cases)
        testcase = ET.SubElement(suite, "testcase", classname=f"conform.{summary['backend']}.{op}",
                                 name=f"{op}[{dtype}]", time=f"{seconds:.6f}")
        bad = sorted((c for c in cases if c["verdict"] in BAD), key=severity, reverse=True)
        if bad:
            kinds = sorted({c["verdict"] for c in bad})
            tag = "failure" if kinds == ["fail"] else "error"
            failures += tag == "failure"
            errors += tag == "error"
            worst = bad[0].get("message", bad[0]["verdict"])
            summary_line = f"{len(bad)}/{len(cases)} cases {'/'.join(kinds)}; worst: {worst}"
            element = ET.SubElement(testcase, tag, type=",".join(kinds), message=summary_line)
            element.text = "\n".join(c.get("message", c["verdict"]) for c in bad[:20])
        elif all(c["verdict"] == "unsupported" for c in cases):
            skipped += 1
            ET.SubElement(testcase, "skipped", message=cases[0].get("message", "unsupported"))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
