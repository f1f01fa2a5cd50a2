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

A pack is computed while its batch's first case is asked for, under the time limits of the
batch's cases (up to ``worker.PACK_TIME_LIMITS`` of them): compiling a batch of igamma cases takes
minutes on a loaded machine (1-7 s per kernel), and a pack killed at one case's limit had its
512 owed cases compiled one by one. The packs stay what the batches are, whatever the time
compiling took, so that a warm run finds each of them in jax's persistent cache.
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
    exception. If a packed program fails to trace, compile or run, the pack is computed again
    without its bad cases (:func:`_run_together`), each of which runs alone and keeps what it
    raises: one bad case never costs the others their verdicts, nor a compilation each."""
    packs: dict[int, list] = {}
    for slot in slots:
        try:
            traced = backend.traced(slot.program.spec, slot.program.case)
        except Exception as exc:   # a lowering that cannot express the case (Unsupported)
            slot.error = exc
            continue
        packs.setdefault(slot.program.devices, []).append((slot, traced))
    for ready in packs.values():
        if ready:
            _run_together(backend, ready)


def _run_together(backend, ready: list) -> None:
    """Compute ``ready`` (``(slot, traced function)`` pairs) as one program, or each case alone
    if it is one. A pack that fails does not send its cases one by one to compilations of their
    own (a batch of 256 cases of which one is refused by XLA's compiler would cost 256
    compilations): a pack that does not lower is packed again without the cases that do not
    lower alone (they run alone and keep what they raise), and one that lowers but fails to
    compile or run is split by (op, dtype) cell (XLA refuses an op on a type: a float8 cell of
    one case), and a cell in halves, each part computed the same way: each kernel compiled
    again once, not in every half that fails."""
    if len(ready) == 1:
        slot = ready[0][0]
        try:
            slot.outputs = backend.run(program=slot.program, inputs=slot.inputs)
        except Exception as exc:
            slot.error = exc
        return
    try:
        _compute_together(backend, ready)
        return
    except _NotLowered:   # a case its op's text forbids (must_reject), or a tracing refusal
        lowers = [_traces(backend, slot, fn) for slot, fn in ready]
        if not all(lowers):
            for pair in (pair for pair, ok in zip(ready, lowers) if not ok):
                _run_together(backend, [pair])
            if any(lowers):
                _run_together(backend, [pair for pair, ok in zip(ready, lowers) if ok])
            return
    except Exception:   # XLA's compiler or runtime refused one of them: see below
        pass
    cells: dict = {}   # XLA refuses an op on a type: a cell's cases fail together
    for pair in ready:
        cells.setdefault((pair[0].program.spec.op, pair[0].program.case.dtype), []).append(pair)
    parts = list(cells.values()) if len(cells) > 1 else [ready[:len(ready) // 2],
                                                          ready[len(ready) // 2:]]
    for part in parts:
        _run_together(backend, part)


class _NotLowered(Exception):
    """A pack's program failed to trace or lower (nothing was compiled)."""


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
    try:
        lowered = jax.jit(packed).lower(*flat)
    except Exception as exc:
        raise _NotLowered(str(exc)) from exc
    compiled = lowered.compile()
    backend.made_executable(time.perf_counter() - start, hits)
    with clock.timing("execute"):   # to the NumPy arrays: jax dispatches asynchronously
        results = [[np.asarray(o) for o in outs] for outs in compiled(*flat)]
    for (slot, _), outputs in zip(ready, results):
        slot.outputs = outputs
    backend.packed_cases += len(ready)
