"""Cases from ONNX nodes: the inverse of an op's ONNX lowering, for reproducing the examples
the onnx package's node tests make (``onnx.backend.test.case.node``) with conform's oracle.

A node of the ``op_type`` a spec binds becomes a case of that spec: the node's inputs that feed
the spec's signature inputs (by position, or through the binding's ``operands``) are the case's
inputs, and its other inputs and attributes (the schema's defaults filled in at the node's
opset) become the case's attributes where the spec declares an attribute of that name. A node
the spec cannot express (an attribute or input the spec does not draw, at a value other than the
schema's default or the binding's fixed one) raises :class:`NotExpressible` with the reason.
An omitted optional input that the oracle takes as a required attribute is None there (the
case's "absent"); a variadic formal a spec names one input at a time must come with as many
inputs as the spec draws; a spec whose output type is the case's ``new_dtype`` takes it from
the example's output.
An op whose spec spells the node differently (renamed attributes, values an input carries as an
attribute in another form) gives an op-module hook ``from_onnx(inputs, attrs, opset)`` that
returns the case's ``(inputs, attrs)`` (see :class:`conform.op_registry.OpDefinition`); a
``ValueError`` it raises is the node's :class:`NotExpressible`.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np
from onnx import defs, helper

from conform.generators._case import Case
from conform.ops.optional_inputs import ABSENT
from conform.ops.sequence_values import packed_outputs


class NotExpressible(ValueError):
    """The node is not a case of the spec: the reason says what the spec does not draw."""


def node_attributes(node, opset: int) -> dict:
    """The node's attributes as Python values, each absent one at its opset-``opset`` schema
    default; strings decoded, tensors as NumPy arrays."""
    return {**_schema_defaults(node.op_type, opset, node.domain),
            **{a.name: _value(a) for a in node.attribute}}


@functools.cache
def _schema_defaults(op_type: str, opset: int, domain: str) -> dict:
    """The attributes the opset-``opset`` schema of ``op_type`` gives a default, at it."""
    schema = defs.get_schema(op_type, opset, domain)
    return {name: _value(a.default_value) for name, a in schema.attributes.items()
            if a.default_value.name}


def _value(attribute):
    """An AttributeProto's value: strings decoded, a tensor as a NumPy array."""
    from onnx import numpy_helper

    value = helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode() for v in value]
    return numpy_helper.to_array(value) if hasattr(value, "dims") else value


def _as_attribute(value):
    """An input's array as the attribute value a spec draws (a list, or a scalar for 0-d)."""
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else array.tolist()


def _same(a, b) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except (TypeError, ValueError):
        return a == b


def generic_mapping(spec, node, inputs: list, opset: int) -> tuple[list, dict]:
    """The case's ``(inputs, attrs)`` for ``node`` of ``spec``'s op, by the rule the module's
    docstring states; ``inputs`` holds one array per node input (None for an omitted one)."""
    bound = spec.bindings["onnx"]
    schema = defs.get_schema(node.op_type, opset, node.domain)
    feeds, operands = _feeds(spec, schema, inputs)
    keywords = _oracle_keywords(spec)
    declared = {**{name: None for name in keywords or ()}, **spec.signature.get("attrs", {})}
    fixed = dict(bound.get("attributes", {}))
    schema_attrs = node_attributes(node, opset)
    defaults = _schema_defaults(node.op_type, opset, node.domain)   # (none: a choice)
    case_inputs, absent = [], []
    for name, formal in zip(spec.inputs, operands):
        value = feeds.get(formal)
        if value is None:
            if name not in spec.optional_inputs:
                raise NotExpressible(f"the node omits {formal!r}, which the spec's input "
                                     f"{name!r} always feeds")
            absent.append(name)
        elif isinstance(value, list):
            case_inputs += value
        else:
            case_inputs.append(value)
    attrs = {ABSENT: absent} if absent else {}
    rest = {f: v for f, v in feeds.items() if f not in operands and v is not None}
    for formal in schema.inputs:   # an omitted input a case holds as an attribute: None
        if formal.name not in operands and feeds.get(formal.name) is None \
                and formal.name in _required_keywords(spec):
            attrs[formal.name] = None
    for name, value in [*schema_attrs.items(), *rest.items()]:
        if name in fixed:
            if not _same(value, fixed[name]):
                raise NotExpressible(f"the binding fixes {name}={fixed[name]!r}; the node has "
                                     f"{value!r}")
        elif name in declared or keywords is None:
            attrs[name] = _as_attribute(value) if name in rest else value
        elif name in rest or name not in defaults or not _same(value, defaults[name]):
            raise NotExpressible(f"the spec does not draw {name!r} (the node gives {value!r})")
    for name, domain in declared.items():   # a fixed attribute every case carries
        if name not in attrs and domain is not None and not isinstance(domain, dict):
            attrs[name] = domain
    return case_inputs, attrs


