"""The drawn cases of the ONNX shape, rearranging, reduction and normalization ops added with
issue 30 (ops/onnx_shape.py, onnx_rearrange.py, onnx_reduction_more.py,
onnx_lp_normalization.py, onnx_det.py) pass on the real numpy and onnxruntime backends, in a float, an
integer and a third type each (cases a backend cannot express are skipped)."""
from __future__ import annotations

import pytest

from tests.ops import real_backends

backends = real_backends.backends   # the fixture

#: op -> the dtypes run here
OPS = {
    "onnx_flatten": ("float32", "int8", "bool"), "onnx_shape": ("float32", "int8", "bool"),
    "onnx_size": ("float32", "int8", "bool"), "onnx_eye_like": ("float32", "int8", "bool"),
    "onnx_constant_of_shape": ("float32", "int8", "bool"),
    "onnx_depth_to_space": ("float32", "float16", "int64"),
    "onnx_space_to_depth": ("float32", "float16", "int64"),
    "onnx_reverse_sequence": ("float32", "float16", "int64"),
    "onnx_trilu": ("float32", "float16", "int64"),
    "onnx_reduce_l1": ("float32", "float16", "int32"),
    "onnx_reduce_sum_square": ("float32", "bfloat16", "int32"),
    "onnx_reduce_log_sum": ("float32", "float16", "float64"),
    "onnx_cum_prod": ("float32", "float64", "int32"),   # numpy only at the default opset
    "onnx_lp_normalization": ("float32", "float16", "float64"),
    "onnx_mean_variance_normalization": ("float32", "float64", "bfloat16"),
    "onnx_lrn": ("float32", "float64", "bfloat16"),
    "onnx_rms_normalization": ("float32", "float16", "float64"),   # numpy only at the default opset
    "onnx_det": ("float32", "float64", "float16"),   # onnxruntime only (NumPy's det is not faithful)
}
#: ops whose drawn cases onnxruntime fails for real (tested on their own, left failing there)
ORT_DEVIATES = {"onnx_lrn": "even sizes and ranks other than 4 refused, a running sum of squares "
                            "(test_onnx_lp_normalization.py)"}


@pytest.mark.parametrize("name, dtype", [(n, d) for n, ds in OPS.items() for d in ds])
@pytest.mark.parametrize("backend", ["numpy", "onnxruntime"])
def test_backends_pass_the_drawn_cases(specs, backends, name, dtype, backend):
    if backend == "onnxruntime" and name in ORT_DEVIATES:
        pytest.skip(f"onnxruntime deviates: {ORT_DEVIATES[name]}")
    real_backends.assert_drawn_cases_pass(specs[name], backends[backend], dtype)


#: per op, the type parameter its dtype label stands for (the first input's, else named)
_LABEL_PARAM = {"onnx_constant_of_shape": "T2", "onnx_eye_like": "T1"}


def _conform_name(onnx_type: str) -> str:
    """'tensor(float8e4m3fn)' -> 'float8_e4m3fn', 'tensor(float)' -> 'float32',
    'tensor(float4e2m1)' -> 'float4_e2m1fn' (a type conform has no name for keeps ONNX's)."""
    from conform.harness.backends.onnx_models import BY_SCHEMA_NAME

    name = onnx_type[len("tensor("):-1]
    return BY_SCHEMA_NAME.get(name, name)


#: ops whose schema allows tensor(string) but whose text gives strings no meaning
#: (Trilu draws string: its zeroed elements are the region trilu_text_zero, ops/onnx_trilu.yaml)
NOT_STRING: dict[str, str] = {}
#: types not drawn yet, each excused in tests/ops/test_onnx_type_coverage.py's EXCEPTIONS
NOT_YET: dict[str, set] = {}


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_type_the_newest_schema_allows_is_drawn(specs, name):
    """Each spec lists every type of conform's vocabulary that the operator's newest schema
    allows for the label's type parameter, and those an older schema in the binding's range
    allowed (ReduceLogSum-18's integer types, which ReduceLogSum-28 drops) (string is left
    out where :data:`NOT_STRING` says why); a type onnxruntime lacks is still listed (reported
    unsupported: complex64 and complex128 everywhere)."""
    import onnx.defs
    from conform.spec import SCHEMA

    vocabulary = set(SCHEMA["properties"]["dtypes"]["items"]["enum"])
    spec = specs[name]
    op_type, (low, _) = spec.bindings["onnx"]["op_type"], spec.bindings["onnx"]["opsets"]
    allowed = set()
    for opset in range(low, onnx.defs.onnx_opset_version() + 1):
        schema = onnx.defs.get_schema(op_type, opset)
        param = _LABEL_PARAM.get(name) or schema.inputs[0].type_str
        allowed |= set(next(tc.allowed_type_strs for tc in schema.type_constraints
                            if tc.type_param_str == param))
    assert set(spec.dtypes) == {_conform_name(t) for t in allowed} & vocabulary \
        - ({"string"} if name in NOT_STRING else set()) - NOT_YET.get(name, set())
