"""The ``nnef`` backend: one-op NNEF documents run by the executor in the ``nnef`` package.

The executor (``nnef.Session``) is the package's C++ reference runtime: scalar tensors are float32,
integer tensors int32, logical tensors bool, computed with the C++ standard library (``std::exp``,
``std::round``, ...); subnormal inputs and results are kept (measured: 1e-45 + 1e-45 = 3e-45,
1e-20 * 1e-20 = 1e-40). Documents are executed without lowering (``lowered=[]``), so every
operation runs as the executor's own kernel.

Sessions are cached per document (which spells op, dtypes, shapes and attributes): a new one costs
~0.1 ms to parse with a two-declaration standard library (~3-5 ms with the whole library), a cached
one ~2 µs per call. An operation the executor has no kernel for (it raises 'operation not
implemented') that the standard defines as a compound fragment (nearest_upsample as debox, ...)
is run again lowered to that fragment's body, the full standard library parsed (and again, with
each compound fragment such a body invokes that has no kernel either). Each document is
written into a per-worker temporary directory (``$TMPDIR/conform-nnef/<pid>``) for the
executor to parse; :func:`write_document` in
:mod:`~conform.harness.backends.nnef_models` keeps one, with its inputs, for a repro. A
document the package's shape check refuses ("Shape error while inferring shape") raises
:class:`Refused`: the check reads shapes and attributes, never input values, so an input in an
implementation-defined region does not excuse it.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from functools import lru_cache
from importlib.metadata import version as package_version
from multiprocessing.util import Finalize
from pathlib import Path

from conform.harness.backends.base import Backend, Refused, RuntimeClock, Unsupported, refuse_artefact
from conform.harness.backends.models import Model, ModelCache
from conform.harness.backends.nnef_models import NNEF_TYPES, compound_operations, prelude

_TYPE_ERROR = "cannot be cast to type"           # the NNEF type system rejects the argument
_NOT_IMPLEMENTED = "operation not implemented"   # the executor has no kernel for this case
_SHAPE_ERROR = "Shape error while inferring shape"   # the package's shape check refuses it


class NnefBackend(Backend):
    """Runs each case as a one-op NNEF document through ``nnef.Session``."""

    name = "nnef"
    model_format = "nnef"
    subnormals = "ieee"
    dtypes = frozenset(NNEF_TYPES)   # what the executor's session takes (see nnef_models)
    max_sessions = 512

    def __init__(self):
        import nnef

        self._nnef = nnef
        # the executor's graph and buffers are freed when a session exits
        self._sessions = ModelCache(limit=self.max_sessions,
                                    release=lambda session: session.__exit__(None, None, None))
        self._lowered: dict = {}   # model key -> the compound operations its session lowers
        self.workdir = _worker_dir()
        self.clock = RuntimeClock()

    def version(self) -> str:
        return f"nnef {package_version('nnef')}"

    def stats(self) -> dict:
        """Counters for the benchmark: executor sessions created (documents parsed)."""
        return {"sessions": self._sessions.compiled, **self.clock.as_stats()}

    def run(self, *, program, inputs, model=None):
        refuse_artefact(program, inputs, "nnef")
        # the executor takes the document's own feeds (its tensor types), not ``inputs``
        model = model or Model("nnef", program.spec, program.case)
        with self.clock.timing("model_build"):
            document = model.build()
        return document.results(self.execute(model.key, document, model.inputs()))

    def execute(self, key, document, inputs, lowered=()) -> list:
        """The executor's outputs of ``document`` (an NNEF :class:`Document
        <conform.harness.backends.nnef_models.Document>`: its text and operations) on
        ``inputs``, its session cached under ``key``; an operation without a kernel of the
        executor's own runs as its standard fragment's body (see the module's text), those in
        ``lowered`` from the start."""
        lowered = self._lowered.get(key, list(lowered))
        while True:
            try:
                return self._execute(key, document, inputs, lowered)
            except ValueError as exc:
                wider = _lowering(exc, document, lowered)
                if wider is None:
                    raise _classified(exc) from None
                # no kernel of the executor's own: the standard fragment's body runs in its place
                lowered = self._lowered[key] = wider

    def _execute(self, key, document, inputs, lowered):
        session = self._sessions.get((key, *lowered),
                                     lambda: self._new_session(document, lowered))
        with self.clock.timing("execute"):
            return session(*inputs)

    def _new_session(self, document, lowered=()):
        # The session parses the file when it is created. Removing it afterwards is ~10x cheaper
        # than truncating and rewriting it next time (ext4 flushes a file truncated to 0 on close).
        # A document reading variables is loaded from a folder holding their tensor files.
        folder = document.write(self.workdir / "model") if document.files else None
        path = self.workdir / "graph.nnef"
        if folder is None:
            path.write_text(document.text, encoding="utf-8")
        try:
            with self.clock.timing("compile"):
                stdlib = None if lowered else prelude(*document.operations)   # the bodies
                session = self._nnef.Session(str(folder or path), stdlib=stdlib,
                                             lowered=list(lowered))
        except (ValueError, self._nnef.Error) as exc:
            raise _classified(exc) from None
        finally:
            shutil.rmtree(folder) if folder else path.unlink()
        return session


@lru_cache(maxsize=None)
def _worker_dir() -> Path:
    """``$TMPDIR/conform-nnef/<pid>``, removed when the process exits.

    A worker that crashes cannot clean up: the folders of dead processes go when the next one
    starts.
    """
    root = Path(tempfile.gettempdir()) / "conform-nnef"
    root.mkdir(exist_ok=True)
    for stale in root.iterdir():
        if stale.name.isdigit() and not _alive(int(stale.name)):
            shutil.rmtree(stale, ignore_errors=True)
    mine = root / str(os.getpid())
    mine.mkdir(exist_ok=True)
    # multiprocessing's exit finalizers also run when a worker process ends normally
    Finalize(None, shutil.rmtree, args=(str(mine),), kwargs={"ignore_errors": True},
             exitpriority=10)
    return mine


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # someone else's live process
        return True
    return True


def _lowering(exc: Exception, document, lowered: list) -> list | None:
    """The compound operations to lower after the executor raised ``exc``: the document's own
    at first, then any compound fragment a lowered body invokes that has no kernel either (a
    fragment whose body calls other fragments); None when
    ``exc`` is not a missing kernel or no compound fragment is left to lower."""
    missing = re.search(_NOT_IMPLEMENTED + r": (\w+)", str(exc))
    if missing is None:
        return None
    more = compound_operations(document.operations if not lowered else [missing.group(1)])
    more = [op for op in more if op not in lowered]
    return lowered + more if more else None


def _classified(exc: Exception) -> Exception:
    """Unsupported where NNEF's type system or the executor's kernels rule the case out;
    Refused where the package's shape check refuses the document (its shapes and attributes:
    the input values play no part)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    if _TYPE_ERROR in text:   # drop "Parse error in file '<temp path>' [line:col]"
        return Unsupported(f"NNEF type system: {text[text.index('argument'):][:300]}"
                           if "argument" in text else text[:300])
    if _NOT_IMPLEMENTED in text:
        return Unsupported(f"the NNEF executor: {text[text.index(_NOT_IMPLEMENTED):][:300]}")
    if text.startswith(_SHAPE_ERROR):   # from shapes and attributes alone, not input values
        return Refused(f"{type(exc).__name__}: {exc}")
    return exc
