"""The model formats ``conform fuzz`` draws, builds and runs generated graphs in, by backend.

A :class:`GraphFormat` holds what is format-specific in a campaign: the spec binding a drawn op
needs (``onnx``, ``xla``, ``nnef``), the format's checks of a drawn node (``allowed``: an op's
dtype label; ``accept``: a node as drawn, its one-node model valid in the format), how a graph's
model is built (in the campaign's process) and how it is run (in the isolated worker:
:mod:`.graph_worker`), and what the report says of the run (the optimisations the as-run model
gets, how the backend treats subnormals). Everything else (drawing, judging, the campaign loop,
the reducer) is the same for every format.

>>> graph_format("jax").binding
'xla'
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from conform.generators.graphs import MAX_NODES, graphs
from conform.harness.run.graph_worker import OPTIMIZATION, GraphWorker, ort_model, ort_runner


@dataclasses.dataclass(frozen=True)
class GraphFormat:
    """One backend's format for generated graphs (see the module's text)."""

    backend: str          # conform fuzz --backend
    binding: str          # the spec binding a drawn op must have
    model_format: str     # the report's model_format
    optimization: str     # what the as-run model gets (the backend's default pipeline)
    subnormals: str       # how the backend treats subnormals (the node judge's)
    allowed: Callable     # (spec, dtype label) -> whether the op may be drawn under it
    accept: Callable      # (spec, case) -> whether a drawn node is kept
    build: Callable       # (graph, outputs) -> the model the runner runs (picklable)
    runner: Callable      # module-level; in the worker: () -> (version, run(model, feeds, dtypes))

    def bound(self, specs: dict) -> dict:
        """The ops of ``specs`` bound to this format (op -> spec)."""
        return {op: spec for op, spec in specs.items() if self.binding in spec.bindings}

    def strategy(self, specs: dict, max_nodes: int = MAX_NODES):
        """The graphs drawn for this format: over every op of ``specs`` bound to it."""
        return graphs(self.bound(specs), max_nodes=max_nodes, allowed=self.allowed,
                      accept=self.accept)

    def worker(self) -> GraphWorker:
        """A worker building and running this format's models."""
        return GraphWorker(runner=self.runner, build=self.build)


def _onnx() -> GraphFormat:
    from conform.harness.backends.onnx_graphs import onnx_accepts, onnx_allowed

    return GraphFormat("onnxruntime", "onnx", "onnx", OPTIMIZATION, "ieee", onnx_allowed,
                       onnx_accepts, ort_model, ort_runner)


def _stablehlo() -> GraphFormat:
    from conform.harness.backends import stablehlo_graphs as made

    return GraphFormat("jax", "xla", "stablehlo", made.OPTIMIZATION, made.SUBNORMALS,
                       made.xla_allowed, made.xla_accepts, made.exported_module, made.jax_runner)


def _nnef() -> GraphFormat:
    from conform.harness.backends import nnef_graphs as made

    return GraphFormat("nnef", "nnef", "nnef", made.OPTIMIZATION, "ieee", made.nnef_allowed,
                       made.nnef_accepts, made.build_graph_document, made.nnef_runner)


_FORMATS = {"onnxruntime": _onnx, "jax": _stablehlo, "nnef": _nnef}
#: The backends ``conform fuzz`` runs graphs on.
GRAPH_BACKENDS = tuple(_FORMATS)
_MADE: dict = {}


def graph_format(backend: str) -> GraphFormat:
    """The :class:`GraphFormat` of ``backend`` (one of :data:`GRAPH_BACKENDS`); its format's
    modules are imported on first use."""
    if backend not in _MADE:
        if backend not in _FORMATS:
            raise ValueError(f"backend={backend!r} runs no generated graphs; those that do: "
                             f"{', '.join(GRAPH_BACKENDS)}")
        _MADE[backend] = _FORMATS[backend]()
    return _MADE[backend]
