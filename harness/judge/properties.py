"""Properties: what a standard promises beyond one element's error, judged beside the bound.

A spec's ``properties`` (docs/spec-format.md) each name one kind and the source that promises
it; every case of the op is checked for each, on the elements the standard defines (elements
in an implementation-defined region, and those whose reference is NaN, are left out):

* ``range: [lo, hi]``: every result lies in the function's range. The exact function never
  leaves it and ``lo`` and ``hi`` are floats of every format, so bringing a result into the
  range only brings it nearer the exact value: every result within the bound can be in range,
  and one outside it is not an approximation of any value the function takes (tanh 1 + eps).
* ``monotone: increasing | decreasing`` (one input, element-wise): sorted by input, the
  results do not go back. A rounding to nearest of a monotone function is monotone, and so is a
  result within 0.5 ULP; a result within N > 0.5 ULP need not be (two inputs whose exact values
  fall between the same two floats may round apart), and the bound already limits any
  inversion to two elements' bounds: the property is checked only where the dtype's model is
  ``exact``, ``correctly_rounded`` or ``ulp <= 0.5``.
* ``symmetry: odd | even`` (one input, element-wise): where the case holds ``x`` and ``-x``
  (nonzero), ``f(-x) = -f(x)`` or ``f(x)``. Rounding to nearest is symmetric, a ULP bound is
  not: checked only under the ``exact`` and ``correctly_rounded`` models.
* ``row_sum: s``: the results along the case's ``axis`` (or ``axes``) sum to ``s`` within the
  sum of the elements' own bounds (each within its bound of its exact value, whose sum is
  ``s``), plus the float64 summation's error.
* ``fixed_points: [lo, hi]`` (one input, element-wise): idempotence, f(f(x)) = f(x), is
  f being the identity on its image: an input in ``[lo, hi]`` (the image) gives itself.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from conform.harness.judge._elements import _error_and_bound, ulp_of
from conform.dtypes import FLOAT_FORMATS, component_dtype

SHOWN = 4   # offending elements named in a message


class Broken(NamedTuple):
    """A property a case breaks: its kind, the message, the offending flat indices."""

    kind: str
    message: str
    failing: np.ndarray


def broken_property(spec, case, outputs, answer, subnormals: str = "ieee") -> Broken | None:
    """The first of ``spec``'s properties that ``outputs`` (a backend's, for ``case``) break,
    or None. ``answer``: the oracle's, per output an Expectation."""
    out_dtypes = spec.out_dtypes(case)
    for entry in spec.properties:
        kind = next(k for k in entry if k not in ("source", "output"))
        k = spec.outputs.index(entry.get("output", spec.outputs[0]))
        part, dtype = answer[k], out_dtypes[k]
        actual = np.asarray(outputs[k])
        if actual.shape != np.shape(part.expected) or actual.dtype.kind == "c":
            continue   # the per-element judge reports a wrong shape
        model = spec.model_for(dtype, k, case)
        with np.errstate(invalid="ignore", over="ignore"):
            bad = _CHECKS[kind](entry[kind], case=case, actual=_wide(actual),
                                expected=_wide(np.asarray(part.expected)), part=part,
                                defined=_defined(part), model=model, dtype=dtype,
                                subnormals=subnormals)
        if bad is not None and bad.size:
            return Broken(kind, _message(kind, entry, spec.outputs[k], bad, actual, case), bad)
    return None


def _wide(array: np.ndarray) -> np.ndarray:
    return array.astype(np.float64, copy=False) if array.dtype.kind != "b" else array.astype(np.int64)


def _defined(part) -> np.ndarray:
    """Where the standard defines the element: outside open regions, the reference not NaN."""
    expected = np.asarray(part.expected)
    mask = ~np.isnan(expected) if expected.dtype.kind == "f" else np.ones(expected.shape, bool)
    if part.impl_mask is not None:
        mask &= ~np.broadcast_to(part.impl_mask, mask.shape)
    return mask


def _range(bounds, *, actual, defined, **_) -> np.ndarray:
    low, high = bounds
    if actual.size and actual.min() >= low and actual.max() <= high:   # (False for a NaN)
        return np.flatnonzero(np.zeros(0, bool))   # every result in the range (a sweep's chunk)
    return np.flatnonzero(defined & ((actual < low) | (actual > high)))


def _operand(case, subnormals: str) -> tuple[np.ndarray, np.ndarray]:
    """The case's one operand in float64, and where it can be read as itself (not NaN; not a
    subnormal a ``ftz`` backend may read as zero; a complex operand only where its imaginary
    part is 0, as its real part)."""
    raw = np.asarray(case.inputs[0])
    if raw.dtype.kind == "c":
        raw = np.where(raw.imag == 0, raw.real, np.nan)
    x = _wide(raw)
    usable = ~np.isnan(x)
    fmt = FLOAT_FORMATS.get(component_dtype(str(np.asarray(case.inputs[0]).dtype)))
    if subnormals == "ftz" and fmt is not None:
        usable &= (x == 0) | (np.abs(x) >= fmt.min_normal)
    return x, usable


