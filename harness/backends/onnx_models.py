"""One-op ONNX models built from a spec's ``onnx`` binding and a case.

The IR version and opset are pinned to what the pinned onnxruntime accepts. An op's ``onnx``
lowering (in its op module) maps conform attributes onto the ONNX operator's attributes and
constant inputs, and raises :class:`Unsupported` where the ONNX operator cannot express the case.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from conform.harness.backends.base import Unsupported, attrs_text, binding, onnx_opset as opset
from conform.ops.optional_inputs import ABSENT, onnx_operands
from conform.spec.program_nodes import node_cases, program_nodes
from conform.dtypes import np_dtype



@functools.cache
def ir_version(opset: int) -> int:
    """The IR version a model of the default domain's ``opset`` declares: the one that opset
    came with (onnx's version table: opset 21 with IR 10, 28 with IR 14)."""
    return helper.find_min_ir_version_for([helper.make_opsetid("", opset)])

ONNX_TYPES = {
    "bool": TensorProto.BOOL, "int8": TensorProto.INT8, "int16": TensorProto.INT16,
    "int32": TensorProto.INT32, "int64": TensorProto.INT64, "uint8": TensorProto.UINT8,
    "uint16": TensorProto.UINT16, "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64,
    "float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE,
    "float8_e4m3fn": TensorProto.FLOAT8E4M3FN, "float8_e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ,
    "float8_e5m2": TensorProto.FLOAT8E5M2, "float8_e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ,
    "int4": TensorProto.INT4, "uint4": TensorProto.UINT4,
    "float4_e2m1fn": TensorProto.FLOAT4E2M1, "float8_e8m0fnu": TensorProto.FLOAT8E8M0,
    "float6_e2m3fn": TensorProto.FLOAT6E2M3, "float6_e3m2fn": TensorProto.FLOAT6E3M2,
    "int2": TensorProto.INT2, "uint2": TensorProto.UINT2, "string": TensorProto.STRING,
    "complex64": TensorProto.COMPLEX64, "complex128": TensorProto.COMPLEX128,
}
#: A schema's type names (``tensor(float8e4m3fn)``'s ``float8e4m3fn``) -> conform's dtype names.
BY_SCHEMA_NAME = {TensorProto.DataType.Name(code).lower(): name for name, code in ONNX_TYPES.items()}


class OnnxGraph:
    """What an op's ``onnx`` lowering builds its node(s) with.

    ``inputs`` and ``outputs`` are the graph inputs' and outputs' names (``in0``, ..., and
    ``out0``, ... in the spec's output order); ``op_type`` and ``attributes`` are the spec's
    binding; :meth:`const` adds an initializer (int64 by default); :meth:`node` adds a node whose outputs are
    the model's unless named otherwise.
    """

    def __init__(self, bound: dict, count: int, outputs: int = 1):
        self.op_type, self.attributes = bound["op_type"], bound.get("attributes", {})
        self.inputs = [f"in{i}" for i in range(count)]
        self.outputs = [f"out{k}" for k in range(outputs)]
        self.nodes: list = []
        self.initializers: list = []
        self.prefix = ""

    def view(self, bound: dict, inputs: list, outputs: list, prefix: str) -> "OnnxGraph":
        """The graph as one op of a program sees it: its binding, the values it takes and gives,
        and ``prefix`` on the names of its constants and its nodes' other values; nodes and
        constants it adds are this graph's."""
        view = OnnxGraph(bound, 0, 0)
        view.inputs, view.outputs, view.prefix = list(inputs), list(outputs), prefix
        view.nodes, view.initializers = self.nodes, self.initializers
        return view

    def const(self, name: str, values, dtype=np.int64) -> str:
        """An initializer holding ``values`` (int64, or ``dtype``); returns its name."""
        name = self.prefix + name
        self.initializers.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), name))
        return name

    def node(self, op_type: str, inputs: list, output: str | list | None = None, **attrs):
        """Add a node with output ``output`` (a name, or a list of names; default: the model's
        outputs); the binding's attributes apply to a node of its op_type. Returns the output's
        name (or the list of names)."""
        if op_type == self.op_type:
            attrs = {**self.attributes, **attrs}
        if output is None:
            output = self.outputs[0] if len(self.outputs) == 1 else self.outputs
        elif self.prefix:   # an intermediate value of one op of a program (not its outputs)
            output = [o if o in self.outputs else self.prefix + o for o in output] \
                if isinstance(output, list) else \
                output if output in self.outputs else self.prefix + output
        names = output if isinstance(output, list) else [output]
        self.nodes.append(helper.make_node(op_type, inputs, names, **attrs))
        return output

    @staticmethod
    def onnx_type(dtype: str) -> int:
        """The ONNX element type of conform dtype ``dtype``."""
        return ONNX_TYPES[dtype]

    def lower(self, case, op: str, inputs: list, output: str, dtype: str) -> str:
        """Add op ``op`` (a conform op with an ``onnx`` binding and fixed attributes, as a
        chain's links are) over the values ``inputs`` of dtype ``dtype``, by its own lowering,
        giving value ``output`` (its other values prefixed with ``output``); returns
        ``output``. What an op builds a generated subgraph from (``case``: the case being
        lowered)."""
        spec = _builtin_specs()[op]
        node_at = dataclasses.replace(
            case, op=op, dtype=dtype, input_dtypes=(dtype,) * len(inputs), out_dtype=dtype,
            inputs=[np.zeros((), np_dtype(dtype))] * len(inputs),
            attrs=dict(spec.signature.get("attrs", {})), expectation=None)
        view = self.view(binding(spec, "onnx"), inputs, [output], prefix=f"{output}_")
        _add_op(spec, node_at, view, opset())
        return output

    def subgraph(self, name: str, inputs: list, outputs: list, build) -> onnx.GraphProto:
        """A graph attribute (a body or a branch): its inputs and outputs ``(name, dtype,
        rank)``, its nodes and constants added by ``build(sub)`` to ``sub``, an
        :class:`OnnxGraph` whose ``inputs`` and ``outputs`` are those names. A subgraph reads
        values of the graphs around it by name."""
        sub = OnnxGraph({"op_type": ""}, 0, 0)
        sub.inputs, sub.outputs = [n for n, _, _ in inputs], [n for n, _, _ in outputs]
        build(sub)
        return helper.make_graph(sub.nodes, name, [_value_info(*io, True) for io in inputs],
                                 [_value_info(*io, True) for io in outputs],
                                 initializer=sub.initializers)


