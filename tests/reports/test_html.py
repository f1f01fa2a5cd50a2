"""report.html from synthetic runs: escaping, matrix, histograms, failure details, size."""
from __future__ import annotations

import re

from conform.reports import build_summary, render_html
from conform.reports._html import DETAILS_PER_CELL, bin_label, histogram, percent

BINS = [0.0, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0, 16.0, 256.0, "inf"]


def render(records, run_dir="out/run"):
    summary = build_summary(records, {"backend": "synthetic", "seed": 0}, "0.0.test")
    return render_html(summary, records, run_dir=run_dir)


def test_script_in_messages_attrs_and_names_comes_out_escaped(record):
    evil = "<script>alert('x')</script>"
    records = [record("add", "float32", "error", 0, message=evil, traceback=evil),
               record("add", "float32", "fail", 1, error=3.0, message=evil, attrs={"k": evil}),
               record("add", "float32", "pass", 2)]
    page = render(records, run_dir="dir with <b>")
    assert evil not in page and "<b>" not in page
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # the page's own inline script only


def test_page_is_self_contained(record):
    page = render([record("add", "float32", "fail", 0, error=2.0)])
    assert not re.search(r"<(link|img|iframe)\b", page)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "@import" not in page and "url(" not in page


def test_headline_counts_and_environment(record, run_dir, tmp_path):
    records = [record("add", "float32", "pass", i) for i in range(3)] + [
        record("add", "float32", "fail", 3, error=9.0), record("abs", "int32", "crash", 0)]
    run_dir(tmp_path, records)
    page = (tmp_path / "report.html").read_text()
    assert re.search(r'class="rate">60.00%<', page)
    assert ">pass 3<" in page and ">fail 1<" in page and ">crash 1<" in page
    env = page[page.index('id="env"'):]
    for text in ("synthetic 1.0", "subnormals declared</th><td>ftz", "subnormals applied</th><td>ieee",
                 "conform version</th><td>0.0.test", "max examples</th><td>20",
                 "worker restarts</th><td>0", "wall time (s)</th><td>1.5", "model format</th><td>native"):
        assert text in env, text


def test_matrix_cells_carry_class_rate_and_link(record):
    records = [record("add", "float32", "pass", 0), record("add", "float32", "fail", 1, error=1.0 + 2),
               record("add", "int32", "pass", 0), record("abs", "float16", "timeout", 0),
               record("neg", "float16", "impl_defined", 0)]
    page = render(records)
    matrix = page[page.index('id="matrix"'):page.index("</table>", page.index('id="matrix"'))]
    # the pass rate, then judged / cases
    assert re.search(r'<td class="fail" data-r="0.5"[^>]*><a href="#c-add-float32">50.00%<span class="n">2/2</span></a>',
                     matrix)
    assert re.search(r'<td class="pass" data-r="1.0"[^>]*><a href="#c-add-int32">100.00%<span class="n">1/1</span></a>',
                     matrix)
    assert re.search(r'<a href="#c-neg-float16">n/a<span class="n">impl-defined</span>', matrix)  # not judged
    assert re.search(r'<td class="err" data-r="0.0"', matrix)
    assert re.search(r'<td class="impl" title=', matrix)  # nothing judged: no data-r, sorts last
    assert [m for m in re.findall(r"<th[^>]*>([^<]+)</th>", matrix)] == ["op", "float16", "float32", "int32"]
    assert matrix.count("data-bad") == 2  # add and abs rows


def test_conversions_become_rows_per_target_type(record):
    records = [record("convert", "float32->int32"), record("convert", "int32->float32"),
               record("convert", "float16->int32")]
    page = render(records)
    assert 'id="c-convert-float32-to-int32"' in page
    headers = re.findall(r"<th[^>]*>([^<]+)</th>", page[page.index('id="matrix"'):])[:4]
    assert headers == ["op", "float16", "float32", "int32"]
    assert page.count('<tr data-op="convert"') == 2  # → int32 and → float32


def test_histogram_svg_drawn_with_passing_and_exceeding_bins(record):
    records = [record("add", "float32", "fail", 0, error=3.0), record("add", "float32", "pass", 1)]
    page = render(records)
    svg = re.search(r'<svg class="hist".*?</svg>', page, re.S).group(0)
    assert svg.count('<rect class="in"') == 2 and svg.count('<rect class="over"') == 1
    assert "(16, 256]: 1 elements" in svg and "[0, 1/16]: 6 elements" in svg
    assert 'class="bound"' in svg and ">∞</tspan>" in svg


