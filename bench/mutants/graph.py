"""Graph-level injected bugs: optimisation passes gone wrong, for ``conform fuzz``.

Load them as ``bench.mutants:Name`` (bench/mutants/__init__.py re-exports them).
Each wraps onnxruntime through the adapter API (a :class:`bench.mutants.OrtMutant`): given a
generated graph's program (op ``graph``) and its ONNX model, it rewrites the model as a buggy
graph optimisation would, and hands the rewritten model to onnxruntime. A single op's case
(one node, no intermediate) never meets the pattern. ``bench/mutation_score.py`` runs each with
``conform fuzz --backend bench.mutants:Name --ops <fuzz_ops> --budget <budget> --seed <seed>``
against the unmutated adapter on the same graphs, and reduces the first graph it catches
(:func:`conform.harness.run.reduce.reduce_graph`): at most 3 nodes must remain.
"""
from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from bench.mutants.base import ORT, OrtMutant, _search
from conform.harness.backends import Wrapping
from conform.harness.backends.graph_program import GraphModel

#: Element-wise ops onnxruntime's CPU provider runs in float, double and float16
ELEMENTWISE = ("Add", "Sub", "Mul", "Div")
UNARY = ("Neg", "Abs", "Sqrt", "Exp", "Reciprocal", "Relu", "Tanh", "Sigmoid", "Log")
#: One campaign (one clean run) for the mutants that share it: measured to catch each of them
#: (2026-11-28: the cast pair at graph 13, the layout at graph 26, the folding at graph 5)
SHARED_OPS = ("onnx_add", "negate", "onnx_sub", "onnx_mul", "onnx_div", "sqrt", "onnx_transpose",
              "tanh", "exp", "abs")


class GraphMutant(OrtMutant):
    """A graph rewrite injected before onnxruntime sees the model: :meth:`rewrite` edits the
    ModelProto in place and says whether it changed it. ``fuzz_ops``, ``budget``, ``seed``
    and ``max_nodes``: the campaign that must catch it."""

    targets = ("graph",)
    fuzz_ops: tuple = ()
    budget, seed, max_nodes = 40, 0, 4

    def rewrite(self, model: onnx.ModelProto) -> bool:
        raise NotImplementedError

    def prepare(self, *, program, inputs, model=None):
        if program.op == "graph" and model is not None:
            changed = onnx.ModelProto()
            changed.CopyFrom(model.build())
            if self.rewrite(changed):
                model = GraphModel(changed.SerializeToString(), model.input_names)
        return Wrapping.prepare(self, program=program, inputs=inputs, model=model)


class Clean(Wrapping):
    """onnxruntime through the adapter API with no rewrite: the graph mutants' clean run."""

    wraps = "onnxruntime"


def _types(model) -> dict:
    """Each value's ONNX element type, from the graph and shape inference."""
    inferred = onnx.shape_inference.infer_shapes(model).graph
    found = {t.name: t.data_type for t in inferred.initializer}
    for info in (*inferred.input, *inferred.value_info, *inferred.output):
        found[info.name] = info.type.tensor_type.elem_type
    return found


def _uses(graph) -> dict:
    found: dict = {}
    for node in graph.node:
        for name in node.input:
            found.setdefault(name, []).append(node)
    return found


def _replace_nodes(graph, nodes) -> None:
    del graph.node[:]
    graph.node.extend(nodes)


def _cast(name: str, out: str, to: int):
    return helper.make_node("Cast", [name], [out], to=to)


class FusionReassociatesSum(GraphMutant):
    """An add-chain fusion that evaluates ``(a + b) + c`` as ``a + (b + c)`` where the inner
    sum is no output of the model: right in real numbers, off where a + b cancels."""

    bug = "a fusion that reassociates a floating-point sum"
    resembles = _search(ORT, "fusion Add reassociate precision")
    # a sum reassociated is off only where a + b cancels: Add and Neg graphs (caught at
    # graph 44 of seed 1, 2026-11-28: an error of 1.34e-5 against a bound of 1.14e-5)
    fuzz_ops = ("onnx_add", "negate")
    budget, seed = 45, 1

    def rewrite(self, model):
        graph, uses = model.graph, _uses(model.graph)
        outputs = {o.name for o in graph.output}
        made = {o: n for n in graph.node for o in n.output}
        for outer in graph.node:
            inner = next((made.get(n) for n in outer.input if made.get(n) is not None
                          and made[n].op_type == "Add" and n not in outputs
                          and len(uses[n]) == 1), None) if outer.op_type == "Add" else None
            if inner is None or inner is outer:
                continue
            t = inner.output[0]
            c = next(n for n in outer.input if n != t) if outer.input[0] != outer.input[1] \
                else t
            if c == t:
                continue
            a, b = inner.input
            inner.input[:] = [b, c]
            outer.input[:] = [a, t]
            # the inner sum now reads c: it moves to just before the outer one
            _replace_nodes(graph, [m for n in graph.node if n is not inner
                                   for m in ([inner, n] if n is outer else [n])])
            return True
        return False


