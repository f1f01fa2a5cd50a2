"""The model formats conform builds and the words every stage uses about them: which formats
exist, the ONNX opset models are built at, :class:`Unsupported`, which an op's lowering or
a backend raises for a case it cannot express (a coverage gap, not a failure), and
:class:`Refused`, which a backend raises for a model it refuses whatever the input values."""
from __future__ import annotations

import os

#: The formats of the models conform builds for a backend: ``native`` (the backend computes the
#: op itself: numpy, jax's lax), ``onnx``, ``nnef`` and ``stablehlo``.
KNOWN_FORMATS = ("native", "onnx", "nnef", "stablehlo")
#: The formats a model file is written in (repro, adapters taking a model).
MODEL_FILE_FORMATS = ("onnx", "stablehlo", "nnef")

#: The newest opset the pinned onnx package defines (onnx 1.23.2) and onnxruntime 1.32 loads: the
#: last version an ONNX binding's ``opsets`` may claim, and the newest ``conform run --onnx-opset``.
ONNX_OPSET_NEWEST = 28
#: The opset ONNX models are built at: ``$CONFORM_ONNX_OPSET`` (``conform run --onnx-opset``), else
#: this one, the newest onnxruntime accepts: the newest at which onnxruntime 1.32's CPU kernels
#: cover every operator it implements (at 22 it has none for RoiAlign-22, RandomUniform-22,
#: GlobalLpPool-22 and five more; tests/e2e/test_onnx_opset.py computes it from its registry).
DEFAULT_ONNX_OPSET = 21


class Unsupported(Exception):
    """Raised by a lowering or a backend that cannot express a case; the reason is shown in the
    report."""


class Refused(Exception):
    """Raised by a backend that refuses a case's model whatever its input values (a check of its
    shapes or attributes): an ``error`` all the same, but one that no input in an
    implementation-defined region excuses, since the values played no part in it."""


def onnx_opset() -> int:
    """The opset this process builds models at (read each time: a run sets it before workers
    start, and a forked worker may have imported this module earlier)."""
    return int(os.environ.get("CONFORM_ONNX_OPSET") or DEFAULT_ONNX_OPSET)
