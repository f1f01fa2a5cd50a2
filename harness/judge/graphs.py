"""Judging a generated graph (:mod:`conform.generators.graphs`) run twice by a backend.

*Instrumented* (every node's outputs are the model's): each node is judged as a program's nodes
are (:func:`~conform.harness.judge.judging.judge_many`): under its op's error model, against its
op's oracle on the values the backend gave that node, so an error is blamed on the node that
made it.

*As run* (only the leaves are outputs, the backend's optimisations free to fuse, fold and
reorder): each leaf is judged against the float64 composition of the node oracles
(:func:`reference`) under a bound propagated through the graph, per element, to first order:

* a graph input is exact (bound 0);
* a node's output bound is its own error model's bound at the reference (:func:`own_bound`:
  ``n`` ULPs, ``atol + rtol |e|``, the accumulation or derived bound, half an ULP for an exact or
  correctly rounded float result) plus ``SAFETY`` times its sensitivity to its inputs' errors,
  measured in float64 by finite differences: the oracle re-evaluated with every input element
  moved by its own bound, all up, all down, and in ``PROBES - 2`` random sign patterns, the
  largest change per output element kept. An integer or boolean output that changes under a probe
  (a comparison near a tie, an argmax near a tie) has an infinite bound there, and so has
  everything downstream of an infinite bound.

An element whose bound is more than ``ILL_CONDITIONED`` of its reference (relative) is
ill-conditioned at that input: it is not judged. A leaf element fails only if it is outside its
bound *and* farther from the reference than the instrumented run's value of the same leaf (the
plain path, where every value is materialised): the acceptance rule maintainers apply to fuzzer
reports (pytorch#143182). A graph with no element judged, some excused, is ``ill_conditioned``;
one whose leaves have no element (empty shapes, each as the reference's) passes, as an empty
output of a single-op case does.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from conform.dtypes import FLOAT_FORMATS, np_dtype
from conform.harness.judge._elements import _error_and_bound, ulp_of
from conform.harness.judge.compare import RATIO_BINS, ratio_bins
from conform.harness.judge.judging import judge_many
from conform.oracles.expectations import expect, oracle_of
from conform.widening import widen

ILL_CONDITIONED = 1e-2   # relative bound above which an element is not judged
SAFETY = 2.0             # on the finite-difference sensitivity (first order, sampled signs)
PROBES = 4
#: The float64 composition's own rounding, per node, relative (a few float64 ULPs)
REFERENCE_ROUNDING = 2.0 ** -48


@dataclasses.dataclass
class Reference:
    """Per value of a graph: its float64 composition (exact for integers and booleans) and the
    per-element bound on how far a correct backend's value may lie from it."""

    values: dict
    bounds: dict


def reference(graph, *, seed: int = 0) -> Reference:
    """The float64 composition of ``graph``'s node oracles on its inputs, and the bounds
    propagated through it (see the module's text)."""
    rng = np.random.default_rng(seed)
    values = {name: np.asarray(x) for name, x in graph.inputs.items()}
    bounds = {name: np.zeros(np.shape(x)) for name, x in graph.inputs.items()}
    for node, case in zip(graph.nodes, graph.cases):
        outputs, own, spread = _node_reference(node, case, values, bounds, rng)
        for name, value, mine, moved, dtype in zip(node.outputs, outputs, own, spread,
                                                   node.spec.out_dtypes(case)):
            # an integer or boolean result is its value in its type (an unsigned one wraps)
            values[name] = value if dtype in FLOAT_FORMATS else np.asarray(value).astype(
                np_dtype(dtype))
            with np.errstate(invalid="ignore", over="ignore"):
                bounds[name] = mine + SAFETY * moved
    return Reference(values, bounds)


def _fed(spec, case, arrays):
    """The arrays a node's oracle is given: float64 references as they are (the composition is
    float64), cast to the node's input dtypes for an oracle that reads them (its ``dtypes``)
    and for integer and boolean inputs (exact)."""
    typed = spec.definition.takes_dtypes
    return [np.asarray(x).astype(np_dtype(d)) if typed or d not in FLOAT_FORMATS
            else np.asarray(x, np.float64) for x, d in zip(arrays, case.input_dtypes)]


