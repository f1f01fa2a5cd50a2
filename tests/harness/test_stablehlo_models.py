"""StableHLO export of cases, from the same jitted lax functions the jax backend runs."""
from __future__ import annotations

import dataclasses

import re

import numpy as np
import pytest

from conform.generators import Case, generate_cases
from conform.harness.backends.base import Unsupported
from conform.harness.backends.stablehlo_models import build_stablehlo, write_stablehlo


def _case(op, inputs, attrs=None, out_dtype="float32"):
    return Case(id=f"{op}.x.0", op=op, dtype=str(inputs[0].dtype),
                input_dtypes=tuple(str(x.dtype) for x in inputs), out_dtype=out_dtype,
                inputs=inputs, attrs=attrs or {}, plan="normal", seed=0)


def test_an_elementwise_case_becomes_a_stablehlo_module_with_runtime_inputs(specs):
    case = _case("add", [np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)])
    text = build_stablehlo(specs["add"], case)
    assert "func.func public @main" in text and "stablehlo.add" in text
    assert len(re.findall(r"%arg\d+: tensor<2x3xf32>", text)) == 2   # not folded into constants


@pytest.mark.parametrize("op, marker", [("conv", "stablehlo.convolution"),
                                        ("reduce_sum", "stablehlo.reduce"),
                                        ("dot_general", "stablehlo.dot_general"),
                                        ("pad", "stablehlo.pad")])
def test_attribute_ops_export_their_own_stablehlo_op(specs, op, marker, tmp_path):
    case = generate_cases(specs[op], "float32", count=1, seed=3)[0]
    write_stablehlo(tmp_path / "model.mlir", specs[op], case)
    assert marker in (tmp_path / "model.mlir").read_text()


def test_an_op_without_an_xla_binding_is_unsupported(specs):
    spec = specs["add"]
    unbound = dataclasses.replace(spec, bindings={})
    with pytest.raises(Unsupported, match="no xla binding"):
        build_stablehlo(unbound, _case("add", [np.ones(2, np.float32)] * 2))
