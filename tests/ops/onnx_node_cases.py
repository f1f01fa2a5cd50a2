"""The examples of the onnx package's backend node tests (``onnx.backend.test.case.node``),
captured from their ``export`` functions: the package here ships the generator code without
the generated ``data/node`` folders. Each case: (name, node, inputs, outputs) with NumPy
arrays (ml_dtypes' for float 8 and int4)."""
from __future__ import annotations

import importlib

import numpy as np
from onnx import TensorProto, defs, numpy_helper


def _array(value):
    """A tensor as a NumPy array; a sequence (a list) as a list of them; None (an empty
    optional) as None."""
    if isinstance(value, list):
        return [_array(v) for v in value]
    if value is None:
        return None
    return numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)


def node_cases(module_name: str) -> list:
    """Every (name, node, inputs, outputs) the module's export functions pass to ``expect``."""
    return [case[:4] for case in node_cases_at_opsets(module_name)]


def node_cases_at_opsets(module_name: str) -> list:
    """Every (name, node, inputs, outputs, opset) the module's export functions pass to
    ``expect``: the opset the case names, else (as ``expect`` does) the newest schema's."""
    module = importlib.import_module(f"onnx.backend.test.case.node.{module_name}")
    cases = []

    def collect(node, inputs, outputs, name, opset_imports=None, **_):
        opset = next((o.version for o in opset_imports or () if o.domain in ("", "ai.onnx")),
                     None) or defs.get_schema(node.op_type, domain=node.domain).since_version
        cases.append((name, node, [_array(x) for x in inputs], [_array(y) for y in outputs],
                      opset))

    original = module.expect
    module.expect = collect
    try:
        for owner in vars(module).values():
            if isinstance(owner, type) and owner.__module__ == module.__name__:
                for attr in dir(owner):
                    if attr.startswith("export"):
                        getattr(owner, attr)()
    finally:
        module.expect = original
    return cases


def node_attributes(node) -> dict:
    """The node's attributes as Python values: strings decoded, a tensor as a NumPy array."""
    from onnx import helper

    values = {}
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            value = value.decode()
        values[attribute.name] = _array(value) if isinstance(value, TensorProto) else value
    return values


def node_operands(node, inputs, names) -> tuple[list, dict]:
    """An example's inputs and attributes as an op of signature ``names`` (the ONNX operator's
    formal inputs, in order) receives them: the present inputs in order, and the node's
    attributes with ``absent_inputs`` naming the formals the node leaves out (absent or "")."""
    given = dict(zip([f for f, n in zip(names, node.input) if n], inputs))
    attrs = node_attributes(node)
    attrs["absent_inputs"] = [n for n in names if n not in given]
    return [given[n] for n in names if n in given], attrs


def assert_reproduces(op, node, inputs, outputs, names, evaluate) -> None:
    """The oracle of ``op`` (through ``evaluate``) on an example's operands gives its outputs
    within float32 rounding (1e-5), or 16-bit rounding (1e-2) for other stored types."""
    __tracebackhide__ = True
    present, attrs = node_operands(node, inputs, names)
    for got, want in zip(evaluate(op, present, attrs), outputs):
        tol = 1e-5 if want.dtype == np.float32 else 1e-2
        assert np.allclose(got, np.asarray(want, np.float64), rtol=tol, atol=tol), node.name
