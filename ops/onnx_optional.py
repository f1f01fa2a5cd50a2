"""ONNX's optional-type operators (ai.onnx): Optional (opset 15), OptionalHasElement and
OptionalGetElement (opset 18 texts), written from their operator texts
(``onnx.defs.get_schema``).

conform's cases hold tensors, so an optional value is made in the graph, as a sequence is
(:mod:`conform.ops.sequence_values`): the case's attribute ``form`` says how the operator's input is
built from the case's inputs:

* ``tensor``: the case's one input, a plain tensor (the opset-18 texts accept it);
* ``optional``: ``Optional`` of that tensor;
* ``sequence``: ``SequenceConstruct`` of the case's 1 to 4 inputs (a plain sequence);
* ``optional_sequence``: ``Optional`` of that sequence;
* ``empty_optional`` and ``empty_optional_sequence``: ``Optional`` with no input and its
  ``type`` attribute (a tensor or a sequence of the case's dtype), the case holding no input;
* ``no_input`` and ``no_input_name``: the operator's optional input left out, or given as the
  empty name "" (OptionalHasElement only).

Optional's own output has no tensor form: it is read back by OptionalGetElement (a present
input; the empty forms are judged through OptionalHasElement). Identity of a sequence, or of an
optional holding one (Identity-14's and -16's V), is read back the same way.
"""
from __future__ import annotations

import functools

import numpy as np

from conform.op_registry import op
from conform.ops._lowering import unsupported
from conform.ops.sequence_values import onnx_sequence, pack
from conform.ops.onnx_sequences import element_shapes

EMPTY_FORMS = ("empty_optional", "empty_optional_sequence", "no_input", "no_input_name")
SEQUENCE_FORMS = ("sequence", "optional_sequence")


def _draw_form(draw, kit, dtype, forms):
    """A form of ``forms`` and the case's inputs for it: one tensor of rank 0 to 3, 1 to 4
    tensors of one rank for a sequence, none for an empty form."""
    form = draw(kit.st.sampled_from(forms))
    if form in EMPTY_FORMS:
        shapes = []
    elif form in SEQUENCE_FORMS:
        shapes = element_shapes(draw, kit, min_rank=0, max_rank=3)
    else:
        shapes = [draw(kit.shape(min_rank=0, max_rank=3, max_side=4, min_side=0))]
    return kit.Signature((dtype,) * len(shapes), tuple(shapes), {"form": form}, dtype)


def _type_proto(graph, dtype: str, sequence: bool):
    from onnx import helper

    tensor = helper.make_tensor_type_proto(graph.onnx_type(dtype), None)
    return helper.make_sequence_type_proto(tensor) if sequence else tensor


def operand(case, graph) -> list[str]:
    """The operator's input list for the case's form (none, or "", for no input)."""
    form = case.attrs["form"]
    if form.startswith("no_input"):
        return [""] if form == "no_input_name" else []
    if form in EMPTY_FORMS:
        kind = _type_proto(graph, case.out_dtype, form.endswith("sequence"))
        return [graph.node("Optional", [], "optional", type=kind)]
    value = onnx_sequence(graph, graph.inputs) if form in SEQUENCE_FORMS else graph.inputs[0]
    if form.startswith("optional"):
        value = graph.node("Optional", [value], "optional")
    return [value]


def from_onnx_optional(inputs, attrs, opset, *, sequence=None):
    """An optional operator's node as a case: the form read from its input's value (a list: a
    sequence; an array: a tensor; None: an empty optional; no input: no_input). An optional
    holding a value arrives as the value itself and is read as the plain form, and an input
    named "" as an empty optional: the texts give each pair the same answer (OptionalHasElement:
    true, or false for every empty form; OptionalGetElement: the value). ``sequence``: whether
    the op takes sequences only (True), tensors only (False), or both (None)."""
    if not inputs or inputs[0] is None:
        return [], {"form": "empty_optional" if inputs else "no_input"}
    (value,) = inputs
    if sequence is not None and isinstance(value, list) != sequence:
        raise ValueError(f"a {'sequence' if isinstance(value, list) else 'tensor'} input is "
                         "another spec's")
    return (list(value), {"form": "sequence"}) if isinstance(value, list) \
        else ([value], {"form": "tensor"})


# ---- OptionalHasElement ------------------------------------------------------------------

def draw_has_element(draw, kit, spec, dtype):
    """Every form."""
    return _draw_form(draw, kit, dtype, ("tensor", "optional", "sequence", "optional_sequence",
                                         *EMPTY_FORMS))


