"""ONNX's string operators (ai.onnx): StringConcat (20), StringSplit (20), StringNormalizer
(10) and RegexFullMatch (20). Every output is judged exactly: text is compared character for
character, counts and match flags as integers and booleans.

The oracles follow each operator's text (``onnx.defs.get_schema(op).doc`` and its attributes);
where the text leaves a choice to the implementation, the spec declares a region:

* StringNormalizer's case change follows "the locale", which the text leaves to the
  implementation ("Default en_US or platform specific equivalent as decided by the
  implementation"): ASCII letters change case as every en_US locale changes them; letters
  outside ASCII (whose simple and full Unicode mappings differ: 'ß', 'İ', 'ǅ') are the region
  ``locale_case_mapping``. Case-insensitive stop-word matching is drawn only where every
  reasonable case folding agrees (see :func:`foldings_agree`).
* StringSplit's whitespace mode with ``maxsplit``: the text removes "leading or trailing
  whitespace" and also keeps "the trailing suffix of input string after the final split
  point": whether that suffix loses its trailing whitespace is the region
  ``split_suffix_whitespace``. Whitespace is drawn as ASCII space, tab and newline only (the
  text does not define whitespace).
* RegexFullMatch names RE2 syntax; the oracle is Python's ``re.fullmatch`` (with ``re.ASCII``:
  RE2's ``\\d`` is ``[0-9]``), on patterns of a grammar whose RE2 and Python meanings agree
  (:func:`draw_pattern`).
"""
from __future__ import annotations

import re

import numpy as np

from conform.op_registry import op, region
from conform.ops._string_draws import (draw_regex_full_match, draw_string_normalizer,
                                       draw_string_split, values_regex_full_match,
                                       values_string_normalizer, values_string_split)
from conform.ops.regions import RegionContext

#: Whitespace as drawn and as the oracle reads it (ASCII: the text does not define it)
WHITESPACE = " \t\n\v\f\r"
_RUN = re.compile(f"[{re.escape(WHITESPACE)}]+")


def strings_like(values, shape) -> np.ndarray:
    """An object array of ``shape`` holding the ``str`` values."""
    out = np.empty(len(values), object)
    out[:] = list(values)
    return out.reshape(shape)


def _row_feed(inputs, attrs, index):
    """Output element ``index`` (an input element's results along a new last axis, or the
    element's own count) is computed from the input element at its leading indices."""
    x = inputs[0]
    return [strings_like([x[tuple(index[:x.ndim])]], (1,))]


# -- StringConcat --------------------------------------------------------------------------------

def numpy_string_concat(x, y):
    """The numpy backend: ``numpy.strings.add`` on NumPy's variable-width string type."""
    kind = np.dtypes.StringDType()
    return np.asarray(np.strings.add(x.astype(kind), y.astype(kind)), kind).astype(object)


@op("onnx_string_concat", version=1, numpy=numpy_string_concat)
def oracle_onnx_string_concat(x, y):
    """StringConcat: 'concatenates string tensors elementwise (with NumPy-style broadcasting
    support)': ``z = x + y`` per element."""
    return (np.asarray(x + y, object),)


# -- StringSplit ---------------------------------------------------------------------------------

def split_one(text: str, delimiter, maxsplit) -> list[str]:
    """One element's substrings: on ``delimiter`` (consecutive delimiters delimit empty
    strings), or where it is unset or "" on runs of whitespace with leading and trailing
    whitespace removed; at most ``maxsplit`` splits (None: as many as possible), the rest of
    the string after the last split point kept as the last substring."""
    limit = -1 if maxsplit is None else maxsplit
    if delimiter:
        return text.split(delimiter, limit)
    parts, rest = [], text.lstrip(WHITESPACE)
    while rest and (limit < 0 or len(parts) < limit):
        run = _RUN.search(rest)
        if run is None:
            break
        parts.append(rest[:run.start()])
        rest = rest[run.end():]
    return parts + [rest] if rest else parts


def onnx_string_split(case, graph):
    """One StringSplit node carrying the attributes the case sets."""
    set_ = {k: v for k, v in case.attrs.items() if k in ("delimiter", "maxsplit") and v is not None}
    graph.node(graph.op_type, [graph.inputs[0]], graph.outputs, **set_)


@op("onnx_string_split", version=1, feeding=_row_feed, draw=draw_string_split,
    values=values_string_split, onnx=onnx_string_split, value_dependent_shape=True)
def oracle_onnx_string_split(x, *, delimiter=None, maxsplit=None):
    """StringSplit: Y holds each element's substrings along a new last axis, padded with empty
    strings to the largest count; Z each element's count (int64)."""
    pieces = [split_one(s, delimiter, maxsplit) for s in x.ravel().tolist()]
    width = max(map(len, pieces), default=0)
    padded = [p + [""] * (width - len(p)) for p in pieces]
    y = strings_like([s for p in padded for s in p], (*x.shape, width))
    return y, np.array([len(p) for p in pieces], np.int64).reshape(x.shape)


