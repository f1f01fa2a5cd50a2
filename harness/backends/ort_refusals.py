"""What onnxruntime says when its session refuses a valid model for want of a kernel or a type
(the backend's ``unsupported``, not an ``error``): read by the onnxruntime backend for a one-op
model and by ``conform fuzz`` for a generated graph's, so that a node is classed alike in both.
Kept apart from the backend so that a campaign on another backend does not import ONNX."""
from __future__ import annotations

#: Markers of onnxruntime's refusals, matched case-insensitively: no kernel for the node
#: ("NOT_IMPLEMENTED", "Could not find an implementation"), no kernel for its types ("Type
#: Error", "type constraint") or no such type at all ("MLDataType for: tensor(complex64) is
#: not currently registered").
NO_KERNEL = ("NOT_IMPLEMENTED", "Could not find an implementation", "Type Error",
             "type constraint", "is not currently registered")


def refused(text: str) -> bool:
    """Whether onnxruntime's message ``text`` is one of its refusals (see :data:`NO_KERNEL`)."""
    lowered = text.lower()
    return any(mark.lower() in lowered for mark in NO_KERNEL)
