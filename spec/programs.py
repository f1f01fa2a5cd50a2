"""Programs: several ops composed into one model, the unit of work beyond one op.

Every case is a program (:mod:`conform.spec.program_nodes`): a single op's is one node. A
program spec (:class:`ProgramSpec`) has several, its ``nodes``: ops applied in order. Every node's output is an output of the program, so that a backend exposes each
intermediate and the judge judges every node under its own op's error model, evaluated on the
backend's own inputs to that node (an error early in the program is blamed on the node that made
it, never on the nodes after it).

The program suite is made of *chains* (:func:`chain_name`): node 0 takes fresh program inputs;
each later node takes the previous node's output as its first operand and fresh program inputs as
the rest. A chain's name spells it (``chain__exp__add__tanh``), so a worker or a repro rebuilds it
from the name alone (:func:`program_spec`). Chains are made of the element-wise ops of one model
format (:func:`chain_names`): same shapes, one dtype from end to end.
"""
from __future__ import annotations

import functools
import random
import types
from dataclasses import dataclass

from conform.dtypes import is_complex
from conform.model_formats import onnx_opset
from conform.ops import OpDefinition
from conform.spec.program_nodes import ProgramNode

PREFIX = "chain__"


@dataclass(frozen=True)
class ProgramSpec:
    """A program of ops, presented as the spec of one op with one output per node.

    It answers what the run, the drawer, the judge and the model builders ask of a spec; a
    builder that sees :attr:`nodes` emits one node per op (one ONNX graph, one jitted function,
    one NNEF graph)."""

    op: str
    nodes: tuple[ProgramNode, ...]
    inputs: tuple[str, ...]
    dtypes: tuple[str, ...]
    bindings: dict
    input_values: dict
    edge_values: dict
    path: str = ""
    summary: str = ""
    defined_by: dict = None   # no standard defines a program: each node's spec cites its own
    output_dtype: str = "same"
    values: dict = None
    edge_cases: tuple = ()
    implementation_defined: tuple = ()   # each node's own regions apply to that node
    critical_regions: tuple = ()   # a program draws no critical case (its nodes' ops do)
    error_model: dict = None

    @property
    def signature(self) -> dict:
        return {"inputs": list(self.inputs), "outputs": list(self.outputs)}

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(name for node in self.nodes for name in node.outputs)

    @property
    def output_types(self) -> tuple[str, ...]:
        return ("T",) * len(self.outputs)

    def input_names(self, case) -> tuple[str, ...]:
        """The program's inputs (every case holds each)."""
        return self.inputs

    def program_nodes(self, case) -> tuple[ProgramNode, ...]:
        """Its nodes (a chain's links draw no attributes: each has its op's fixed ones)."""
        return self.nodes

    @property
    def node_specs(self) -> tuple:
        """The specs of the ops its cases compute: its nodes' (a program's spec lists
        them)."""
        return tuple({node.spec.op: node.spec for node in self.nodes}.values())

    @property
    def input_types(self) -> tuple[str, ...]:
        return ("T",) * len(self.inputs)

    optional_inputs = ()
    elementwise = False
    excluded_pairs = ()    # a program has no attribute design (spec/_design.py)
    conditioning = types.MappingProxyType({})   # nor value plans of its own

    def present_inputs(self, attrs: dict) -> tuple[str, ...]:
        return self.inputs

    def out_dtypes(self, case) -> tuple[str, ...]:
        return (case.out_dtype,) * len(self.outputs)

    @property
    def oracle(self) -> OpDefinition:
        """What evaluates the program's oracle (:func:`conform.oracles.evaluate` takes it)."""
        return self.definition

    def model_for(self, dtype: str, output: int = 0, case=None) -> dict:
        """Node ``output``'s error model for ``dtype`` (its op's)."""
        return self.nodes[output].spec.model_for(dtype)

    @functools.cached_property
    def definition(self) -> OpDefinition:
        """The program as an op: its oracle composes the nodes' oracles and returns every
        node's output; its draw hook gives every input one shape and the case's dtype."""
        return OpDefinition(self.op, 1, self.composed(_oracle_of), draw=_draw_program,
                            module=__name__)

    def composed(self, compute_of):
        """The program as one function of its inputs returning every node's output, each node
        computed by ``compute_of(node_spec)`` (a function of the node's operands and
        attributes returning a 1-tuple) on the values it takes: the oracles compose so, and
        so does the numpy backend's NumPy computation of each node."""
        return functools.partial(_composed, self.nodes, compute_of)

    def described_signature(self) -> dict:
        return {"inputs": [{"name": n, "type": "T"} for n in self.inputs],
                "outputs": [{"name": n, "type": "T"} for n in self.outputs],
                "nodes": [{"op": node.spec.op, "inputs": list(node.inputs),
                                   "output": node.outputs[0]}
                          for node in self.nodes],
                "shapes": "equal", "attrs": {}, "drawn_by": "programs (one shape for every input)",
                "dtype_labels": "dtypes"}


def _oracle_of(spec):
    return spec.definition.oracle


