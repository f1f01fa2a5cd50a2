"""A generated graph (:mod:`conform.generators.graphs`) as an adapter sees it: a
:class:`~conform.harness.backends.program.Program` of many nodes (op ``graph``) and its model.

``conform fuzz --backend module:Class`` runs each graph through the adapter API, as ``conform run``
runs a case: :func:`run_graph_on` hands the backend (under the contract it implements, by
:func:`~conform.harness.backends.models.prepare_case`) a program whose nodes are the graph's, the
graph inputs' arrays, and a :class:`GraphModel` holding the ONNX model built for the graph. The
parts are plain (names, dtypes, serialized bytes), so that they cross to a worker process.
"""
from __future__ import annotations

import dataclasses
import hashlib
from types import SimpleNamespace

from conform.harness.backends.base import API_VERSION
from conform.harness.backends.models import prepare_case
from conform.spec.program_nodes import ProgramNode


@dataclasses.dataclass
class GraphCase:
    """What :class:`~conform.harness.backends.program.Program` reads of a case, for a graph."""

    dtype: str
    input_dtypes: tuple
    inputs: list
    out_dtype: str
    attrs: dict = dataclasses.field(default_factory=dict)
    op: str = "graph"
    id: str = "graph"
    expectation: object = None


@dataclasses.dataclass(frozen=True)
class _NodeSpec:
    op: str
    dtypes: tuple

    def out_dtypes(self, case) -> tuple:
        return self.dtypes


class GraphSpec:
    """The spec-shaped view of a graph a program is made of (op ``graph``): its input names,
    outputs, their dtypes and its nodes (op, attributes, value names, output dtypes)."""

    op = "graph"
    output_types = ()
    sequence_outputs = ()
    definition = SimpleNamespace(devices=None)

    def __init__(self, input_names, outputs, out_dtypes, nodes):
        self._input_names, self.outputs = tuple(input_names), tuple(outputs)
        self._out_dtypes = tuple(out_dtypes)
        self._nodes = tuple(ProgramNode(_NodeSpec(op, tuple(dtypes)), tuple(inputs),
                                        tuple(outs), attrs)
                            for op, attrs, inputs, outs, dtypes in nodes)

    @property
    def node_specs(self) -> tuple:
        return tuple(node.spec for node in self._nodes)

    def input_names(self, case) -> tuple:
        return self._input_names

    def out_dtypes(self, case) -> tuple:
        return self._out_dtypes

    def program_nodes(self, case) -> tuple:
        return self._nodes


class GraphModel:
    """A graph's ONNX model as :class:`~conform.harness.backends.models.Model` offers it:
    ``key`` (its bytes' digest), ``build()`` (the ModelProto), ``input_names`` and
    ``inputs()`` (the arrays fed to them, in that order). Not ``shaped``
    (for an adapter of contract 1, whose models' inputs and outputs carry no shape), its
    inputs' and outputs' shapes are left out."""

    format = "onnx"

    def __init__(self, serialized: bytes, input_names, arrays=(), *, shaped: bool = True):
        self.serialized, self.input_names, self.shaped = serialized, list(input_names), shaped
        self._arrays = list(arrays)
        self.key = ("graph", hashlib.sha256(serialized).hexdigest(), shaped)
        self._built = None

    def build(self):
        if self._built is None:
            import onnx

            self._built = onnx.load_from_string(self.serialized)
            if not self.shaped:
                for value in (*self._built.graph.input, *self._built.graph.output):
                    value.type.tensor_type.ClearField("shape")
        return self._built

    def inputs(self) -> list:
        return list(self._arrays)


def graph_parts(graph, outputs) -> dict:
    """The plain parts of ``graph``'s program whose outputs are ``outputs`` (value names):
    what :func:`run_graph_on` takes beside the model and the arrays."""
    every = dict(graph.dtypes)
    fed = [name for name in graph.inputs if name not in getattr(graph, "constants", ())]
    nodes = [(node.spec.op, dict(node.attrs), node.inputs, node.outputs,
              [every[name] for name in node.outputs]) for node in graph.nodes]
    return {"dtype": graph.dtype, "input_names": fed, "input_dtypes": [every[n] for n in fed],
            "outputs": list(outputs), "out_dtypes": [every[n] for n in outputs], "nodes": nodes}


def run_graph_on(backend, parts: dict, serialized: bytes, feeds: dict) -> list:
    """Run one model of a graph on ``backend`` through the adapter API; returns its outputs."""
    spec = GraphSpec(parts["input_names"], parts["outputs"], parts["out_dtypes"], parts["nodes"])
    inputs = [feeds[name] for name in parts["input_names"]]
    case = GraphCase(parts["dtype"], tuple(parts["input_dtypes"]), inputs,
                     parts["out_dtypes"][0] if parts["out_dtypes"] else parts["dtype"])
    model = GraphModel(serialized, parts["input_names"], inputs,
                       shaped=getattr(backend, "api_version", API_VERSION) >= 2)
    return list(prepare_case(backend, spec, case, model=model, inputs=inputs)())
