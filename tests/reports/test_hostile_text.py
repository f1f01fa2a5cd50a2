"""Every writer's output stays valid and inert whatever a backend says: a run whose messages,
traceback, version string and device hold control characters, NUL, bidi overrides, a lone
surrogate and markup, parsed back by strict parsers (XML, JSON, HTML, Markdown's own rules)."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from xml.etree import ElementTree as ET

import orjson
import pytest
from markdown_it import MarkdownIt

from conform.harness.cli.main import main
from conform.reports._text import markdown_text, neutral

# raw characters that must not reach any output file
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069"
                 "\ufeff\ufffe\uffff]")
OUTPUTS = ("results.jsonl", "summary.json", "junit.xml", "summary.md", "report.html")


@pytest.fixture
def hostile(hostile_run, tmp_path):
    return hostile_run(tmp_path / "run")


@pytest.mark.parametrize("name", OUTPUTS)
def test_no_raw_control_or_bidi_character_in_any_output(hostile, name):
    text = (hostile / name).read_bytes().decode("utf-8")   # strict: no lone surrogate either
    assert RAW.findall(text) == []


def test_results_and_summary_are_strict_json_keeping_the_text_visible(hostile):
    lines = (hostile / "results.jsonl").read_bytes().splitlines()
    assert len(lines) == 6
    for line in lines:
        assert orjson.loads(line) == json.loads(line)
    error = json.loads(lines[0])
    assert error["message"].startswith("\\x00\\x1b[31mred\\x1b[0m\\x07\\x0b\\x0d\\x9b \\u202eevil")
    assert "\\udcff" in error["message"] and "\\udcff" in error["traceback"]
    assert "<img src=x onerror=alert(1)>" in error["message"]   # markup is data in JSON
    summary = json.loads((hostile / "summary.json").read_text(encoding="utf-8"))
    assert summary["backend_version"].startswith("hostile \\x00\\x1b[31m")
    reason = summary["by_op"]["abs"]["int32"]["unsupported_reasons"]["runtime"]
    assert reason["cases"] == 1 and "\\u202eevil" in reason["example"]


def test_junit_is_valid_xml_with_the_escapes(hostile):
    suite = ET.parse(hostile / "junit.xml").getroot()
    error = suite.find("testcase[@name='add[float32]']/error")
    assert error.get("message").startswith("2/3 cases error/fail; worst: \\x00\\x1b[31m")
    assert "\\u202eevil" in error.text and "<img src=x" in error.text
    assert suite.find("testcase[@name='abs[int32]']/skipped").get("message").startswith("abs: \\x00")
    assert "judged 5 of 6 cases (coverage 83.33%)" in suite.find("system-out").text


def test_summary_md_inserts_no_backend_string_raw(hostile):
    """Rendered as GitHub renders a comment (CommonMark with tables): the backend's words are
    text, never an image, a link, emphasis or raw HTML, and the table keeps its columns."""
    text = (hostile / "summary.md").read_text(encoding="utf-8")
    html = MarkdownIt("commonmark").enable("table").render(text)
    heading = re.search(r"<h2>(.*)</h2>", html).group(1)
    assert heading.startswith("conform: hostile (hostile \\x00\\x1b[31mred")
    assert "&lt;img src=x onerror=alert(1)&gt;" in heading and "**bold**" in heading
    parsed = _Collector()
    parsed.feed(html)
    assert not {"img", "a", "em", "script"} & set(parsed.tags)
    assert parsed.tags.count("strong") == 1   # conform's own "**Pass rate**"
    assert "judged 5 of 6 cases (coverage 83.33%)" in text
    header_cells = re.search(r"<thead>\s*<tr>(.*?)</tr>", html, re.S).group(1).count("<th>")
    assert header_cells == 13   # one per verdict (conform.verdicts.VERDICTS)
    assert "| mul | float32 |" in text


class _Collector(HTMLParser):
    """The elements of a page and the text of its scripts."""

    def __init__(self):
        super().__init__()
        self.tags, self.scripts, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def test_report_html_injects_no_element_and_embeds_parseable_data(hostile):
    page = (hostile / "report.html").read_text(encoding="utf-8")
    parsed = _Collector()
    parsed.feed(page)
    assert "img" not in parsed.tags and parsed.tags.count("script") == 2
    data = json.loads(parsed.scripts[0])   # the problem cases, as embedded
    rows = data["cells"]["c-add-float32"]["rows"]
    assert len(rows) == 2 and all("\\u202eevil" in row[data["columns"].index("message")] for row in rows)
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "\\u202eevil" in page
    assert "hostile \\x00\\x1b[31mred" in page   # the version string, neutral


def test_comparison_page_is_inert(hostile, hostile_run, tmp_path):
    other = hostile_run(tmp_path / "other", "plain words")
    out = tmp_path / "compare.html"
    assert main(["report", str(hostile), str(other), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert RAW.findall(page) == [] and "<img" not in page


def test_neutral_keeps_ordinary_text_and_escapes_the_rest():
    ordinary = "tab\tnewline\n ünïcödé 中文 ∞ <b>"
    assert neutral(ordinary) is ordinary
    assert neutral("a\x00b\u202ec\udcff") == "a\\x00b\\u202ec\\udcff"
    assert markdown_text("a|b\n*c*") == "a\\|b \\*c\\*"
