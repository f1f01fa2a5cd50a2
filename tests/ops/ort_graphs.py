"""Run small hand-written ONNX graphs on onnxruntime (and NNEF documents on the nnef executor):
the injected-bug tests spell a buggy implementation of an op as a graph of primitive nodes and
judge its outputs."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

_ELEMENT = {np.float32: onnx.TensorProto.FLOAT, np.float16: onnx.TensorProto.FLOAT16,
            np.float64: onnx.TensorProto.DOUBLE}


def run_graph(nodes, inputs: dict, outputs: dict) -> list:
    """Run ``nodes`` on onnxruntime (CPU, no graph rewrites, which could remove injected casts)
    with graph ``inputs`` ({name: array}) and ``outputs`` ({name: (dtype, shape)}); the model
    passes onnx's full check first."""
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, _ELEMENT[x.dtype.type], x.shape) for n, x in inputs.items()],
        [helper.make_tensor_value_info(n, _ELEMENT[np.dtype(d).type], s)
         for n, (d, s) in outputs.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(list(outputs), inputs)


def constant(name: str, values) -> onnx.NodeProto:
    """A Constant node holding int64 ``values``."""
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.asarray(values, np.int64), name))


def rounded_to_float16(name: str, out: str) -> list:
    """Nodes rounding float32 ``name`` to float16 and back into ``out``."""
    return [helper.make_node("Cast", [name], [out + "_h"], to=onnx.TensorProto.FLOAT16),
            helper.make_node("Cast", [out + "_h"], [out], to=onnx.TensorProto.FLOAT)]


def run_nnef_document(text: str, inputs: list, tmp_path) -> list:
    """Run the NNEF graph document ``text`` (flat syntax, the full standard library) on the
    ``nnef`` package's executor with float32 ``inputs``."""
    import nnef

    path = tmp_path / "graph.nnef"
    path.write_text(text, encoding="utf-8")
    session = nnef.Session(str(path), lowered=[])
    return list(session(*[np.ascontiguousarray(x, np.float32) for x in inputs]))


def run_mutated(spec, case, **changed):
    """The case's model (as the onnxruntime backend builds it) with node attributes
    ``changed``, run by onnxruntime: an injected bug spelt as a wrong attribute."""
    from conform.harness.backends.onnx_models import build_model

    model = build_model(spec, case)
    node = model.graph.node[0]
    for name, value in changed.items():
        kept = [a for a in node.attribute if a.name != name]
        del node.attribute[:]
        node.attribute.extend(kept + [helper.make_attribute(name, value)])
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {f"in{k}": x for k, x in enumerate(case.inputs)})


def node_test_cases(all_cases, ops: dict):
    """``(name, op, node, data_sets)`` of the onnx package's node test cases whose first node
    is of an op type in ``ops`` ({op_type: conform op})."""
    for case in all_cases:
        node = case.model.graph.node[0] if case.model is not None else None
        if node is not None and node.op_type in ops:
            yield case.name, ops[node.op_type], node, case.data_sets
