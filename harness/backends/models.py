"""The model conform hands a non-native backend: one case in the backend's model format; and
the one place a backend is called (:func:`prepare_case`), under the contract it implements.

A :class:`Model` is built on demand: a backend that already compiled a model with the same
:attr:`Model.key` runs the new inputs through it and never pays for building the model again.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
from collections import OrderedDict
from pathlib import Path

import numpy as np

from conform.model_formats import MODEL_FILE_FORMATS
from conform.harness.backends.base import API_VERSION, Backend, Unsupported, attrs_text
from conform.harness.backends.program import Program, case_devices
from conform.dtypes import np_dtype

FORMATS = MODEL_FILE_FORMATS


class Model:
    """The case ``case`` of op ``spec`` in model format ``fmt`` (``onnx``, ``stablehlo`` or ``nnef``).

    * :attr:`key`: hashable; cases with equal keys can run through one compiled model.
    * :meth:`build`: the model: an ``onnx.ModelProto``, StableHLO MLIR text (``@main`` takes the
      inputs), or an :class:`~conform.harness.backends.nnef_models.Document` (``.text`` is the graph).
      Raises :class:`Unsupported` where the format cannot express the case.
    * :meth:`inputs` and :attr:`input_names`: the arrays to feed, in the model's parameter order.
    * :meth:`write`: the model as files, for a runtime that reads from disk.
    """

    __slots__ = ("format", "spec", "case", "shaped", "_key", "_built")

    def __init__(self, fmt: str, spec, case, *, shaped: bool = True):
        if fmt not in FORMATS:
            raise ValueError(f"unknown model format {fmt!r}; known: {', '.join(FORMATS)}")
        self.format, self.spec, self.case = fmt, spec, case
        self.shaped = shaped   # False: an ONNX model's inputs and output carry no shape (contract 1)
        self._key = self._built = None

    # key and build are computed once per instance; plain attributes rather than
    # functools.cached_property, which takes a lock on every first access (a Model lives for
    # one case, so every access is a first one: 1.5 us of a ~25 us onnxruntime run)
    @property
    def key(self) -> tuple:
        if self._key is None:
            self._key = self._make_key()
        return self._key

    def _make_key(self) -> tuple:
        case = self.case
        if self.format == "onnx":
            return _onnx_signature_key()(self.spec, case)
        if self.format == "nnef":
            document = self.build()
            return ("nnef", document.text, document.files_key) if document.files else \
                ("nnef", document.text)
        # jax lowers one module per op, attributes, dtypes and shapes
        return ("stablehlo", self.spec.op, case.input_dtypes, case.out_dtype,
                tuple(np.shape(x) for x in case.inputs), attrs_text(case.attrs))

    def build(self):
        """The model in :attr:`format` (built once per instance)."""
        if self._built is None:
            self._built = self._build()
        return self._built

    def _build(self):
        if self.format == "onnx":
            from conform.harness.backends.onnx_models import build_model

            return build_model(self.spec, self.case, shaped=self.shaped)
        if self.format == "nnef":
            from conform.harness.backends.nnef_models import build_document

            return build_document(self.spec, self.case)
        from conform.harness.backends.stablehlo_models import build_stablehlo

        return build_stablehlo(self.spec, self.case)

    @property
    def input_names(self) -> list[str]:
        if self.format == "nnef":
            return [f"in{i}" for i in self.build().inputs]
        count = len(self.case.inputs)
        return _INPUT_NAMES[:count] if count <= len(_INPUT_NAMES) else [f"in{i}" for i in range(count)]

    def inputs(self) -> list[np.ndarray]:
        """The input arrays, C-contiguous, in the dtypes the model declares."""
        case = self.case
        if self.format == "nnef":
            return self.build().feeds(case)
        return declared_inputs(case)

    def write(self, directory: Path | str) -> Path:
        """Write the model into ``directory``: ``model.onnx``, ``model.mlir``, or an NNEF folder
        (``graph.nnef`` and one ``.dat`` file per input); returns that path."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if self.format == "nnef":
            from conform.harness.backends.nnef_models import write_document

            folder = directory / "model.nnef"
            write_document(folder, self.spec, self.case)
            return folder
        if self.format == "onnx":
            import onnx

            path = directory / "model.onnx"
            onnx.save(self.build(), path)
            return path
        path = directory / "model.mlir"
        path.write_text(self.build(), encoding="utf-8")
        return path