@functools.cache
def _builtin_specs() -> dict:
    from conform.spec import load_specs

    return load_specs()


def build_model(spec, case, *, shaped: bool = True) -> onnx.ModelProto:
    """A ModelProto computing ``case``'s program with each node's ONNX binding (one node for an
    op, one per op of a chain), every node's outputs outputs of the graph. Its inputs and
    outputs carry their rank with symbolic dimensions, or, unless ``shaped``, no shape at all
    (the models adapters written against contract 1 are handed)."""
    version = opset()
    sequences = getattr(spec, "sequence_outputs", ())
    # a sequence output and the next (its shapes) are one graph output
    graph = OnnxGraph({"op_type": ""}, len(case.inputs), len(spec.outputs) - len(sequences))
    values = dict(zip(spec.input_names(case), graph.inputs))
    names = iter(graph.outputs)
    for k, (node, node_at) in enumerate(zip(program_nodes(spec, case), node_cases(spec, case))):
        given = [next(names) for _ in
                 range(len(node.outputs) - len(getattr(node.spec, "sequence_outputs", ())))]
        view = graph.view(binding(node.spec, "onnx"), [values[name] for name in node.inputs],
                          given, prefix=f"n{k}_" if k else "")
        _add_op(node.spec, node_at, view, version)
        values.update(zip(node.outputs, given))
    # Graph inputs and outputs carry their rank with symbolic dimensions: the checker wants a
    # shape on each, and one session then serves every case of the same ranks.
    ranks = output_ranks(spec, case) if shaped else [0] * len(spec.outputs)
    names, outputs = iter(graph.outputs), []
    for k, (dtype, rank) in enumerate(zip(spec.out_dtypes(case), ranks)):
        if k - 1 in sequences:
            continue
        if k in sequences:   # the elements' rank: the shapes' second dimension
            outputs.append(_sequence_info(next(names), dtype, ranks[k + 1], shaped))
        else:
            outputs.append(_value_info(next(names), dtype, rank, shaped))
    graph = helper.make_graph(
        graph.nodes, f"conform_{spec.op}",
        [_value_info(n, d, np.ndim(x), shaped)
         for n, d, x in zip(graph.inputs, case.input_dtypes, case.inputs)],
        outputs, initializer=graph.initializers)
    return helper.make_model(graph, ir_version=ir_version(version),
                             opset_imports=[helper.make_opsetid("", version)],
                             producer_name="conform")


