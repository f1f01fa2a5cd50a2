"""Covering designs for attributes: every pair of attribute value classes in some case of an op.

An op's *factors* come from its spec alone (``signature.attrs`` and the optional inputs): each
``{choice: [...]}`` attribute, whose classes are its values; each ``{range: [lo, hi]}``
attribute, whose classes are its two boundary values (a list value, as a pooling kernel per
axis, is in the class of each value it holds); and each optional input, whose classes are
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
computed from the drawn signatures (:func:`pair_coverage`), shows where one does not.
"""
from __future__ import annotations

import itertools
import math
import random
import zlib

#: The classes of an optional input's factor.
ABSENT, PRESENT = "absent", "present"
INPUT_PREFIX = "input:"


def _unique(values) -> tuple:
    """``values`` without repeats, in order (1, 1.0 and True kept apart)."""
    seen, kept = set(), []
    for value in values:
        key = (type(value).__name__, value)
        if key not in seen:
            seen.add(key)
            kept.append(value)
    return tuple(kept)


def factors(spec) -> dict[str, tuple]:
    """Factor name -> its classes, from the spec's attribute domains and optional inputs (see
    the module's docstring); factors of one class are left out (nothing pairs with them).

    >>> factors(specs["onnx_cum_sum"])   # doctest: +SKIP
    {'exclusive': (0, 1), 'reverse': (0, 1)}
    """
    found = {}
    for name, domain in spec.signature.get("attrs", {}).items():
        if isinstance(domain, dict) and "choice" in domain:
            found[name] = _unique(domain["choice"])
        elif isinstance(domain, dict) and "range" in domain:
            found[name] = _unique(domain["range"])
    for name in spec.optional_inputs:
        found[INPUT_PREFIX + name] = (ABSENT, PRESENT)
    return {name: classes for name, classes in found.items() if len(classes) > 1}


def design(spec, dtype: str, *, seed: int, slots: int) -> list[dict]:
    """The op's covering design under dtype label ``dtype``: rows mapping each factor to one
    class; the full product where it has at most ``slots`` rows, else a pairwise covering array
    (none for fewer than two factors). The classes' order, drawn from the seed, op and dtype,
    differs from one dtype to the next, so that a pair a draw hook cannot honour in one row
    (a stride the drawn kernel rules out) sits in other rows under the other dtypes."""
    found = factors(spec)
    if len(found) < 2:
        return []
    rng = random.Random(seed ^ zlib.crc32(f"design/{spec.op}/{dtype}".encode()))
    names = list(found)
    levels = [rng.sample(found[name], len(found[name])) for name in names]
    if math.prod(map(len, levels)) <= slots:
        rows = itertools.product(*levels)
    else:
        from allpairspy import AllPairs

        rows = AllPairs(levels)
    return [dict(zip(names, row)) for row in rows]


def classes_of(spec, attrs: dict, found: dict | None = None) -> dict[str, set]:
    """Factor name -> the classes a signature's ``attrs`` fall in (an empty set: none, as an
    attribute left out or a range's inner value)."""
    from conform.ops.optional_inputs import ABSENT as ABSENT_KEY

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


def same_class(value, cls) -> bool:
    """Whether an attribute's ``value`` is the class ``cls`` (equal, a bool only to a bool)."""
    return (value is not None and isinstance(value, bool) == isinstance(cls, bool)
            and value == cls)


def pair_coverage(spec, attrs_list) -> dict | None:
    """The pairwise coverage of the signatures' attributes ``attrs_list`` over the op's
    factors: ``{factors, pairs, covered, ratio, missing}`` (``missing``: up to 8 uncovered
    pairs, each ``[[factor, class], [factor, class]]``), or None for fewer than two factors."""
    found = factors(spec)
    if len(found) < 2:
        return None
    seen = set()
    for attrs in attrs_list:
        held = classes_of(spec, attrs, found)
        for a, b in itertools.combinations(found, 2):
            seen.update((a, x, b, y) for x in held[a] for y in held[b])
    wanted = [(a, x, b, y) for a, b in itertools.combinations(found, 2)
              for x in found[a] for y in found[b]]
    missing = [w for w in wanted if w not in seen]
    return {"factors": len(found), "pairs": len(wanted), "covered": len(wanted) - len(missing),
            "ratio": round((len(wanted) - len(missing)) / len(wanted), 4),
            "missing": [[[a, x], [b, y]] for a, x, b, y in missing[:8]]}


__all__ = ["ABSENT", "INPUT_PREFIX", "PRESENT", "classes_of", "design", "factors",
           "pair_coverage", "same_class"]
