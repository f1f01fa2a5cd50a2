"""What an op module's lowerings share."""
from __future__ import annotations

import numpy as np


def unsupported(reason: str) -> Exception:
    """The exception a lowering raises where its format cannot express a case (the backend
    contract's ``Unsupported``, imported only when a lowering refuses a case)."""
    from conform.model_formats import Unsupported

    return Unsupported(reason)


def onnx_element_type(code: int) -> str:
    """The conform dtype name of ONNX element type ``code`` (a ``TensorProto.DataType``, as a
    node's ``to``, ``dtype`` or ``output_datatype`` attribute gives it): the inverse of a
    lowering's ``graph.onnx_type``."""
    from onnx import TensorProto, helper

    if code == TensorProto.STRING:
        return "string"
    return np.dtype(helper.tensor_dtype_to_np_dtype(code)).name


def from_onnx_element_types(*names: str):
    """A ``from_onnx`` hook for an op whose case takes the node's inputs and attributes as they
    are, but ``names``: attributes that are element types (a lowering's ``graph.onnx_type``),
    given back as conform dtype names (:func:`onnx_element_type`)."""
    def from_onnx(inputs, attrs, opset):
        if any(x is None for x in inputs):
            raise ValueError("the node omits an input the case holds")
        return inputs, {name: onnx_element_type(value) if name in names else value
                        for name, value in attrs.items()}
    return from_onnx