@region
def split_suffix_whitespace(ctx: RegionContext) -> np.ndarray:
    """StringSplit in whitespace mode with ``maxsplit``: a last substring (the rest after the
    final split point) that ends in whitespace, which the text both removes ("trailing
    whitespace is removed") and keeps ("the trailing suffix ... is also added")."""
    if ctx.attrs.get("delimiter") or ctx.attrs.get("maxsplit") is None \
            or ctx.expected.dtype != object:
        return ctx.none()
    mask = ctx.none()
    for index, s in np.ndenumerate(ctx.inputs[0]):
        parts = split_one(s, None, ctx.attrs["maxsplit"])
        if parts and parts[-1][-1] in WHITESPACE:
            mask[(*index, len(parts) - 1)] = True
    return mask


# -- StringNormalizer ----------------------------------------------------------------------------

def kept_elements(x, stopwords, is_case_sensitive) -> list[int]:
    """The flat positions of the elements of ``x`` that are not stop words."""
    words = list(stopwords or ())
    if is_case_sensitive:
        return [i for i, s in enumerate(x.ravel().tolist()) if s not in set(words)]
    folded = {w.lower() for w in words}
    return [i for i, s in enumerate(x.ravel().tolist()) if s.lower() not in folded]


def _changes_case_outside_ascii(s: str, action) -> bool:
    change = {"LOWER": str.lower, "UPPER": str.upper}.get(action)
    return change is not None and any(ord(c) > 127 and change(c) != c for c in s)


def onnx_string_normalizer(case, graph):
    """One StringNormalizer node with the attributes the case sets (stopwords as a list). A
    [1, C] input is first reshaped to its own shape, a constant: onnxruntime's shape inference
    refuses the graph input's symbolic [d0, d1] ("Input shape must have either [C] or [1,C]
    dimensions": a test pins it), and the Reshape moves no element."""
    set_ = {k: v for k, v in case.attrs.items() if v is not None}
    x = graph.inputs[0]
    if case.inputs[0].ndim == 2:
        x = graph.node("Reshape", [x, graph.const("shape", case.inputs[0].shape)], "x_1c")
    graph.node(graph.op_type, [x], **set_)


@op("onnx_string_normalizer", version=1, draw=draw_string_normalizer,
    values=values_string_normalizer, onnx=onnx_string_normalizer, value_dependent_shape=True,
    onnx_shape_dependent=True,
    feeding=lambda inputs, attrs, index: [
        strings_like([inputs[0].ravel()[k] for k in _source(inputs[0], attrs, index)], (-1,))])
def oracle_onnx_string_normalizer(x, *, stopwords=None, is_case_sensitive=None,
                                  case_change_action=None):
    """StringNormalizer: the elements of the [C] or [1, C] input that are not stop words
    (matched case-insensitively unless ``is_case_sensitive``), lower-cased, upper-cased or
    unchanged as ``case_change_action`` says; [""] (or [[""]]) where every element is
    dropped."""
    kept = [x.ravel()[k] for k in kept_elements(x, stopwords, is_case_sensitive)]
    change = {"LOWER": str.lower, "UPPER": str.upper}.get(case_change_action, str)
    out = [change(s) for s in kept] or [""]
    return (strings_like(out, (len(out),) if x.ndim == 1 else (1, len(out))),)


def _source(x, attrs, index) -> list[int]:
    kept = kept_elements(x, attrs.get("stopwords"), attrs.get("is_case_sensitive"))
    return kept[index[-1]:index[-1] + 1]


@region
def locale_case_mapping(ctx: RegionContext) -> np.ndarray:
    """StringNormalizer's LOWER and UPPER on an element holding a letter outside ASCII whose
    case changes: the text leaves the mapping to the locale the implementation picks."""
    action = ctx.attrs.get("case_change_action")
    x = ctx.inputs[0]
    kept = kept_elements(x, ctx.attrs.get("stopwords"), ctx.attrs.get("is_case_sensitive"))
    flags = [_changes_case_outside_ascii(x.ravel()[k], action) for k in kept] or [False]
    return np.array(flags, bool).reshape(ctx.expected.shape)


# -- RegexFullMatch ------------------------------------------------------------------------------

def onnx_regex_full_match(case, graph):
    """One RegexFullMatch node with the case's pattern."""
    graph.node(graph.op_type, [graph.inputs[0]], pattern=case.attrs["pattern"])


@op("onnx_regex_full_match", version=1, draw=draw_regex_full_match,
    values=values_regex_full_match, onnx=onnx_regex_full_match)
def oracle_onnx_regex_full_match(x, *, pattern, samples=()):
    """RegexFullMatch: True where the element fully matches ``pattern`` (RE2 syntax; the
    grammar drawn means the same in Python's ``re``, read with ``re.ASCII`` as RE2 reads
    ``\\d``). ``samples`` are strings the draw made to match (no attribute of the operator)."""
    compiled = re.compile(pattern, re.ASCII)
    flags = [compiled.fullmatch(s) is not None for s in x.ravel().tolist()]
    return (np.array(flags, bool).reshape(x.shape),)
