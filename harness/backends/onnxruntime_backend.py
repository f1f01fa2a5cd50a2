"""The ``onnxruntime`` backend: one-node ONNX models on the CPU execution provider.

Sessions are cached per signature (op, dtypes, shapes, attributes). Each worker runs onnxruntime
single-threaded (intra- and inter-op threads = 1) with graph optimisation level ORT_ENABLE_BASIC.
"""
from __future__ import annotations

import ctypes
import functools
import time

import ml_dtypes
import numpy as np

from conform.harness.backends.base import Backend, RuntimeClock, Unsupported
from conform.harness.backends.models import Model, ModelCache


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
        self.clock = RuntimeClock()
        self.options = ort.SessionOptions()
        self.options.intra_op_num_threads = 1
        self.options.inter_op_num_threads = 1
        self.options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, self.optimization)
        self.options.log_severity_level = 4

    def version(self) -> str:
        return f"onnxruntime {self._ort.__version__}"

    def stats(self) -> dict:
        return {"sessions": self._sessions.compiled, **self.clock.as_stats()}

    def _new_session(self, model: Model):
        with self.clock.timing("model_build"):
            serialized = model.build().SerializeToString()
        try:
            with self.clock.timing("compile"):
                return self._ort.InferenceSession(serialized, self.options,
                                                  providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            text = str(exc)
            if "NOT_IMPLEMENTED" in text or "Could not find an implementation" in text \
                    or "Type Error" in text or "type constraint" in text.lower():
                raise Unsupported(f"onnxruntime has no kernel: {text.splitlines()[0][:300]}")
            raise

    def run(self, *, program, inputs, model=None):
        return self.prepare(program=program, inputs=inputs, model=model)()

    def prepare(self, *, program, inputs, model=None):
        case = program.case
        model = model or Model("onnx", program.spec, case)
        session = self._sessions.get(model.key, lambda: self._new_session(model))
        feeds = dict(zip(model.input_names, inputs))
        if "bfloat16" in (*case.input_dtypes, case.out_dtype):
            # onnxruntime's session.run takes and gives no ml_dtypes bfloat16 arrays: their bits
            # cross as OrtValues typed bfloat16 instead
            feeds = {name: self._ort_value(x) for name, x in feeds.items()}
            return functools.partial(self._execute_values, session, feeds)
        return functools.partial(self._execute, session, feeds)

    def _ort_value(self, x: np.ndarray):
        if x.dtype == ml_dtypes.bfloat16:
            return self._ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
                x.view(np.uint16), onnx_element_type=ONNX_BFLOAT16)
        return self._ort.OrtValue.ortvalue_from_numpy(x)

    def _execute_values(self, session, feeds: dict):
        start = time.perf_counter()
        try:
            values = session.run_with_ort_values(None, feeds)
        finally:
            self.clock.execute += time.perf_counter() - start
        return [_array(value) for value in values]

    def _execute(self, session, feeds: dict):
        # timed by hand, not with self.clock.timing(): this runs once per case, and the context
        # manager costs ~1 us a call more (0.27 vs 1.29 us), which is harness overhead
        start = time.perf_counter()
        try:
            return session.run(None, feeds)
        finally:
            self.clock.execute += time.perf_counter() - start


ONNX_BFLOAT16 = 16   # TensorProto.BFLOAT16


def _array(value) -> np.ndarray:
    """An OrtValue's data as a NumPy array; bfloat16 (which OrtValue.numpy() refuses) by its bits."""
    if value.data_type() != "tensor(bfloat16)":
        return value.numpy()
    bits = np.empty(value.shape(), np.uint16)
    ctypes.memmove(bits.ctypes.data, value.data_ptr(), bits.nbytes)
    return bits.view(ml_dtypes.bfloat16)
