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



def nan_refused(node: str, silent: str):
    """An ``onnx_refuses`` or ``nnef_refuses`` hook for an XLA op lowered to ``node`` (e.g.
    "ONNX MaxPool"), whose text is silent on NaN (``silent``: where that is recorded) where
    XLA's is not (its Max and Min propagate NaN): a case with a NaN operand is not expressible
    through that node."""
    def refuses(inputs, attrs) -> str | None:
        if not any(np.asarray(x).dtype.kind == "f" and np.isnan(np.asarray(x)).any()
                   for x in inputs):
            return None
        return (f"lowering artefact: {node} says nothing of NaN ({silent}) where XLA's text "
                f"propagates it: a NaN operand is not expressible through {node}")
    return refuses