class CastPairDroppedBetweenOps(GraphMutant):
    """Two float32 element-wise ops run in double, the Cast to float32 between them dropped
    as redundant: the second op reads the first one's unrounded result (the intermediate the
    model exposes is rounded, what its consumer computes on is not)."""

    bug = "an optimisation that drops a cast between two ops"
    resembles = _search(ORT, "Cast elimination precision float16 intermediate")
    fuzz_ops, budget, seed = SHARED_OPS, 27, 1

    def rewrite(self, model):
        graph, types = model.graph, _types(model)
        made = {o: n for n in graph.node for o in n.output}
        for second in graph.node:
            first = next((made[n] for n in second.input if n in made), None)
            if second.op_type not in ELEMENTWISE + UNARY or first is None \
                    or first.op_type not in ELEMENTWISE + UNARY \
                    or any(types.get(n) != TensorProto.FLOAT for n in
                           (*first.input, *second.input, second.output[0])):
                continue
            _retyped(graph, [first, second], TensorProto.DOUBLE, "64")
            return True
        return False


def _retyped(graph, chosen, to: int, suffix: str) -> None:
    """The ``chosen`` nodes computed in type ``to``: each input cast to it, except the
    retyped output of another chosen node, read as it is (no cast between them), and each
    output cast back to float32 under its own name."""
    made, nodes = {}, []
    for node in graph.node:
        if not any(node is c for c in chosen):
            nodes.append(node)
            continue
        for k, name in enumerate(node.input):
            if name not in made:
                made[name] = f"{name}__{suffix}_{len(nodes)}"
                nodes.append(_cast(name, made[name], to))
            node.input[k] = made[name]
        out = node.output[0]
        node.output[0] = f"{out}__{suffix}"
        made[out] = node.output[0]
        nodes += [node, _cast(node.output[0], out, TensorProto.FLOAT)]
    _replace_nodes(graph, nodes)


class LayoutTransposesWrongAxes(GraphMutant):
    """A layout pass that sinks a Transpose below the unary op reading it (``u(T(x))`` ->
    ``T(u(x))``) and re-emits it with its last two axes swapped in ``perm``."""

    bug = "a layout change that transposes the wrong axes"
    resembles = _search(ORT, "transpose optimizer wrong perm layout")
    fuzz_ops, budget, seed = SHARED_OPS, 27, 1

    def rewrite(self, model):
        graph, uses = model.graph, _uses(model.graph)
        outputs = {o.name for o in graph.output}
        made = {o: n for n in graph.node for o in n.output}
        for unary in graph.node:
            moved = made.get(unary.input[0]) if unary.op_type in UNARY else None
            if moved is None or moved.op_type != "Transpose" or moved.output[0] in outputs \
                    or len(uses[moved.output[0]]) != 1:
                continue
            perm = list(next((a.ints for a in moved.attribute if a.name == "perm"), []))
            if len(perm) < 2:
                continue
            perm[-1], perm[-2] = perm[-2], perm[-1]
            x, t, y = moved.input[0], moved.output[0], unary.output[0]
            unary.input[0], unary.output[0] = x, t
            swapped = helper.make_node("Transpose", [t], [y], perm=perm)
            _replace_nodes(graph, _sunk(graph, moved, unary, swapped))
            return True
        return False


def _sunk(graph, moved, unary, swapped) -> list:
    """The nodes with ``moved`` (a Transpose) replaced by ``unary`` then ``swapped``."""
    nodes = []
    for node in graph.node:
        if node is moved:
            nodes += [unary, swapped]
        elif node is not unary:
            nodes.append(node)
    return nodes


class ConstantFoldedInHalf(GraphMutant):
    """Constant folding that evaluates a float32 element-wise node whose inputs are all
    constants (initializers) in float16, and stores the folded value back as float32."""

    bug = "a constant folding in lower precision"
    resembles = _search(ORT, "constant folding precision float16")
    fuzz_ops, budget, seed = SHARED_OPS, 27, 1

    def rewrite(self, model):
        graph, types = model.graph, _types(model)
        constants = {t.name for t in graph.initializer}
        for node in graph.node:
            if node.op_type not in ELEMENTWISE + UNARY or not node.input \
                    or any(n not in constants for n in node.input) \
                    or types.get(node.output[0]) != TensorProto.FLOAT:
                continue
            _retyped(graph, [node], TensorProto.FLOAT16, "16")
            return True
        return False


GRAPH_MUTANTS = (FusionReassociatesSum, CastPairDroppedBetweenOps, LayoutTransposesWrongAxes,
                 ConstantFoldedInHalf)
