"""What the failing elements of a case have in common: the profile a manifest condition reads.

A manifest entry that excuses failures names the condition it excuses ("every failing element
has a NaN among its inputs", "every failing element's inputs are below 2^-126"), so that any
other failure of the same op and dtype stays visible. The judge knows which elements failed;
this module sums up, over those elements, the inputs feeding each one and the value expected
there, into a small dict kept in the result line (``failing``), so that the manifest can be
applied again to finished results (``conform gate``) without the arrays.
"""
from __future__ import annotations

import math

import numpy as np

from conform.oracles.feeding import feeding_elements

#: Failing elements whose feeding inputs are looked up one at a time (ops whose inputs are not
#: element-aligned with their output); beyond this many, ``profiled`` is lower than ``elements``
#: and no condition on the elements holds.
PROFILED_AT_MOST = 64


def failure_profile(spec, case, judgement, expected: list) -> dict | None:
    """The profile of a failing judgement of ``case``: ``expected`` holds the oracle's array per
    output. Fields, over the failing elements of every output:

    * ``elements``: how many failed; ``profiled``: of those, how many are summed up below;
    * ``inputs_nan`` / ``inputs_inf`` / ``inputs_nonfinite``: how many have a NaN / an infinity /
      either among their inputs;
    * ``inputs_max_abs``: the largest magnitude among the inputs of all of them (NaN counts
      as infinite); ``inputs_min_of_max_abs``: the smallest, over them, of each one's largest
      input magnitude;
    * ``expected_zero`` / ``expected_inf`` / ``expected_nan``: how many expected ±0 / ±inf / NaN;
    * ``expected_min_abs`` / ``expected_max_abs``: the range of the expected magnitudes.

    ``spec`` and ``case`` are one node's (the judge profiles a program node by node, on the
    values the backend gave each node). None for a judgement with no failing element (a wrong
    number of outputs)."""
    parts = [part for _, part in judgement.outputs] if judgement.outputs else [judgement]
    totals = None
    for k, part in enumerate(parts):
        if part.verdict != "fail":
            continue
        if part.failing is None:   # the whole output is wrong (shape, dtype): nothing in common
            found = _empty(part.mismatched)
        else:
            found = _output_profile(spec, case, np.asarray(expected[k]), part.failing, k)
        totals = found if totals is None else _merged(totals, found)
    return totals


def _output_profile(spec, case, expected: np.ndarray, failing: np.ndarray, output: int) -> dict:
    wanted = _real_reading(expected.ravel()[failing])
    if spec.definition.feeding == "aligned":
        rows = _aligned_inputs(case, expected.shape, failing, spec.signature.get("shapes", "equal"))
        has_nan = np.zeros(len(failing), bool)
        has_inf = np.zeros(len(failing), bool)
        largest = np.zeros(len(failing))
        for row in rows:
            magnitude = np.abs(row)
            has_nan |= np.isnan(row)
            has_inf |= np.isinf(row)
            largest = np.fmax(largest, np.where(np.isnan(row), np.inf, magnitude))
        profiled = len(failing)
    else:
        has_nan, has_inf, largest = [], [], []
        for flat in failing[:PROFILED_AT_MOST].tolist():
            index = np.unravel_index(flat, expected.shape)
            try:
                feeding = feeding_elements(spec.op, case.inputs, case.attrs, index, output)
            except Exception:   # the feeding rule could not say: not profiled
                continue
            values = np.concatenate([part.ravel() for f in feeding if f is not None
                                     for part in _parts(f)] or [np.zeros(0)])
            has_nan.append(bool(np.isnan(values).any()))
            has_inf.append(bool(np.isinf(values).any()))
            largest.append(float(np.max(np.where(np.isnan(values), np.inf, np.abs(values)),
                                        initial=0.0)))
        has_nan, has_inf = np.array(has_nan, bool), np.array(has_inf, bool)
        largest = np.array(largest, np.float64)
        profiled = len(largest)
    magnitude = np.abs(wanted)
    finite_or_inf = magnitude[~np.isnan(magnitude)]
    return {
        "elements": len(failing), "profiled": profiled,
        "inputs_nan": int(np.count_nonzero(has_nan)), "inputs_inf": int(np.count_nonzero(has_inf)),
        "inputs_nonfinite": int(np.count_nonzero(has_nan | has_inf)),
        "inputs_max_abs": float(largest.max()) if profiled else math.inf,
        "inputs_min_of_max_abs": float(largest.min()) if profiled else 0.0,
        "expected_zero": int(np.count_nonzero(wanted == 0)),
        "expected_inf": int(np.count_nonzero(np.isinf(wanted))),
        "expected_nan": int(np.count_nonzero(np.isnan(wanted))),
        "expected_min_abs": float(finite_or_inf.min()) if finite_or_inf.size else math.inf,
        "expected_max_abs": float(finite_or_inf.max()) if finite_or_inf.size else 0.0,
    }


