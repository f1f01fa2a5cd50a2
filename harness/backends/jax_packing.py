"""Many cases, one compiled program: how the ``jax`` backend keeps XLA compilation off a cold run.

XLA:CPU spends ~34 ms compiling a one-op program, nearly all of it fixed cost (setting up the
pass pipelines and the kernel emitters), and a warm run pays ~7.5 ms loading each executable from
jax's persistent cache. Put side by side as independent computations of one jitted program, the
cases of a worker's batch cost ~11 ms of compilation per distinct signature (op, attributes,
dtypes, shapes), and XLA emits a kernel once for equal computations on equal shapes, so cases
sharing a signature cost nothing more to compile. A warm run then loads one executable per batch.

Each case keeps its own inputs as runtime arguments (never constants, which XLA would fold with
other numerics) and sees them at the shapes it has alone; the computations share no operand, so
XLA has nothing to fuse across them: every output bit is the one the case computes alone
(``bench/check_batching.py --jax-packing`` checks the whole default corpus;
``tests/harness/test_jax_packing.py`` a sample of every op family).
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
    functions = [fn for _, fn in ready]
    counts = [len(slot.inputs) for slot, _ in ready]
    flat = [x for slot, _ in ready for x in slot.inputs]

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
    for (slot, _), outputs in zip(ready, results):
        slot.outputs = outputs
    backend.packed_cases += len(ready)
