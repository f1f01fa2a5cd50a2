"""The ``onnxruntime`` backend: one-node ONNX models on the CPU execution provider.

Sessions are cached per signature (op, dtypes, shapes, attributes). Each worker runs onnxruntime
single-threaded (intra- and inter-op threads = 1) with graph optimisation level ORT_ENABLE_BASIC.

A sequence-typed graph output comes back from ``session.run`` as a list of arrays: it is packed
into the two outputs the spec declares for it (:func:`conform.ops.sequence_values.pack`: the elements
raveled and concatenated, and their shapes). onnxruntime's Python API gives no access to the
elements of a sequence of bfloat16, float8 or int4 (``OrtValue`` has no accessor), so those
cases are ``unsupported``.
"""
from __future__ import annotations

import functools
import time

from conform.harness.backends.base import (Backend, RuntimeClock, Unsupported, onnx_opset,
                                           refuse_artefact)
from conform.harness.backends.model_store import ModelStore
from conform.harness.backends.models import Model, ModelCache
from conform.harness.backends.onnx_models import output_ranks
from conform.harness.backends.ort_refusals import refused
from conform.harness.backends.ort_values import array_of, needs_ort_values, ort_value
from conform.ops.sequence_values import packed_outputs


class OnnxRuntimeBackend(Backend):
    name = "onnxruntime"
    model_format = "onnx"
    subnormals = "ieee"
    optimization = "ORT_ENABLE_BASIC"
    #: Sessions kept at once (least recently used dropped): each holds ~100 KB, models declare
    #: their inputs' ranks, and cases arrive grouped by op, so a worker rarely needs an old one
    #: again (116k cases: 3,000 sessions, 450 -> 780 MB kept without a cap).
    max_sessions = 256

    def __init__(self):
        import onnxruntime as ort

        self._ort = ort
        ort.set_default_logger_severity(4)  # kernel errors are reported per case
        self._sessions = ModelCache(limit=self.max_sessions)
        # models built by an earlier run are read back, not built again (model_store)
        self._models = ModelStore("onnx", _serialize, context=f"opset {onnx_opset()}")
        self._as_values: dict = {}   # (input dtypes, out dtype, output types) -> OrtValues?
        self.clock = RuntimeClock()
        self.options = ort.SessionOptions()
        self.options.intra_op_num_threads = 1
        self.options.inter_op_num_threads = 1
        self.options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, self.optimization)
        self.options.log_severity_level = 4

    def version(self) -> str:
        return f"onnxruntime {self._ort.__version__}"

    def stats(self) -> dict:
        return {"sessions": self._sessions.compiled, "models_read": self._models.read,
                **self.clock.as_stats()}

    def _new_session(self, model: Model):
        with self.clock.timing("model_build"):
            serialized = self._models.serialized(model, _depends(model))
        try:
            with self.clock.timing("compile"):
                return self._ort.InferenceSession(serialized, self.options,
                                                  providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            text = str(exc)
            if refused(text):
                raise Unsupported(f"onnxruntime has no kernel: {text.splitlines()[0][:300]}")
            raise

    def run(self, *, program, inputs, model=None):
        return self.prepare(program=program, inputs=inputs, model=model)()

    def prepare(self, *, program, inputs, model=None):
        case = program.case
        refuse_artefact(program, inputs, "onnx")
        model = model or Model("onnx", program.spec, case)
        session = self._sessions.get(model.key, lambda: self._new_session(model))
        feeds = dict(zip(model.input_names, inputs))
        crossing = (case.input_dtypes, case.out_dtype, program.spec.output_types)
        as_values = self._as_values.get(crossing)
        if as_values is None:
            as_values = self._as_values[crossing] = needs_ort_values(
                (*case.input_dtypes, *program.out_dtypes))
        sequences = getattr(program.spec, "sequence_outputs", ())
        if as_values and sequences:
            raise Unsupported("onnxruntime's Python API gives no elements of a sequence of "
                              f"{', '.join(sorted(set(program.out_dtypes)))} (OrtValue has no "
                              "accessor for them)")
        if sequences:
            return functools.partial(self._execute_sequences, session, feeds,
                                     program.out_dtypes)
        if as_values:
            # onnxruntime's session.run takes and gives no ml_dtypes arrays (bfloat16, float8,
            # int4): they cross as OrtValues typed by their ONNX element type instead
            feeds = {name: ort_value(self._ort, x) for name, x in feeds.items()}
            return functools.partial(self._execute_values, session, feeds)
        return functools.partial(self._execute, session, feeds)

    def _execute_values(self, session, feeds: dict):
        inner = getattr(session, "_sess", None)
        if inner is None:   # an onnxruntime without it: its public wrapper
            start = time.perf_counter()
            try:
                values = session.run_with_ort_values(None, feeds)
            finally:
                self.clock.execute += time.perf_counter() - start
            return [array_of(value) for value in values]
        # The public wrapper (Session.run_with_ort_values) costs ~140 us a call more than the
        # computation (onnxruntime 1.2x: it iterates the C++ result vector until IndexError and
        # wraps each value): the C session is called as the wrapper does, the values read by index
        names = [output.name for output in session.get_outputs()]
        given = {name: value._get_c_value() for name, value in feeds.items()}
        start = time.perf_counter()
        try:
            values = inner.run_with_ort_values(given, names, None)
        finally:
            self.clock.execute += time.perf_counter() - start
        return [array_of(values[k]) for k in range(len(values))]

    def _execute_sequences(self, session, feeds: dict, dtypes):
        return packed_outputs(self._execute(session, feeds), dtypes)

    def _execute(self, session, feeds: dict):
        # timed by hand, not with self.clock.timing(): this runs once per case, and the context
        # manager costs ~1 us a call more (0.27 vs 1.29 us), which is harness overhead
        start = time.perf_counter()
        try:
            return session.run(None, feeds)
        finally:
            self.clock.execute += time.perf_counter() - start


def _serialize(model) -> bytes:
    return model.SerializeToString()


def _depends(model) -> tuple | None:
    """What an ONNX model's bytes depend on besides its key: its outputs' ranks, which cases of
    one key can differ in (None: they cannot be told, or the model is no op's (a generated
    graph): it is built, and not kept)."""
    if getattr(model, "spec", None) is None:
        return None
    if not model.shaped:
        return ()
    try:
        return tuple(output_ranks(model.spec, model.case))
    except Exception:   # noqa: BLE001 - whatever it is, building the model raises it again
        return None
