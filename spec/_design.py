"""The factors of an op's covering design (generators/_covering.py draws it), read from its spec
alone, and the validation of the spec's ``excluded_pairs``: pairs of factor classes the op's
text rules out or leaves open, which the design leaves out and the coverage does not count.

A factor is an attribute with a ``{choice: [...]}`` domain (its classes: the values), one with a
``{range: [lo, hi]}`` domain (its classes: the two boundary values) or an optional input (factor
``input:<name>``, classes ``absent`` and ``present``); factors of one class are left out.
"""
from __future__ import annotations

from pathlib import Path

from conform.spec._errors import SpecError, line_of

#: The classes of an optional input's factor, and the prefix of its name.
ABSENT, PRESENT = "absent", "present"
INPUT_PREFIX = "input:"


def _unique(values) -> tuple:
    """``values`` without repeats, in order (1, 1.0 and True kept apart; a list value, such as
    a choice of axes, compared by its text)."""
    seen, kept = set(), []
    for value in values:
        key = (type(value).__name__, repr(value))
        if key not in seen:
            seen.add(key)
            kept.append(value)
    return tuple(kept)


def design_factors(signature: dict, optional_inputs) -> dict[str, tuple]:
    """Factor name -> its classes, from a spec's ``signature`` and its optional inputs.

    >>> design_factors({"attrs": {"p": {"choice": [1, 2]}, "k": {"range": [1, 3]}}}, ["b"])
    {'p': (1, 2), 'k': (1, 3), 'input:b': ('absent', 'present')}
    """
    found = {}
    for name, domain in signature.get("attrs", {}).items():
        if isinstance(domain, dict) and "choice" in domain:
            found[name] = _unique(domain["choice"])
        elif isinstance(domain, dict) and "range" in domain:
            found[name] = _unique(domain["range"])
    for name in optional_inputs:
        found[INPUT_PREFIX + name] = (ABSENT, PRESENT)
    return {name: classes for name, classes in found.items() if len(classes) > 1}


def same_class(value, cls) -> bool:
    """Whether an attribute's ``value`` is the class ``cls`` (equal, a bool only to a bool)."""
    return (value is not None and isinstance(value, bool) == isinstance(cls, bool)
            and value == cls)


def check_excluded_pairs(data: dict, root, path: Path, optional_inputs) -> None:
    """Raise a SpecError (file, line, field) for an ``excluded_pairs`` entry naming a factor
    the op lacks or a class its factor lacks."""
    found = design_factors(data["signature"], optional_inputs)
    for i, entry in enumerate(data.get("excluded_pairs", ())):
        for name, cls in entry["when"].items():
            where = ["excluded_pairs", i, "when", name]
            if name not in found:
                problem = f"{name!r} is no factor of the op's design (factors: {sorted(found)})"
            elif not any(same_class(cls, c) for c in found[name]):
                problem = f"{name}={cls!r} is no class of its factor (classes: {list(found[name])})"
            else:
                continue
            raise SpecError(path, line_of(root, where), ".".join(map(str, where)), problem)
