"""StableHLO modules of generated graphs (:mod:`conform.generators.graphs`), run by jax.

A graph is one function of its inputs: each node computes through its op's own jax lowering,
the function the ``jax`` backend jits for that op alone (:meth:`JaxBackend.traced
<conform.harness.backends.jax_backend.JaxBackend.traced>`: the op's ``lax`` binding or its op
module's ``lax`` hook), on the values the graph holds. ``outputs`` picks what the function
returns: the leaves (the model as a user runs it) or every node's outputs (the instrumented
model). The function is jitted and exported (``jax.export``): lowering it verifies the StableHLO
module (jax runs the MLIR verifier on every module it lowers), and the serialized export is what
the worker deserializes, compiles with XLA's default pipeline and runs (:func:`jax_runner`).
``conform repro`` writes the export's module as MLIR text (:func:`module_text`).
Inputs are always runtime arguments of ``@main``, so that no constant folding of the graph's
inputs happens that a user's model with inputs would not get.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import np_dtype
from conform.harness.backends.jax_backend import JaxBackend
from conform.harness.backends.stablehlo_models import _exporter

OPTIMIZATION = "XLA default pipeline (jax.jit)"
SUBNORMALS = JaxBackend.subnormals


def xla_allowed(spec, label: str) -> bool:
    """Whether a graph may draw ``spec``'s op (under any ``label``) for a StableHLO module: it
    is bound to XLA, runs on one device (a collective's replicas are not a graph's node) and
    gives tensors, not sequences."""
    return ("xla" in spec.bindings and spec.definition.devices is None
            and not getattr(spec, "sequence_outputs", ()))


def graph_function(graph, outputs):
    """``graph`` as a Python function of its inputs (in ``graph.inputs``' order) returning the
    values named ``outputs`` (a tuple), each node through the jax backend's lowering of its op."""
    calls = [_exporter().traced(node.spec, case) for node, case in zip(graph.nodes, graph.cases)]

    def computed(*inputs):
        values = dict(zip(graph.inputs, inputs))
        for node, call in zip(graph.nodes, calls):
            made = call(*(values[name] for name in node.inputs))
            values.update(zip(node.outputs, made if isinstance(made, tuple | list) else (made,)))
        return tuple(values[name] for name in outputs)

    return computed


def export_graph(graph, outputs):
    """The ``jax.export.Exported`` of ``graph`` with ``outputs``: jitted and lowered to a
    verified StableHLO module (``.mlir_module()`` is its text)."""
    import jax
    from jax import export

    return export.export(jax.jit(graph_function(graph, outputs)))(*_arguments(graph))


def stablehlo_module(graph, outputs):
    """The StableHLO module of ``graph`` with ``outputs`` as jax lowers it (an MLIR module
    object, the one :func:`export_graph` serializes)."""
    import jax

    return jax.jit(graph_function(graph, outputs)).lower(*_arguments(graph)) \
        .compiler_ir("stablehlo")


def _arguments(graph) -> list:
    """The graph's inputs as abstract arguments (after the jax backend's configuration: x64
    types, the CPU platform)."""
    import jax

    _exporter()
    return [jax.ShapeDtypeStruct(np.shape(x), np_dtype(graph.dtypes[name]))
            for name, x in graph.inputs.items()]


def exported_module(graph, outputs) -> bytes:
    """The serialized export of ``graph`` with ``outputs`` (what :func:`jax_runner` runs).

    >>> len(exported_module(graph, graph.leaves)) > 0   # doctest: +SKIP
    True
    """
    return bytes(export_graph(graph, outputs).serialize())


def module_text(graph, outputs) -> tuple[str, list]:
    """``(text, fed)``: the StableHLO module :func:`jax_runner` runs for ``graph`` with
    ``outputs`` (its export's) as MLIR text without debug locations, and the names of the graph
    inputs its ``@main`` takes, in order (the export drops an input no output depends on). The
    text is in MLIR's pretty form where that parses back, else in its generic form (see
    :func:`valid_stablehlo`)."""
    from jax.extend.mlir import deserialize_portable_artifact, ir

    exported = export_graph(graph, outputs)
    context = ir.Context()
    module = deserialize_portable_artifact(exported.mlir_module_serialized, context)
    text = module.operation.get_asm(enable_debug_info=False)
    try:
        valid_stablehlo(text)
    except RuntimeError:   # jax's parser refuses the pretty form (JaxRuntimeError)
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    names = list(graph.inputs)
    return text, [names[k] for k in exported.module_kept_var_idx]


def valid_stablehlo(module) -> bytes:
    """``module`` (a StableHLO module: MLIR text, or a module object as
    :func:`stablehlo_module` gives it) verified, parsed and serialized as a portable artifact at
    the current StableHLO version; raises the verifier's or parser's error otherwise.

    A module object is verified, then printed in MLIR's generic form to be parsed again: the
    pretty form StableHLO v1.17 prints for a ``dynamic_slice`` of a 0-d operand
    (``stablehlo.dynamic_slice %arg0, , sizes = []``) does not parse back.
    """
    from jax.extend.mlir import serialize_portable_artifact
    from jax.extend.mlir.dialects import stablehlo

    if not isinstance(module, str):
        if not module.operation.verify():
            raise ValueError("the StableHLO module does not verify")
        module = module.operation.get_asm(print_generic_op_form=True)
    return serialize_portable_artifact(module, stablehlo.get_current_version())


def xla_accepts(spec, case) -> bool:
    """Whether ``case``'s node (its answer attached) can be a StableHLO graph's: its op's jax
    function traces (``jax.eval_shape``: jax's shape and dtype rules, as lowering applies
    them) on the case's inputs, and gives the shapes and dtypes of the oracle's outputs. (The
    graph's module is verified when it is exported; lowering each node too would double the
    time a graph takes to draw, and no node that traced has failed to lower in the bench's
    1,000 graphs: bench/graph_validity.py.) A case the op's ``lax_refuses`` hook refuses (jax
    has no kernel for it: the jax backend reports it unsupported before tracing) is not kept."""
    import jax

    refuses = getattr(spec.definition, "lax_refuses", None)
    if refuses is not None and refuses(case.inputs, case.attrs):
        return False
    try:
        got = jax.tree.leaves(jax.eval_shape(_exporter().traced(spec, case), *case.inputs))
    except Exception:   # Unsupported, or an op's lowering refusing the case
        return False
    wanted = spec.out_dtypes(case)
    return len(got) == len(case.expectation) == len(wanted) and all(
        tuple(out.shape) == np.shape(part.expected) and np.dtype(out.dtype) == np_dtype(dtype)
        for out, part, dtype in zip(got, case.expectation, wanted))


def jax_runner():
    """The worker's runner: the jax backend's configuration, and a function running a
    serialized export on the feeds (compiled by XLA with its default pipeline)."""
    from jax import export

    backend = JaxBackend()

    def run(model: bytes, feeds: dict, dtypes) -> list:
        outputs = export.deserialize(bytearray(model)).call(*feeds.values())
        return [np.asarray(o) for o in outputs]

    return backend.version(), run

