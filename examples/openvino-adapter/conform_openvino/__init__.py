"""conform adapter for OpenVINO: each case is a one-op ONNX model run on OpenVINO's CPU plugin.

conform hands the adapter the case as an ONNX model (``model_format = "onnx"``); OpenVINO reads
it with ``Core.read_model``, compiles it for "CPU" and infers. Compiled models are cached by the
model's key and the input shapes. README.md says what each declaration below rests on; every
one was measured with openvino 2026.4.1.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import openvino as ov

from conform.harness.backends import Backend, Unsupported
from conform.harness.backends.models import Model, ModelCache

__all__ = ["OpenVinoBackend", "CPU_CONFIG"]

# Compile options: the standard's semantics before speed, one thread per conform worker.
CPU_CONFIG = {
    # float32 stays float32: on CPUs with AVX512-BF16 or AMX the documented default inference
    # precision is bf16, which would compute every float32 case with an 8-bit significand.
    "INFERENCE_PRECISION_HINT": "f32",
    "EXECUTION_MODE_HINT": "ACCURACY",
    # No FTZ/DAZ. Set explicitly rather than left to the default: a model compiled with it on
    # leaves the flush mode set in the inference thread, for models compiled later too.
    "CPU_DENORMALS_OPTIMIZATION": False,
    # conform runs --workers processes: one inference thread each (as the onnxruntime backend
    # sets intra/inter-op threads = 1), and no pinning: each worker would pick cores for its
    # thread without knowing the others' (no effect measured on a 2-core machine).
    "INFERENCE_NUM_THREADS": 1,
    "NUM_STREAMS": 1,
    "ENABLE_CPU_PINNING": False,
}

# What OpenVINO's ONNX reader says when it has no translation for an op at all.
_NO_CONVERSION = "No conversion rule found for operations"


class OpenVinoBackend(Backend):
    api_version = 1
    name = "openvino"
    model_format = "onnx"
    subnormals = "ieee"   # measured: 1e-20f * 1e-20f = 1e-40f, 1e-39f + 1e-39f = 2e-39f
    # The types the CPU plugin computes at their own width. It reads float64, int64 and uint64
    # models but runs them in float32 / int32 (measured: 1.0 + 1e-12 == 1.0 in float64,
    # (2**40 + 1) + 3 == 4 in int64), so those cases are not claimed.
    dtypes = frozenset({"float16", "bfloat16", "float32", "int32", "uint8", "uint32", "bool"})

    def __init__(self):
        self._core = ov.Core()
        self._requests = ModelCache()   # (model key, input shapes) -> infer request

    def version(self) -> str:
        return f"openvino {ov.get_version()}"

    def stats(self) -> dict:
        return {"compilations": self._requests.compiled}

    def run(self, *, spec, case, model=None):
        model = model or Model("onnx", spec, case)
        inputs = model.inputs()
        key = (model.key, tuple(x.shape for x in inputs))
        request = self._requests.get(key, lambda: self._compile(model, inputs))
        request.infer([_tensor(x) for x in inputs])
        return [_array(request.get_output_tensor(i)) for i in range(len(request.model_outputs))]

    def _compile(self, model, inputs):
        proto = onnx.ModelProto()
        proto.CopyFrom(model.build())   # build() raises Unsupported where ONNX cannot express it
        # conform's models leave the input shapes open (one model per key); the CPU plugin
        # rejects inputs of unknown rank, and Convolution weights of unknown size, so each
        # compiled model gets the case's static input shapes.
        for value, x in zip(proto.graph.input, inputs):
            shape = value.type.tensor_type.shape
            shape.SetInParent()   # a rank-0 input has an empty shape, not none
            for size in x.shape:
                shape.dim.add().dim_value = size
        try:
            ov_model = self._core.read_model(proto.SerializeToString())
        except RuntimeError as exc:
            if _NO_CONVERSION in str(exc):   # any other failure to read is an error
                raise Unsupported(f"OpenVINO's ONNX reader has no conversion for "
                                  f"{proto.graph.node[0].op_type}") from exc
            raise
        compiled = self._core.compile_model(ov_model, "CPU", CPU_CONFIG)
        return compiled.create_infer_request()


def _tensor(x: np.ndarray) -> ov.Tensor:
    # x is C-contiguous (Model.inputs). OpenVINO's Python API does not know
    # ml_dtypes.bfloat16: hand it the bits, typed bf16.
    if x.dtype == ml_dtypes.bfloat16:
        return ov.Tensor(x.view(np.uint16), x.shape, ov.Type.bf16)
    return ov.Tensor(x)


#: OpenVINO's element types that come back as their bits (bf16 typed float16, the 8-bit float
#: types uint8), by the ml_dtypes type they are; a generated graph's outputs may hold them
_BY_BITS = {ov.Type.bf16: ml_dtypes.bfloat16, ov.Type.f8e4m3: ml_dtypes.float8_e4m3fn,
            ov.Type.f8e5m2: ml_dtypes.float8_e5m2, ov.Type.f8e8m0: ml_dtypes.float8_e8m0fnu}


def _array(tensor: ov.Tensor) -> np.ndarray:
    data = tensor.data.copy()
    kind = _BY_BITS.get(tensor.element_type)
    return data if kind is None else data.view(kind)
