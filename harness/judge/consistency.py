"""Consistency in open regions: where a standard leaves an answer open, a backend may choose
it, but not by where the values sit. The same values (the same input elements of an element-wise
op; the same multiset of a slice) must get the same answer at every position of a case.

* Element-wise ops (every op the generic drawer draws element by element): the open elements
  whose inputs are equal, bit for bit, must have equal results (NaN matching NaN).
* Ops whose region entry says ``consistency: value`` or ``consistency: selected``: the open
  elements fed by the same multiset (:func:`conform.oracles.feeding.feeding_elements`, the
  first input's slice, in any order) must have equal results (``value``) or select equal values
  of their slices (``selected``: the result is a position in the slice, as ArgMax's is). Values
  are compared as numbers (NaN matching NaN, -0 matching +0: which of two equal zeros a tie rule
  picks depends on the order by design).

A case that breaks it is ``inconsistent``: a failure (:mod:`conform.verdicts`). The suite draws
cases that put the same values in permuted positions (generators/_consistency.py); every
other case is checked too.
"""
from __future__ import annotations

import numpy as np

from conform.harness.judge.properties import Broken, property_message
from conform.ops.regions import broadcast_aligned
from conform.oracles.feeding import feeding_elements

MAX_SLICES = 512   # open elements of a slice op read (one feeding call each)
SHOWN = 4


def declared_mode(spec) -> str | None:
    """How the open elements of ``spec``'s cases are compared: ``aligned`` for element-wise ops,
    else the ``consistency`` a region entry declares, or None (not checked)."""
    if getattr(spec, "elementwise", False):
        return "aligned"
    return next((e["consistency"] for e in getattr(spec, "implementation_defined", ())
                 if "consistency" in e), None)


def inconsistency(spec, case, outputs, answer) -> Broken | None:
    """The first output of ``outputs`` (a backend's, for ``case``) whose open elements are
    answered differently for the same values, or None."""
    mode = declared_mode(spec)
    if mode is None:
        return None
    for k, part in enumerate(answer):
        actual = np.asarray(outputs[k])
        if part.impl_mask is None or actual.shape != np.shape(part.expected):
            continue
        open_at = np.flatnonzero(np.broadcast_to(part.impl_mask, actual.shape))
        if open_at.size < 2:
            continue
        if mode == "aligned":
            keys, answers = _aligned(spec, case, actual, open_at)
        else:
            open_at = open_at[:MAX_SLICES]
            keys, answers = _sliced(spec, case, actual, open_at, k, selected=mode == "selected")
        clash = _clashing(keys, answers)
        if clash.size:
            return Broken("consistency", _message(spec, mode, actual, open_at[clash], case, k),
                          open_at[clash])
    return None


def position_dependence(spec, case, outputs, answer) -> Broken | None:
    """The first output of ``outputs`` (a backend's, for ``case`` of an element-wise op) whose
    defined elements (those outside every open region) with the same inputs, bit for bit, have
    different results, or None. An element-wise result is a function of its own inputs
    (ONNX IR, "element-wise": each output element is computed from the input elements at the
    same index; XLA's element-wise ops alike): it may depend neither on where the element sits
    nor on the tensor's length, as a vectorised body and its scalar remainder may make it."""
    if not getattr(spec, "elementwise", False) or not case.inputs or not answer \
            or getattr(getattr(spec, "definition", None), "distribution", None) is not None:
        return None   # (a random op's elements are draws: its laws are judged instead)
    size = max(np.size(part.expected) for part in answer)
    if size < 2 or any(_bits(x) is None for x in case.inputs):
        return None
    if any(np.size(x) == size and not _repeats(_bits(x)) for x in case.inputs):
        return None   # the common case: some input has no two equal elements
    for k, part in enumerate(answer):
        actual = np.asarray(outputs[k])
        if actual.size < 2 or actual.shape != np.shape(part.expected) or _bits(actual) is None:
            continue
        at = np.arange(actual.size) if part.impl_mask is None else \
            np.flatnonzero(~np.broadcast_to(part.impl_mask, actual.shape))
        columns = [_bits(values) for values in _full_inputs(spec, case, actual, at)]
        answers = _bits(_canonical(actual.reshape(-1)[at]))
        clash = _clashing_sorted(columns, answers)
        if clash.size:   # shown first: an element and one with its inputs and another answer
            twin = np.all([c[clash] == c[clash[0]] for c in columns], axis=0) \
                & (answers[clash] != answers[clash[0]])
            first = np.concatenate([clash[:1], clash[twin][:1]])
            shown = at[np.concatenate([first, clash[~np.isin(clash, first)]])]
            return Broken("position", _as_property("position", clash.size, _message(
                spec, "position", actual, shown, case, k)), at[clash])
    return None