def _fixed_points(image, *, case, actual, defined, subnormals, **_) -> np.ndarray | None:
    x, usable = _operand(case, subnormals)
    if x.shape != actual.shape:
        return None
    inside = defined & usable & (x >= image[0]) & (x <= image[1])
    return np.flatnonzero(inside & ~(actual == x))


def _rounds_monotonically(model: dict, *, half_ulp: bool) -> bool:
    """Whether the model admits only results a monotone (``half_ulp``: or 0.5-ULP) rounding
    of the exact value gives."""
    if model.get("exact") or model.get("correctly_rounded"):
        return True
    bound = model.get("ulp")
    return half_ulp and isinstance(bound, (int, float)) and bound <= 0.5


def _monotone(direction, *, case, actual, defined, model, subnormals, **_) -> np.ndarray | None:
    x, usable = _operand(case, subnormals)
    if x.shape != actual.shape or not _rounds_monotonically(model, half_ulp=True):
        return None
    flat = np.flatnonzero(defined & usable & ~np.isnan(actual))
    xs, ys = x.ravel()[flat], actual.ravel()[flat]
    if direction == "decreasing":
        ys = -ys
    order = np.lexsort((ys, xs))   # by input, then by result: equal inputs never invert
    back = np.flatnonzero((np.diff(ys[order]) < 0) & (np.diff(xs[order]) > 0))
    return np.unique(np.concatenate([flat[order][back], flat[order][back + 1]]))


def _symmetry(kind, *, case, actual, defined, model, subnormals, **_) -> np.ndarray | None:
    x, usable = _operand(case, subnormals)
    if x.shape != actual.shape or not _rounds_monotonically(model, half_ulp=False):
        return None
    flat = np.flatnonzero(defined & usable & (x != 0))
    xs = x.ravel()[flat]
    pos_values, pos_at = np.unique(xs[xs > 0], return_index=True)
    neg_values, neg_at = np.unique(-xs[xs < 0], return_index=True)
    _, i, j = np.intersect1d(pos_values, neg_values, return_indices=True)
    pos = flat[np.flatnonzero(xs > 0)[pos_at[i]]]
    neg = flat[np.flatnonzero(xs < 0)[neg_at[j]]]
    ys = actual.ravel()
    mirrored = -ys[pos] if kind == "odd" else ys[pos]
    wrong = ~(ys[neg] == mirrored)
    return np.unique(np.concatenate([pos[wrong], neg[wrong]]))


def _row_sum(total, *, case, actual, expected, part, defined, model, dtype, **_):
    axes = case.attrs.get("axis", case.attrs.get("axes"))
    if axes is None or actual.ndim == 0 or dtype not in FLOAT_FORMATS:
        return None
    axes = tuple(a % actual.ndim for a in np.atleast_1d(axes))
    _, bound = _error_and_bound(np.zeros(expected.shape), expected, actual, dtype, model,
                                part.accumulation)
    scale = 1.0 if "abs_rel" in model else ulp_of(np.where(np.isfinite(expected), expected, 0.0),
                                                  dtype)
    count = np.prod([actual.shape[a] for a in axes])
    allowed = np.sum(bound * scale, axis=axes, keepdims=True) \
        + 4 * count * 2.0 ** -53 * np.sum(np.abs(actual), axis=axes, keepdims=True)
    whole = np.all(defined & ~np.isnan(actual), axis=axes, keepdims=True)
    off = np.abs(np.sum(actual, axis=axes, keepdims=True) - total) > allowed
    return np.flatnonzero(np.broadcast_to(whole & off, actual.shape))


_CHECKS = {"range": _range, "monotone": _monotone, "symmetry": _symmetry, "row_sum": _row_sum,
           "fixed_points": _fixed_points}


def _message(kind, entry, name, bad, actual, case) -> str:
    """``property range [-1, 1] broken: 2 elements: y[3]=1.0000001 (operand 9.5), ...
    [source: ...]``."""
    shown = []
    x = np.asarray(case.inputs[0]) if case.inputs else None
    for flat in bad[:SHOWN]:
        index = tuple(int(i) for i in np.unravel_index(flat, actual.shape))
        text = f"{name}{list(index)}={str(actual[index])}"
        if x is not None and x.shape == actual.shape:
            text += f" (input {str(x[index])})"
        shown.append(text)
    more = f", ... ({len(bad)} elements)" if len(bad) > SHOWN else ""
    return property_message(f"{kind} {entry[kind]}", len(bad), f"{', '.join(shown)}{more}",
                            entry["source"])


def property_message(name: str, count: int, text: str, source: str) -> str:
    """The form of every broken property's message: the property, how many elements break it,
    the elements (``text``), and where the property comes from."""
    return f"property {name} broken at {count} element(s): {text} [source: {source}]"
