"""Many cases, one compiled program: how the ``jax`` backend keeps XLA compilation off a cold run.

XLA:CPU spends ~34 ms compiling a one-op program, nearly all of it fixed cost (setting up the
pass pipelines and the kernel emitters), and a warm run pays ~7.5 ms loading each executable from
jax's persistent cache. Put side by side as independent computations of one jitted program, the
cases of a worker's batch cost ~11 ms of compilation per distinct signature (op, attributes,
dtypes, shapes), and XLA emits a kernel once for equal computations on equal shapes, so cases
sharing a signature cost nothing more to compile. A warm run then loads one executable per batch.

A kernel costs XLA:CPU its code generation for each distinct shape, and an element-wise op's
cases are drawn at several shapes each (~7 kernels per op x dtype cell). The cases of a pack that
compute one element-aligned op (``feeding`` "aligned": each output element from the inputs'
elements at its index) with the same attributes and input dtypes, each on inputs of one shape
(neither a scalar nor empty, nor a case dedicated to shapes), are therefore computed as one: their
inputs flattened and concatenated, the flat outputs cut back into each case's part at its shape.
That is one kernel per such computation in a pack, however many shapes the cases have.

Each case keeps its own inputs as runtime arguments (never constants, which XLA would fold with
other numerics); a case not flattened sees them at the shapes it has alone; the computations
share no operand, so XLA has nothing to fuse across them: every output bit is the one the case
computes alone, but that a NaN may have other payload bits where a flattened case's elements
fall into another (vectorised or scalar) loop of the kernel (:func:`same_outputs`; no standard
defines a NaN's payload and the judge reads none) (``bench/check_jax_packing.py`` checks the
whole default corpus; ``tests/harness/test_jax_packing.py`` a sample of every op family).
"""
from __future__ import annotations

import time

import numpy as np


class Slot:
    """One prepared case waiting for its pack: its function, inputs, and then its outputs or
    the exception computing it raised."""

    __slots__ = ("program", "inputs", "outputs", "error")

    def __init__(self, program, inputs):
        self.program, self.inputs = program, inputs
        self.outputs = self.error = None


class CacheHits:
    """Counts jax's persistent-cache hits, so that a compile call can be told apart from a
    load (an executable read from the cache)."""

    def __init__(self, jax):
        self.count = 0
        jax.monitoring.register_event_listener(self._heard)

    def _heard(self, event: str, **_) -> None:
        if event == "/jax/compilation_cache/cache_hits":
            self.count += 1


def same_outputs(alone: list, packed: list) -> bool:
    """Whether a case's outputs packed are those it has alone: the same dtypes, shapes and bits,
    but that a NaN may be another NaN (XLA:CPU's vectorised and scalar loops give a NaN other
    payload bits, so a case computed at another place of a flat array may get another one; no
    standard defines a NaN's payload, and the judge reads none)."""
    if len(alone) != len(packed):
        return False
    for a, b in zip(alone, packed):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.tobytes() == b.tobytes():
            continue
        try:
            nan_a, nan_b = np.isnan(a), np.isnan(b)
        except TypeError:   # no NaN in this type: the bits differ
            return False
        if not np.array_equal(nan_a, nan_b) or a[~nan_a].tobytes() != b[~nan_b].tobytes():
            return False
    return True


def run_pack(backend, slots: list) -> None:
    """Compute ``slots`` (prepared cases of ``backend``) as one compiled program per device
    count (a program's devices are one set: the cases of a collective with N replicas run on
    the first N) and give each its outputs; a case whose function cannot be built keeps its
    exception. If a packed program fails to trace, compile or run, each of its cases is run
    alone and keeps what it raises, so one bad case never costs the others their verdicts."""
    packs: dict[int, list] = {}
    for slot in slots:
        try:
            traced = backend.traced(slot.program.spec, slot.program.case)
        except Exception as exc:   # a lowering that cannot express the case (Unsupported)
            slot.error = exc
            continue
        packs.setdefault(slot.program.devices, []).append((slot, traced))
    for ready in packs.values():
        _run_together(backend, ready)


def _run_together(backend, ready: list) -> None:
    if len(ready) > 1:
        try:
            _compute_together(backend, ready)
            return
        except Exception:   # one case's tracing or a runtime's refusal: see below
            pass
        # A case that cannot be lowered (an input its op's text forbids) must not cost the
        # others their pack: those that lower alone are packed again, the rest run alone.
        traced = [(slot, fn) for slot, fn in ready if _traces(backend, slot, fn)]
        if 1 < len(traced) < len(ready):
            try:
                _compute_together(backend, traced)
            except Exception:
                pass
    for slot, _ in ready:
        if slot.outputs is not None:
            continue
        try:
            slot.outputs = backend.run(program=slot.program, inputs=slot.inputs)
        except Exception as exc:
            slot.error = exc


