"""ONNX Dropout in inference mode (opsets 12 to 22: ratio and training_mode are inputs),
written from the operator text (``onnx.defs.get_schema("Dropout")``): 'If [training_mode] is
false, ratio is ignored and the operation mimics inference mode where nothing will be dropped
from the input data and if mask is requested as output it will contain all ones';
training_mode 'is an optional value hence unless specified explicitly, it is false'. Training
mode draws random masks: onnx_dropout_training (ops/onnx_random_discrete.py), judged statistically."""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.optional_inputs import ABSENT, by_name

INPUTS = ("data", "ratio", "training_mode")


def values_inference(rng, inputs, attrs):
    """training_mode false where given; ratio, where given, in the text's [0, 1) (ignored)."""
    given = by_name(INPUTS, inputs, attrs.get("absent_inputs", ()))
    if "ratio" in given:
        ratio = given["ratio"]
        given["ratio"] = np.asarray(rng.uniform(0, 0.95), np.float32).astype(ratio.dtype)
    if "training_mode" in given:
        given["training_mode"] = np.asarray(False)
    return [given[name] for name in INPUTS if name in given]


def numpy_dropout(data, *rest, absent_inputs=()):
    """The numpy backend: a copy of data and a mask of ones (``np.ones_like(..., bool)``)."""
    return np.copy(data), np.ones_like(data, dtype=bool)


def from_onnx_dropout(inputs, attrs, opset):
    """A Dropout node in inference mode as a case: its data, ratio and training_mode where
    given (training_mode true is onnx_dropout_training's); its seed ('Seed to the random
    generator') draws nothing in inference mode, so the case has no attribute."""
    given = dict(zip(INPUTS, (list(inputs) + [None] * len(INPUTS))[:len(INPUTS)]))
    if given["training_mode"] is not None and bool(np.asarray(given["training_mode"])):
        raise ValueError("training_mode is true: onnx_dropout_training's node")
    absent = [name for name, value in given.items() if value is None]
    return [v for v in given.values() if v is not None], {ABSENT: absent} if absent else {}


@op("onnx_dropout", version=1, values=values_inference, numpy=numpy_dropout,
    from_onnx=from_onnx_dropout)
def oracle_dropout(data, *rest, absent_inputs=()):
    """Inference mode: output = data (nothing dropped), mask all true."""
    return data, np.ones(data.shape, bool)
