"""report.html of a real jax run with failures, driven in headless Chromium (Debian's package)
by Playwright: matrix, sorting, filters, coverage, a failure's details and its repro command,
every problem case of a cell paged and exported as CSV; and a report whose backend messages hold
control characters, bidi overrides and markup.

Needs /usr/bin/chromium (`apt-get install -y chromium`; .ci/run installs it) and the `playwright`
package (never `playwright install`). Missing either fails the test under CI (CI=true) and skips
it elsewhere. The screenshot goes to test-artifacts/report.png, the load time to
test-artifacts/report-load.txt.
"""
from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-quic"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _sync_playwright():
    problems = [] if CHROMIUM.exists() else [f"{CHROMIUM} is missing (apt-get install -y chromium)"]
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        problems.append("the playwright package is missing (pip install playwright)")
    if problems:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("; ".join(problems))
        pytest.skip("; ".join(problems))
    return sync_playwright


@pytest.fixture(scope="module")
def jax_run(tmp_path_factory):
    """A real jax run with failures: jax flushes float32 subnormals, judged here under `ieee`."""
    out = tmp_path_factory.mktemp("jax-report")
    proc = subprocess.run([sys.executable, "-m", "conform.harness.cli", "run", "--backend", "jax",
                           "--ops", "multiply,add,transpose", "--dtypes", "float32", "--max-examples", "10",
                           "--subnormals", "ieee", "--out", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def page():
    sync_playwright = _sync_playwright()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser.new_page(viewport={"width": 1280, "height": 900})
        browser.close()


def _row_ops(page) -> list[str]:
    return page.eval_on_selector_all("#matrix tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.op)")


def test_report_in_chromium(jax_run, page):
    requests, errors = [], []
    page.on("request", lambda request: requests.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    started = time.perf_counter()
    page.goto((jax_run / "report.html").as_uri(), wait_until="load")
    load_seconds = time.perf_counter() - started

    headline = page.locator("#pass-rate").inner_text()
    assert headline.endswith("ops")
    judged, cases = map(int, re.search(r"judged (\d+) of (\d+) cases \(coverage [\d.]+%\)", headline).groups())
    assert 0 < judged <= cases
    counts = page.eval_on_selector_all("#matrix td .n", "spans => spans.map(s => s.textContent)")
    assert len(counts) == 3 and all(re.fullmatch(r"\d+/\d+", c) for c in counts), counts
    assert _row_ops(page) == ["add", "multiply", "transpose"]
    assert page.locator("#matrix td.fail").count() == 2 and page.locator("#matrix td.pass").count() == 1

    page.click("#matrix th:text-is('float32')")           # by pass rate, worst first
    rates = page.eval_on_selector_all("#matrix tbody tr td:nth-child(2)", "tds => tds.map(t => +t.dataset.r)")
    assert rates == sorted(rates) and rates[-1] == 1.0
    page.click("#matrix th:text-is('op')")
    assert _row_ops(page) == ["add", "multiply", "transpose"]
    page.click("#matrix th:text-is('op')")
    assert _row_ops(page) == ["transpose", "multiply", "add"]

    page.fill("#op-filter", "mul")
    assert _row_ops(page) == ["multiply"] and page.locator("details.op:visible").count() == 1
    page.fill("#op-filter", "")
    page.check("#failures-only")
    assert sorted(_row_ops(page)) == ["add", "multiply"]
    assert not page.locator("details#op-transpose").is_visible()

    page.click("#matrix a[href='#c-multiply-float32']")   # opens the op's panel
    case = page.locator("#op-multiply details.case").first
    case.locator("summary").click()
    repro = case.locator("code.repro")
    assert repro.is_visible()
    assert re.fullmatch(rf"conform repro multiply\.float32\.[\w.-]+ --from {re.escape(str(jax_run))}",
                        repro.inner_text())
    assert "ulp" in case.inner_text() and "expected" in case.inner_text()
    panel = page.locator("#op-multiply")
    assert "defined by: XLA Mul" in panel.inner_text() and "why: " in panel.inner_text()

    box = panel.locator(".all-failing").first
    problems = int(re.search(r"all (\d+) problem cases", box.inner_text()).group(1))
    plans = box.locator("table.groups tbody tr")
    assert plans.count() >= 1
    assert sum(int(plans.nth(i).locator("td").nth(2).inner_text()) for i in range(plans.count())) == problems
    # jax flushes subnormals: judged under ieee, its failures lie where inputs or results are subnormal
    regions = {plans.nth(i).locator("td").nth(1).inner_text() for i in range(plans.count())}
    assert regions <= {"subnormal input", "subnormal result"}, regions
    box.locator("button.show-all").click()
    rows = box.locator(".pager tbody tr")
    assert rows.count() == min(problems, 50)
    assert rows.first.locator("td").first.inner_text().startswith("multiply.float32.")
    assert box.locator(".pager .page").inner_text().startswith("page 1 of ")
    with page.expect_download() as download:
        box.locator("button.csv").click()
    with open(download.value.path(), newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    assert table[0][:4] == ["case", "verdict", "plan", "region"] and table[0][-1] == "repro"
    assert len(table) == problems + 1
    assert all(row[-1].startswith("conform repro multiply.float32.") and str(jax_run) in row[-1]
               for row in table[1:])

    ARTIFACTS.mkdir(exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")   # a sticky header would otherwise land mid-page
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    (ARTIFACTS / "report-load.txt").write_text(f"goto -> load: {load_seconds:.3f} s\n")
    assert errors == []
    assert all(url.startswith("file:") for url in requests), requests   # self-contained


def test_hostile_messages_render_as_text(hostile_run, tmp_path, page):
    """Backend messages with NUL, ANSI codes, a right-to-left override, markup and a lone
    surrogate: the page loads without errors, injects nothing, and shows the escapes."""
    out = hostile_run(tmp_path / "hostile")
    errors, dialogs = [], []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto((out / "report.html").as_uri(), wait_until="load")
    assert page.locator("img").count() == 0 and page.locator("script").count() == 2
    box = page.locator(".all-failing").first
    box.evaluate("b => b.closest('details').open = true")
    box.locator("button.show-all").click()
    text = box.locator(".pager").inner_text()
    assert "\\u202e" in text and "\\x1b[31m" in text and "<img src=x" in text
    assert "\u202e" not in page.content()
    formula = page.locator(".all-failing[data-cell='c-mul-float32']")
    formula.evaluate("b => b.closest('details').open = true")
    with page.expect_download() as download:
        formula.locator("button.csv").click()
    with open(download.value.path(), newline="", encoding="utf-8") as f:
        (header, row), = [list(csv.reader(f))]
    # the conftest's formula, exported as text that a spreadsheet does not run
    assert row[header.index("message")] == "'=cmd|' /C calc'!A0"
    assert errors == [] and dialogs == []
