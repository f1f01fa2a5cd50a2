"""One-op ONNX models built from a spec's ``onnx`` binding and a case.

The IR version and opset are pinned to what the pinned onnxruntime accepts. Per-op translators
map conform attributes (named as in XLA) onto the ONNX operator's attributes and constant inputs,
and raise :class:`Unsupported` where the ONNX operator cannot express the case.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from conform.harness.backends.base import Unsupported, binding
from conform.harness.backends.models import attrs_text
from conform.spec.dtypes import np_dtype

IR_VERSION = 10
OPSET = 21

ONNX_TYPES = {
    "bool": TensorProto.BOOL, "int8": TensorProto.INT8, "int16": TensorProto.INT16,
    "int32": TensorProto.INT32, "int64": TensorProto.INT64, "uint8": TensorProto.UINT8,
    "uint16": TensorProto.UINT16, "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64,
    "float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE,
}


def _const(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def _plain(case, names):
    return names, {}, []


def _clip(case, names):
    if any(case.inputs[i].ndim != 0 for i in (0, 2)):
        raise Unsupported("ONNX Clip takes only scalar min and max")
    return [names[1], names[0], names[2]], {}, []


def _cast(case, names):
    return names, {"to": ONNX_TYPES[case.attrs["new_dtype"]]}, []


def _reduce(case, names):
    return [names[0], "axes"], {"keepdims": 0}, [_const("axes", case.attrs["dimensions"])]


def _conv(case, names):
    (pad_h, pad_w) = case.attrs["padding"]
    attrs = {"strides": case.attrs["window_strides"], "dilations": case.attrs["rhs_dilation"],
             "pads": [pad_h[0], pad_w[0], pad_h[1], pad_w[1]]}  # kernel_shape: inferred from W
    return names, attrs, []


def _max_pool(case, names):
    window, strides = case.attrs["window_dimensions"], case.attrs["window_strides"]
    padding = case.attrs["padding"]
    if len(window) < 3 or any(window[i] != 1 or strides[i] != 1 or padding[i] != [0, 0] for i in (0, 1)):
        raise Unsupported("ONNX MaxPool windows only the spatial dimensions of an N, C, ... tensor")
    attrs = {"kernel_shape": window[2:], "strides": strides[2:],
             "pads": [p[0] for p in padding[2:]] + [p[1] for p in padding[2:]]}
    return names, attrs, []


def _transpose(case, names):
    perm = case.attrs["permutation"]
    return names, ({"perm": perm} if perm else {}), []  # an empty list has no inferable type


def _reshape(case, names):
    return [names[0], "shape"], {"allowzero": 1}, [_const("shape", case.attrs["new_sizes"])]



def _slice(case, names):
    a = case.attrs
    rank = len(a["start_indices"])
    consts = [_const("starts", a["start_indices"]), _const("ends", a["limit_indices"]),
              _const("axes", list(range(rank))), _const("steps", a["strides"])]
    return [names[0], "starts", "ends", "axes", "steps"], {}, consts


def _pad(case, names):
    config = case.attrs["padding_config"]
    if any(interior for _, _, interior in config):
        raise Unsupported("ONNX Pad has no interior padding")
    pads = [low for low, _, _ in config] + [high for _, high, _ in config]
    return [names[0], "pads", names[1]], {"mode": "constant"}, [_const("pads", pads)]


def _concat(case, names):
    return names, {"axis": case.attrs["dimension"]}, []


def _alpha(case, names):
    return names, {"alpha": float(case.attrs["alpha"])}, []


def _tile(case, names):
    return [names[0], "repeats"], {}, [_const("repeats", case.attrs["repeats"])]


def _axes(case, names):
    return [names[0], "axes"], {}, [_const("axes", case.attrs["axes"])]


TRANSLATORS = {
    "Clip": _clip, "Cast": _cast, "ReduceSum": _reduce, "ReduceMax": _reduce,
    "ReduceMin": _reduce, "ReduceMean": _reduce, "Conv": _conv, "MaxPool": _max_pool,
    "Transpose": _transpose, "Reshape": _reshape, "Slice": _slice, "Pad": _pad, "Concat": _concat,
    "LeakyRelu": _alpha, "Tile": _tile, "Squeeze": _axes, "Unsqueeze": _axes,
}


def _broadcast_nodes(case):
    """BroadcastInDim = Reshape to the output rank (size 1 in unmapped dims) + Expand."""
    shape, dims = case.attrs["shape"], case.attrs["broadcast_dimensions"]
    expanded = [1] * len(shape)
    for operand_dim, out_dim in enumerate(dims):
        expanded[out_dim] = case.inputs[0].shape[operand_dim]
    nodes = [helper.make_node("Reshape", ["in0", "expanded"], ["reshaped"]),
             helper.make_node("Expand", ["reshaped", "out_shape"], ["out0"])]
    return nodes, [_const("expanded", expanded), _const("out_shape", shape)]


def build_model(spec, case) -> onnx.ModelProto:
    """A one-op ModelProto computing ``case`` with the spec's ONNX binding."""
    bound = binding(spec, "onnx")
    allowed = bound.get("dtypes")
    if allowed and any(d not in allowed for d in case.input_dtypes):
        raise Unsupported(f"ONNX {bound['op_type']} does not take {case.dtype}")
    names = [f"in{i}" for i in range(len(case.inputs))]
    if bound["op_type"] == "BroadcastInDim":
        nodes, initializers = _broadcast_nodes(case)
    else:
        translate = TRANSLATORS.get(bound["op_type"], _plain)
        node_inputs, attrs, initializers = translate(case, names)
        attrs = {**bound.get("attributes", {}), **attrs}
        nodes = [helper.make_node(bound["op_type"], node_inputs, ["out0"], **attrs)]
    graph = helper.make_graph(
        nodes, f"conform_{spec.op}",
        [helper.make_tensor_value_info(n, ONNX_TYPES[d], None)  # any shape: one session serves all
         for n, d in zip(names, case.input_dtypes)],
        [helper.make_tensor_value_info("out0", ONNX_TYPES[case.out_dtype], None)],
        initializer=initializers)
    return helper.make_model(graph, ir_version=IR_VERSION,
                             opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="conform")


# Ops whose model (or whether it can be built) depends on the input shapes, not only on attributes.
SHAPE_DEPENDENT = {"Clip", "BroadcastInDim"}


def signature_key(spec, case) -> tuple:
    """Cases with the same key share one model and one session.

    Models declare inputs of any shape, so the key holds shapes only for SHAPE_DEPENDENT ops.
    """
    op_type = spec.bindings.get("onnx", {}).get("op_type")
    shapes = tuple(x.shape for x in case.inputs) if op_type in SHAPE_DEPENDENT else ()
    return (spec.op, case.input_dtypes, case.out_dtype, shapes, attrs_text(case.attrs))


def feeds(case) -> dict:
    return {f"in{i}": np.asarray(x, dtype=np_dtype(d), order="C")
            for i, (x, d) in enumerate(zip(case.inputs, case.input_dtypes))}
