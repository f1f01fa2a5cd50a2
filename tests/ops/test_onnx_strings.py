"""ONNX's string operators (ops/onnx_strings.py, ops/onnx_tfidf.py) and Constant's string forms:
the oracles against the operators' texts and the onnx package's node-test examples, the
regions, the string dtype through the judge, the wire and the corpus, and onnxruntime's
deviations, each pinned with its repro."""
from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

from conform.generators import generate_cases
from conform.generators._case import Case
from conform.harness.judge.judging import failure_message, judge_outputs
from conform.oracles import evaluate
from conform.oracles.expectations import expect
from conform.oracles.feeding import feeding_elements
from tests.ops.onnx_node_cases import node_cases
from tests.ops.real_backends import backends  # noqa: F401 - the fixture


def texts(*values) -> np.ndarray:
    """A string array (object array of str) of ``values``."""
    out = np.empty(len(values), object)
    out[:] = list(values)
    return out


def _attrs(node) -> dict:
    """A node's attributes with bytes as str (conform's attributes are text)."""
    def text(v):
        if isinstance(v, bytes):
            return v.decode()
        return [text(x) for x in v] if isinstance(v, list) else v
    return {a.name: text(helper.get_attribute_value(a)) for a in node.attribute}


OPS = {"string_split": "onnx_string_split", "stringnormalizer": "onnx_string_normalizer",
       "regex_full_match": "onnx_regex_full_match", "string_concat": "onnx_string_concat",
       "tfidfvectorizer": "onnx_tfidf_vectorizer"}


@pytest.mark.parametrize("module", sorted(OPS))
def test_the_onnx_node_examples_are_reproduced(module):
    """Every example of the onnx package's node tests, each output equal (regex ones included:
    their \\w, \\W, \\b, ^ and $ on ASCII text read alike in Python with re.ASCII)."""
    for name, node, inputs, outputs in node_cases(module):
        inputs = [x.astype(object) if x.dtype.kind in "OU" else x for x in inputs]
        got = evaluate(OPS[module], inputs, _attrs(node))
        for g, want in zip(got, outputs):
            assert g.shape == want.shape and g.tolist() == want.tolist(), name


def test_string_split_follows_the_text():
    split = lambda x, **a: [o.tolist() for o in evaluate("onnx_string_split", [x], a)]  # noqa: E731
    # k delimiters give k + 1 substrings: consecutive ones, and one at an end, delimit "";
    # an empty element has none: one substring, ""
    assert split(texts("a,,b,", ""), delimiter=",") == [[["a", "", "b", ""], ["", "", "", ""]],
                                                         [4, 1]]
    # whitespace mode: runs of any whitespace are one separator, the ends are stripped
    assert split(texts(" a\tb \n c ", "  "), delimiter="") == [[["a", "b", "c"], ["", "", ""]],
                                                                [3, 0]]
    # maxsplit: at most that many splits, the rest kept whole (0: no split)
    assert split(texts("a-b-c"), delimiter="-", maxsplit=1) == [[["a", "b-c"]], [2]]
    assert split(texts("a-b-c"), delimiter="-", maxsplit=0) == [[["a-b-c"]], [1]]
    assert split(np.array("x y", object)) == [["x", "y"], 2]   # a 0-d input: a 1-D Y


def test_string_normalizer_follows_the_text():
    norm = lambda x, **a: evaluate("onnx_string_normalizer", [x], a)[0].tolist()  # noqa: E731
    x = texts("Monday", "tuesday", "MONDAY")
    assert norm(x, stopwords=["monday"]) == ["tuesday"]   # case-insensitive by default
    assert norm(x, stopwords=["monday"], is_case_sensitive=1) == ["Monday", "tuesday", "MONDAY"]
    assert norm(x, case_change_action="UPPER") == ["MONDAY", "TUESDAY", "MONDAY"]
    assert norm(x.reshape(1, 3), stopwords=["MONDAY", "Tuesday"]) == [[""]]   # [1, 1]
    assert norm(x, stopwords=["monday", "tuesday"]) == [""]                   # [1]


