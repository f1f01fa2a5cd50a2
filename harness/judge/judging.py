"""Turn a backend outcome for one case into a result record (verdict, error figures, message)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from conform.harness.judge.compare import Judgement, compare_many
from conform.harness.judge.outcome import Outcome
from conform.harness.judge.consistency import (inconsistency, length_dependence,
                                               position_dependence)
from conform.harness.judge.properties import broken_property
from conform.harness.judge.profile import broadcast_index, failure_profile, merged_profiles
from conform.harness.judge.statistical import judge_random
from conform.records import SCHEMA_VERSION
from conform.oracles.expectations import expect
from conform.oracles.feeding import feeding_elements
from conform.spec.program_nodes import node_cases, program_nodes
from conform.dtypes import STRING, flush_subnormals, subnormal_mask

FEEDING_KEPT = 256    # elements of a slice, window or patch kept in a failing record
FEEDING_SHOWN = 8     # ... and shown in its message


def case_record(case) -> dict:
    """The identifying part of a result line."""
    return {"schema_version": SCHEMA_VERSION, "id": case.id, "op": case.op, "dtype": case.dtype, "input_dtypes": list(case.input_dtypes),
            "out_dtype": case.out_dtype, "shapes": [list(x.shape) for x in case.inputs],
            "attrs": case.attrs, "plan": case.plan, "seed": case.seed}


def flushed_expectation(spec, case):
    """Per output, ``(expected, accumulation)`` with subnormal inputs read as zeros and derived
    bounds for the ``ftz`` policy, or None if there are none. An oracle with its own flushing
    reading (an ``ftz`` keyword: its intermediate results flushed too), or a bound hook told the
    policy, gives it, subnormal inputs or not."""
    inputs = [np.asarray(x) for x in case.inputs]
    flushes = spec.definition.oracle_flushes
    if not (flushes or (spec.definition.error_bound_takes_subnormals and _derived(spec, case))) \
            and not any(m is not None and m.any() for m in map(subnormal_mask, inputs)):
        return None
    attrs = {**case.attrs, "ftz": True} if flushes else case.attrs
    answer = expect(spec, dataclasses.replace(case, inputs=[flush_subnormals(x) for x in inputs],
                                              attrs=attrs, expectation=None), subnormals="ftz")
    return [(part.expected, part.accumulation) for part in answer]


def _derived(spec, case) -> bool:
    """Whether an output of ``case`` is judged by the ``derived`` model (the one whose bound
    hook reads the subnormal policy: an op's other dtypes, judged otherwise, need no flushed
    reference where no input is subnormal)."""
    return any("derived" in spec.model_for(dtype, k, case)
               for k, dtype in enumerate(spec.out_dtypes(case)))


def expectation(spec, case):
    """The oracle's answer for ``case``, per output an
    :class:`~conform.oracles.expectations.Expectation`: the one stored with the case when it has
    one."""
    return case.expectation if case.expectation is not None else expect(spec, case)


def judge_outputs(spec, case, outputs, subnormals: str = "ieee") -> Judgement:
    """Compare a backend's outputs for ``case`` with the oracle under the spec's error model and
    the subnormal policy (``ieee`` or ``ftz``)."""
    return judge_many([(spec, case, outputs)], subnormals)[0]


def judge_many(triples, subnormals: str = "ieee", *, keep_errors: bool = False) -> list[Judgement]:
    """:func:`judge_outputs` for ``(spec, case, outputs)`` triples (``keep_errors``: each
    judgement keeps its per-element errors, see :func:`~conform.harness.judge.compare.compare_many`).

    Every case is a program (:mod:`conform.spec.program_nodes`), judged node by node: each
    node's outputs under its op's error model, against its op's oracle evaluated on the values
    the backend gave that node (the program's inputs, or the backend's own outputs of earlier
    nodes), so that an error is blamed on the node that made it. A one-node program's judgement
    is its node's; a program of several nodes gets one that holds each node's (:func:`combined`,
    the worst element naming its node)."""
    judgements: list = [None] * len(triples)
    nodes: list = []   # (case number, node, the node's (spec, case, outputs))
    for i, (spec, case, outputs) in enumerate(triples):
        if len(outputs) != len(spec.outputs):
            judgements[i] = _wrong_count(outputs, spec.outputs)
            continue
        values = dict(zip(spec.input_names(case), case.inputs))
        values.update(zip(spec.outputs, map(np.asarray, outputs)))
        for node, node_at in zip(program_nodes(spec, case), node_cases(spec, case, values)):
            nodes.append((i, node, (node.spec, node_at, [values[n] for n in node.outputs])))
    owned: dict = {}
    for (i, node, _), judged in zip(nodes, _judge_nodes([n[2] for n in nodes], subnormals,
                                                        keep_errors)):
        owned.setdefault(i, []).append((node, judged))
    for i, parts in owned.items():
        if len(parts) == 1:
            judgements[i] = parts[0][1]
            continue
        for node, judged in parts:
            if judged.worst is not None:
                judged.worst["node"] = node.spec.op
        judgements[i] = combined([name for node, _ in parts for name in node.outputs[:1]],
                                 [judged for _, judged in parts])
    return judgements


def _judge_nodes(triples, subnormals: str, keep_errors: bool = False) -> list[Judgement]:
    """The judgement of each op's ``(spec, case, outputs)``, its outputs grouped by op, dtype
    and model across the triples (:func:`~conform.harness.judge.compare.compare_many`); an op
    with several outputs gets one judgement that holds each output's (:func:`combined`), and a
    failing one the profile of its failing elements."""
    judgements: list = [None] * len(triples)
    parts: dict = {}     # case number -> its outputs' judgements (ops with several outputs)
    groups: dict = {}
    answers = []         # (each case's answer: asked of the oracle once where not stored)
    shown = []           # each case's outputs as judged (canonical where the op has a form)
    for i, (spec, case, outputs) in enumerate(triples):
        answer = expectation(spec, case)
        answers.append(answer)
        if spec.definition.distribution is not None:   # a random op: its outputs' laws
            judged = judge_random(spec, case, outputs, answer, subnormals)
            judgements[i] = judged[0] if len(judged) == 1 else combined(spec.outputs, judged)
            shown.append(outputs)   # (kept in step with triples: the checks below zip them)
            continue
        canonical = spec.definition.canonical
        if canonical is not None:
            policy = {"subnormals": subnormals} if spec.definition.canonical_takes_subnormals else {}
            outputs = canonical([np.asarray(o) for o in outputs], case, **policy)
        shown.append(outputs)
        flushed = flushed_expectation(spec, case) if subnormals == "ftz" else None
        if len(answer) > 1:
            parts[i] = [None] * len(answer)
        for k, (part, out_dtype) in enumerate(zip(answer, spec.out_dtypes(case))):
            model = spec.model_for(out_dtype, k, case)
            key = (spec.op, out_dtype, id(model))
            group = groups.get(key)
            if group is None:
                group = groups[key] = (model, [])
            group[1].append((i, k, (np.asarray(outputs[k]), part.expected, part.impl_mask,
                                    part.accumulation, flushed and flushed[k], part.residual)))
    for (_, out_dtype, _), (model, members) in groups.items():
        judged = compare_many([member[2] for member in members], out_dtype=out_dtype, model=model,
                              subnormals=subnormals, keep_errors=keep_errors)
        for (i, k, item), judgement in zip(members, judged):
            if judgement.worst is not None:
                spec, case, _ = triples[i]
                judgement.worst["inputs"] = _worst_inputs(spec, case, judgement, item[1].shape, k)
            if i in parts:
                parts[i][k] = judgement
            else:
                judgements[i] = judgement
    for i, judged in parts.items():
        judgements[i] = combined(triples[i][0].outputs, judged)
    for i, ((spec, case, _), outputs, answer) in enumerate(zip(triples, shown, answers)):
        if getattr(spec, "properties", ()) and judgements[i].verdict != "fail":
            judgements[i] = with_properties(judgements[i], spec, case, outputs, answer, subnormals)
        if judgements[i].verdict != "fail" and any(p.impl_mask is not None for p in answer):
            judgements[i] = with_consistency(judgements[i], spec, case, outputs, answer)
        if judgements[i].verdict not in ("fail", "inconsistent"):
            judgements[i] = with_position_independence(judgements[i], spec, case, outputs, answer)
    with_length_independence(triples, shown, answers, judgements)
    for (spec, case, _), judged, answer in zip(triples, judgements, answers):
        if judged.verdict == "fail":
            judged.profile = _profile(spec, case, judged, answer)
    return judgements


def with_properties(judgement: Judgement, spec, case, outputs, answer, subnormals: str) -> Judgement:
    """``judgement``, failed where ``outputs`` break a property of ``spec`` (the first one, by
    name: :mod:`~conform.harness.judge.properties`)."""
    return _broken(judgement, broken_property(spec, case, outputs, answer, subnormals), "fail")


def with_consistency(judgement: Judgement, spec, case, outputs, answer) -> Judgement:
    """``judgement``, ``inconsistent`` where ``outputs`` answer the same values in an open
    region differently at different positions (:mod:`~conform.harness.judge.consistency`)."""
    return _broken(judgement, inconsistency(spec, case, outputs, answer), "inconsistent")


def with_position_independence(judgement: Judgement, spec, case, outputs, answer) -> Judgement:
    """``judgement``, failed where ``outputs`` of an element-wise op give the same inputs
    different results at different positions (property ``position``:
    :func:`~conform.harness.judge.consistency.position_dependence`)."""
    return _broken(judgement, position_dependence(spec, case, outputs, answer), "fail")


def with_length_independence(triples, shown, answers, judgements: list) -> None:
    """Fail (property ``length``) each length case among ``triples`` whose result differs from
    its partner's, where the partner is judged with it (the runner keeps the two in one reply:
    :func:`~conform.harness.judge.consistency.length_dependence`)."""
    index = {case.id: i for i, (_, case, _) in enumerate(triples)}
    for i, (spec, case, _) in enumerate(triples):
        j = index.get(case.extra.get("length_of")) if case.extra else None
        if j is None or judgements[i].verdict in ("fail", "inconsistent"):
            continue
        partner = (triples[j][1], shown[j], answers[j])
        judgements[i] = _broken(judgements[i], length_dependence(spec, case, shown[i], answers[i],
                                                                 partner), "fail")


def _broken(judgement: Judgement, broken, verdict: str) -> Judgement:
    """``judgement``, or, where ``broken`` (a Broken) names what the outputs break, ``verdict``
    with its message and failing elements."""
    if broken is None:
        return judgement
    return dataclasses.replace(judgement, verdict=verdict, reason=broken.message, worst=None,
                               mismatched=len(broken.failing), failing=broken.failing,
                               broken=broken.kind)


def _profile(spec, case, judgement: Judgement, answer) -> dict | None:
    """What the failing elements of one op's case have in common (None if that cannot be said:
    it only serves a manifest condition, which excuses, so it must never cost a verdict)."""
    try:
        return failure_profile(spec, case, judgement, [part.expected for part in answer])
    except Exception:
        return None


def _wrong_count(outputs, names) -> Judgement:
    """The failure of a backend that returned another number of outputs than the op's."""
    return Judgement("fail", "n/a", "n/a", reason=f"backend returned {len(outputs)} outputs, "
                                                  f"expected {len(names)} ({', '.join(names)})")


