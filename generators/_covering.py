"""Covering designs for attributes: every pair of attribute value classes in some case of an op.

An op's *factors* come from its spec alone (``signature.attrs`` and the optional inputs): each
``{choice: [...]}`` attribute, whose classes are its values; each ``{range: [lo, hi]}``
attribute, whose classes are its two boundary values (a list value, one per spatial axis say,
is in the class of each value it holds); and each optional input, whose classes are
``absent`` and ``present`` (factor ``input:<name>``). Domains tied to a drawn shape (``axis_of``,
``axes_of``, ``permutation_of``) and fixed values are no factor: Hypothesis draws them.

For an op with at least two factors, the *design* is a pairwise covering array over them
(allpairspy's greedy all-pairs construction, after Pairwise Independent Combinatorial Testing,
Bach and Schroeder; the classes put in an order drawn from the seed, so the design is a pure
function of the spec and the seed), or, where the whole product of the classes is no larger
than the signatures the budget draws anyway, that product (so every t-wise combination, t=3
among them, is covered at no cost). Each dtype label of the op draws a whole design: the
first signatures of a slice are drawn with one design row each fixed
(:func:`conform.generators.kit.designing`), Hypothesis filling in the rest (shapes, values,
the attributes no factor names). A draw hook honours a row where it draws its attributes through
``kit.attributes``, ``kit.absent_inputs``, ``kit.choose`` or ``kit.choose_int``; the coverage,
computed from the drawn signatures (:func:`pair_coverage`;
:func:`conform.generators._drawing.attribute_pair_coverage` draws them), shows where one does not.

A spec's ``excluded_pairs`` (pairs of classes its text rules out or leaves open, each with the
reason) are left out of the design and of the pairs the coverage counts.
"""
from __future__ import annotations

import itertools
import math
import random
import zlib

from conform.ops.optional_inputs import ABSENT as ABSENT_KEY
from conform.spec import ABSENT, INPUT_PREFIX, PRESENT, design_factors, same_class


def factors(spec) -> dict[str, tuple]:
    """Factor name -> its classes, from the spec's attribute domains and optional inputs (see
    :func:`conform.spec.design_factors`).

    >>> factors(specs["onnx_cum_sum"])   # doctest: +SKIP
    {'exclusive': (0, 1), 'reverse': (0, 1)}
    """
    return design_factors(spec.signature, spec.optional_inputs)


def _excluded(spec) -> list[tuple]:
    """The spec's ``excluded_pairs`` as ``(factor, class, factor, class)``."""
    return [tuple(x for item in entry["when"].items() for x in item)
            for entry in spec.excluded_pairs]


def _breaks(row, excluded) -> bool:
    """Whether a (partial) design row holds an excluded pair."""
    return any(a in row and b in row and same_class(row[a], x) and same_class(row[b], y)
               for a, x, b, y in excluded)


def design(spec, dtype: str, *, seed: int, slots: int) -> list[dict]:
    """The op's covering design under dtype label ``dtype``: rows mapping each factor to one
    class; the full product where it has at most ``slots`` rows, else a pairwise covering array
    (none for fewer than two factors). The classes' order, drawn from the seed, op and dtype,
    differs from one dtype to the next, so that a pair a draw hook cannot honour in one row
    (a value another drawn value rules out) sits in other rows under the other dtypes."""
    found = factors(spec)
    if len(found) < 2:
        return []
    rng = random.Random(seed ^ zlib.crc32(f"design/{spec.op}/{dtype}".encode()))
    names = list(found)
    levels = [rng.sample(found[name], len(found[name])) for name in names]
    excluded = _excluded(spec)
    if math.prod(map(len, levels)) <= slots:
        rows = itertools.product(*levels)
    else:
        from allpairspy import AllPairs

        rows = AllPairs(levels, filter_func=lambda row: not _breaks(dict(zip(names, row)),
                                                                     excluded))
    rows = [row for row in (dict(zip(names, r)) for r in rows) if not _breaks(row, excluded)]
    # allpairspy's filtered construction can leave a pair out: a row of its own fixes it (the
    # other factors drawn)
    return rows + [{a: x, b: y} for a, x, b, y in _uncovered(found, rows, excluded)]


def _uncovered(found: dict, rows, excluded) -> list[tuple]:
    """The pairs ``(factor, class, factor, class)`` of ``found`` no row of ``rows`` holds,
    apart from the ``excluded`` ones."""
    seen = {(a, row[a], b, row[b]) for row in rows
            for a, b in itertools.combinations(found, 2) if a in row and b in row}
    return [(a, x, b, y) for a, b in itertools.combinations(found, 2) for x in found[a]
            for y in found[b] if (a, x, b, y) not in seen and not _breaks({a: x, b: y}, excluded)]


def classes_of(spec, attrs: dict, found: dict | None = None) -> dict[str, set]:
    """Factor name -> the classes a signature's ``attrs`` fall in (an empty set: none, as an
    attribute left out or a range's inner value)."""
    found = factors(spec) if found is None else found
    absent = set(attrs.get(ABSENT_KEY) or ())
    out = {}
    for name, classes in found.items():
        if name.startswith(INPUT_PREFIX):
            out[name] = {ABSENT if name[len(INPUT_PREFIX):] in absent else PRESENT}
            continue
        value = attrs.get(name)
        held = value if isinstance(value, (list, tuple)) else [value]
        out[name] = {c for c in classes for v in held if same_class(v, c)}
    return out


def pair_coverage(spec, attrs_list) -> dict | None:
    """The pairwise coverage of the signatures' attributes ``attrs_list`` over the op's
    factors: ``{factors, pairs, covered, ratio, missing, excluded}`` (``missing``: up to 8
    uncovered pairs, each ``[[factor, class], [factor, class]]``; ``excluded``: the pairs the
    spec's ``excluded_pairs`` leave out, not counted), or None for fewer than two factors."""
    found = factors(spec)
    if len(found) < 2:
        return None
    seen = set()
    for attrs in attrs_list:
        held = classes_of(spec, attrs, found)
        for a, b in itertools.combinations(found, 2):
            seen.update((a, x, b, y) for x in held[a] for y in held[b])
    excluded = _excluded(spec)
    wanted = [(a, x, b, y) for a, b in itertools.combinations(found, 2)
              for x in found[a] for y in found[b] if not _breaks({a: x, b: y}, excluded)]
    missing = [w for w in wanted if w not in seen]
    return {"factors": len(found), "pairs": len(wanted), "covered": len(wanted) - len(missing),
            "ratio": round((len(wanted) - len(missing)) / len(wanted), 4),
            "missing": [[[a, x], [b, y]] for a, x, b, y in missing[:8]],
            "excluded": len(excluded)}


__all__ = ["classes_of", "design", "factors", "pair_coverage"]