def numpy_has_element(*inputs, form):
    """The numpy backend: an optional is None or a value (a tensor, or a list for a sequence);
    ``is not None`` of it."""
    value = None if form in EMPTY_FORMS else list(inputs) if form in SEQUENCE_FORMS else inputs[0]
    return (np.asarray(value is not None),)


@op("onnx_optional_has_element", version=1, draw=draw_has_element,
    feeding=lambda inputs, attrs, index: [None] * len(inputs),
    onnx=lambda case, graph: graph.node(graph.op_type, operand(case, graph)),
    numpy=numpy_has_element, from_onnx=from_onnx_optional)
def oracle_has_element(*inputs, form):
    """'Returns true if (1) the input is an optional-type and contains an element, or, (2) the
    input is a tensor or sequence type. If the input is not provided or is an empty
    optional-type, this op returns false.'"""
    return (np.asarray(form not in EMPTY_FORMS),)


# ---- OptionalGetElement ------------------------------------------------------------------

def numpy_get_element(*inputs, form):
    """The numpy backend: the value itself, copied (a list packed for a sequence)."""
    if form in SEQUENCE_FORMS:
        return pack([np.copy(x) for x in inputs])
    return (np.copy(inputs[0]),)


@op("onnx_optional_get_element", version=1,
    draw=lambda draw, kit, spec, dtype: _draw_form(draw, kit, dtype, ("tensor", "optional")),
    feeding="aligned", onnx=lambda case, graph: graph.node(graph.op_type, operand(case, graph)),
    numpy=numpy_get_element,
    from_onnx=functools.partial(from_onnx_optional, sequence=False))
def oracle_get_element(input, *, form):  # noqa: A002 - ONNX's name
    """'If the input is a tensor or sequence type, it returns the input. If the input is an
    optional type, it outputs the element in the input.' (An empty optional is 'an error ...
    undefined': not drawn.)"""
    return (input,)


@op("onnx_optional_get_element_sequence", version=1,
    draw=lambda draw, kit, spec, dtype: _draw_form(draw, kit, dtype, SEQUENCE_FORMS),
    feeding="moved", onnx=lambda case, graph: graph.node(graph.op_type, operand(case, graph)),
    numpy=numpy_get_element,
    from_onnx=functools.partial(from_onnx_optional, sequence=True))
def oracle_get_element_sequence(*sequence, form):
    """OptionalGetElement of a sequence, or of an optional holding one: the sequence."""
    return pack(sequence)


# ---- Optional ----------------------------------------------------------------------------

def onnx_optional(case, graph):
    """Optional of the tensor, read back by OptionalGetElement."""
    graph.node("OptionalGetElement", [graph.node(graph.op_type, [graph.inputs[0]], "optional")])


@op("onnx_optional", version=1,
    draw=lambda draw, kit, spec, dtype: _draw_form(draw, kit, dtype, ("optional",)),
    feeding="aligned", onnx=onnx_optional, numpy=numpy_get_element)
def oracle_optional(input, *, form):  # noqa: A002 - ONNX's name
    """'Constructs an optional-type value containing ... a non-empty value containing the input
    element': the element read back is the input."""
    return (input,)


# ---- Identity of a sequence or an optional -----------------------------------------------

def onnx_identity_sequence(case, graph):
    """Identity of the form's value; an optional one read back by OptionalGetElement.
    Identity-14's V has tensors and sequences only: an optional is refused before opset 16."""
    from conform.model_formats import onnx_opset

    form = case.attrs["form"]
    if form.startswith("optional") and onnx_opset() < 16:
        raise unsupported(f"ONNX Identity takes optional values from opset 16: the standard "
                          f"rules this case out at opset {onnx_opset()}")
    if not form.startswith("optional"):
        graph.node(graph.op_type, operand(case, graph))
        return
    graph.node("OptionalGetElement", [graph.node(graph.op_type, operand(case, graph), "identity")])


@op("onnx_identity_sequence", version=1,
    draw=lambda draw, kit, spec, dtype: _draw_form(draw, kit, dtype, SEQUENCE_FORMS),
    feeding="moved", onnx=onnx_identity_sequence, numpy=numpy_get_element,
    from_onnx=functools.partial(from_onnx_optional, sequence=True))
def oracle_identity_sequence(*sequence, form):
    """Identity-16: 'Identity operator' on V, 'Tensor, Sequence or Optional': the sequence
    (an optional's read back), exposed as its values and shapes."""
    return pack(sequence)