def _add_op(spec, case, graph: OnnxGraph, version: int) -> None:
    """Add the node(s) of ``spec``'s op computing ``case`` to ``graph``, or raise
    :class:`Unsupported` where the binding or the opset's schema rules the case out."""
    bound = binding(spec, "onnx")
    allowed = bound.get("dtypes")
    if allowed and any(d not in allowed for d in case.input_dtypes):
        raise Unsupported(f"ONNX {bound['op_type']} does not take {case.dtype}")
    low, high = bound["opsets"]
    if not low <= version <= high:
        raise Unsupported(f"ONNX {bound['op_type']} is bound at opsets {low} to {high}, not at the "
                          f"opset of this run ({version}): the standard rules this case out")
    present = spec.present_inputs(case.attrs)   # formal positions of the case's inputs
    positions = _operand_positions(bound, version,
                                   [spec.inputs.index(name) for name in present],
                                   len(case.input_dtypes)) \
        if ABSENT in case.attrs or "operands" in bound else None
    refused = _types_the_schema_refuses(bound["op_type"], version, case.input_dtypes, positions) \
        or _outputs_the_schema_refuses(spec, bound["op_type"], version, spec.out_dtypes(case))
    if refused:
        raise Unsupported(f"ONNX {bound['op_type']} (opset {version}) does not allow "
                          f"{', '.join(refused)}: the standard rules this case out")
    lower = spec.definition.onnx
    if lower is None:   # an absent optional input followed by a present one is ""
        supplied = dict(zip(present, graph.inputs))
        graph.node(graph.op_type, onnx_operands(supplied.get(name) for name in spec.inputs))
    else:
        lower(case, graph)


def schema_allows(spec, label: str, version: int) -> bool:
    """Whether the opset-``version`` schema of each ONNX operator ``spec`` binds (a program's:
    every node's) allows the input types of the cases of dtype label ``label`` (the input
    dtypes the generic drawer gives them: the label's first dtype, or an input's fixed type).
    A label it refuses is not drawn for an ONNX backend: the standard rules it out."""
    dtype = label.split("->")[0]
    # a conversion: the label's last type is its result's
    if "->" in label and spec.output_dtype == "attr:new_dtype" and "onnx" in spec.bindings:
        if _outputs_the_schema_refuses(spec, spec.bindings["onnx"]["op_type"], version,
                                       (label.split("->")[-1],)):
            return False
    for op in spec.node_specs:
        bound = op.bindings.get("onnx")
        if bound is None:
            return True   # no binding: the model says why, case by case
        low, high = bound["opsets"]
        if not low <= version <= high:
            continue   # bound at other opsets: the model says so, case by case
        dtypes = [dtype if kind == "T" else kind for kind in op.input_types]
        positions = _operand_positions(bound, version, range(len(dtypes)),
                                       len(dtypes))
        outer = [at is None for kind, at in zip(op.input_types, positions) if kind == "T"]
        if outer and all(outer) and op.output_types[:1] == ("T",) \
                and _outputs_the_schema_refuses(op, bound["op_type"], version, (dtype,)):
            return False   # T inputs read from the outer scope (If's x, y): the output's type
        for k, kind in enumerate(dtypes):   # a type variable: the label holds if one member does
            if isinstance(kind, tuple):
                dtypes[k] = next((d for d in kind if not _types_the_schema_refuses(
                    bound["op_type"], version, [d], [positions[k]])), kind[0])
        if _types_the_schema_refuses(bound["op_type"], version, dtypes, positions):
            return False
    return True


def _operand_positions(bound: dict, version: int, held, count: int) -> list:
    """Per input of a case, the formal input of the ONNX operator it feeds (None: a value a
    subgraph reads from the outer scope, which the schema does not type). ``held`` gives the
    signature positions of the case's first inputs; inputs beyond them belong to the last one
    (a variadic input). Without the binding's ``operands`` a signature input feeds the formal
    of its own position."""
    held = list(held)
    if held and count > len(held):
        held += [held[-1]] * (count - len(held))
    operands = bound.get("operands")
    if operands is None:
        return held
    formals = _schema_formals(bound["op_type"], version)
    return [None if operands[at] is None else formals.index(operands[at]) for at in held]


