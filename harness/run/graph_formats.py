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
import functools
from typing import Callable

from conform.generators.graphs import MAX_NODES, graphs
from conform.harness.run.graph_worker import (OPTIMIZATION, GraphWorker, adapter_model,
                                              adapter_runner, ort_model, ort_runner)


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
    #: whether the model holds a graph's ``constants`` (initializers); if not, every input is fed
    holds_constants: bool = False
    #: (spec, case) -> whether a node's lowering works, without checking its model: the quick
    #: draw's ``accept``, for a format whose whole graph ``valid_graph`` checks once instead
    lowers: Callable | None = None
    valid_graph: Callable | None = None   # graph -> whether its instrumented model is valid
    #: (spec, case) -> the indexes of a node's inputs that stay graph inputs (the format reads
    #: them other than as operands); None: any data input may take a computed value
    kept_inputs: Callable | None = None

    def bound(self, specs: dict, ops=None) -> dict:
        """The ops of ``specs`` bound to this format (op -> spec), of ``ops`` only if given."""
        return {op: spec for op, spec in specs.items() if self.binding in spec.bindings
                and (ops is None or op in ops)}

    def strategy(self, specs: dict, max_nodes: int = MAX_NODES, ops=None, accept=None,
                 chain: float = 0.0):
        """The graphs drawn for this format: over every op of ``specs`` bound to it (of ``ops``
        only, if given), each node kept by ``accept`` (by default the format's), each drawn as
        the newest node's consumer with chance ``chain`` (:func:`~conform.generators.graphs.graphs`)."""
        drawn = graphs(self.bound(specs, ops), max_nodes=max_nodes, allowed=self.allowed,
                       accept=accept or self.accept, chain=chain, kept=self.kept_inputs)
        return drawn if self.holds_constants else drawn.map(_fed)

    def worker(self) -> GraphWorker:
        """A worker building and running this format's models."""
        return GraphWorker(runner=self.runner, build=self.build)


def _fed(graph):
    """``graph`` with every input fed (none a constant)."""
    return dataclasses.replace(graph, constants=frozenset())


def _onnx() -> GraphFormat:
    from conform.harness.backends.onnx_graphs import (onnx_accepts, onnx_allowed, onnx_lowers,
                                                      onnx_valid_graph)

    return GraphFormat("onnxruntime", "onnx", "onnx", OPTIMIZATION, "ieee", onnx_allowed,
                       onnx_accepts, ort_model, ort_runner, holds_constants=True,
                       lowers=onnx_lowers, valid_graph=onnx_valid_graph)


def _adapter(name: str) -> GraphFormat:
    """An adapter ``module:Class`` whose model format is ONNX: ONNX's graphs, each model run
    through the adapter API (:func:`~conform.harness.run.graph_worker.adapter_runner`)."""
    return dataclasses.replace(graph_format("onnxruntime"), backend=name, build=adapter_model,
                               runner=functools.partial(adapter_runner, name))


def _stablehlo() -> GraphFormat:
    from conform.harness.backends import stablehlo_graphs as made

    return GraphFormat("jax", "xla", "stablehlo", made.OPTIMIZATION, made.SUBNORMALS,
                       made.xla_allowed, made.xla_accepts, made.exported_module, made.jax_runner)


def _nnef() -> GraphFormat:
    from conform.harness.backends import nnef_graphs as made

    return GraphFormat("nnef", "nnef", "nnef", made.OPTIMIZATION, "ieee", made.nnef_allowed,
                       made.nnef_accepts, made.build_graph_document, made.nnef_runner,
                       kept_inputs=made.file_inputs)


_FORMATS = {"onnxruntime": _onnx, "jax": _stablehlo, "nnef": _nnef}
#: The backends ``conform fuzz`` runs graphs on.
GRAPH_BACKENDS = tuple(_FORMATS)
_MADE: dict = {}


def graph_format(backend: str) -> GraphFormat:
    """The :class:`GraphFormat` of ``backend`` (one of :data:`GRAPH_BACKENDS`, or an adapter
    ``module:Class`` whose model format is ONNX); its format's modules are imported on first
    use."""
    if backend not in _MADE:
        if ":" in backend:
            _MADE[backend] = _adapter(backend)
        elif backend in _FORMATS:
            _MADE[backend] = _FORMATS[backend]()
        else:
            raise ValueError(f"backend={backend!r} runs no generated graphs; those that do: "
                             f"{', '.join(GRAPH_BACKENDS)} (or an ONNX adapter module:Class)")
    return _MADE[backend]
