"""Optional inputs (``{name, optional: true}`` in a spec's ``signature.inputs``).

A case holds only its present inputs, in the signature's order; when any optional input is
absent, its attributes carry the reserved key :data:`ABSENT` listing the absent inputs' names
(the key is left out when every input is present). The oracle receives the present inputs and
``absent_inputs=`` (an empty tuple when all are present). ONNX writes an absent input followed by
a present one as the empty name ``""`` and leaves trailing absent inputs out
(:func:`onnx_operands`).
"""
from __future__ import annotations

ABSENT = "absent_inputs"


def absent(attrs: dict) -> tuple[str, ...]:
    """The names of a case's absent optional inputs."""
    return tuple(attrs.get(ABSENT, ()))


def present(names, attrs: dict) -> tuple[str, ...]:
    """Of the signature's input ``names``, those a case with ``attrs`` holds, in order."""
    missing = absent(attrs)
    return tuple(name for name in names if name not in missing)


def by_name(names, inputs, absent_inputs=()) -> dict:
    """The present ``inputs`` of a case keyed by their names (of the signature's ``names``)."""
    return dict(zip((n for n in names if n not in absent_inputs), inputs))


def onnx_operands(slots) -> list[str]:
    """A node's input list from ``slots`` (per formal input, in order: the tensor's name, or
    None where absent): an absent input followed by a present one is ``""``, trailing absent
    inputs are left out.

    >>> onnx_operands(["in0", None, "in1", None])
    ['in0', '', 'in1']
    """
    slots = list(slots)
    while slots and slots[-1] is None:
        slots.pop()
    return ["" if slot is None else slot for slot in slots]