_INPUT_NAMES = [f"in{i}" for i in range(16)]


@functools.cache
def _onnx_signature_key():
    from conform.harness.backends.onnx_models import signature_key

    return signature_key


class ModelCache:
    """What a backend compiled (sessions, executables), by key - usually :attr:`Model.key`.

    A key whose model cannot be compiled remembers its :class:`Unsupported`, or the exception
    the runtime raised (a model it refuses: refused again for every case of the key), and raises
    it again without compiling again (the latter with the traceback of the compilation); a
    ``MemoryError`` is not remembered. With ``limit``, the least recently used entry is dropped
    past that many and handed to ``release`` (to free what the runtime holds for it).
    """

    def __init__(self, limit: int | None = None, release=None):
        self.limit, self.release = limit, release
        self.compiled = 0   # entries compiled (the benchmark's sessions or compilations)
        self._entries: OrderedDict = OrderedDict()

    def get(self, key, compile):
        """The entry for ``key``, made by ``compile()`` the first time it is asked for."""
        entry = self._entries.get(key)
        if entry is None:
            try:
                entry = compile()
                self.compiled += 1
            except Unsupported as exc:
                entry = exc
            except MemoryError:
                raise
            except Exception as exc:   # its traceback without this frame: see the raise below
                entry = _Refused(exc, exc.__traceback__.tb_next)
            self._entries[key] = entry
            if self.limit is not None and len(self._entries) > self.limit:
                _, oldest = self._entries.popitem(last=False)
                if self.release is not None and not isinstance(oldest, (Unsupported, _Refused)):
                    self.release(oldest)
        elif self.limit is not None:
            self._entries.move_to_end(key)
        if isinstance(entry, Unsupported):
            raise Unsupported(str(entry))   # a fresh one: re-raising grows its traceback
        if type(entry) is _Refused:   # the traceback as at compilation, every time
            raise entry.error.with_traceback(entry.traceback)
        return entry


class _Refused:
    """A :class:`ModelCache` entry: the exception compiling raised, and its traceback."""

    __slots__ = ("error", "traceback")

    def __init__(self, error: Exception, traceback):
        self.error, self.traceback = error, traceback


def claims_op(ops, spec) -> bool:
    """Whether a backend claiming ``ops`` (None: every op) claims ``spec``'s op: a program is
    claimed when each of its nodes' ops is."""
    return ops is None or spec.op in ops or all(node.op in ops for node in spec.node_specs)


def unclaimed(backend, spec, case) -> str | None:
    """Why ``backend``'s declarations exclude ``case`` (op or dtypes), or None if it claims it."""
    name = backend.name or type(backend).__name__
    if not claims_op(backend.ops, spec):
        return f"{name} does not claim op {spec.op}"
    if backend.dtypes is not None:
        missing = sorted({*case.input_dtypes, case.out_dtype} - set(backend.dtypes))
        if missing:
            return (f"{name} does not claim dtype {', '.join(missing)} "
                    f"(it claims {', '.join(sorted(backend.dtypes))})")
    return None


def takes_model(backend) -> bool:
    """Whether conform hands ``backend.run`` a ``model=`` (non-native formats whose ``run``
    accepts it; an adapter written before models were handed over keeps working)."""
    if backend.model_format not in FORMATS:
        return False
    parameters = inspect.signature(backend.run).parameters
    return "model" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def legacy(backend) -> bool:
    """Whether ``backend`` implements contract 1 or 2 (``run(*, spec, case, model)``) rather
    than 3 (``run(*, program, inputs, model)``): it declares ``api_version`` 1 or 2, or its
    ``run`` or ``prepare`` names ``spec`` or ``case`` and not ``program`` (an adapter that
    declares no version inherits the newest, yet was written against the one its signatures
    show)."""
    if getattr(backend, "api_version", API_VERSION) < 3:
        return True
    for method in (backend.run, getattr(backend, "prepare", None)):
        parameters = inspect.signature(method).parameters if method is not None else {}
        if "program" not in parameters and ("spec" in parameters or "case" in parameters):
            return True
    return False