def combined(names, parts: list[Judgement]) -> Judgement:
    """One judgement for a case with several outputs: it fails if any output fails, else it
    passes if any output passes with elements judged, else it is implementation-defined if any
    output is (every judged element of the case open); its figures are those of the first output
    with that verdict, its counts the sums over the outputs. ``outputs`` keeps each output's
    judgement by name; the worst element names its output."""
    verdicts = [p.verdict for p in parts]
    passed = "pass" if any(p.verdict == "pass" and p.checked for p in parts) else ""
    verdict = next((v for v in ("fail", "inconsistent", passed, "impl_defined") if v in verdicts),
                   verdicts[0])
    deciding = parts[verdicts.index(verdict)]
    name = names[parts.index(deciding)]
    histograms = [p.histogram for p in parts if p.histogram]
    worst = deciding.worst and {**deciding.worst, "output": name}
    return dataclasses.replace(
        deciding, verdict=verdict, worst=worst,
        checked=sum(p.checked for p in parts), mismatched=sum(p.mismatched for p in parts),
        impl_defined=sum(p.impl_defined for p in parts),
        subnormal_excused=sum(p.subnormal_excused for p in parts),
        histogram=[sum(bins) for bins in zip(*histograms)] if histograms else [],
        observed=[pair for p in parts for pair in p.observed][:5],
        reason=deciding.reason and f"output {name}: {deciding.reason}",
        outputs=list(zip(names, parts)), profile=merged_profiles(p.profile for p in parts))