def test_tfidf_counts_an_ngram_once_per_position_set():
    """The text's example ([94, 17, 36, 12, 28], skips 2: 2-grams [94, 12], [17, 28]); a 1-gram
    is found once whatever the skip count; IDF truncates, TFIDF scales, TF ignores weights."""
    x = np.array([94, 17, 36, 12, 28, 94])
    attrs = dict(min_gram_length=1, max_gram_length=2, max_skip_count=2, ngram_counts=[0, 1],
                 ngram_indexes=[0, 1, 3], pool_int64s=[94, 94, 12, 17, 28],
                 weights=[0.5, 2.0, 3.0])
    tf, idf, tfidf = (evaluate("onnx_tfidf_vectorizer", [x], {**attrs, "mode": m})[0].tolist()
                      for m in ("TF", "IDF", "TFIDF"))
    assert tf == [2, 1, 0, 1] and idf == [0.5, 2.0, 0, 3.0] and tfidf == [1.0, 2.0, 0, 3.0]


def test_regex_full_match_reads_the_whole_string():
    match = lambda p, *s: evaluate("onnx_regex_full_match", [texts(*s)], {"pattern": p})[0]  # noqa: E731
    assert match("a(?:b|c)*", "abcb", "abd", "", "ab\n").tolist() == [True, False, False, False]
    assert match("\\d+", "12", "\u0663").tolist() == [True, False]   # RE2's \d is [0-9]
    assert match(".\u0301", "e\u0301", "\u00e9").tolist() == [True, False]   # code points


def test_drawn_patterns_compile_and_their_samples_match(specs):
    cases = generate_cases(specs["onnx_regex_full_match"], "string", count=12, seed=5)
    for case in cases:
        assert re.fullmatch(case.attrs["pattern"], case.attrs["samples"][0], re.ASCII), case.id
    assert any(expect(specs["onnx_regex_full_match"], c)[0].expected.any() for c in cases)


def test_the_regions_mark_what_the_text_leaves_open(specs):
    split = Case("s", "onnx_string_split", "string", ("string",), "string",
                 [texts("a b  ", "a b")], {"delimiter": None, "maxsplit": 1}, "normal", 0)
    assert expect(specs["onnx_string_split"], split)[0].impl_mask.tolist() == [
        [False, True], [False, False]]   # the suffix 'b  ' only
    norm = Case("n", "onnx_string_normalizer", "string", ("string",), "string",
                [texts("straße", "abc", "ǅ")], {"case_change_action": "UPPER"}, "normal", 0)
    assert expect(specs["onnx_string_normalizer"], norm)[0].impl_mask.tolist() == [
        True, False, True]


def test_feeding_names_the_input_element_of_an_output(specs):
    x = texts("a b", "c", "monday")
    assert feeding_elements("onnx_string_split", [x], {"delimiter": ""}, [0, 1])[0].tolist() \
        == ["a b"]
    assert feeding_elements("onnx_string_normalizer", [x], {"stopwords": ["C"]},
                            [1])[0].tolist() == ["monday"]
    rows = np.array([[1, 2], [3, 4]])
    assert feeding_elements("onnx_tfidf_vectorizer", [rows], {}, [1, 0])[0].tolist() == [3, 4]


def test_a_wrong_string_fails_and_the_message_shows_it_repr_d(specs):
    spec = specs["onnx_string_concat"]
    case = Case("c", "onnx_string_concat", "string", ("string", "string"), "string",
                [texts("ß", "a"), texts("x", "\u0301")], {}, "normal", 0)
    assert judge_outputs(spec, case, [texts("ßx", "a\u0301")]).verdict == "pass"
    judged = judge_outputs(spec, case, [texts("ßx", "á")])   # the precomposed form: not equal
    assert judged.verdict == "fail"
    assert "worst out[1]: actual='\u00e1' ('\\xe1'), expected='a\u0301' ('a\\u0301')" \
        in failure_message(case, judged, "b")