@functools.cache
def _schema_formals(op_type: str, version: int) -> list[str]:
    """The names of the opset-``version`` schema's formal inputs of ``op_type``."""
    return [formal.name for formal in onnx.defs.get_schema(op_type, version).inputs]


def _outputs_the_schema_refuses(spec, op_type: str, version: int, dtypes) -> list[str]:
    """The output ``dtypes`` (the first ones, of single tensors) that the schema's formal
    outputs refuse: Cast's ``to`` names a type its opset may not have (int2 before 25)."""
    if getattr(spec, "sequence_outputs", ()):
        return []
    formals = _schema_types(op_type, version, "outputs")
    return [d for d, allowed in zip(dtypes, formals) if allowed is not None and d not in allowed]


@functools.cache
def _schema_types(op_type: str, version: int, side: str = "inputs") -> tuple:
    """Per formal input (or output: ``side``) of the opset-``version`` schema of ``op_type``:
    the conform dtypes it allows, or None for one whose type the schema leaves free (or a
    schema not found)."""
    try:
        schema = onnx.defs.get_schema(op_type, version)
    except onnx.defs.SchemaError:
        return ()
    def element(kind: str) -> str:   # tensor(x), seq(tensor(x)), optional(...): by its elements
        while kind.startswith(("seq(", "optional(")):
            kind = kind[kind.index("(") + 1:-1]
        name = kind[len("tensor("):-1]
        return BY_SCHEMA_NAME.get(name, name)

    constraints = {c.type_param_str: {element(t) for t in c.allowed_type_strs}
                   for c in schema.type_constraints}
    return tuple(constraints.get(formal.type_str) for formal in getattr(schema, side))


def _types_the_schema_refuses(op_type: str, version: int, dtypes, positions=None) -> list[str]:
    """The ``dtypes`` the schema refuses, input k checked against formal input ``positions[k]``
    (default k: a case without absent optional inputs)."""
    formals = _schema_types(op_type, version)
    refused = []
    for k, dtype in enumerate(dtypes):
        at = k if positions is None else positions[k]
        if at is None:   # an outer-scope value of a subgraph: no operand of the node
            continue
        allowed = formals[min(at, len(formals) - 1)] if formals else None
        if allowed is not None and dtype not in allowed and dtype not in refused:
            refused.append(dtype)
    return refused


def _sequence_info(name: str, dtype: str, rank: int | None, shaped: bool):
    """A graph output holding a sequence of tensors of ``dtype`` and ``rank`` (None: left
    unsaid, as for an empty sequence, whose elements' rank the answer does not show)."""
    shape = [f"{name}_d{k}" for k in range(rank)] if shaped and rank is not None else None
    return helper.make_tensor_sequence_value_info(name, ONNX_TYPES[dtype], shape)


def _value_info(name: str, dtype: str, rank: int, shaped: bool):
    shape = [f"{name}_d{k}" for k in range(rank)] if shaped else None
    return helper.make_tensor_value_info(name, ONNX_TYPES[dtype], shape)


def output_ranks(spec, case) -> list[int]:
    """The ranks of the oracle's outputs (their shapes kept with the case, or computed)."""
    shapes = case.output_shapes
    if shapes is None:
        from conform.oracles.expectations import expect

        shapes = [np.shape(part.expected) for part in case.expectation or expect(spec, case)]
    ranks = [len(shape) for shape in shapes]
    for k in getattr(spec, "sequence_outputs", ()):   # the elements': the shapes' 2nd side
        rows, rank = shapes[k + 1]
        ranks[k + 1] = rank if rows else None   # an empty sequence's rank is not known
    return ranks


def signature_key(spec, case) -> tuple:
    """Cases with the same key share one model and one session.

    Models declare their inputs' ranks but symbolic dimensions, so the key holds the ranks, and
    the shapes only for ops whose model (or whether it can be built) depends on them
    (``onnx_shape_dependent``).
    """
    keyed = "onnx" in spec.bindings and spec.definition.onnx_shape_dependent  # no binding: no model
    shapes = tuple(x.shape for x in case.inputs) if keyed else tuple(map(np.ndim, case.inputs))
    return (spec.op, case.input_dtypes, case.out_dtype, shapes, attrs_text(case.attrs))


def feeds(case) -> dict:
    return {f"in{i}": np.asarray(x, dtype=np_dtype(d), order="C")
            for i, (x, d) in enumerate(zip(case.inputs, case.input_dtypes))}