def _worst_inputs(spec, case, judgement: Judgement, out_shape, output: int) -> list:
    """The input values feeding the worst element of output number ``output``."""
    if spec.definition.feeding == "aligned":
        return _inputs_at(case, out_shape, judgement.worst["index"],
                          spec.signature.get("shapes", "equal"))
    if judgement.verdict == "fail":   # passing records stay small
        return _feeding_at(spec, case, judgement.worst["index"], output)
    return [None] * len(case.inputs)


def _inputs_at(case, out_shape, index, relation: str = "equal"):
    """Input values feeding output ``index`` of an op whose inputs are element-aligned with
    its output: equal shapes, scalars, or shapes that broadcast to it (by NumPy's rule, by
    NNEF's, which aligns leading dimensions, for ``nnef_broadcast``, or by XLA's
    ``broadcast_dimensions`` for ``xla_broadcast``)."""
    out_shape = tuple(out_shape)
    mapped = case.attrs.get("broadcast_dimensions") if relation == "xla_broadcast" else None
    found = []
    for x in case.inputs:
        if x.shape == out_shape:   # the common case: the element at the same index
            found.append(_scalar(x[tuple(index)]))
            continue
        dims = mapped if mapped is not None and x.ndim < len(out_shape) else None
        at = broadcast_index(x.shape, out_shape, index, trailing=relation != "nnef_broadcast",
                              mapped=dims)
        found.append(None if at is None else _scalar(x[at]))
    return found


