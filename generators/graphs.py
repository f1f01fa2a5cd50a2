"""Generated models: DAGs of 1 to N nodes over a format's ops, drawn by Hypothesis.

A graph is drawn node by node. Each node's op is drawn from the ops given, and its dtypes,
shapes and attributes by that op's own drawer (its draw hook, or the generic drawer), with the
shapes the graph's values already have preferred (:func:`conform.generators.kit.preferring`);
its inputs are filled as the op's cases are (:func:`~conform.generators.materialize`, plan
``normal``). Then each of its data inputs (type ``T``, or a fixed ``bool``) is connected to a
value the graph already holds where one matches (same dtype and shape; for a broadcasting op,
any shape that broadcasts with the others; for a unary element-wise op, any shape), as
Hypothesis chooses, or stays a new graph input. Index, shape and other fixed-type inputs stay
graph inputs with the values the op's drawer gave them (their domains are tied to the shapes),
as does a data input the format reads other than as an operand (``kept``: an NNEF variable's,
read from its tensor file).

Values are thus reused by several nodes, and branches merge where a node takes two values
(binary ops, Concat, Sum). A node is kept only if its oracle, on the values it takes, gives
finite outputs with no implementation-defined element, and ``accept(spec, case)`` (a format's
check that it can lower the node) holds; its outputs' values are the oracle's, in their dtypes.
(Drawing a graph asks the oracle, unlike a suite's drawing: the shapes and values a node gives
are what the next node is drawn against.)

The draw is a Hypothesis strategy (:func:`graphs`), so a failing graph shrinks (fewer nodes,
fewer connections); :func:`draw_graph` draws one from a seed, deterministically.
"""
from __future__ import annotations

import dataclasses
import functools
import random

import numpy as np
from hypothesis import strategies as st

from conform.dtypes import np_dtype
from conform.generators import kit
from conform.generators._case import Case
from conform.generators._drawing import _draw, _family, _without_local_constants
from conform.generators._quick_data import QuickData
from conform.generators._signature import dtype_labels
from conform.generators._suite import materialize
from conform.oracles.expectations import expect
from conform.spec.program_nodes import ProgramNode

#: The dtypes a graph is drawn in (float32 three times in four); a node whose op lacks it is
#: drawn in another of its dtypes, and takes no value of the graph's dtype.
GRAPH_DTYPES = ("float32", "float32", "float32", "float16")
MAX_NODES = 10


@dataclasses.dataclass
class Graph:
    """A generated model: its inputs' values, its nodes (each a
    :class:`~conform.spec.program_nodes.ProgramNode` over value names) with the case each
    computes (its dtypes, attributes and the inputs it was drawn with), and every value's dtype.
    ``leaves`` are the values no node takes: the model's outputs as a user runs it."""

    inputs: dict            # name -> array (in its dtype)
    nodes: list             # ProgramNode per node
    cases: list             # Case per node (inputs: the values it takes, as drawn)
    dtypes: dict            # value name -> dtype name
    values: dict            # value name -> array: inputs' and the oracle's outputs (as drawn)
    dtype: str = "float32"
    #: graph inputs the model holds as constants (initializers, as a user's model holds its
    #: weights), which a runtime may fold
    constants: frozenset = frozenset()
    #: what a format builds from the graph once and reuses (its ONNX model without outputs),
    #: by the format's key; a graph made with ``dataclasses.replace`` starts with none
    memo: dict = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def leaves(self) -> tuple[str, ...]:
        taken = {name for node in self.nodes for name in node.inputs}
        return tuple(name for node in self.nodes for name in node.outputs if name not in taken)

    @property
    def ops(self) -> list[str]:
        return [node.spec.op for node in self.nodes]

    def describe(self) -> list[dict]:
        """Each node as a results line holds it: op, dtype label, inputs, outputs, attrs."""
        return [{"op": node.spec.op, "dtype": case.dtype, "inputs": list(node.inputs),
                 "outputs": list(node.outputs), "attrs": _plain(node.attrs)}
                for node, case in zip(self.nodes, self.cases)]


def one_node(spec, case) -> Graph:
    """``case``'s node alone as a :class:`Graph` (its answer attached: ``case.expectation``),
    for a format's check of a drawn node: inputs ``in0``, ``in1``, ..., outputs ``out0``, ...
    with the oracle's values."""
    names = tuple(f"in{i}" for i in range(len(case.inputs)))
    outputs = tuple(f"out{k}" for k in range(len(case.expectation)))
    values = dict(zip(names, case.inputs))
    values.update((name, part.expected) for name, part in zip(outputs, case.expectation))
    return Graph(dict(zip(names, case.inputs)), [ProgramNode(spec, names, outputs, case.attrs)],
                 [case], {**dict(zip(names, case.input_dtypes)),
                          **dict(zip(outputs, spec.out_dtypes(case)))}, values)


