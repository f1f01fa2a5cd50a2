"""How the string operators' cases are drawn (ops/onnx_strings.py): Hypothesis draws shapes and
the string attributes (``kit.text``: conform's string alphabet, with the empty string, case
pairs, combining marks and non-BMP characters), NumPy fills the inputs (conform's string fill)
and each op's ``values`` hook mixes in the strings its attributes make interesting (stop words
in several cases, delimiters, strings a pattern matches)."""
from __future__ import annotations

import re

import numpy as np


#: The characters a RegexFullMatch pattern's literals are drawn from: RE2's and Python's
#: metacharacters among them are escaped; no letter escapes (their meanings differ)
PATTERN_CHARACTERS = "abcxyzAB019 -.*+?()[]|{}\\^$ßİıé\u0301中😀"
_META = set("\\.^$|?*+()[]{}-")


def _choose(rng, values):
    return values[int(rng.integers(0, len(values)))]


# -- StringSplit ---------------------------------------------------------------------------------

def draw_string_split(draw, kit, spec, dtype):
    """An input of rank 0 to 3 (empty ones too: Y then has a last axis of size 0, as the
    onnx package's own example has it), ``delimiter`` unset, "" (both whitespace mode) or 1 to
    2 characters, ``maxsplit`` unset or 0 to 3."""
    st = kit.st
    shape = draw(kit.shape(min_rank=0, max_rank=3, max_side=4,
                           min_side=draw(st.sampled_from([1, 1, 1, 1, 0]))))
    delimiter = draw(st.one_of(st.none(), st.just(""), kit.text(min_size=1, max_size=2)))
    maxsplit = draw(st.one_of(st.none(), st.integers(0, 3)))
    return kit.Signature((dtype,), (shape,), {"delimiter": delimiter, "maxsplit": maxsplit},
                         dtype)


def values_string_split(rng, inputs, attrs):
    """Each element rebuilt as 1 to 4 pieces joined by the delimiter (or by whitespace runs,
    leading and trailing ones included, in whitespace mode)."""
    x = inputs[0]
    flat = x.ravel()
    for k, text in enumerate(flat.tolist()):
        cuts = sorted(rng.integers(0, len(text) + 1, size=int(rng.integers(0, 4))).tolist())
        pieces = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
        if attrs["delimiter"]:
            flat[k] = attrs["delimiter"].join(pieces)
        else:
            runs = ["".join(_choose(rng, " \t\n") for _ in range(int(rng.integers(1, 3))))
                    for _ in range(len(pieces) + 1)]
            ends = [runs[0] if rng.integers(0, 2) else "", runs[-1] if rng.integers(0, 2) else ""]
            flat[k] = ends[0] + "".join(p + r for p, r in zip(pieces, runs[1:-1] + [""])) + ends[1]
    return [flat.reshape(x.shape)]


# -- StringNormalizer ----------------------------------------------------------------------------

def _simple(s: str, change) -> str:
    """``change`` ('lower' or 'upper') applied per character where it gives one character
    (Unicode's simple mapping, near enough: C's towlower and towupper)."""
    return "".join(c if len(getattr(c, change)()) != 1 else getattr(c, change)() for c in s)


def _ascii_lower(s: str) -> str:
    return "".join(c.lower() if "A" <= c <= "Z" else c for c in s)


#: The case foldings an implementation may compare stop words under: ASCII only, Unicode's full
#: lower- and upper-case mappings, its case folding, and per-character (simple) mappings
FOLDINGS = (_ascii_lower, str.lower, str.upper, str.casefold,
            lambda s: _simple(s, "lower"), lambda s: _simple(s, "upper"))


def foldings_agree(text: str, stopwords) -> bool:
    """Whether ``text`` is a stop word under every case folding of :data:`FOLDINGS` or under
    none: where they disagree, a case-insensitive match depends on the locale."""
    found = {fold(text) in {fold(w) for w in stopwords} for fold in FOLDINGS}
    return len(found) == 1


def draw_string_normalizer(draw, kit, spec, dtype):
    """A [C] or [1, C] input (C from 1 to 8); ``case_change_action`` and ``is_case_sensitive``
    unset or each value; ``stopwords`` unset or 1 to 4 strings. ``locale`` is left unset: the
    names a platform accepts are 'environment dependent'."""
    st = kit.st
    size = draw(st.integers(1, 8))
    shape = draw(st.sampled_from([(size,), (1, size)]))
    attrs = {"stopwords": draw(st.one_of(st.none(), st.lists(kit.text(max_size=4), min_size=1,
                                                             max_size=4, unique=True))),
             "is_case_sensitive": draw(st.sampled_from([None, 0, 1])),
             "case_change_action": draw(st.sampled_from([None, "NONE", "LOWER", "UPPER"]))}
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def values_string_normalizer(rng, inputs, attrs):
    """Some elements replaced by a stop word, as it is or changed in case; where stop words are
    matched case-insensitively, an element on which the case foldings disagree (whether it is
    a stop word depends on the locale) is replaced by an ASCII one."""
    x = inputs[0].copy()
    flat = x.reshape(-1)
    words = attrs["stopwords"] or []
    changes = (str, str.lower, str.upper, str.swapcase)
    for k in range(flat.size):
        if words and rng.random() < 0.4:
            flat[k] = _choose(rng, changes)(_choose(rng, words))
        if not attrs["is_case_sensitive"] and not foldings_agree(flat[k], words):
            flat[k] = "".join(_choose(rng, "abcXYZ 019") for _ in range(int(rng.integers(0, 5))))
    return [x]