def _feeding_at(spec, case, index, output: int = 0):
    """Per input, the values of the elements feeding output ``index`` (a list: a slice, window
    or patch, at most FEEDING_KEPT of them), the value itself where it is one element copied,
    ``None`` where the input takes no part (or where finding it failed: it only illustrates
    the verdict, which it must never cost)."""
    try:
        feeding = feeding_elements(spec.op, case.inputs, case.attrs, index, output)
    except Exception:
        return [None] * len(case.inputs)
    if spec.definition.feeding == "moved":
        return [None if f is None else _scalar(f[0]) for f in feeding]
    return [None if f is None else [_scalar(x) for x in f[:FEEDING_KEPT]] for f in feeding]


def _scalar(x):
    if isinstance(x, str):   # an element of a string array
        return x
    x = np.asarray(x)
    if x.dtype.kind == "c":   # JSON has no complex numbers: its text, '(1-2j)'
        return str(complex(x))
    return bool(x) if x.dtype.kind == "b" else int(x) if x.dtype.kind in "iu" else json_number(float(x))


def json_number(value):
    """A float as strict JSON allows it: non-finite values become 'nan', 'inf' or '-inf'."""
    if isinstance(value, float) and value - value != 0:   # (inf - inf and NaN - NaN are NaN)
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def failure_message(case, judgement: Judgement, backend: str) -> str:
    """One self-contained line: op, backend, dtype, shapes, seed, mismatch count, worst element."""
    head = (f"{case.op} [{backend}] dtype={case.dtype} shapes={case.shapes} attrs={case.attrs} "
            f"plan={case.plan} seed={case.seed} (case {case.id})")
    if judgement.worst is None:
        return f"{head}: {judgement.reason}"
    w = judgement.worst
    share = 100.0 * judgement.mismatched / max(judgement.checked, 1)
    text = [d == STRING for d in case.input_dtypes]   # string inputs: quoted, as the values
    inputs = ", ".join(_value_text(v, k < len(text) and text[k]) for k, v in enumerate(w["inputs"]))
    why = judgement.reason or (f"error {w['error']:.4g} {judgement.unit} > bound {w['bound']:.4g} "
                               f"{judgement.unit}")
    return (f"{head}: Mismatched elements: {judgement.mismatched} / {judgement.checked} "
            f"({share:.3g}%); worst {w.get('output', 'out')}{w['index']}: "
            f"actual={_shown(w['actual'])}, expected={_shown(w['expected'])}, inputs=({inputs}): "
            f"{why} [{judgement.model}]")


def _shown(value) -> str:
    """A worst element's value in a failure message: its repr, and for text outside ASCII also
    its escaped form (a precomposed 'é' and 'e' with a combining accent print alike)."""
    if isinstance(value, str) and not value.isascii():
        return f"{value!r} ({ascii(value)})"
    return repr(value)


def _value_text(value, text: bool = False) -> str:
    """An input value in a failure message; of a longer list (the elements feeding the worst
    one) only the first FEEDING_SHOWN values are shown, and how many there are. ``text``: an
    element of a string input, shown as the worst element is (:func:`_shown`)."""
    if value is None:
        return "?"
    if isinstance(value, list):
        shown = ", ".join(_value_text(v, text) for v in value[:FEEDING_SHOWN])
        if len(value) <= FEEDING_SHOWN:
            return f"[{shown}]"
        count = f"at least {len(value)}" if len(value) >= FEEDING_KEPT else str(len(value))
        return f"[{shown}, ... ({count} values)]"
    if text:
        return _shown(value)
    return value if isinstance(value, str) else repr(value)


def raising_allowed(spec, case) -> bool:
    """Whether the standard leaves some of ``case``'s output elements open: raising instead of
    producing them is then recorded as the implementation's choice, not judged."""
    return any(part.impl_mask is not None and bool(part.impl_mask.any())
               for part in expectation(spec, case))