def _node_reference(node, case, values, bounds, rng):
    """A node's reference outputs, own bounds and sensitivity to its inputs' bounds."""
    inputs = _fed(node.spec, case, [values[name] for name in node.inputs])
    fed = dataclasses.replace(case, inputs=inputs, expectation=None)
    answer = case.expectation if _drawn_holds(node.spec, case, inputs) \
        else expect(node.spec, fed, regions=False)   # its values and bounds only
    out_dtypes = node.spec.out_dtypes(case)
    outputs = [np.asarray(part.expected) for part in answer]
    own = [own_bound(node.spec.model_for(d, k, fed), d, part)
           for k, (part, d) in enumerate(zip(answer, out_dtypes))]
    held = [np.broadcast_to(bounds[name], np.shape(values[name])) for name in node.inputs]
    if any(not np.isfinite(h).all() for h in held):
        return outputs, own, [np.full(np.shape(o), np.inf) for o in outputs]
    if not any(h.any() for h in held):
        return outputs, own, [np.zeros(np.shape(o)) for o in outputs]
    if any(np.asarray(x).dtype.kind not in "fc" and h.any() for x, h in zip(inputs, held)):
        return outputs, own, [np.full(np.shape(o), np.inf) for o in outputs]
    run = oracle_of(node.spec)
    spread = [np.zeros(np.shape(o)) for o in outputs]
    for probe in range(PROBES):
        moved = [x + _signs(rng, probe, np.shape(x)) * h if h.any() else x
                 for x, h in zip(inputs, held)]
        for k, (base, again) in enumerate(zip(outputs, run(moved, case.attrs))):
            spread[k] = np.maximum(spread[k], _change(base, np.asarray(again)))
    return outputs, own, spread


def _drawn_holds(spec, case, inputs) -> bool:
    """Whether the answer drawn with the node is its composition's: where ``inputs`` are the
    drawn inputs bit for bit (a node of the graph's inputs whose oracle reads their dtypes), it
    is the same evaluation; the oracle sees its inputs widened
    (:func:`~conform.widening.widen`), so where they widen to the drawn inputs, its values,
    magnitudes and residuals are the same too, but not for a model chosen per case or a
    ``derived`` bound (its hook is told the inputs' dtypes)."""
    if case.expectation is None:
        return False
    if _identical(inputs, case.inputs):
        return True
    if spec.definition.takes_dtypes or spec.definition.case_model is not None \
            or any("derived" in spec.model_for(d, k, case)
                   for k, d in enumerate(spec.out_dtypes(case))):
        return False
    return _identical([widen(np.asarray(x)) for x in inputs],
                      [widen(np.asarray(x)) for x in case.inputs])


def _signs(rng, probe: int, shape) -> np.ndarray:
    if probe < 2:
        return np.full(shape, 1.0 if probe == 0 else -1.0)
    return rng.choice((-1.0, 1.0), size=shape)