def _plain(value):
    """``value`` as JSON holds it (arrays as lists)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    return value


def graphs(specs: dict, *, max_nodes: int = MAX_NODES, allowed=None, accept=None,
           chain: float = 0.0, kept=None):
    """A Hypothesis strategy of :class:`Graph` over ``specs`` (op name -> spec), 1 to
    ``max_nodes`` nodes. ``allowed(spec, label)``: whether a dtype label of an op may be drawn
    (a format's schema); ``accept(spec, case)``: whether a drawn node is kept (its lowering).
    ``chain`` (0 to 1): the chance that a node is drawn as a consumer of the newest node's
    outputs (their dtype its label's, their shapes preferred, its first data input that fits
    one of them taking it): the producer-consumer pairs optimisers rewrite (MatMul then Add,
    Conv then Relu, Cast then Cast), which uniform drawing over a format's ops rarely makes.
    At 0 (the default) no choice is added: a seed draws the graph it drew before.
    ``kept(spec, case)``: the indexes of the case's inputs that stay graph inputs (the format
    cannot take a computed value there); none by default.

    >>> draw_graph(graphs(specs), seed=0).ops   # doctest: +SKIP
    ['onnx_add', 'tanh', 'onnx_reduce_sum']
    """
    # an op whose outputs are random (a law, not values) has no reference to compose
    ops = tuple(sorted(op for op in specs if specs[op].definition.distribution is None))
    labels = {op: tuple(label for label in dtype_labels(specs[op])
                        if allowed is None or allowed(specs[op], label)) for op in ops}
    ops = tuple(op for op in ops if labels[op])
    return _graph(specs, ops, labels, max_nodes, accept or (lambda spec, case: True),
                  round(100 * chain), kept)


@st.composite
def _graph(draw, specs, ops, labels, max_nodes, accept, chain: int = 0, kept=None):
    graph = Graph({}, [], [], {}, {}, draw(_sampled(GRAPH_DTYPES)))
    wanted = draw(_between(1, max_nodes))
    for _ in range(3 * wanted):
        if len(graph.nodes) == wanted:
            break
        spec = specs[draw(_sampled(ops))]
        newest = _newest(draw, graph, chain)
        label = _label(draw, labels[spec.op], graph.dtypes[newest[0]] if newest else graph.dtype)
        _add_node(draw, graph, spec, label, accept, newest, kept)
    # drawn after the nodes, so that a seed draws the nodes it drew before constants existed
    graph.constants = frozenset(name for name in graph.inputs if draw(_QUARTER) == 0)
    return graph


_QUARTER = kit.unwrapped(st.integers(0, 3))   # one graph input in four is a constant


# A strategy made once per argument: Hypothesis validates each new one (made per node, they
# cost a tenth of the drawing); the draws are the same.
@functools.lru_cache(maxsize=4096)
def _sampled(choices: tuple):
    return kit.unwrapped(st.sampled_from(choices))


@functools.lru_cache(maxsize=4096)
def _between(low: int, high: int):
    return kit.unwrapped(st.integers(low, high))


def _newest(draw, graph: Graph, chain: int) -> tuple:
    """The newest node's outputs if the next node is drawn as their consumer (``chain`` in
    100), else ``()``; no choice is drawn where ``chain`` is 0 or the graph has no node."""
    if not chain or not graph.nodes or draw(_between(0, 99)) >= chain:
        return ()
    return graph.nodes[-1].outputs


def _label(draw, labels, dtype: str) -> str:
    own = [label for label in labels if label.split("->")[0] == dtype]
    return draw(_sampled(tuple(own or labels)))


def _add_node(draw, graph: Graph, spec, label: str, accept, newest: tuple = (),
              kept=None) -> None:
    """Draw one node of ``spec`` under ``label`` and add it to ``graph`` if it is kept (as a
    consumer of the values ``newest``, if any; the inputs ``kept(spec, case)`` names stay
    graph inputs)."""
    family = _FAMILIES.get((spec.op, label))
    if family is None:   # made once per op and label: a new strategy is validated again
        family = _FAMILIES[spec.op, label] = _family(spec, label)
    with kit.preferring(np.shape(graph.values[n]) for n in newest or graph.values):
        signature = draw(family)
    fill_seed = draw(_between(0, 2**32 - 1))
    k = len(graph.nodes)
    try:
        case = materialize(spec, label, k, (signature, "normal", fill_seed), _edges(spec))
    except Exception:   # a draw the op's fill cannot serve: no node
        return
    names, inputs = _connect(draw, graph, spec, case, newest,
                             kept(spec, case) if kept is not None else ())
    case = dataclasses.replace(case, id=f"graph.n{k}.{spec.op}", inputs=inputs)
    try:
        answer = expect(spec, case)
    except Exception:
        return
    outputs = [part.expected for part in answer]
    out_dtypes = spec.out_dtypes(case)
    case.expectation = answer
    if len(outputs) != len(out_dtypes) or spec.sequence_outputs \
            or not all(_usable(part, d) for part, d in zip(answer, out_dtypes)) \
            or not accept(spec, case):
        return
    given = tuple(f"v{k}" if len(outputs) == 1 else f"v{k}_{j}" for j in range(len(outputs)))
    for name, value, dtype in zip(names, inputs, case.input_dtypes):
        if name not in graph.values:
            graph.inputs[name], graph.values[name], graph.dtypes[name] = value, value, dtype
    for name, value, dtype in zip(given, outputs, out_dtypes):
        with np.errstate(all="ignore"):
            graph.values[name] = np.asarray(value).astype(np_dtype(dtype))
        graph.dtypes[name] = dtype
    graph.nodes.append(ProgramNode(spec, tuple(names), given, case.attrs))
    graph.cases.append(case)


#: Each op and dtype label's signature strategy (its drawer's), made once.
_FAMILIES: dict = {}


def _edges(spec) -> dict:
    """The cache of ``spec``'s edge values per dtype that :func:`materialize` fills (kept with
    the spec, so that its id is not reused meanwhile)."""
    found = _EDGES.get(id(spec))
    if found is None or found[0] is not spec:
        found = _EDGES[id(spec)] = (spec, {})
    return found[1]


_EDGES: dict = {}


def _usable(part, dtype: str) -> bool:
    """Whether an output's answer can be a graph's value: finite in ``dtype`` (no overflow)
    and with no element the standard leaves open."""
    if part.impl_mask is not None and part.impl_mask.any():
        return False
    values = np.asarray(part.expected)
    if values.dtype.kind not in "fc":
        return True
    with np.errstate(all="ignore"):
        return bool(np.isfinite(values.astype(np_dtype(dtype)).astype(np.complex128)).all())


def _connect(draw, graph: Graph, spec, case: Case, newest: tuple = (),
             kept=()) -> tuple[list, list]:
    """Per input of ``case``: the graph value it takes (by name) and its array; a new graph
    input (named ``x<node>_<input>``) where Hypothesis keeps the op's own, and for the inputs
    ``kept`` (indexes). The first data input that one of ``newest`` fits takes it (no choice
    drawn)."""
    present = spec.present_inputs(case.attrs)
    kinds = dict(zip(spec.inputs, spec.input_types))
    broadcasting = spec.signature.get("shapes") == "onnx_broadcast"
    unary = spec.elementwise and len(case.inputs) == 1
    names, inputs = [], list(case.inputs)
    for i, (x, dtype) in enumerate(zip(case.inputs, case.input_dtypes)):
        kind = kinds[present[min(i, len(present) - 1)]]
        others = [np.shape(y) for j, y in enumerate(inputs) if j != i]
        found = [name for name, value in graph.values.items()
                 if kind in ("T", "bool") and graph.dtypes[name] == dtype
                 and _fits(np.shape(value), np.shape(x), others,
                                                 broadcasting, unary)] \
            if kind in ("T", "bool") and i not in kept else []
        chained = [name for name in found if name in newest]
        if chained:
            pick, newest = found.index(chained[0]) + 1, ()
        else:
            pick = draw(_between(0, len(found))) if found else 0
        if pick:
            names.append(found[pick - 1])
            inputs[i] = graph.values[found[pick - 1]]
        else:
            names.append(f"x{len(graph.nodes)}_{i}")
    return names, inputs


def _fits(shape, wanted, others, broadcasting: bool, unary: bool) -> bool:
    """Whether a value of ``shape`` can stand for an input drawn as ``wanted``: the same shape;
    any, for a unary element-wise op; for a broadcasting op, a shape that broadcasts to
    ``wanted`` without changing the result's shape where ``wanted`` is smaller than it (so that
    a unidirectional broadcast, PRelu's slope, stays one)."""
    if shape == wanted or unary:
        return True
    if not broadcasting or wanted == np.broadcast_shapes(wanted, *others):
        return False
    try:
        return np.broadcast_shapes(shape, wanted) == wanted
    except ValueError:
        return False


def draw_graph(strategy, *, seed: int) -> Graph:
    """One graph of ``strategy`` (:func:`graphs`) drawn from ``seed``: the same seed (and
    conform version) gives the same graph."""
    with _without_local_constants():
        return _draw(strategy, random.Random(seed), data_type=QuickData)