def _composed(nodes, compute_of, *inputs, dtypes=(), **attrs) -> tuple:
    """Every node's output, each node computed by ``compute_of(node.spec)`` on the values it
    takes. ``dtypes`` (the inputs' dtype names, given to an oracle on widened values) tells a
    node whose oracle takes them its operands' type: every value of a chain has the case's."""
    values = {f"x{j}": x for j, x in enumerate(inputs)}
    results = []
    for node in nodes:
        typed = {"dtypes": dtypes[:1] * len(node.inputs)} \
            if dtypes and node.spec.definition.takes_dtypes else {}
        (out,) = compute_of(node.spec)(*[values[name] for name in node.inputs], **node.attrs,
                                       **typed)
        values[node.outputs[0]] = out
        results.append(out)
    return tuple(results)


def _draw_program(draw, kit, spec, dtype):
    """One shape for every program input (0-d, empty and >= 8-element shapes included)."""
    shape = draw(kit.shape(min_rank=0, max_rank=4, min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))
    return kit.Signature((dtype,) * len(spec.inputs), (shape,) * len(spec.inputs), {}, dtype)


def chain_name(ops) -> str:
    """The name of the chain of ``ops``, e.g. ``chain__exp__add__tanh``."""
    return PREFIX + "__".join(ops)


def is_program(name: str) -> bool:
    return name.startswith(PREFIX)


def chainable(spec) -> bool:
    """Whether ``spec``'s op can be a link of a chain: element-wise (equal shapes, fixed
    attributes), one output of its input dtype, judged under no ``derived`` model (its bound
    comes from the op's ``error_bound`` hook, which a program's nodes do not call) for its
    real dtypes; its complex dtypes are no chain's (:func:`program_spec`)."""
    derived = any(isinstance(m, dict) and "derived" in m for key, m in spec.error_model.items()
                  if key != "complex" and not is_complex(key))
    return (spec.elementwise and spec.output_dtype in ("same", "component")
            and len(spec.outputs) == 1
            and not spec.optional_inputs and not derived)


def program_spec(name: str, specs: dict) -> ProgramSpec:
    """The program named ``name`` (see :func:`chain_name`), made of ``specs``' ops; KeyError
    if ``name`` is not a chain of chainable ops in ``specs``."""
    ops = name[len(PREFIX):].split("__") if is_program(name) else []
    if not ops or any(op not in specs or not chainable(specs[op]) for op in ops):
        raise KeyError(name)
    nodes, inputs, previous = [], [], None
    input_values: dict = {}
    for k, op in enumerate(ops):
        spec = specs[op]
        taken = [] if previous is None else [previous]
        for formal in spec.inputs[len(taken):]:
            fresh = f"x{len(inputs)}"
            inputs.append(fresh)
            ranges = spec.input_values.get(formal) or spec.values
            if ranges:
                input_values[fresh] = ranges
            taken.append(fresh)
        previous = f"n{k}_{op}"
        nodes.append(ProgramNode(spec, tuple(taken), (previous,),
                                 dict(spec.signature.get("attrs", {}))))
    dtypes = tuple(d for d in specs[ops[0]].dtypes
                   if not is_complex(d) and all(d in specs[op].dtypes for op in ops))
    formats = set.intersection(*(set(specs[op].bindings) for op in ops))
    edges: dict = {}
    for op in ops:
        for cls, values in specs[op].edge_values.items():
            edges.setdefault(cls, [])
            edges[cls] += [v for v in values if v not in edges[cls]]
    return ProgramSpec(op=name, nodes=tuple(nodes), inputs=tuple(inputs), dtypes=dtypes,
                       bindings={fmt: _chain_binding(specs, ops, fmt) for fmt in sorted(formats)},
                       input_values=input_values,
                       edge_values=edges, summary="chain: " + " -> ".join(ops), defined_by={},
                       values={}, error_model={})


def _chain_binding(specs: dict, ops: list, fmt: str) -> dict:
    """A chain's binding in ``fmt``: in ONNX the opsets every node is bound at (the intersection
    of their ranges, empty where low > high); the models are built from each node's own."""
    if fmt != "onnx":
        return {}
    ranges = [specs[op].bindings[fmt]["opsets"] for op in ops]
    return {"opsets": [max(low for low, _ in ranges), min(high for _, high in ranges)]}


def _bound_now(spec, fmt: str) -> bool:
    """Whether ``spec``'s binding in ``fmt`` claims the opset models are built at (an ONNX
    op bound at later opsets only, such as Mod-28's, would make every chain holding it
    unsupported)."""
    if fmt != "onnx" or fmt not in spec.bindings:
        return True
    low, high = spec.bindings[fmt]["opsets"]
    return low <= onnx_opset() <= high


def chain_names(specs: dict, fmt: str, *, count: int = 12, seed: int = 0) -> list[str]:
    """``count`` chains of 2 to 4 chainable ops bound in format ``fmt`` (``xla``, ``onnx`` or
    ``nnef``), drawn with ``seed``, each with a float dtype common to all its ops."""
    eligible = sorted(op for op, spec in specs.items()   # bound, and not declared unsupported
                      if "unsupported" not in spec.bindings.get(fmt, {"unsupported": ""})
                      and not is_program(op) and chainable(spec) and _bound_now(spec, fmt))
    rng = random.Random(f"{fmt}:{seed}")
    names: list[str] = []
    for _ in range(50 * count):
        if len(names) == count or not eligible:
            break
        ops = [rng.choice(eligible) for _ in range(rng.randint(2, 4))]
        common = set.intersection(*(set(specs[op].dtypes) for op in ops))
        name = chain_name(ops)
        if any(d.startswith(("float", "bfloat")) for d in common) and name not in names:
            names.append(name)
    return names
