"""The ``jax`` backend: each op through its ``jax.lax`` binding (or its op module's ``lax``
lowering), jitted.

The cases a worker prepares together (a batch) are packed into one jitted program
(:mod:`~conform.harness.backends.jax_packing`): one compilation per batch, not per signature. A
case run alone (:meth:`JaxBackend.run`) goes through a function cached by op + static attributes
(jit itself caches per shapes and dtypes). Inputs are always runtime arguments, so that no
constant folding changes the numerics. Spec attribute names follow the lax keyword names, so most
bindings need no translation. ``$CONFORM_JAX_PACKING=0`` runs every case alone.
"""
from __future__ import annotations

import contextlib
import functools
import os
import time
from pathlib import Path

import numpy as np

from conform.harness.backends.base import (Backend, RuntimeClock, Unsupported, binding, cache_dir,
                                           refuse_artefact)
from conform.harness.backends.jax_packing import CacheHits, Slot, run_pack
from conform.caches import prune_folder
from conform.spec.program_nodes import node_cases, program_nodes

#: The persistent compilation cache's size cap, in MiB ($CONFORM_JAX_CACHE_MAX_MB). An entry takes
#: ~2.5 KiB (measured: 9,872 entries, 25 MiB) and the keys change with jax, conform's lowering and
#: the shapes drawn, so without a cap the folder only grows.
DEFAULT_CACHE_MAX_MB = 1024


def prune_compile_cache(folder: Path, max_mb: float | None = None) -> list[Path]:
    """Keep jax's persistent compilation cache in ``folder`` under ``max_mb`` MiB (default
    ``$CONFORM_JAX_CACHE_MAX_MB`` or :data:`DEFAULT_CACHE_MAX_MB`), deleting the entries
    written longest ago. The folder is scanned only if entries were added since the last
    pruning (its modification time, kept in ``.pruned``), so a worker start costs one ``stat``.

    jax's own cap (``jax_compilation_cache_max_size``) is not used: it rescans the whole folder
    on every write (quadratic over a cold run of thousands of compilations) and needs an access
    time file beside each entry, which the entries already on disk do not have."""
    if max_mb is None:
        max_mb = float(os.environ.get("CONFORM_JAX_CACHE_MAX_MB") or DEFAULT_CACHE_MAX_MB)
    marker = folder / ".pruned"
    try:
        if marker.read_text() == str(folder.stat().st_mtime_ns):
            return []
    except OSError:   # no marker yet
        pass
    deleted = prune_folder(folder, "*-cache", max_mb)
    try:
        for _ in range(2):   # creating the marker changes the folder's time: written again
            marker.write_text(str(folder.stat().st_mtime_ns))
    except OSError:
        pass   # a read-only cache: pruned again next time
    return deleted


def frozen(value):
    if isinstance(value, list | tuple):
        return tuple(frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, frozen(v)) for k, v in value.items()))
    return value


def lax_calls(spec, case) -> list[tuple[str, dict]]:
    """Per op of the case (one, or a program's nodes): its ``lax`` binding's name ("" where the
    op module's ``lax`` hook lowers it alone) and the attributes it is called with (the
    binding's fixed ``params``, then the case's or the op's)."""
    calls = []
    for op_spec, attrs in ((node.spec, node.attrs) for node in program_nodes(spec, case)):
        bound = binding(op_spec, "xla")
        calls.append((bound.get("lax", ""), {**bound.get("params", {}), **attrs}))
    return calls