def _feeds(spec, schema, inputs: list) -> tuple[dict, list]:
    """The node's inputs by the schema's formal names, and the formals feeding the spec's
    inputs, in order. A variadic last formal gets the rest of the node's inputs (a list), or,
    where the spec names its inputs one by one (more of them than the schema's formals), one
    name each (``data_0#1``), the node giving as many as the spec draws (its optional ones
    among them absent)."""
    formals = [f.name for f in schema.inputs]
    operands = spec.bindings["onnx"].get("operands")
    variadic = bool(formals) and schema.inputs[-1].option == _VARIADIC
    if variadic and len(spec.inputs) > len(formals) and not operands:
        spread = spec.inputs[len(formals) - 1:]
        fewest = len([name for name in spread if name not in spec.optional_inputs])
        given = len(inputs) - len(formals) + 1
        if not fewest <= given <= len(spread):
            drawn = fewest if fewest == len(spread) else f"{fewest} to {len(spread)}"
            raise NotExpressible(f"the node gives {given} inputs {formals[-1]!r}; the spec "
                                 f"draws {drawn}")
        names = formals[:-1] + [f"{formals[-1]}#{k}" for k in range(len(spread))]
        return dict(zip(names, inputs)), names
    if len(inputs) <= len(formals):
        feeds = dict(zip(formals, inputs))
    else:   # a variadic last formal: the rest of the node's inputs
        feeds = {**dict(zip(formals[:-1], inputs)), formals[-1]: inputs[len(formals) - 1:]}
    return feeds, operands or formals[:len(spec.inputs)]


_VARIADIC = defs.OpSchema.FormalParameterOption.Variadic


def _required_keywords(spec) -> set[str]:
    """The oracle's keyword parameters without a default."""
    parameters = inspect.signature(spec.definition.oracle).parameters.values()
    return {p.name for p in parameters if p.kind is p.KEYWORD_ONLY and p.default is p.empty}


def _oracle_keywords(spec) -> list[str] | None:
    """The attribute names the op's oracle takes: its parameters after the inputs, but the
    judge's (``dtypes``, ``ftz``); None for an oracle taking any keyword."""
    parameters = list(inspect.signature(spec.definition.oracle).parameters.values())
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    named = [p for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    positional = sum(p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in named)
    return [p.name for p in named[min(positional, len(spec.inputs)):]
            if p.name not in ("dtypes", "ftz")]


def spec_outputs(spec, node, outputs: list) -> list:
    """The example's ``outputs`` (one per output name the node gives) in the order of
    ``spec``'s outputs, None for one the node does not request (its name ``""``, or left off
    at the end; a sequence packed as its values and shapes): an ONNX node's outputs follow its
    schema's, as the spec's do. Raises
    :class:`NotExpressible` for a node requesting an output the spec does not give."""
    if spec.sequence_outputs and any(isinstance(value, list) for value in outputs):
        outputs = packed_outputs(outputs)   # a sequence is two of the spec's outputs
        if len(outputs) == len(spec.outputs) and all(node.output):
            return outputs
    if len(node.output) != len(spec.outputs) and _variadic_outputs(node) \
            and not (len(node.output) < len(spec.outputs) and _hook_counts_outputs(spec)):
        raise NotExpressible(f"the node has {len(node.output)} outputs; the spec "
                             f"{len(spec.outputs)}")
    beyond = [name for name in node.output[len(spec.outputs):] if name]
    if beyond:
        raise NotExpressible(f"the node requests {beyond}, which the spec does not give")
    if len(outputs) == len(node.output) == len(spec.outputs) and all(node.output):
        return list(outputs)
    given = iter(outputs)
    named = [next(given, None) if name else None for name in node.output]
    return (named + [None] * len(spec.outputs))[:len(spec.outputs)]


def _variadic_outputs(node) -> bool:
    """Whether the node's schema ends in a variadic output (Split's count is the node's)."""
    formals = defs.get_schema(node.op_type, node.domain).outputs
    return bool(formals) and formals[-1].option == defs.OpSchema.FormalParameterOption.Variadic


def _hook_counts_outputs(spec) -> bool:
    """Whether the op's ``from_onnx`` hook takes the node's output count (``outputs``): it
    then maps a node of fewer outputs of a variadic formal than the spec gives, its case's
    further outputs unrequested (None in :func:`spec_outputs`)."""
    hook = spec.definition.from_onnx
    return hook is not None and "outputs" in inspect.signature(hook).parameters


def case_from_onnx_node(spec, node, inputs: list, opset: int, outputs: list) -> Case:
    """The case of ``spec`` that ``node`` (at ``opset``) computes on ``inputs``; ``outputs``
    (the example's) give the case's output dtype. Raises :class:`NotExpressible`."""
    hook = spec.definition.from_onnx
    if hook is not None:
        try:
            counted = {"outputs": len(node.output)} if _hook_counts_outputs(spec) else {}
            case_inputs, attrs = hook(list(inputs), node_attributes(node, opset), opset,
                                      **counted)
        except ValueError as exc:   # a hook's NotExpressible (op modules cannot import it)
            raise NotExpressible(str(exc)) from exc
    else:
        case_inputs, attrs = generic_mapping(spec, node, list(inputs), opset)
        if not case_inputs and spec.inputs:
            raise NotExpressible("the node has no input the spec draws")
    arrays = [np.asarray(x) for x in case_inputs]
    given = str(np.asarray(outputs[0]).dtype) if outputs and outputs[0] is not None \
        and not isinstance(outputs[0], list) else None
    dtype = str(arrays[0].dtype) if arrays else given   # an op of no input: its output's
    out_dtype = given or dtype
    if spec.output_dtype == "attr:new_dtype":   # the spec's name for the output's type
        attrs.setdefault("new_dtype", out_dtype)
    label = dtype if out_dtype == dtype or "->" not in "".join(spec.dtypes) \
        else f"{dtype}->{out_dtype}"
    return Case(id=f"{spec.op}.{label}.onnx_example", op=spec.op, dtype=label,
                input_dtypes=tuple(str(x.dtype) for x in arrays), out_dtype=out_dtype,
                inputs=arrays, attrs=attrs, plan="normal", seed=0)
