"""NNEF documents of generated graphs (:mod:`conform.generators.graphs`), run by the ``nnef``
package's executor.

A graph is one NNEF 1.0 document in the flat syntax: each graph input a node feeds is an
``external`` tensor, and each node is one invocation of its op's NNEF operation, written by the
same translator a one-op document uses (:func:`~conform.harness.backends.nnef_models._invocation`:
the op's ``nnef`` binding and its op module's ``nnef`` lowering), over the graph's value names.
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

import numpy as np

from conform.harness.backends.base import Unsupported
from conform.harness.backends.nnef_models import (NNEF_TYPES, Document, _invocation, _nnef_type,
                                                  compound_operations, literal)
from conform.generators.graphs import one_node

OPTIMIZATION = "none (the executor runs each operation's kernel)"
_OPERAND = re.compile(r"\bin(\d+)\b")


def build_graph_document(graph, outputs) -> tuple[str, tuple, tuple]:
    """``(text, operations, fed)``: the NNEF document computing ``graph`` whose results are the
    values named ``outputs``, the NNEF operations it invokes and the graph inputs it feeds (in
    the order the executor takes them); raises :class:`Unsupported` where a node's lowering
    cannot express its case.

    >>> build_graph_document(graph, graph.leaves)[0].splitlines()[0]   # doctest: +SKIP
    'version 1.0;'
    """
    lines, operations, fed, computed = [], [], [], set()
    for node, case in zip(graph.nodes, graph.cases):
        for dtype in (*case.input_dtypes, *node.spec.out_dtypes(case)):
            _nnef_type(dtype)
        operands = [f"in{i}" for i in range(len(node.inputs))]
        line, op, used, shape = _invocation(node.spec, case, operands, list(node.outputs))
        operations.append(op)
        if shape is not None:   # conform's shape differs from NNEF's: reshaped after
            line, *_ = _invocation(node.spec, case, operands,
                                   [f"{name}_nnef" for name in node.outputs])
            line += "".join(f"\n    {name} = reshape({name}_nnef, shape = "
                            f"{literal(list(np.shape(graph.values[name])))});"
                            for name in node.outputs)
            operations.append("reshape")
        # the operands by name, also inside an array argument ("[in0, in1]")
        lines.append(_OPERAND.sub(lambda m: node.inputs[int(m.group(1))], line))
        for k, name in enumerate(node.inputs):
            if k not in used and name in computed:
                raise Unsupported(f"NNEF {op} spells its input {k} as an attribute: a computed "
                                  "value cannot be one")
            if k in used and name not in computed and name not in fed:
                fed.append(name)
        computed.update(node.outputs)
    externals = [f"    {name} = external<{_nnef_type(graph.dtypes[name])}>(shape = "
                 f"{literal(list(np.shape(graph.values[name])))});" for name in fed]
    text = (f"version 1.0;\n\ngraph conform_graph( {', '.join(fed)} ) -> "
            f"( {', '.join(outputs)} )\n{{\n" + "\n".join(externals + lines) + "\n}\n")
    return text, tuple(dict.fromkeys(operations)), tuple(fed)


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
        text, operations, fed = build_graph_document(one, one.leaves)
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
    """The worker's runner: the ``nnef`` backend's executor, running a document triple
    (:func:`build_graph_document`'s triple) on the feeds it names."""
    from conform.harness.backends.nnef_backend import NnefBackend

    backend = NnefBackend()

    def run(model: tuple, feeds: dict, dtypes) -> list:
        text, operations, fed = model
        document = Document(text, operations[0], [], operations=operations)
        inputs = [np.asarray(feeds[name], order="C") for name in fed]
        # only the compound operations without a kernel are lowered (lowering all of them, as
        # a one-op document may, would lower a max_pool whose kernel the graph's others use)
        return backend.execute(text, document, inputs, lowered_by_executor(operations))

    return backend.version(), run