class JaxBackend(Backend):
    name = "jax"
    model_format = "native"
    spec_binding = "xla"   # what `conform list --backend jax` needs of a spec
    subnormals = "ftz"  # XLA:CPU flushes float32 subnormals (inputs and results)
    packs = True        # a batch's cases are one compiled program (see jax_packing)
    #: XLA host-platform (CPU) devices the backend starts with (``jax_num_cpu_devices``, which
    #: is XLA_FLAGS=--xla_force_host_platform_device_count=N): a collective's case needs one
    #: device per replica. An op on one device runs on the first, as with one device.
    host_devices = 8
    device_count = host_devices   # an instance has as many as jax gives it

    def __init__(self):
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        try:
            jax.config.update("jax_num_cpu_devices", self.host_devices)
        except RuntimeError:   # jax's backend already started in this process: keep its devices
            pass
        self.device_count = len(jax.devices())
        cache = cache_dir() / "jax"
        cache.mkdir(parents=True, exist_ok=True)
        prune_compile_cache(cache)
        jax.config.update("jax_compilation_cache_dir", str(cache))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        self._jax = jax
        self._compiled: dict = {}
        self._live: set = set()          # (function key, input shapes and dtypes) compiled now
        self._pending: list[Slot] = []   # cases prepared and not computed yet: the next pack
        self.packs = os.environ.get("CONFORM_JAX_PACKING", "1") != "0"
        self.cache_hits = CacheHits(jax)
        self.compilations = self.loads = self.packed_cases = 0
        self.clock = RuntimeClock()

    def version(self) -> str:
        import jaxlib

        return f"jax {self._jax.__version__} / jaxlib {jaxlib.__version__}"

    def device(self) -> str:
        return str(self._jax.devices()[0].platform)

    #: Executables kept at once. Each holds ~1.5 MB that jax never frees by itself; cases arrive
    #: grouped by op, so releasing them all at this count recompiles (from the persistent cache)
    #: almost nothing and keeps a worker under ~0.7 GB.
    max_live_executables = 256

    def stats(self) -> dict:
        """Executables compiled (``compilations``) and read from jax's persistent cache
        (``loads``), one per pack or per signature of a case run alone; ``packed_cases``: cases
        computed in packs. The clock's ``compile`` and ``load`` hold each first call whole
        (tracing, compiling or loading)."""
        return {"compilations": self.compilations, "loads": self.loads,
                "packed_cases": self.packed_cases, **self.clock.as_stats()}

    def made_executable(self, seconds: float, hits_before: int) -> None:
        """Count an executable made in ``seconds``: loaded if jax's persistent cache was hit
        since it held ``hits_before`` hits, else compiled."""
        if self.cache_hits.count > hits_before:
            self.clock.load += seconds
            self.loads += 1
        else:
            self.clock.compile += seconds
            self.compilations += 1

    def _release_executables(self) -> None:
        """Drop every compiled function and return the memory to the operating system."""
        import ctypes
        import gc

        self._compiled.clear()
        self._live.clear()
        self._jax.clear_caches()
        gc.collect()
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)   # glibc keeps freed arenas otherwise
        except (OSError, AttributeError):
            pass

    def _builder(self, spec, lax_name: str, attrs: dict, dtypes: tuple = ()):
        lax = self._jax.lax
        lower = spec.definition.lax
        if lower is not None:   # a hook taking ``bound`` gets the binding's lax function
            extra = {"bound": getattr(lax, lax_name)} if spec.definition.lax_takes_bound else {}
            if spec.definition.lax_takes_dtypes:
                extra["dtypes"] = tuple(dtypes)
            return lower(lax, attrs, **extra)
        fn = getattr(lax, lax_name, None)
        if fn is None:
            raise Unsupported(f"jax.lax has no function {lax_name!r}")
        static = {k: frozen(v) for k, v in attrs.items()}
        return lambda *xs: fn(*xs, **static)

    def _function(self, spec, case) -> tuple:
        """``(key, jitted function)`` for the case's op and static attributes (cached by key); for
        a program, one function computing every node and returning each node's output."""
        key = (spec.op, *map(frozen, lax_calls(spec, case)))
        fn = self._compiled.get(key)
        if fn is None:
            fn = self._jax.jit(self.traced(spec, case))
            self._compiled[key] = fn
        return key, fn

    def traced(self, spec, case):
        """The case's computation as a function of its inputs, not jitted: its op's lax call,
        or for a program each node's, returning every node's output."""
        nodes = program_nodes(spec, case)
        calls = [self._builder(node.spec, lax_name, attrs, node_at.input_dtypes)
                 for node, node_at, (lax_name, attrs)
                 in zip(nodes, node_cases(spec, case), lax_calls(spec, case))]
        if len(calls) == 1:   # a one-node program is its op's function
            return calls[0]

        def program(*inputs):
            values = dict(zip(spec.input_names(case), inputs))
            for node, call in zip(nodes, calls):
                values[node.outputs[0]] = call(*(values[name] for name in node.inputs))
            return tuple(values[node.outputs[0]] for node in nodes)

        return program

    def stablehlo(self, *, spec, case) -> str:
        """The case as a StableHLO module (MLIR text), lowered from the same jitted function that
        :meth:`run` executes; inputs stay runtime arguments of ``@main``."""
        return self._function(spec, case)[1].lower(*case.inputs).as_text()

    def prepare(self, *, program, inputs, model=None):
        """Keep the case for the pack its batch makes; the returned function computes the whole
        pack the first time one of its cases is asked for (see :mod:`jax_packing`). A subclass
        that overrides :meth:`run` has its ``run`` called for each case."""
        _refuse(program, inputs)
        if not self.packs or type(self).run is not JaxBackend.run:
            return functools.partial(self.run, program=program, inputs=inputs)
        slot = Slot(program, inputs)
        self._pending.append(slot)
        return functools.partial(self._outputs_of, slot)

    def _outputs_of(self, slot: Slot) -> list:
        if slot.outputs is None and slot.error is None:
            slots, self._pending = self._pending, []
            run_pack(self, slots)   # a slot alone runs through its signature's cached executable
        if slot.error is not None:
            raise slot.error
        return slot.outputs

    def run(self, *, program, inputs, model=None):
        _refuse(program, inputs)
        spec, case = program.spec, program.case
        key, fn = self._function(spec, case)
        signature = (key, case.input_dtypes, tuple(np.shape(x) for x in inputs))
        if signature in self._live:
            with self.clock.timing("execute"), _type_refusals():
                return _arrays(fn(*inputs))
        if len(self._live) >= self.max_live_executables:
            self._release_executables()
            key, fn = self._function(spec, case)   # fn was dropped with the rest
        self._live.add(signature)
        hits, start = self.cache_hits.count, time.perf_counter()
        try:
            with _type_refusals():   # the first call: tracing, compiling or loading, running
                return _arrays(fn(*inputs))
        finally:
            self.made_executable(time.perf_counter() - start, hits)


