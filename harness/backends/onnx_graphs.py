"""ONNX models of generated graphs (:mod:`conform.generators.graphs`).

Each node is lowered by its op's own ONNX lowering (as a single op's model is, with
:class:`~conform.harness.backends.onnx_models.OnnxGraph`), over the graph's value names. The
model's inputs and outputs carry their full static shapes; the graph's ``constants`` are
initializers, not inputs. ``outputs`` picks which values are
the model's outputs: the leaves (the model as a user runs it) or every node's outputs (the
instrumented model, whose intermediates the judge judges node by node).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import onnx
from onnx import helper, numpy_helper

from conform.dtypes import np_dtype
from conform.harness.backends.base import Unsupported, binding, onnx_opset
from conform.harness.backends.onnx_models import (ONNX_TYPES, OnnxGraph, _add_op, ir_version,
                                                  schema_allows)
from conform.generators.graphs import one_node


def build_graph_model(graph, outputs) -> onnx.ModelProto:
    """A ModelProto computing ``graph``, whose outputs are the values named ``outputs``;
    raises :class:`Unsupported` where a node's lowering cannot express its case. The model
    without its outputs is made once per graph (kept in ``graph.memo``): the as-run and
    instrumented models and the check of the latter differ only in their outputs.

    >>> build_graph_model(graph, graph.leaves).graph.output[0].name   # doctest: +SKIP
    'v2'
    """
    key = ("onnx", onnx_opset(), getattr(graph, "constants", ()))
    memo = getattr(graph, "memo", {})
    if key not in memo:
        memo[key] = _body(graph)
    model = onnx.ModelProto()
    model.CopyFrom(memo[key])
    model.graph.output.extend(_info(name, graph.dtypes[name], graph.values[name])
                              for name in outputs)
    return model


def _lowered(graph) -> OnnxGraph:
    """``graph``'s nodes, each lowered by its op's ONNX lowering."""
    version = onnx_opset()
    onnx_graph = OnnxGraph({"op_type": ""}, 0, 0)
    for k, (node, case) in enumerate(zip(graph.nodes, graph.cases)):
        view = onnx_graph.view(binding(node.spec, "onnx"), list(node.inputs),
                               list(node.outputs), prefix=f"n{k}_")
        _add_op(node.spec, case, view, version)
    return onnx_graph


def _body(graph) -> onnx.ModelProto:
    """``graph``'s model with no outputs."""
    onnx_graph = _lowered(graph)
    constants = getattr(graph, "constants", ())
    held = [numpy_helper.from_array(np.asarray(graph.inputs[name], np_dtype(graph.dtypes[name])),
                                    name) for name in graph.inputs if name in constants]
    made = helper.make_graph(
        onnx_graph.nodes, "conform_graph",
        [_info(name, graph.dtypes[name], graph.values[name]) for name in graph.inputs
         if name not in constants], [], initializer=[*held, *onnx_graph.initializers])
    return helper.make_model(made, ir_version=ir_version(onnx_opset()),
                             opset_imports=[helper.make_opsetid("", onnx_opset())],
                             producer_name="conform")


def _info(name: str, dtype: str, value):
    return helper.make_tensor_value_info(name, ONNX_TYPES[dtype], list(np.shape(value)))


def onnx_allowed(spec, label: str) -> bool:
    """Whether a graph may draw ``spec``'s op under dtype ``label`` for an ONNX model: it is
    bound to ONNX at the run's opset, and the opset's schema takes the label's types (asked
    once per spec, label and opset in a process: a campaign's strategies ask it of every op)."""
    key = (id(spec), label, onnx_opset())
    found = _ALLOWED.get(key)
    if found is None:   # the spec is kept with its answer: its id is not reused meanwhile
        found = _ALLOWED[key] = (spec, _allowed(spec, label))
    return found[1]


_ALLOWED: dict = {}


def _allowed(spec, label: str) -> bool:
    bound = spec.bindings.get("onnx")
    if bound is None or getattr(spec, "sequence_outputs", ()):
        return False
    low, high = bound["opsets"]
    return low <= onnx_opset() <= high and schema_allows(spec, label, onnx_opset())


def onnx_lowers(spec, case) -> bool:
    """Whether ``case``'s node can be lowered to ONNX (its lowering raises no
    :class:`Unsupported`), without checking the model: the quick half of
    :func:`onnx_accepts`, for a graph whose whole model is checked once instead
    (:func:`onnx_valid_graph`)."""
    try:
        _lowered(one_node(spec, case))
    except Unsupported:
        return False
    return True


def onnx_valid_graph(graph) -> bool:
    """Whether ``graph``'s instrumented model (every node's outputs its outputs) passes the
    checks :func:`onnx_accepts` makes of one node."""
    every = [name for node in graph.nodes for name in node.outputs]
    try:
        valid(build_graph_model(graph, every))
    except (Unsupported, onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
        return False
    return True


def onnx_accepts(spec, case) -> bool:
    """Whether ``case``'s node (its answer attached) can be an ONNX graph's: its lowering
    raises no :class:`Unsupported`, and its one-node model, whose outputs have the oracle's
    shapes, passes ``onnx.checker`` (full check) and strict shape inference: the shapes and
    types ONNX infers are those the graph gives the node's values, whether its inputs are graph
    inputs or constants (a graph holds some inputs as initializers, whose values ONNX's inference
    then reads: STFT's, in onnx 1.23, then ignores onesided's default of 1)."""
    one = one_node(spec, case)
    try:
        valid(build_graph_model(one, one.leaves))
        valid(build_graph_model(dataclasses.replace(one, constants=frozenset(one.inputs)),
                                one.leaves))
    except (Unsupported, onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
        return False
    return True


def valid(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` after ``onnx.checker.check_model(full_check=True)`` and strict shape
    inference (types checked, data propagated) both pass; raises their error otherwise."""
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                             data_prop=True)