def run_case(backend, spec, case, *, with_model: bool | None = None, old: bool | None = None):
    """Run ``case`` on ``backend`` as a run does: unclaimed cases raise :class:`Unsupported`
    without reaching the backend; non-native backends get the case's :class:`Model`."""
    return prepare_case(backend, spec, case, with_model=with_model, old=old)()


def prepare_case(backend, spec, case, *, with_model: bool | None = None, old: bool | None = None,
                 model: Model | None = None, inputs=None):
    """:func:`run_case` in two steps: this one prepares the case (see
    :meth:`~conform.harness.backends.base.Backend.prepare`) and returns the function that
    computes its outputs. The one place that calls a backend under the contract it implements:
    ``old`` (default :func:`legacy`) calls ``prepare(spec=, case=, model=)``, else
    ``prepare(program=, inputs=, model=)``. ``model`` (made for this case) is reused if it is
    what the backend's contract hands over; ``inputs`` replace the case's (a wrapper's)."""
    needed, present = case_devices(spec, case), getattr(backend, "device_count", 1)
    if needed > present:
        raise Unsupported(f"the case needs {needed} devices (one per replica); "
                          f"{backend.name or type(backend).__name__} has {present}")
    if backend.ops is not None or backend.dtypes is not None:
        reason = unclaimed(backend, spec, case)
        if reason:
            raise Unsupported(reason)
    if with_model is None:
        with_model = takes_model(backend)
    if old is None:
        old = legacy(backend)
    extra = {}
    if with_model:
        shaped = getattr(backend, "api_version", API_VERSION) >= 2   # contract 1: models as they were
        if model is None or model.shaped != shaped or model.format != backend.model_format:
            model = Model(backend.model_format, spec, case, shaped=shaped)
        extra["model"] = model
    if old:
        if inputs is not None and not _same(inputs, case.inputs):
            case = dataclasses.replace(case, inputs=list(inputs))
        # an adapter that does not override prepare (or does not derive from Backend) gets
        # contract 2's default: run does it all
        prepare = getattr(backend, "prepare", None)
        if prepare is None or getattr(type(backend), "prepare", None) is Backend.prepare:
            return functools.partial(backend.run, spec=spec, case=case, **extra)
        return prepare(spec=spec, case=case, **extra)
    program = Program(spec, case)
    if inputs is None:
        inputs = declared_inputs(case)
    prepare = getattr(type(backend), "prepare", None)
    if prepare is None or prepare is Backend.prepare:   # the default: run does it all
        return functools.partial(backend.run, program=program, inputs=inputs, **extra)
    return backend.prepare(program=program, inputs=inputs, **extra)


def declared_inputs(case) -> list[np.ndarray]:
    """The case's input arrays, C-contiguous, in its input dtypes. The arrays conform draws and
    stores are already (``materialize`` makes them in their dtype, the corpus keeps them so):
    they are handed over as they are; a NumPy scalar (a 0-d input read from the corpus) or
    another array-like becomes an array."""
    inputs = case.inputs
    for x in inputs:
        if type(x) is not np.ndarray:
            return [np.asarray(x, dtype=_NP_DTYPES.get(d) or _np_dtype(d), order="C")
                    for x, d in zip(inputs, case.input_dtypes)]
    return list(inputs)


_NP_DTYPES: dict = {}


def _np_dtype(name: str) -> np.dtype:
    _NP_DTYPES[name] = found = np_dtype(name)
    return found


def call_run(backend, spec, case):
    """``backend.run`` on ``case`` under the contract it implements, whatever it claims (and
    never through ``prepare``): what ``conform adapter check`` probes it with."""
    model = {"model": Model(backend.model_format, spec, case,
                            shaped=getattr(backend, "api_version", API_VERSION) >= 2)} \
        if takes_model(backend) else {}
    if legacy(backend):
        return backend.run(spec=spec, case=case, **model)
    return backend.run(program=Program(spec, case), inputs=declared_inputs(case), **model)


def _same(given, own) -> bool:
    return len(given) == len(own) and all(a is b for a, b in zip(given, own))