def length_dependence(spec, case, outputs, answer, partner) -> Broken | None:
    """For a length case (``case.extra["length_of"]``: generators/_length.py), whose inputs
    are those of element ``case.extra["element"]`` of its partner case alone in tensors of one
    element: the first output whose result differs, bit for bit (NaN matching NaN), from the
    partner's at that element, or None. ``partner``: the partner's ``(case, outputs,
    answer)``. Elements in an open region of either case are not compared (the consistency
    check covers those); nor are inputs that no longer match (a changed partner)."""
    long_case, long_outputs, long_answer = partner
    at = int(case.extra["element"])
    pairs = list(zip(case.inputs, long_case.inputs))
    if not pairs or any(_bits(a) is None or _bits(b) is None or np.size(a) != 1
                        or np.size(b) <= at or _bits(a)[0] != _bits(b)[at] for a, b in pairs):
        return None
    for k, (part, long_part) in enumerate(zip(answer, long_answer)):
        one, many = np.asarray(outputs[k]).reshape(-1), np.asarray(long_outputs[k]).reshape(-1)
        if one.size != 1 or many.size <= at or one.dtype != many.dtype or _bits(one) is None \
                or _open(part, 0) or _open(long_part, at):
            continue
        if _bits(_canonical(one))[0] != _bits(_canonical(many[at:at + 1]))[0]:
            name = spec.outputs[k] if k < len(spec.outputs) else "out"
            inputs = ", ".join(str(np.asarray(x).reshape(-1)[0]) for x in case.inputs)
            alone, within = str(one[0]), str(many[at])   # (str: a float32's own digits)
            return Broken("length", _as_property("length", 1, (
                f"length dependent: the inputs ({inputs}) give {name}={alone} in this tensor of "
                f"1 element and {within} as element {at} of case {long_case.id} ({many.size} "
                f"elements): an element-wise result may not depend on the tensor's length")),
                np.zeros(1, np.intp))
    return None


#: Where position and length independence come from: no spec declares them, every
#: element-wise op's text implies them.
ELEMENT_WISE_SOURCE = ("the op is element-wise and deterministic: its text defines each "
                       "element of the result from the inputs at that element alone")


def _as_property(kind: str, count: int, text: str) -> str:
    """``text`` as a broken property's message, its source the op being element-wise."""
    return property_message(kind, count, text, ELEMENT_WISE_SOURCE)


def _open(part, flat: int) -> bool:
    """Whether element ``flat`` of an output lies in an open region of its answer."""
    mask = part.impl_mask
    if mask is None:
        return False
    return bool(np.broadcast_to(mask, np.shape(part.expected)).reshape(-1)[flat])


def _bits(values) -> np.ndarray | None:
    """1-D ``values`` as unsigned integers of their width (equal bits, equal integers), or
    None where their elements are no bits of their own (strings) or no such width."""
    values = np.ascontiguousarray(values)
    size = values.dtype.itemsize
    if values.dtype.kind in "OUST" or size not in (1, 2, 4, 8):
        return None
    return values.reshape(-1).view(f"u{size}")


def _repeats(bits: np.ndarray) -> bool:
    """Whether two elements of ``bits`` are equal (no sort where they are strictly increasing
    or strictly decreasing, as the bit patterns of a sweep's chunk are).

    >>> _repeats(np.array([1, 2, 3], np.uint32)), _repeats(np.array([3, 1, 3], np.uint32))
    (False, True)
    """
    if bits.size < 2:
        return False
    onward = np.greater if bits[1] > bits[0] else np.less   # (one pass: the first step's way)
    if onward(bits[1:], bits[:-1]).all():
        return False
    ordered = np.sort(bits)
    return bool((ordered[1:] == ordered[:-1]).any())


def _full_inputs(spec, case, actual, at) -> list:
    """Each input of ``case``, broadcast to the output's shape, at the flat indices ``at``."""
    shapes, attrs = spec.signature.get("shapes", "equal"), case.attrs
    found = []
    for x in case.inputs:
        x = np.asarray(x)
        full = broadcast_aligned(x, actual.shape, shapes, attrs) if x.shape != actual.shape else x
        found.append(np.ascontiguousarray(full).reshape(-1)[at])
    return found


def _clashing_sorted(columns: list, answers: np.ndarray) -> np.ndarray:
    """Positions of the elements whose inputs (``columns``, one per input) another element
    shares with another answer: one lexicographic sort, then neighbours compared."""
    if answers is None or any(c is None for c in columns) or answers.size < 2:
        return np.zeros(0, np.intp)
    order = np.lexsort((answers, *columns[::-1]))
    same_key = np.ones(order.size - 1, bool)
    for column in columns:
        ordered = column[order]
        same_key &= ordered[1:] == ordered[:-1]
    ordered = answers[order]
    differ = same_key & (ordered[1:] != ordered[:-1])
    if not differ.any():
        return np.zeros(0, np.intp)
    group = np.concatenate([[0], np.cumsum(~same_key)])
    return np.sort(order[np.isin(group, group[1:][differ])])