def _traces(backend, slot, fn) -> bool:
    """Whether ``fn`` traces and lowers to a module that verifies on ``slot``'s inputs
    (nothing is compiled)."""
    try:
        backend._jax.jit(fn).lower(*slot.inputs)
        return True
    except Exception:
        return False


def _compute_together(backend, ready: list) -> None:
    jax, clock = backend._jax, backend.clock
    units = _units(backend, ready)
    functions = [fn for fn, _, _ in units]
    counts = [len(inputs) for _, inputs, _ in units]
    flat = [x for _, inputs, _ in units for x in inputs]

    def packed(*args):
        results, at = [], 0
        for fn, count in zip(functions, counts):
            out = fn(*args[at:at + count])
            at += count
            results.append(tuple(out) if isinstance(out, tuple | list) else (out,))
        return results

    hits, start = backend.cache_hits.count, time.perf_counter()
    compiled = jax.jit(packed).lower(*flat).compile()
    backend.made_executable(time.perf_counter() - start, hits)
    with clock.timing("execute"):   # to the NumPy arrays: jax dispatches asynchronously
        results = [[np.asarray(o) for o in outs] for outs in compiled(*flat)]
    for (_, _, slots), outputs in zip(units, results):
        for slot, outs in zip(slots, _split(outputs, slots)):
            slot.outputs = outs
    backend.packed_cases += len(ready)


def _units(backend, ready: list) -> list:
    """The pack's computations, ``(function, inputs, slots)`` each: a case alone, or the
    element-wise cases of one op, attributes and input dtypes (:func:`_flattening_key`), their
    inputs flattened and concatenated into one computation (one kernel, however many shapes
    they were drawn at)."""
    groups: dict = {}
    for slot, fn in ready:
        key = _flattening_key(backend, slot)
        groups.setdefault(key if key is not None else id(slot), []).append((slot, fn))
    units = []
    for members in groups.values():
        slots = [slot for slot, _ in members]
        if len(members) > 1:
            inputs = [np.concatenate([np.asarray(slot.inputs[k]).reshape(-1) for slot in slots])
                      for k in range(len(slots[0].inputs))]
            if _aligned(backend, members[0][1], inputs):
                units.append((members[0][1], inputs, slots))
                continue
        units += [(fn, list(slot.inputs), [slot]) for slot, fn in members]
    return units


def _flattening_key(backend, slot):
    """What the case's computation is, element by element (op, lax calls, input dtypes), if it
    may be computed as part of one flat array: an element-aligned op (each output element
    computed from the inputs' elements at its index: ``feeding`` "aligned", not a random
    draw), inputs of one shape, neither a scalar nor empty (a shape's own case: those run at
    their shape), else None. ``backend`` says what a case calls (``call_key``)."""
    spec, case, inputs = slot.program.spec, slot.program.case, slot.inputs
    definition = getattr(spec, "definition", None)
    if definition is None or definition.feeding != "aligned" or definition.distribution is not None \
            or case.plan in ("boundary", "must_reject") or not inputs or spec.node_specs[1:]:
        return None
    shape = np.shape(inputs[0])
    if not shape or not np.prod(shape) or any(np.shape(x) != shape for x in inputs):
        return None
    try:
        calls = backend.call_key(spec, case)
    except Exception:
        return None
    return calls, tuple(case.input_dtypes), tuple(np.asarray(x).dtype for x in inputs)


def _aligned(backend, fn, inputs: list) -> bool:
    """Whether ``fn`` maps flat ``inputs`` to outputs of their one shape (traced, not
    compiled): what computing the cases on one flat array needs."""
    try:
        outs = backend._jax.eval_shape(fn, *inputs)
    except Exception:
        return False
    outs = outs if isinstance(outs, tuple | list) else (outs,)
    return all(getattr(out, "shape", None) == inputs[0].shape for out in outs)


def _split(outputs: list, slots: list) -> list:
    """Each slot's outputs: ``outputs`` as they are for a slot alone, else cut back into the
    slots' parts of the flat array, each at its case's shape."""
    if len(slots) == 1:
        return [outputs]
    sizes = np.cumsum([np.size(slot.inputs[0]) for slot in slots])[:-1]
    parts = [np.split(out, sizes) for out in outputs]
    return [[part[k].reshape(np.shape(slot.inputs[0])) for part in parts]
            for k, slot in enumerate(slots)]
