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

    def run(self, *, spec, case, model=None):
        return self.prepare(spec=spec, case=case, model=model)()

    def prepare(self, *, spec, case, model=None):
        model = model or Model("onnx", spec, case)
        session = self._sessions.get(model.key, lambda: self._new_session(model))
        feeds = dict(zip(model.input_names, model.inputs()))
        if any(d in BY_BITS or d in PACKED for d in (*case.input_dtypes, case.out_dtype)):
            # onnxruntime's session.run takes and gives no ml_dtypes arrays (bfloat16, float8,
            # int4): their bits cross as OrtValues typed by their ONNX element type instead
            feeds = {name: self._ort_value(x) for name, x in feeds.items()}
            return functools.partial(self._execute_values, session, feeds)
        return functools.partial(self._execute, session, feeds)

    def _ort_value(self, x: np.ndarray):
        if x.dtype.name in BY_BITS:
            element_type, bits = BY_BITS[x.dtype.name]
            return self._ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
                x.view(bits), onnx_element_type=element_type)
        if x.dtype.name in PACKED:
            value = self._ort.OrtValue.ortvalue_from_shape_and_type(x.shape, PACKED[x.dtype.name])
            packed = _pack_nibbles(x)
            ctypes.memmove(value.data_ptr(), packed.ctypes.data, packed.nbytes)
            return value
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


#: ml_dtypes types that cross as OrtValues by their bits: (ONNX element type, TensorProto's
#: number, and the unsigned integer type of their width)
BY_BITS = {"bfloat16": (16, np.uint16), "float8_e4m3fn": (17, np.uint8),
           "float8_e4m3fnuz": (18, np.uint8), "float8_e5m2": (19, np.uint8),
           "float8_e5m2fnuz": (20, np.uint8)}
#: ... and by OrtValue's name for them
_BY_TYPE_NAME = {f"tensor({name.replace('_', '')})": name for name in BY_BITS}
#: 4-bit integers, packed two to a byte (ONNX: element 2k in the low nibble, 2k+1 in the high)
PACKED = {"int4": 22, "uint4": 21}


def _pack_nibbles(x: np.ndarray) -> np.ndarray:
    nibbles = x.astype(np.int64).ravel() & 0xF
    if nibbles.size % 2:
        nibbles = np.append(nibbles, 0)
    return (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8)


def _unpack_nibbles(value, name: str) -> np.ndarray:
    shape = tuple(value.shape())
    size = int(np.prod(shape, dtype=np.int64))
    packed = np.empty((size + 1) // 2, np.uint8)
    ctypes.memmove(packed.ctypes.data, value.data_ptr(), packed.nbytes)
    nibbles = np.stack([packed & 0xF, packed >> 4], axis=-1).ravel()[:size].astype(np.int64)
    if name == "int4":
        nibbles = np.where(nibbles >= 8, nibbles - 16, nibbles)
    return nibbles.astype(getattr(ml_dtypes, name)).reshape(shape)


def _array(value) -> np.ndarray:
    """An OrtValue's data as a NumPy array; bfloat16, float8 and int4/uint4 (which
    OrtValue.numpy() refuses) by their bits."""
    if value.data_type() in ("tensor(int4)", "tensor(uint4)"):
        return _unpack_nibbles(value, value.data_type()[len("tensor("):-1])
    name = _BY_TYPE_NAME.get(value.data_type())
    if name is None:
        return value.numpy()
    bits = np.empty(value.shape(), BY_BITS[name][1])
    ctypes.memmove(bits.ctypes.data, value.data_ptr(), bits.nbytes)
    return bits.view(getattr(ml_dtypes, name))