def _aligned(spec, case, actual, open_at):
    """Per open element: its inputs' bytes, and its result's canonical bytes."""
    columns = [_rows(values) for values in _full_inputs(spec, case, actual, open_at)]
    keys = np.concatenate(columns, axis=1) if columns else np.zeros((open_at.size, 0), np.uint8)
    answers = _rows(_canonical(actual.reshape(-1)[open_at]))
    return [k.tobytes() for k in keys], [a.tobytes() for a in answers]


def _sliced(spec, case, actual, open_at, output: int, *, selected: bool):
    """Per open element: the sorted multiset feeding it, and its answer (its value, or the value
    it selects in its slice) as a number."""
    keys, answers = [], []
    for flat in open_at:
        index = [int(i) for i in np.unravel_index(flat, actual.shape)]
        values = np.asarray(feeding_elements(spec.op, case.inputs, case.attrs, index, output)[0])
        values = values.reshape(-1)
        result = actual.reshape(-1)[flat]
        if selected:
            at = int(result)
            result = values[at] if 0 <= at < values.size else np.nan
        keys.append(_sorted_multiset(values))
        answers.append(_canonical(np.float64([_number(result)])).tobytes())
    return keys, answers


def _sorted_multiset(values: np.ndarray) -> bytes:
    """The multiset of ``values`` as bytes: sorted numbers, NaNs last, zeros signless."""
    wide = values.astype(np.float64) if values.dtype.kind != "b" else values.astype(np.int64)
    if wide.dtype.kind == "f":
        wide = np.where(wide == 0, 0.0, wide)
    return np.sort(_canonical(wide)).tobytes()


def _number(value) -> float:
    value = float(np.asarray(value).astype(np.float64))
    return 0.0 if value == 0 else value


def _canonical(values: np.ndarray) -> np.ndarray:
    """``values`` with every NaN the same NaN (a NaN's payload is not an answer)."""
    if values.dtype.kind == "f" or str(values.dtype) == "bfloat16":
        wide = values.astype(np.float64)
        return np.where(np.isnan(wide), np.nan, wide)
    return values


def _rows(values: np.ndarray) -> np.ndarray:
    """Each element of a 1-D array as a row of its bytes."""
    values = np.ascontiguousarray(values)
    return values.view(np.uint8).reshape(values.size, values.itemsize)


def _clashing(keys: list, answers: list) -> np.ndarray:
    """Positions of the elements whose key has more than one answer."""
    seen: dict = {}
    for key, answer in zip(keys, answers):
        seen.setdefault(key, set()).add(answer)
    clashing = {key for key, found in seen.items() if len(found) > 1}
    return np.array([i for i, key in enumerate(keys) if key in clashing], dtype=np.intp)


def _message(spec, mode, actual, clashing, case, output) -> str:
    """``inconsistent in an implementation-defined region: the same values ... out[0]=3 (inputs
    nan), out[5]=0 (inputs nan)``."""
    name = spec.outputs[output] if output < len(spec.outputs) else "out"
    shown = []
    for flat in clashing[:SHOWN]:
        index = [int(i) for i in np.unravel_index(flat, actual.shape)]
        text = f"{name}{index}={str(actual.reshape(-1)[flat])}"
        if mode in ("aligned", "position"):
            inputs = ", ".join(str(np.asarray(x).reshape(-1)[flat]) if np.size(x) == actual.size
                               else "?" for x in case.inputs)
            text += f" (inputs {inputs})"
        elif mode == "selected":
            text += f" (selects {_selected(spec, case, actual, index, output)})"
        shown.append(text)
    what = "the same inputs" if mode in ("aligned", "position") else "slices of the same values"
    more = f", ... ({len(clashing)} elements)" if len(clashing) > SHOWN else ""
    if mode == "position":
        return (f"position dependent: {what} get different results at different positions of "
                f"an element-wise op's tensor: {', '.join(shown)}{more}")
    return (f"inconsistent in an implementation-defined region: {what} get different answers "
            f"at different positions ({mode}): {', '.join(shown)}{more}")


def _selected(spec, case, actual, index, output) -> str:
    """The value of its slice that the answer at ``index`` selects, as text."""
    values = np.asarray(feeding_elements(spec.op, case.inputs, case.attrs, index, output)[0])
    at = int(actual[tuple(index)])
    return str(values.reshape(-1)[at]) if 0 <= at < values.size else "nothing (out of range)"