def test_string_arrays_cross_the_wire_and_the_corpus_exactly(tmp_path):
    from conform.generators._corpus_format import read, write
    from conform.harness.run.wire import WireError, pack, unpack, wire_array

    odd = texts("", "a\x00b", "\ud800", "😀", "e\u0301", " \t\n").reshape(2, 3)
    _, _, (got, number) = unpack(pack("k", None, [wire_array(odd), wire_array(np.int8([7]))]))
    assert got.dtype == object and got.tolist() == odd.tolist() and number.tolist() == [7]
    with pytest.raises(WireError):
        wire_array(np.array([1, "a"], object))
    frame = bytearray(pack("k", None, [wire_array(texts("ab"))]))
    frame[-16:-14] = b"\xff\xfe"   # not UTF-8
    with pytest.raises(WireError, match="string data"):
        unpack(bytes(frame))
    case = Case("c.0", "onnx_string_concat", "string", ("string",), "string", [odd], {"p": "ß"},
                "normal", 1)
    write(tmp_path / "corpus", [case])
    assert read(tmp_path / "corpus")[0].inputs[0].tolist() == odd.tolist()


# -- onnxruntime ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op, dtype", [("onnx_string_concat", "string"),
                                       ("onnx_regex_full_match", "string"),
                                       ("onnx_tfidf_vectorizer", "string"),
                                       ("onnx_tfidf_vectorizer", "int32"),
                                       ("onnx_constant", "string")])
def test_onnxruntime_passes_the_drawn_cases(specs, backends, op, dtype):  # noqa: F811
    from tests.ops.real_backends import assert_drawn_cases_pass

    assert assert_drawn_cases_pass(specs[op], backends["onnxruntime"], dtype, count=8) > 0


def _ort_verdict(specs, backends, op, inputs, attrs):  # noqa: F811
    from conform.harness.backends.models import run_case

    case = Case(f"{op}.pinned", op, "string", ("string",), "string", inputs, attrs, "normal", 0)
    spec = specs[op]
    return case, judge_outputs(spec, case, run_case(backends["onnxruntime"], spec, case))


def test_onnxruntime_splits_on_spaces_only(specs, backends):  # noqa: F811
    """A real deviation: onnxruntime's whitespace mode treats only ' ' as whitespace, so a tab
    or a newline neither separates nor is stripped (the text: 'consecutive whitespace
    characters are regarded as a single separator'). Repro: StringSplit (no delimiter) of
    ['a\\tb'] gives ['a\\tb'], 1 for ['a', 'b'], 2."""
    case, judged = _ort_verdict(specs, backends, "onnx_string_split", [texts("a\tb", "c d")], {
        "delimiter": None, "maxsplit": None})
    assert judged.verdict == "fail"
    message = failure_message(case, judged, "onnxruntime")
    assert "actual='a\\tb', expected='a', inputs=(['a\\tb'])" in message   # inputs quoted too


def test_onnxruntime_gives_an_empty_element_no_substring(specs, backends):  # noqa: F811
    """A real deviation: with a delimiter, onnxruntime splits "" into no substring (Z = 0);
    splitting on a delimiter gives one substring more than the delimiters found (the text's
    consecutive delimiters delimit empty strings; its example 'o-n-n--x-' gives 6, the last
    one ""), so "" is one substring, "" (the onnx package's reference agrees). Repro:
    StringSplit(delimiter=',') of ['', 'a,b'] gives Z = [0, 2] for [1, 2]."""
    _, judged = _ort_verdict(specs, backends, "onnx_string_split", [texts("", "a,b")], {
        "delimiter": ",", "maxsplit": None})
    assert judged.verdict == "fail" and judged.outputs[1][1].verdict == "fail"