def test_each_card_names_its_worst_element_with_its_inputs(record):
    """What an exhaustive sweep is for: the worst error, where it is and what input gave it."""
    worst = {"index": [3468359], "expected": 4.86e-39, "actual": 4.8599e-39, "error": 0.4,
             "bound": 0.5, "inputs": [4.86e-39]}
    records = [record("exp", "float32", "pass", 0, error=0.25),
               record("exp", "float32", "pass", 1, error=0.4, worst=worst),
               record("exp", "float32", "pass", 2, error=0.125),
               record("abs", "int32", "pass", 0, worst=None),   # every element matched exactly
               record("sum", "float32", "fail", 0, error=3.0, worst={**worst, "inputs": [[1.5] * 200]})]
    page = render(records)
    card = page[page.index('id="c-exp-float32"'):]
    card = card[:card.index("</dl>")]
    assert ("<code>exp.float32.1</code> out[3468359]: inputs <span class=\"mono\">(4.86e-39)</span>, "
            "expected <span class=\"mono\">4.86e-39</span>, actual <span class=\"mono\">4.8599e-39</span>") in card
    abs_card = page[page.index('id="c-abs-int32"'):]
    assert "worst element" not in abs_card[:abs_card.index("</dl>")]
    sum_card = page[page.index('id="c-sum-float32"'):]
    sum_card = sum_card[:sum_card.index("</dl>")]
    assert "sum.float32.0" in sum_card and "characters cut; see results.jsonl" in sum_card


def test_histogram_geometry_and_labels():
    bars = histogram([100, 0, 0, 0, 1, 0, 0, 0, 0, 5], BINS)
    assert [b["over"] for b in bars["bars"]] == [False] * 5 + [True] * 5
    assert bars["bars"][0]["h"] == bars["h"] and bars["bars"][1]["h"] == 0
    assert 0 < bars["bars"][4]["h"] < bars["bars"][9]["h"] < bars["h"]
    assert bars["bound_x"] == 5 * bars["w"]
    assert histogram([0] * 10, BINS) is None and histogram([], BINS) is None
    assert [bin_label(b) for b in BINS] == ["0", "1/16", "1/8", "1/4", "1/2", "1", "2", "4", "16",
                                            "256", "∞"]


def test_failure_details_worst_first_capped_with_repro(record):
    records = [record("mul", "float32", "fail", i, error=float(i + 1)) for i in range(8)]
    records.append(record("mul", "float32", "error", 8, traceback="Traceback: boom"))
    page = render(records, run_dir="runs/my run")
    ids = re.findall(r'<details class="case \w+" id="case-([\w.-]+)"', page)
    assert len(ids) == DETAILS_PER_CELL
    assert ids[0] == "mul_float32_8"  # the error (no ratio) ranks worst
    assert ids[1:] == ["mul_float32_7", "mul_float32_6", "mul_float32_5", "mul_float32_4"]
    assert "… and 4 more fail" in page
    assert "conform repro mul.float32.7 --from &#39;runs/my run&#39;" in page
    assert "Traceback: boom" in page
    case = page[page.index('id="case-mul_float32_7"'):]
    for text in ("(1.0, 0.5)", "1.5", "1.25", "8 ulp vs 0.5 ulp", "ulp(0.5)"):
        assert text in case[:case.index("</details>")], text


def test_long_messages_are_clipped(record):
    page = render([record("add", "float32", "error", 0, message="x" * 10_000)])
    assert "x" * 2000 in page and "x" * 2001 not in page and "8000 characters cut" in page


def test_percent_never_rounds_up_to_100_and_is_the_terminals_and_certificates_form():
    from conform.reports import rate_text

    assert percent(0.99996) == "99.99%" and percent(1.0) == "100.00%" and percent(None) == "n/a"
    assert percent(0.29) == "29.00%"   # 0.29 * 10000 is 2899.999...: not 28.99%
    for rate in (0.99996, 0.29, 0.5555, 1 / 3, 0.0, 1.0, None):
        assert percent(rate) == rate_text(rate)   # (the terminal's and certificates' form)


def test_a_full_sized_run_renders_small(record):
    records = []
    for op in range(40):
        for dtype in ("float16", "float32", "float64", "int32", "int64"):
            for i in range(19):
                verdict = "fail" if (op + i) % 7 == 0 else "pass"
                records.append(record(f"op{op}", dtype, verdict, i, error=2.0 if verdict == "fail" else 0.1,
                                      message="m" * 300 if verdict == "fail" else None))
    assert len(records) == 3800 and sum(r["verdict"] == "fail" for r in records) > 500
    page = render(records)
    assert len(page.encode()) < 2_000_000


def test_special_value_failures_are_named_and_rank_first(record):
    records = [record("mul", "float32", "fail", 0, error=50.0),
               record("mul", "float32", "fail", 1, error=0.0, message="special value mismatch")]
    records[1]["worst"].update(expected="inf", actual="nan")
    page = render(records)
    ids = re.findall(r'<details class="case \w+" id="case-([\w.-]+)"', page)
    assert ids == ["mul_float32_1", "mul_float32_0"]
    assert "special value mismatch (NaN, infinity or signed zero)</summary>" in page
    assert ">inf</td>" in page and ">nan</td>" in page


def test_a_matrix_wider_than_the_page_scrolls_in_its_own_frame(record):
    page = render([record("add", dtype, "pass", 0) for dtype in ("float16", "float32", "int32")])
    frame = page.index('<div class="matrix-frame"')
    assert frame < page.index('<table id="matrix">') < page.index("</table>\n</div>", frame)
    assert re.search(r"\.matrix-frame \{ overflow: auto; max-width: 100%", page)
    assert "position: sticky; left: 0" in page   # the op names stay in view
