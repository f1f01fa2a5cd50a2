"""NNEF documents of generated graphs (:mod:`conform.generators.graphs`), run by the ``nnef``
package's executor.

A graph is one NNEF 1.0 document in the flat syntax: each graph input a node feeds is an
``external`` tensor (or a ``variable`` where the node's lowering reads it from a tensor file,
the file written beside the document as a one-op document's is), and each node is one
invocation of its op's NNEF operation, written by the same translator a one-op document uses
(:func:`~conform.harness.backends.nnef_models._invocation`: the op's ``nnef`` binding and its op
module's ``nnef`` lowering), over the graph's value names.
Where the NNEF operation keeps axes conform's op drops (a reduction), a ``reshape`` to the
graph's shape follows it (exact). An input the lowering spells as an attribute (not fed) must be
a graph input: a computed value cannot be one (:class:`Unsupported`). ``outputs`` picks the
graph's results: the leaves (the model as a user runs it) or every node's outputs (the
instrumented model). The executor has no optimisations to turn on: it runs each operation's own
kernel (a compound operation without one as its standard fragment's body).
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from conform.harness.backends.base import Unsupported
from conform.dtypes import np_dtype
from conform.harness.backends.nnef_models import (NNEF_TYPES, Document, _declaration,
                                                  _invocation, _invocation_call, _nnef_type,
                                                  compound_operations, literal)
from conform.generators.graphs import one_node

OPTIMIZATION = "none (the executor runs each operation's kernel)"
_OPERAND = re.compile(r"\bin(\d+)\b")


class GraphDocument(NamedTuple):
    """An NNEF document of a graph (:func:`build_graph_document`): its text, the NNEF operations
    it invokes, the graph inputs it feeds (in the order the executor takes them) and its
    tensor files (label -> array read from ``<label>.dat``: a ``variable``'s data)."""

    text: str
    operations: tuple
    fed: tuple
    files: dict

    def document(self) -> Document:
        """The one-op documents' :class:`~conform.harness.backends.nnef_models.Document` of
        it: what the nnef backend runs and writes (``graph.nnef`` and the tensor files)."""
        return Document(self.text, self.operations[0], [], operations=self.operations,
                        files=self.files)


def build_graph_document(graph, outputs) -> GraphDocument:
    """The NNEF document computing ``graph`` whose results are the values named ``outputs``;
    raises :class:`Unsupported` where a node's lowering cannot express its case. An input a
    node's lowering reads from a tensor file (a ``variable``'s data) is written to one
    labelled by its graph value's name: two such nodes of a graph read two files.

    >>> build_graph_document(graph, graph.leaves).text.splitlines()[0]   # doctest: +SKIP
    'version 1.0;'
    """
    lines, operations, fed, computed, files, variables = [], [], [], set(), {}, set()
    for node, case in zip(graph.nodes, graph.cases):
        for dtype in (*case.input_dtypes, *node.spec.out_dtypes(case)):
            _nnef_type(dtype)
        operands = [f"in{i}" for i in range(len(node.inputs))]
        line, op, used, shape, call = _invocation_call(node.spec, case, operands,
                                                       list(node.outputs))
        operations.append(op)
        if shape is not None:   # conform's shape differs from NNEF's: reshaped after
            line, *_ = _invocation(node.spec, case, operands,
                                   [f"{name}_nnef" for name in node.outputs])
            line += "".join(f"\n    {name} = reshape({name}_nnef, shape = "
                            f"{literal(list(np.shape(graph.values[name])))});"
                            for name in node.outputs)
            operations.append("reshape")
        for label, k in call.files.items():
            name = node.inputs[k]
            if name in computed:
                raise Unsupported(f"NNEF {op} reads its input {k} from a tensor file: a "
                                  "computed value cannot be one")
            files[name] = np.asarray(graph.inputs[name], np_dtype(graph.dtypes[name]))
            line = line.replace(f"label = {literal(label)}", f"label = {literal(name)}")
            if f"in{k}" in call.args:   # an operand read from a file: declared a variable
                variables.add(name)
        # the operands by name, also inside an array argument ("[in0, in1]")
        lines.append(_OPERAND.sub(lambda m: node.inputs[int(m.group(1))], line))
        for k, name in enumerate(node.inputs):
            if k not in used and name in computed:
                raise Unsupported(f"NNEF {op} spells its input {k} as an attribute: a computed "
                                  "value cannot be one")
            if k in used and name not in computed and name not in fed:
                fed.append(name)
        computed.update(node.outputs)
    operands = [name for node in graph.nodes for name in node.inputs]
    if any(operands.count(name) > 1 for name in variables):
        raise Unsupported("a value NNEF declares a variable (read from its tensor file) is "
                          "one node's operand only: another would read it updated or not")
    declared = [_declaration(name, _nnef_type(graph.dtypes[name]),
                             np.shape(graph.values[name]), name if name in variables else None)
                for name in fed]
    fed = [name for name in fed if name not in variables]
    if not fed:
        raise Unsupported("an NNEF graph has one parameter at least: every input is a variable")
    text = (f"version 1.0;\n\ngraph conform_graph( {', '.join(fed)} ) -> "
            f"( {', '.join(outputs)} )\n{{\n" + "\n".join(declared + lines) + "\n}\n")
    operations += ["variable"] * bool(variables)   # declared by a line
    return GraphDocument(text, tuple(dict.fromkeys(operations)), tuple(fed), files)


def nnef_allowed(spec, label: str) -> bool:
    """Whether a graph may draw ``spec``'s op under dtype ``label`` for an NNEF document: it is
    bound to NNEF, gives tensors (not sequences), and the label's dtypes are the executor's."""
    return ("nnef" in spec.bindings and not getattr(spec, "sequence_outputs", ())
            and all(part in NNEF_TYPES for part in label.split("->")))


def nnef_accepts(spec, case) -> bool:
    """Whether ``case``'s node (its answer attached) can be an NNEF graph's: its one-node
    document is built (no :class:`Unsupported`), parses with ``nnef.parse_string`` (the
    standard library's declarations: types checked) and the shapes ``nnef.infer_shapes`` gives
    its results are the oracle's, its compound operations without a kernel lowered as the
    executor lowers them, after which every operation has a kernel (:func:`_kernels`); and
    no input a graph may connect (type ``T`` or ``bool``) is spelled as an attribute (a
    graph's computed value cannot be one)."""
    import nnef

    one, kernels = one_node(spec, case), _kernels()
    try:
        text, operations, fed, _ = build_graph_document(one, one.leaves)
        parsed = as_executed(text, operations)
        nnef.infer_shapes(parsed)
    except (Unsupported, nnef.Error, ValueError):
        return False
    kinds = dict(zip(spec.inputs, spec.input_types))
    present = spec.present_inputs(case.attrs)
    spelled = {kinds[present[min(i, len(present) - 1)]] for i, name in enumerate(one.inputs)
               if name not in fed}
    return (kernels is None or all(o.name in kernels for o in parsed.operations)) \
        and not {"T", "bool"} & spelled \
        and all(list(parsed.tensors[name].shape) == list(np.shape(one.values[name]))
                for name in one.leaves)


def file_inputs(spec, case) -> frozenset:
    """The indexes of ``case``'s inputs its node's lowering reads from tensor files (a
    ``variable``'s data): a graph keeps them graph inputs, since the file holding a computed
    value cannot be written before the graph runs (none where the lowering refuses the case)."""
    operands = [f"in{i}" for i in range(len(case.inputs))]
    try:
        call = _invocation_call(spec, case, operands, ["out0"])[4]
    except Unsupported:
        return frozenset()
    return frozenset(call.files.values())


@lru_cache(maxsize=1)
def _kernels() -> frozenset | None:
    """The operations the ``nnef`` package's executor has a kernel for: the keys of its
    ``Executors`` table, read from the C++ header installed with the module (None if it is not
    there: every operation is then assumed to run)."""
    import nnef

    header = Path(nnef.__file__).parent / "cpp" / "include" / "nnef" / "runtime" / "execution.h"
    if not header.is_file():
        return None
    table = header.read_text().split("std::map<std::string,Executor> Executors", 1)[-1]
    return frozenset(re.findall(r'^\s*\{ "(\w+)", ', table, re.M))


def lowered_by_executor(operations) -> list:
    """Those of ``operations`` the executor runs as their standard fragment's body: the
    compound ones it has no kernel for."""
    kernels = _kernels()
    return [] if kernels is None else compound_operations(
        [op for op in operations if op not in kernels])


def as_executed(text: str, operations):
    """The parsed document as the executor runs it: the compound operations without a kernel
    lowered, again in the bodies that invoke more of them (as the executor lowers them one
    error after another)."""
    import nnef

    lowered = lowered_by_executor(operations)
    while True:
        parsed = nnef.parse_string(text, lowered=lowered)
        more = [op for op in lowered_by_executor({o.name for o in parsed.operations})
                if op not in lowered]
        if not more:
            return parsed
        lowered += more


def nnef_runner():
    """The worker's runner: the ``nnef`` backend's executor, running a
    :class:`GraphDocument` on the feeds it names (a document with tensor files is loaded from
    a folder holding them, as the backend loads a one-op document's)."""
    from conform.harness.backends.nnef_backend import NnefBackend

    backend = NnefBackend()

    def run(model: GraphDocument, feeds: dict, dtypes) -> list:
        document = model.document()
        inputs = [np.asarray(feeds[name], order="C") for name in model.fed]
        # only the compound operations without a kernel are lowered (lowering all of them, as
        # a one-op document may, would lower a max_pool whose kernel the graph's others use);
        # a session holds the variables it read: their data is part of its key
        return backend.execute((model.text, document.files_key), document, inputs,
                               lowered_by_executor(model.operations))

    return backend.version(), run