def test_onnxruntime_refuses_a_symbolic_1_by_c_input_of_string_normalizer():
    """onnxruntime refuses, while building the session, a StringNormalizer whose input is
    declared [d0, d1] ('Input shape must have either [C] or [1,C] dimensions where C > 0'),
    though a [1, C] tensor fed at run time is what the text accepts: the lowering reshapes to
    the case's constant shape first."""
    import onnxruntime as ort
    from onnx import TensorProto

    node = helper.make_node("StringNormalizer", ["x"], ["y"], is_case_sensitive=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.STRING, ["d0", "d1"])], [helper.make_tensor_value_info(
            "y", TensorProto.STRING, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    with pytest.raises(Exception, match=re.escape("[C] or [1,C] dimensions")):
        ort.InferenceSession(model.SerializeToString())


def test_onnxruntime_normalizes_only_where_its_en_us_locale_is_installed(specs, backends):  # noqa: F811
    """onnxruntime builds StringNormalizer's default locale from the name 'en_US.UTF-8' and
    refuses the model where the platform lacks it (this machine has C.UTF-8 only), though the
    text leaves the default to 'en_US or platform specific equivalent as decided by the
    implementation': LOWER, UPPER and case-insensitive stop words then raise (`error`
    verdicts). A case-sensitive case without a case change needs no locale and passes."""
    from conform.harness.backends.models import run_case

    spec = specs["onnx_string_normalizer"]
    plain = Case("n.0", spec.op, "string", ("string",), "string", [texts("a", "B", "a")],
                 {"stopwords": ["a"], "is_case_sensitive": 1}, "normal", 0)
    assert judge_outputs(spec, plain, run_case(backends["onnxruntime"], spec, plain)).verdict \
        == "pass"
    lower = Case("n.1", spec.op, "string", ("string",), "string", [texts("a", "B")],
                 {"case_change_action": "LOWER"}, "normal", 0)
    if not _has_locale("en_US.UTF-8"):   # onnxruntime refuses the model
        with pytest.raises(Exception, match="Failed to construct locale with name:en_US.UTF-8"):
            run_case(backends["onnxruntime"], spec, lower)
    else:
        assert judge_outputs(spec, lower, run_case(backends["onnxruntime"], spec, lower)) \
            .verdict == "pass"


def _has_locale(name: str) -> bool:
    """Whether the C library knows locale ``name`` (this process's locale is left as it was)."""
    import locale

    kept = locale.setlocale(locale.LC_CTYPE)
    try:
        locale.setlocale(locale.LC_CTYPE, name)
    except locale.Error:
        return False
    finally:
        locale.setlocale(locale.LC_CTYPE, kept)
    return True


def test_onnxruntime_gathers_only_the_first_string_of_each_slice(specs, backends):  # noqa: F811
    """A real deviation: onnxruntime's Gather of a string tensor along an axis with more than
    one element per gathered slice copies each slice's first string and leaves the others
    empty (the text: output[i, j] = data[indices[i], j]). Repro: Gather(axis=0) of
    [['a', 'b', 'c'], ['f', 'g', 'h']] at [1, 0] gives [['f', '', ''], ['a', '', '']]."""
    from conform.harness.backends.models import run_case

    spec = specs["onnx_gather"]
    case = Case("onnx_gather.pinned", spec.op, "string", ("string", "int64"), "string",
                [texts("a", "b", "c", "f", "g", "h").reshape(2, 3), np.array([1, 0])],
                {"axis": 0}, "normal", 0)
    got = run_case(backends["onnxruntime"], spec, case)
    assert got[0].tolist() == [["f", "", ""], ["a", "", ""]]
    judged = judge_outputs(spec, case, got)
    assert judged.verdict == "fail" and judged.mismatched == 4
    assert evaluate(spec.op, case.inputs, case.attrs)[0].tolist() == [["f", "g", "h"],
                                                                      ["a", "b", "c"]]