# -- RegexFullMatch ------------------------------------------------------------------------------

def _literal(draw, st):
    c = draw(st.sampled_from(PATTERN_CHARACTERS))
    return ("\\" + c if c in _META else c), c


def _atom(draw, st, depth):
    """A pattern piece and a string it matches: a literal, '.', a class, '\\d' or a group."""
    kind = draw(st.sampled_from(("lit", "lit", "lit", "dot", "class", "digit")
                                + (("group",) if depth < 2 else ())))
    if kind == "lit":
        return _literal(draw, st)
    if kind == "dot":   # any character but a newline (RE2 and Python alike)
        return ".", draw(st.sampled_from("aZ9 ß中😀\u0301"))
    if kind == "digit":
        return "\\d", draw(st.sampled_from("0123456789"))
    if kind == "class":
        members = draw(st.lists(st.sampled_from("abcxyzß中019 "), min_size=1, max_size=4))
        if draw(st.booleans()):   # a negated class: a member-free sample
            return "[^" + "".join(members) + "]", draw(st.sampled_from(
                tuple(c for c in "qQ7!é" if c not in members)))
        return "[" + "".join(members) + "]", draw(st.sampled_from(tuple(members)))
    pattern, sample = _alternation(draw, st, depth + 1)
    return "(?:" + pattern + ")", sample


def _sequence(draw, st, depth):
    parts, sample = [], []
    for _ in range(draw(st.integers(1, 4))):
        atom, text = _atom(draw, st, depth)
        # no quantified group: nested quantifiers backtrack exponentially in Python's re
        # (RE2 is linear), which would stall the oracle, not test the backend
        quantifier = "" if atom.startswith("(?:") else draw(
            st.sampled_from(("", "", "", "*", "+", "?", "{2}", "{0,2}")))
        count = {"": 1, "*": draw(st.integers(0, 2)), "+": draw(st.integers(1, 2)),
                 "?": draw(st.integers(0, 1)), "{2}": 2, "{0,2}": draw(st.integers(0, 2))}
        parts.append(atom + quantifier)
        sample.append(text * count[quantifier])
    return "".join(parts), "".join(sample)


def _alternation(draw, st, depth=0):
    branches = [_sequence(draw, st, depth) for _ in range(draw(st.integers(1, 3)))]
    chosen = draw(st.integers(0, len(branches) - 1))
    return "|".join(p for p, _ in branches), branches[chosen][1]


def draw_pattern(draw, st) -> tuple[str, list]:
    """A pattern and three strings it fully matches. Its grammar means the same in RE2 and in
    Python's ``re``: literals (metacharacters escaped with a backslash, which both read as the
    character), '.', classes of literal members (negated too), '\\d', non-capturing groups,
    alternation, and the quantifiers ``* + ? {n} {m,n}`` on single characters and classes (a
    full match does not depend on greediness; a quantified group could backtrack exponentially
    in Python's ``re``). Left out: anchors (Python's ``$`` also matches before a final newline),
    ``\\s``, ``\\w``, ``\\b`` (Unicode in Python, ASCII in RE2), case-insensitive matching
    (the two fold case differently), and back-references (RE2 has none)."""
    pattern, sample = _alternation(draw, st)
    samples = [sample]
    for _ in range(2):   # more samples of the same pattern
        samples.append(_sample_again(draw, st, pattern, samples[0]))
    return pattern, samples


def _sample_again(draw, st, pattern, sample):
    """The first sample with a character dropped, doubled or appended: a near miss or another
    match."""
    edit = draw(st.sampled_from(("drop", "double", "append")))
    if not sample or edit == "append":
        return sample + draw(st.sampled_from("a0 ß"))
    at = draw(st.integers(0, len(sample) - 1))
    return sample[:at] + (sample[at] * 2 if edit == "double" else "") + sample[at + 1:]


def draw_regex_full_match(draw, kit, spec, dtype):
    """An input of rank 0 to 3 (empty ones too) and a pattern of :func:`draw_pattern`'s grammar
    with the strings it made (``samples``)."""
    shape = draw(kit.shape(min_rank=0, max_rank=3, max_side=4,
                           min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))
    pattern, samples = draw_pattern(draw, kit.st)
    return kit.Signature((dtype,), (shape,), {"pattern": pattern, "samples": samples}, "bool")


def values_regex_full_match(rng, inputs, attrs):
    """About half the elements replaced by the draw's samples (matches and near misses)."""
    x = inputs[0].copy()
    flat = x.reshape(-1)
    for k in range(flat.size):
        if rng.random() < 0.5:
            flat[k] = _choose(rng, attrs["samples"])
    return [x]


def pattern_is_python_valid(pattern: str) -> bool:
    """Whether Python's ``re`` compiles ``pattern`` (every drawn one does)."""
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


__all__ = ["FOLDINGS", "draw_pattern", "foldings_agree", "draw_regex_full_match", "draw_string_normalizer",
           "draw_string_split", "pattern_is_python_valid", "values_regex_full_match",
           "values_string_normalizer", "values_string_split"]
