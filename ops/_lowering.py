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
