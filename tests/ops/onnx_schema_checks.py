"""Checks the ONNX activation and logical op tests share: the onnx package's node test cases
judged under a spec as a backend's answer would be, the types each operator's schemas allow over
the opsets a binding claims, and a one-line judging of hand-made inputs and outputs."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, defs

from conform.generators._case import Case
from conform.generators.onnx_examples import node_attributes
from conform.harness.backends.onnx_models import ONNX_TYPES
from conform.harness.judge.judging import judge_outputs
from tests.ops.onnx_node_cases import node_cases_at_opsets

#: op type -> (conform op, onnx.backend.test.case.node module) of the ONNX activation, logical
#: and variadic ops (ops/onnx_activation.py, ops/onnx_piecewise.py, ops/onnx_logical.py)
OPS = {"Celu": ("onnx_celu", "celu"), "Selu": ("onnx_selu", "selu"),
       "Gelu": ("onnx_gelu", "gelu"), "Mish": ("onnx_mish", "mish"),
       "Swish": ("onnx_swish", "swish"), "SwiGLU": ("onnx_swiglu", "swiglu"),
       "HardSigmoid": ("onnx_hard_sigmoid", "hardsigmoid"),
       "HardSwish": ("onnx_hard_swish", "hardswish"), "Softsign": ("onnx_softsign", "softsign"),
       "ThresholdedRelu": ("onnx_thresholded_relu", "thresholdedrelu"),
       "PRelu": ("onnx_prelu", "prelu"), "Shrink": ("onnx_shrink", "shrink"),
       "And": ("onnx_and", "and_"), "Or": ("onnx_or", "or_"), "Xor": ("onnx_xor", "xor"),
       "Not": ("onnx_not", "not_"), "IsInf": ("onnx_is_inf", "isinf"),
       "IsNaN": ("onnx_is_nan", "isnan"), "Sum": ("onnx_sum", "sum"), "Mean": ("onnx_mean", "mean")}

_BY_SCHEMA_NAME = {f"tensor({TensorProto.DataType.Name(v).lower()})": name
                   for name, v in ONNX_TYPES.items()}


def case_of(op: str, inputs, attrs=None, out_dtype=None) -> Case:
    """A case of ``op`` holding ``inputs`` (NumPy arrays in their own dtypes)."""
    inputs = [np.asarray(x) for x in inputs]
    dtype = str(inputs[0].dtype)
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype,
                input_dtypes=tuple(str(x.dtype) for x in inputs),
                out_dtype=out_dtype or dtype, inputs=inputs, attrs=dict(attrs or {}),
                plan="normal", seed=1)


def verdict(spec, inputs, attrs, outputs, out_dtype=None) -> str:
    """The judge's verdict on ``outputs`` as a backend's answer for those inputs."""
    case = case_of(spec.op, inputs, attrs, out_dtype)
    return judge_outputs(spec, case, [np.asarray(y) for y in outputs]).verdict


def node_case_verdicts(specs, module: str, op: str) -> list:
    """``(name, opset, verdict, worst element)`` of every case the onnx package's node test
    module ``module`` makes (``onnx.backend.test.case.node.<module>``), its expected outputs
    judged under ``op``'s spec with the attribute defaults of the case's own opset."""
    found = []
    for name, node, inputs, outputs, opset in node_cases_at_opsets(module):
        attrs = node_attributes(node, opset)
        case = case_of(op, inputs, attrs, str(np.asarray(outputs[0]).dtype))
        judged = judge_outputs(specs[op], case, [np.asarray(y) for y in outputs])
        found.append((name, opset, judged.verdict, judged.worst))
    return found


def _schemas(op_type: str, low: int, high: int):
    """The schemas of ``op_type`` in force at each opset from ``low`` to ``high`` (none where it
    is not defined yet)."""
    for version in range(low, high + 1):
        try:
            yield defs.get_schema(op_type, version)
        except defs.SchemaError:
            continue


def schema_types(op_type: str, low: int, high: int) -> set:
    """The types (conform's names) the schemas of ``op_type`` in force at opsets ``low`` to
    ``high`` allow for its first input."""
    allowed = set()
    for schema in _schemas(op_type, low, high):
        constraint = schema.inputs[0].type_str
        for c in schema.type_constraints:
            if c.type_param_str == constraint:
                allowed |= {_BY_SCHEMA_NAME.get(t, t) for t in c.allowed_type_strs}
    return allowed


def texts(op_type: str, low: int, high: int) -> set:
    """The distinct (text, attribute names) of ``op_type``'s schemas in force at opsets ``low``
    to ``high``, the text's white space normalised."""
    return {(" ".join(schema.doc.split()), tuple(sorted(schema.attributes)))
            for schema in _schemas(op_type, low, high)}