def _change(base: np.ndarray, again: np.ndarray) -> np.ndarray:
    """Per element, how far a probe moved an output: ``|again - base|`` for a float, infinite
    for an integer or boolean that changed, or a float that became NaN or infinite."""
    if np.shape(again) != np.shape(base):
        return np.full(np.shape(base), np.inf)
    if base.dtype.kind not in "fc":
        return np.where(again != base, np.inf, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        moved = np.abs(again.astype(np.complex128) - base).real \
            if base.dtype.kind == "c" else np.abs(again - base)
    return np.where(np.isnan(moved), np.inf, moved)


def own_bound(model: dict, out_dtype: str, part) -> np.ndarray:
    """Per element, the absolute error a node's output may have under its error model
    ``model`` at its reference ``part`` (an :class:`~conform.oracles.expectations.Expectation`):
    0 for an integer or boolean output."""
    expected = np.asarray(part.expected)
    if out_dtype not in FLOAT_FORMATS or expected.dtype.kind not in "fc":
        return np.zeros(expected.shape)
    e = np.where(np.isfinite(expected), expected, 0.0).astype(np.float64)
    ulp = ulp_of(e, out_dtype)
    if model.get("exact") or model.get("correctly_rounded"):
        bound = 0.5 * ulp
    else:
        units, bound = _error_and_bound(np.zeros(e.shape), e, e, out_dtype, model,
                                        part.accumulation)
        bound = bound if "abs_rel" in model else bound * ulp
    return np.asarray(bound, np.float64) + REFERENCE_ROUNDING * np.abs(e)


def judge_nodes(graph, outputs: dict, subnormals: str = "ieee") -> list:
    """The instrumented run's judgement of each node (``outputs``: every value the backend
    gave, by name), each against its op's oracle on the values the backend gave it."""
    values = {**graph.inputs, **{name: np.asarray(x) for name, x in outputs.items()}}
    triples = []
    for node, case in zip(graph.nodes, graph.cases):
        taken = [values[n] for n in node.inputs]
        # the answer drawn with the node holds where the backend gave it the same inputs
        # (the oracle's answer depends on its inputs and attributes alone)
        kept = case.expectation if _identical(taken, case.inputs) else None
        triples.append((node.spec, dataclasses.replace(case, inputs=taken, expectation=kept),
                        [values[n] for n in node.outputs]))
    return judge_many(triples, subnormals)


def _identical(arrays, others) -> bool:
    """Whether ``arrays`` are ``others`` bit for bit: dtypes, shapes and every element (NaN
    payloads and the sign of zero included)."""
    return len(arrays) == len(others) and all(
        a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        for a, b in zip(map(np.asarray, arrays), map(np.asarray, others)))


@dataclasses.dataclass
class LeafJudgement:
    """The as-run judgement of a graph's leaves: ``pass``, ``fail`` or ``ill_conditioned``
    (no element judged, some excused), the elements judged, excused as ill-conditioned and
    failing, and the worst failing (else judged) element: its leaf, index, reference, actual,
    plain-path value, bound and error."""

    verdict: str
    checked: int = 0
    ill_conditioned: int = 0
    mismatched: int = 0
    worst: dict | None = None
    max_error: float = 0.0
    bound: float = 0.0
    histogram: list = dataclasses.field(default_factory=list)   # judged elements per RATIO_BINS bin
    reason: str = ""   # why the leaves fail where it is not an element's error (a shape)


def judge_leaves(graph, ref: Reference, as_run: dict, plain: dict) -> LeafJudgement:
    """Judge the as-run leaves ``as_run`` (name -> array) against ``ref``; ``plain``: the same
    leaves from the instrumented run (see the module's text)."""
    checked = excused = mismatched = 0
    worst, worst_ratio = None, -1.0
    bins = np.zeros(len(RATIO_BINS) - 1, np.int64)
    for name in graph.leaves:
        e, a = np.asarray(ref.values[name]), np.asarray(ref.bounds[name])
        got, base = np.asarray(as_run[name]), np.asarray(plain[name])
        if got.shape != base.shape:
            return LeafJudgement("fail", checked, excused, mismatched + 1, reason=(
                f"leaf {name}: shape {list(got.shape)} as run, {list(base.shape)} "
                f"instrumented (the reference's: {list(e.shape)})"))
        if got.shape != e.shape:   # a data-dependent shape the composition does not reach
            excused += max(got.size, 1)
            continue
        judged, error, plain_error = _leaf_errors(e, a, got, base)
        bad = judged & (error > a) & (error > plain_error)
        checked, excused = checked + int(judged.sum()), excused + int((~judged).sum())
        mismatched += int(bad.sum())
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(judged, np.where(a > 0, error / a, np.where(error > 0, np.inf, 0.0)),
                             -1.0)
        bins += np.bincount(ratio_bins(ratio[judged]), minlength=len(bins))
        ratio = np.where(bad, ratio + 1e300, ratio)   # a failing element is the worst
        if ratio.size and ratio.max() > worst_ratio:
            at = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
            worst_ratio = float(ratio[at])
            worst = {"output": name, "index": [int(i) for i in at], "expected": _number(e[at]),
                     "actual": _number(got[at]), "plain": _number(base[at]),
                     "error": float(error[at]), "bound": float(a[at]),
                     "plain_error": float(plain_error[at])}
    verdict = "fail" if mismatched else "ill_conditioned" if excused and not checked else "pass"
    return LeafJudgement(verdict, checked, excused, mismatched, worst,
                         worst["error"] if worst else 0.0, worst["bound"] if worst else 0.0,
                         bins.tolist() if checked else [])


def _leaf_errors(e, a, got, base):
    """Per element of one leaf: whether it is judged (a finite reference whose bound is at
    most ILL_CONDITIONED of it), the as-run error and the plain path's error (NaN or infinite
    values where the reference is finite: infinite error)."""
    if e.dtype.kind not in "fc":
        judged = np.isfinite(a) & (a == 0)
        return judged, np.where(got != e, np.inf, 0.0), np.where(base != e, np.inf, 0.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        relative = np.where(a == 0, 0.0, a / np.abs(e))
        judged = np.isfinite(e) & np.isfinite(a) & (relative <= ILL_CONDITIONED)
        wide = np.complex128 if e.dtype.kind == "c" else np.float64   # a complex leaf's
        error, plain_error = (np.where(np.isfinite(x), np.abs(x.astype(wide) - e), np.inf)
                              for x in (got, base))
    return judged, error, plain_error


def _number(value):
    """An element as a result line holds it: a bool, a string's text, else a float."""
    value = np.asarray(value)
    if value.dtype.kind in "OUS":
        return str(value.item())
    return bool(value) if value.dtype.kind == "b" else float(value.real)