def _empty(elements: int) -> dict:
    return {"elements": int(elements), "profiled": 0, "inputs_nan": 0, "inputs_inf": 0,
            "inputs_nonfinite": 0,
            "inputs_max_abs": math.inf, "inputs_min_of_max_abs": 0.0, "expected_zero": 0,
            "expected_inf": 0, "expected_nan": 0, "expected_min_abs": math.inf,
            "expected_max_abs": 0.0}


def merged_profiles(profiles) -> dict | None:
    """One profile for the failing elements of several nodes: ``profiles`` summed up (None
    among them: a node with nothing failing)."""
    found = [p for p in profiles if p is not None]
    totals = found[0] if found else None
    for more in found[1:]:
        totals = _merged(totals, more)
    return totals


def _merged(a: dict, b: dict) -> dict:
    merged = {key: a[key] + b[key] for key in ("elements", "profiled", "inputs_nan", "inputs_inf",
                                                "inputs_nonfinite",
                                                "expected_zero", "expected_inf", "expected_nan")}
    for key in ("inputs_max_abs", "expected_max_abs"):
        merged[key] = max(a[key], b[key])
    for key in ("inputs_min_of_max_abs", "expected_min_abs"):
        merged[key] = min(a[key], b[key])
    return merged


def _aligned_inputs(case, out_shape: tuple, failing: np.ndarray, relation: str) -> list:
    """Per input, its values (float64) at the failing output elements of an element-aligned op
    (equal shapes, scalars or broadcasting, read as the judge reads the worst element's inputs);
    an input that does not broadcast to the output is left out."""
    out_shape = tuple(out_shape)
    index = np.unravel_index(failing, out_shape)
    mapped = case.attrs.get("broadcast_dimensions") if relation == "xla_broadcast" else None
    rows = []
    for x in case.inputs:
        x = np.asarray(x)
        if x.shape == out_shape:
            values = x.ravel()[failing]
        else:
            at = broadcast_index(x.shape, out_shape, index, trailing=relation != "nnef_broadcast",
                                 mapped=mapped if mapped is not None and x.ndim < len(out_shape)
                                 else None)
            if at is None:
                continue
            values = np.broadcast_to(x[at], failing.shape)
        rows.extend(_parts(values))
    return rows


def _parts(values) -> list:
    """``values`` as float64 arrays: itself, or a complex array's real and imaginary parts
    (each a value of the component type: a NaN or an infinite part is the input's)."""
    values = np.asarray(values)
    if np.iscomplexobj(values):
        return [values.real.astype(np.float64), values.imag.astype(np.float64)]
    return [values.astype(np.float64)]


def _real_reading(values) -> np.ndarray:
    """An expected value as one float64: itself, or a complex value's modulus (NaN where a
    part is NaN, infinite where a part is infinite)."""
    values = np.asarray(values)
    if not np.iscomplexobj(values):
        return values.astype(np.float64)
    return np.where(np.isnan(values.real) | np.isnan(values.imag), np.nan, np.abs(values))


def broadcast_index(shape: tuple, out_shape: tuple, index, *, trailing: bool, mapped=None):
    """The index of the element of a ``shape`` input broadcast to output element ``index``
    (dimensions aligned at the end, or at the start, or, with ``mapped``, dimension k at
    output dimension ``mapped[k]``: XLA's broadcast_dimensions), or None if ``shape`` does not
    broadcast. ``index`` may hold arrays (``np.unravel_index`` of several elements): the result
    then indexes all of them at once."""
    if len(shape) > len(out_shape) or (mapped is not None and len(mapped) != len(shape)):
        return None
    offset = len(out_shape) - len(shape) if trailing else 0
    dims = list(mapped) if mapped is not None else [offset + k for k in range(len(shape))]
    at = []
    for size, dim in zip(shape, dims):
        if size not in (1, out_shape[dim]):
            return None
        at.append(0 if size == 1 else index[dim])
    return tuple(at)
