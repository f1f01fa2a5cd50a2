"""Dedicated cases on drawn shapes (issue 38 item 4): an edge, sweep, midpoint or broadcast case
adds no signature (shape) the cell's drawn cases lack, where a drawn shape holds its values."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.generators._drawn_shapes import host_shape


def _drawn_shapes(cases):
    return {tuple(np.shape(x) for x in c.inputs) for c in cases if c.id.rsplit(".", 1)[-1].isdigit()}


@pytest.mark.parametrize("op, dtype", [("atan2", "float64"), ("divide", "float32"),
                                       ("sin", "float32"), ("tanh", "float32")])
def test_edge_and_sweep_cases_take_a_drawn_shape_holding_their_values(specs, op, dtype):
    cases = generate_cases(specs[op], dtype, count=20, seed=0)
    drawn = _drawn_shapes(cases)
    moved = [c for c in cases if c.plan in ("edge_case", "edge_sweep", "midpoint")
             and tuple(np.shape(x) for x in c.inputs) in drawn]
    assert moved, f"no dedicated case of {op}.{dtype} on a drawn shape"
    for case in moved:
        assert case.inputs[0].size >= 8
    for case in (c for c in cases if c.plan == "edge_case"):
        # every element is one of the 8 the edge plan laid out, the named edge value among them
        assert len(np.unique(case.inputs[0].reshape(-1).view(np.uint8).reshape(case.inputs[0].size, -1),
                             axis=0)) <= 8


def test_a_case_no_drawn_shape_holds_keeps_its_own(specs):
    cases = generate_cases(specs["tanh"], "float32", count=20, seed=0)
    critical = next(c for c in cases if c.plan == "critical")
    assert np.ndim(critical.inputs[0]) == 1 and critical.inputs[0].size > 256
    assert host_shape(critical, [c for c in cases if c.id.rsplit(".", 1)[-1].isdigit()]) is None


def test_a_broadcast_case_takes_a_drawn_broadcasting_signature(specs):
    spec = specs["onnx_sub"]
    for dtype in spec.dtypes:
        cases = generate_cases(spec, dtype, count=20, seed=0)
        broadcast = next((c for c in cases if c.plan == "broadcast"), None)
        uneven = [s for s in _drawn_shapes(cases) if len(set(s)) > 1 and all(np.prod(x) for x in s)]
        if broadcast is not None and uneven:
            assert tuple(np.shape(x) for x in broadcast.inputs) in uneven
            return
    pytest.fail("no onnx_sub cell has a drawn broadcasting signature to test with")
