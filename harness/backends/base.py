"""The backend contract. Built-in backends and vendor adapters implement the same class.

An adapter is registered under the ``conform.backends`` entry-point group and instantiated inside a
worker process, never in the parent: a backend that crashes takes only its worker down.
"""
from __future__ import annotations

import functools
import time
from typing import Callable, Sequence

import numpy as np

from conform.caches import cache_dir  # noqa: F401 - backends keep their caches there
from conform.model_formats import Refused, Unsupported, onnx_opset  # noqa: F401 - part of the contract

#: The version of this contract. It grows compatibly: new arguments to :meth:`Backend.run` are
#: keyword-only with defaults, new methods are optional and have defaults here; a change that
#: would break an existing adapter bumps this number (see docs/adapters.md).
API_VERSION = 3


class RuntimeClock:
    """Seconds a backend spends in its runtime, apart from conform's own work around it.

    * ``model_build``: making the model the runtime takes (conform's ONNX, NNEF or MLIR builders),
    * ``compile``: the runtime making a session or executable of it,
    * ``load``: the runtime reading an executable it compiled before from its own cache,
    * ``execute``: the runtime computing outputs.

    A backend that keeps one adds each runtime call's time (``clock.execute += seconds``, or
    ``with clock.timing("execute"):``) and reports :meth:`as_stats` in its :meth:`Backend.stats`;
    the benchmark then counts everything else as harness time (for backends without one it can
    only count the whole backend call).
    """

    __slots__ = ("model_build", "compile", "load", "execute")

    def __init__(self):
        self.model_build = self.compile = self.load = self.execute = 0.0

    def timing(self, phase: str) -> "_Timing":
        """A context manager adding the time spent inside it to ``phase``."""
        return _Timing(self, phase)

    def as_stats(self) -> dict:
        return {f"{phase}_seconds": round(getattr(self, phase), 6) for phase in self.__slots__}


class _Timing:
    __slots__ = ("clock", "phase", "start")

    def __init__(self, clock: RuntimeClock, phase: str):
        self.clock, self.phase = clock, phase

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        setattr(self.clock, self.phase,
                getattr(self.clock, self.phase) + time.perf_counter() - self.start)


class Backend:
    """Base class for backends.

    Subclasses set ``name``, ``model_format`` (``native``, ``onnx``, ``stablehlo`` or ``nnef``) and
    ``subnormals`` (``ieee`` if subnormal inputs and results are honoured, ``ftz`` if they are
    flushed to zero), and implement :meth:`run`. ``api_version`` is the contract version an adapter
    implements (set it explicitly; see docs/adapters.md). ``ops`` and ``dtypes`` declare what the
    backend claims (None: everything its model format can express); cases outside the claims are
    ``unsupported`` without reaching :meth:`run`. ``devices`` lists the devices it can run on.
    A ``native`` backend that reads one of the spec's bindings names it in ``spec_binding``
    (jax: ``xla``), so that ``conform list --backend B`` lists only the ops it can run.
    """

    api_version: int = API_VERSION   # the contract version the adapter was written against
    name: str = ""
    model_format: str = "native"
    subnormals: str = "ieee"
    ops: frozenset[str] | None = None      # op names claimed; None: every op with a binding
    dtypes: frozenset[str] | None = None   # dtype names claimed; None: every dtype
    devices: tuple[str, ...] = ("cpu",)
    #: How many devices of its kind the backend runs a case on at once: a case whose program
    #: needs more (:attr:`Program.devices`, a collective's replicas) is ``unsupported``.
    device_count: int = 1
    spec_binding: str | None = None        # native backends: the spec binding they read
    #: True if the functions :meth:`prepare` returns may compute several cases of a batch
    #: together (the first one called computes them all): a crash or hang in one of them then
    #: runs the batch's cases again one at a time, so that it is blamed on the case causing it.
    packs: bool = False

    def version(self) -> str:
        """The version string of the runtime under test."""
        return "unknown"

    def device(self) -> str:
        """The device the cases run on (one of :attr:`devices`)."""
        return self.devices[0]

    def stats(self) -> dict:
        """Counters for the benchmark, e.g. ``{"compilations": 12}``, and the seconds of a
        :class:`RuntimeClock`; summed over workers."""
        return {}

    def run(self, *, program, inputs, model=None) -> Sequence[np.ndarray]:
        """Compute one case: ``program`` (a :class:`~conform.harness.backends.program.Program`:
        its nodes' ops and attributes, input and output names and dtypes) on ``inputs`` (NumPy
        arrays, C-contiguous, in ``program.input_dtypes``).

        A backend whose ``model_format`` is not ``native`` is handed ``model``, the case as a
        :class:`conform.harness.backends.models.Model` in that format.

        Returns one array per name in ``program.outputs``, in ``program.out_dtypes``. Raise
        :class:`Unsupported` when the backend cannot express the case; any other exception
        becomes an ``error`` verdict (:class:`Refused` where the runtime refuses the model
        whatever the input values: an input in an implementation-defined region then does not
        excuse it). (Adapters written against contract 1 or 2, with
        ``run(*, spec, case, model)``, are called that way: see docs/adapters.md.)
        """
        raise NotImplementedError

    def prepare(self, *, program=None, inputs=None, model=None,
                **old) -> Callable[[], Sequence[np.ndarray]]:
        """Optional: :meth:`run` in two steps. ``prepare`` does all that comes before the runtime
        computes (the model, the session, the inputs) and returns a function that computes the
        outputs (raising as :meth:`run` would). A worker prepares a batch of cases, then computes
        them one after another, so that the runtime's calls follow each other instead of
        alternating with Python code, which runs both faster (onnxruntime, 41k warm cases in one
        process: model key, session lookup, inputs and run took 43-50 us a case interleaved,
        34 us in two passes). The default leaves all of the work to the returned function
        (also when called with contract 2's ``spec=`` and ``case=``, as an older adapter's
        ``super().prepare(...)`` does: then ``run`` is called with them).
        """
        if old:
            return functools.partial(self.run, **old, **({} if model is None else {"model": model}))
        if model is None:
            return functools.partial(self.run, program=program, inputs=inputs)
        return functools.partial(self.run, program=program, inputs=inputs, model=model)


def refuse_artefact(program, inputs, fmt: str) -> None:
    """Raise :class:`Unsupported` where the op's ``<fmt>_refuses`` hook (``lax_refuses``,
    ``onnx_refuses``, ``nnef_refuses``) says its lowering to ``fmt`` cannot express these input
    values faithfully (a lowering artefact, not the backend's answer to judge)."""
    refuses = getattr(getattr(program.spec, "definition", None), f"{fmt}_refuses", None)
    reason = refuses(inputs, program.case.attrs) if refuses is not None else None
    if reason:
        raise Unsupported(reason)


def binding(spec, fmt: str) -> dict:
    """The spec's binding for format ``fmt``, or raise :class:`Unsupported`: where the spec has
    none, or its binding says why the format cannot express the op (``unsupported``)."""
    found = spec.bindings.get(fmt)
    if found is None:
        raise Unsupported(f"op {spec.op} has no {fmt} binding in its spec")
    if "unsupported" in found:
        raise Unsupported(f"op {spec.op}: {found['unsupported']}")
    return found


def attrs_text(attrs: dict) -> str:
    """A case's attributes as a hashable, order-independent text for model keys (most cases
    have none)."""
    return repr(sorted(attrs.items())) if attrs else "[]"
