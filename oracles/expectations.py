"""What the standard says a case's outputs are: the oracle's result plus the figures the error
model needs, per output. They depend on the case alone (never on a backend), so they are computed
once per case, when the case is generated, and kept with it in the corpus."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from conform.oracles._registry import accumulation_length, evaluate, evaluate_refined, widen
from conform.ops.regions import RegionContext, region_mask
from conform.dtypes import FLOAT_FORMATS, complex_array, component_dtype, dtype_name


class Expectation(NamedTuple):
    """The oracle's answer for one output of one case. (A named tuple: a run loads one per case
    from the corpus, and it is made in half the time of a frozen dataclass.)"""

    expected: np.ndarray              # the float64 (or int64, bool) reference output
    impl_mask: np.ndarray | None      # elements the standard leaves open (None: no such element)
    # (S, n) for the accumulation error model; (B, 0) for the derived model, B the op's
    # per-element bound (its error_bound hook); else None
    accumulation: tuple | None
    # the rest of the reference beyond float64 (``expected + residual`` is accurate to ~2**-106;
    # the judge measures ``|(actual - expected) - residual|``), or None
    residual: np.ndarray | None = None


#: A case's answer: one :class:`Expectation` per output, in the spec's output order.
Answer = tuple


def expect(spec, case, *, subnormals: str = "ieee", regions: bool = True) -> Answer:
    """Evaluate ``spec``'s oracle on ``case``: per output, its answer with its implementation-
    defined regions (those of the spec's regions that name the output, or name none) and, for
    the accumulation model, the sum of magnitudes ``S`` and accumulation length ``n``.
    ``subnormals``: the policy the derived bounds are for (``ieee`` or ``ftz``); without
    ``regions``, no region is evaluated (every ``impl_mask`` None: for a caller that reads only
    the values and bounds, as a graph's float64 composition does)."""
    run = oracle_of(spec)
    outputs, residuals = run(case.inputs, case.attrs, refined=True)
    names, out_dtypes = spec.outputs, spec.out_dtypes(case)
    if len(outputs) != len(names):
        raise TypeError(f"oracle {spec.op!r} returned {len(outputs)} outputs; the spec declares "
                        f"{len(names)} ({', '.join(names)})")
    length = None
    if spec.definition.accumulation_length is not None:
        length = accumulation_length(spec.op, [x.shape for x in case.inputs], case.attrs)
    magnitude_sums = rounded = None
    asked = _AskedOnce(run, case, outputs)
    answer = []
    for k, (name, expected, out_dtype) in enumerate(zip(names, outputs, out_dtypes)):
        accumulation = None
        model = spec.model_for(out_dtype, k, case)
        if model.get("correctly_rounded") and component_dtype(out_dtype) == "float64" \
                and spec.definition.rounded64 is not None:
            # the float64 oracle's value is a rounding itself: the op's exact rounding instead
            # (the loader requires the hook of an op's spec; a program, judged node by node
            # against each node's own expectation, has none)
            if rounded is None:
                rounded = evaluate(spec.oracle, case.inputs, case.attrs, rounded64=True)
            expected = rounded[k]
        if "accumulation" in model:
            if magnitude_sums is None:
                magnitude_sums = _magnitudes(spec, case)
            accumulation = (_finite_parts_sum(spec, case, k, magnitude_sums[k], expected),
                            length)
        elif "derived" in model:
            accumulation = (asked.bound(spec, k, out_dtype, model["derived"], subnormals), 0)
        named = [r["region"] for r in spec.implementation_defined
                 if name in r.get("outputs", (name,))] if regions else []
        impl = None
        if named:
            context = RegionContext(
                inputs=[np.asarray(x) for x in case.inputs], expected=expected,
                out_dtype=out_dtype, accumulation_length=length,
                shapes=spec.signature.get("shapes", "equal"), attrs=case.attrs,
                float_oracle=lambda xs, k=k: run(xs, case.attrs)[k],
                oracle_with=lambda xs, k=k, **more: asked.outputs_with(xs, more)[k],
                all_outputs=lambda xs: run(xs, case.attrs),
                error_bound=accumulation[0] if "derived" in model else None)
            impl = region_mask(named, context)
            impl = impl if impl.any() else None
        residual = residuals[k] if out_dtype in FLOAT_FORMATS else None
        answer.append(Expectation(expected, impl, accumulation, residual))
    return tuple(answer)


class _AskedOnce:
    """What :func:`expect` asks again for each output of a case, computed once per case: the
    error-bound hook's figures (which it gives for every output at once) and the oracle's
    outputs on the case's own inputs with more keywords (a region's other reading, its open
    elements), each a deterministic function of what the key holds, so the answer is the same
    array as a new evaluation's, bit for bit."""

    def __init__(self, run, case, outputs):
        self.run, self.case, self.outputs = run, case, outputs
        self.bounds, self.asked = {}, {}

    def bound(self, spec, k: int, out_dtype: str, params: dict, subnormals: str) -> np.ndarray:
        """Output ``k``'s bound (:func:`derived_bounds`), shaped like the output."""
        key = (out_dtype, repr(params))
        if key not in self.bounds:
            self.bounds[key] = derived_bounds(spec, self.case, self.outputs, out_dtype, params,
                                              subnormals)
        return np.broadcast_to(np.asarray(self.bounds[key][k], np.float64),
                               np.shape(self.outputs[k]))

    def outputs_with(self, xs, more: dict) -> tuple:
        """The oracle's outputs on inputs ``xs`` with the case's attributes and ``more``."""
        inputs = self.case.inputs
        if len(xs) != len(inputs) or any(x is not given for x, given in zip(xs, inputs)):
            return self.run(xs, {**self.case.attrs, **more})
        key = repr(sorted(more.items()))
        if key not in self.asked:
            self.asked[key] = self.run(xs, {**self.case.attrs, **more})
        return self.asked[key]


def oracle_of(spec):
    """``run(inputs, attrs, refined=False)``: ``spec``'s oracle with its ``special_values``
    table applied (:func:`~conform.oracles._registry.evaluate`); with ``refined``, also the
    per-output residuals (:func:`~conform.oracles._registry.evaluate_refined`)."""
    table = getattr(spec, "special_values", ())
    shapes = spec.signature.get("shapes", "equal") if hasattr(spec, "signature") else "equal"

    def run(inputs, attrs, refined=False):
        answer = evaluate_refined(spec.oracle, inputs, attrs, special_values=table, shapes=shapes)
        return answer if refined else answer[0]
    return run


def _magnitudes(spec, case) -> tuple:
    """Per output, the ``S`` of the accumulation model: the op's ``accumulation_magnitude`` hook
    on the widened inputs, or by default the oracle on the inputs' magnitudes (the sum of
    ``|x_i|`` for a sum)."""
    hook = spec.definition.accumulation_magnitude
    if hook is None:
        return evaluate(spec.oracle, [np.abs(x) for x in case.inputs], case.attrs)
    with np.errstate(all="ignore"):
        return tuple(np.asarray(s, np.float64)
                     for s in hook([widen(np.asarray(x)) for x in case.inputs], case.attrs))


def _finite_parts_sum(spec, case, k, magnitude_sum, expected):
    """``S`` for output ``k``; for a complex output whose sum of moduli is infinite (a term with
    an infinite or NaN part), the finite parts' own sums where the reference's part is finite
    too: each part of a complex sum is a real sum within ``gamma_n`` times the sum of its own
    terms' magnitudes, so the finite part of ``(nan + 10.168i)`` is judged by the imaginary
    terms, not waved through by an infinite ``S`` or held to the final rounding alone."""
    magnitude_sum = np.asarray(magnitude_sum)
    if not np.iscomplexobj(expected) or spec.definition.accumulation_magnitude is not None \
            or np.isfinite(magnitude_sum).all():
        return magnitude_sum
    parts = [complex_array(np.abs(x.real), np.abs(x.imag)) if np.iscomplexobj(x) else np.abs(x)
             for x in map(np.asarray, case.inputs)]
    with np.errstate(all="ignore"):
        part_sums = np.asarray(evaluate(spec.oracle, parts, case.attrs)[k], np.complex128)
        own = [np.where(np.isfinite(s) & np.isfinite(e), s, 0.0)
               for s, e in ((part_sums.real, expected.real), (part_sums.imag, expected.imag))]
        return np.where(np.isfinite(magnitude_sum), magnitude_sum, np.hypot(*own))


def derived_bounds(spec, case, outputs, out_dtype: str, params: dict,
                   subnormals: str = "ieee") -> tuple:
    """The absolute error bounds of the outputs under the ``derived`` model, one per output as
    the op's ``error_bound`` hook, evaluated on the case, gives them (an output's figures in
    float64 broadcast to its shape are its bound); a hook with a ``subnormals`` keyword is
    given the policy."""
    u = FLOAT_FORMATS[component_dtype(out_dtype)].unit_roundoff
    if params.get("accumulator_at_least"):
        u = min(u, FLOAT_FORMATS[params["accumulator_at_least"]].unit_roundoff)
    inputs = [widen(np.asarray(x)) for x in case.inputs]
    policy = {"subnormals": subnormals} if spec.definition.error_bound_takes_subnormals else {}
    with np.errstate(all="ignore"):
        bounds = spec.definition.error_bound(
            inputs, case.attrs, outputs, out_dtype=out_dtype, u=u,
            constants=params.get("constants", {}), dtypes=tuple(dtype_name(x.dtype) for x in case.inputs),
            **policy)
    return bounds