def must_reject_verdict(case, outcome: Outcome) -> dict:
    """The verdict of a case the op's text forbids (its ``extra`` names the sentence): a refusal
    (the backend raised, at load or at run time) passes; a value returned is
    ``accepts_invalid``; unsupported, crash and timeout stay what they are."""
    forbids = case.extra["must_reject"]
    if outcome.kind == "ok":
        return {"verdict": "accepts_invalid", "forbidden_by": forbids,
                "message": f"{case.id}: returned a value for an input the text forbids: {forbids}"}
    if outcome.kind == "error":
        return {"verdict": "pass", "forbidden_by": forbids,
                "message": f"refused, as the text requires ({forbids}): {outcome.message}"}
    return {"verdict": outcome.kind, "forbidden_by": forbids, "message": outcome.message}


def result_record(spec, case, outcome: Outcome, backend: str, subnormals: str = "ieee") -> dict:
    """A results.jsonl line for one case, judged under the subnormal policy ``subnormals``."""
    return result_records([(spec, case, outcome)], backend, subnormals)[0]


def result_records(triples, backend: str, subnormals: str = "ieee") -> list[dict]:
    """:func:`result_record` for ``(spec, case, outcome)`` triples; the outputs are judged
    together (:func:`judge_many`), which gives the same records as judging them one by one."""
    records = []
    ok = []
    for spec, case, outcome in triples:
        record = case_record(case)
        record["seconds"] = round(outcome.seconds, 6)
        if outcome.stderr:
            record["stderr"] = outcome.stderr
        records.append(record)
        if case.extra and case.extra.get("must_reject"):
            record.update(must_reject_verdict(case, outcome))
        elif outcome.kind == "error" and outcome.on_input and raising_allowed(spec, case):
            record.update(verdict="impl_defined", message=f"raised on implementation-defined "
                                                          f"input: {outcome.message}")
        elif outcome.kind != "ok":
            record.update(verdict=outcome.kind, message=outcome.message)
            if outcome.traceback:
                record["traceback"] = outcome.traceback
        else:
            ok.append((record, spec, case, outcome))
    try:
        judgements = judge_many([(spec, case, o.outputs) for _, spec, case, o in ok], subnormals)
    except Exception:  # judge one by one, so that one bad output does not cost the others
        judgements = [_judge_alone(spec, case, o.outputs, subnormals) for _, spec, case, o in ok]
    for (record, spec, case, _), judgement in zip(ok, judgements):
        if isinstance(judgement, Exception):  # a bad output shape/dtype must not stop the run
            record.update(verdict="error", message=f"could not judge output: "
                                                   f"{type(judgement).__name__}: {judgement}")
        else:
            _add_judgement(record, spec, case, judgement, backend)
    return records


def _judge_alone(spec, case, outputs, subnormals):
    try:
        return judge_outputs(spec, case, outputs, subnormals)
    except Exception as exc:
        return exc


def _add_judgement(record: dict, spec, case, judgement: Judgement, backend: str) -> None:
    _add_figures(record, judgement)
    record["histogram"] = judgement.histogram
    if judgement.observed:
        record["observed"] = [[json_number(v) for v in pair] for pair in judgement.observed]
    if judgement.outputs:
        record["outputs"] = [_add_figures({"name": name}, part) for name, part in judgement.outputs]
    if judgement.broken:
        record["property"] = judgement.broken
    if judgement.verdict in ("fail", "inconsistent"):
        record["message"] = failure_message(case, judgement, backend)
        if judgement.profile is not None:   # what a manifest condition reads
            record["failing"] = {k: json_number(v) for k, v in judgement.profile.items()}


def _add_figures(record: dict, judgement: Judgement) -> dict:
    """``record`` with a judgement's verdict and figures as a result line holds them."""
    worst = judgement.worst and {k: v if k in _KEPT else json_number(v)
                                 for k, v in judgement.worst.items()}
    record.update(verdict=judgement.verdict, model=judgement.model, unit=judgement.unit,
                  checked=judgement.checked, mismatched=judgement.mismatched,
                  impl_defined_elements=judgement.impl_defined,
                  max_error=json_number(judgement.max_error), bound=json_number(judgement.bound),
                  worst=worst)
    if judgement.subnormal_excused:
        record["subnormal_excused"] = judgement.subnormal_excused
    return record


_KEPT = frozenset({"index", "inputs", "output", "node"})   # worst-element fields kept as they are