#: The phrases of jax.lax's dtype rules refusing an element type, by the error they raise.
_TYPE_REFUSALS = {TypeError: ("does not accept dtype", "must have a number dtype"),
                  ValueError: ("is not compatible with complex inputs",)}


@contextlib.contextmanager
def _type_refusals():
    """jax.lax's dtype rules refusing an element type its op's text allows ("abs does not accept
    dtype int4. Support for narrow-width integers is platform-dependent ..."; "add does not
    accept dtype bool"; "operand to reduce_window_sum must have a number dtype, got bool";
    "top_k is not compatible with complex inputs", a ValueError) raise :class:`Unsupported`
    with jax's reason: the runtime lacks what the standard allows; so does XLA's compiler
    finding no lowering of an op for its operand types
    ("failed to legalize operation 'chlo.bessel_i1e' ... tensor<256xf8E4M3FN>"), and its runtime
    having no buffer of the type ("Invalid XLA PrimitiveType: 36 (F6E2M3FN)", "Unknown NumPy
    dtype dtype(float6_e2m3fn)": jaxlib 0.10's CPU client holds no 6-bit float), and its emitter
    naming the operand type it has no code for ("UNIMPLEMENTED: unsupported operand type S2 in
    op dot"). Any other error stays an error."""
    try:
        yield
    except (TypeError, RuntimeError, ValueError) as exc:
        text = str(exc)
        if any(isinstance(exc, kind) and any(p in text for p in phrases)
               for kind, phrases in _TYPE_REFUSALS.items()):
            raise Unsupported(f"jax refuses the element type: {text.splitlines()[0][:300]}") \
                from exc
        if "Invalid XLA PrimitiveType" in text or "Unknown NumPy dtype" in text:
            raise Unsupported(f"jax's runtime has no buffer of the element type: "
                              f"{text.splitlines()[0][:300]}") from exc
        if "UNIMPLEMENTED: unsupported operand type" in text:   # XLA's CPU emitter: S2 in dot
            raise Unsupported(f"XLA cannot compile it: {text.splitlines()[0][:300]}") from exc
        if "failed to legalize operation" not in text:
            raise
        found = text[text.index("failed to legalize operation"):].splitlines()[0]
        raise Unsupported(f"XLA cannot compile it: {found[:300]}") from exc


def _refuse(program, inputs) -> None:
    """Raise Unsupported where the op's ``lax_refuses`` hook says its lowering cannot express
    these input values faithfully (a lowering artefact, not the backend's answer)."""
    refuse_artefact(program, inputs, "lax")


def _arrays(outputs) -> list:
    """A jitted function's outputs as NumPy arrays (waiting for them: jax dispatches
    asynchronously)."""
    if not isinstance(outputs, tuple | list):
        outputs = (outputs,)
    return [np.asarray(o) for o in outputs]
