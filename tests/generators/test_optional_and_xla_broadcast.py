"""The generic drawer: optional inputs (presence drawn, absent_inputs recorded, the case holding
the present inputs) and XLA's broadcast_dimensions relation."""
from __future__ import annotations

import numpy as np

from conform.generators import generate_cases
from conform.oracles.expectations import expect
from conform.spec import load_specs

SPECS = load_specs()


def test_optional_inputs_are_drawn_present_and_absent():
    spec = SPECS["onnx_clip"]
    cases = generate_cases(spec, "float32", count=64, seed=3, answer=expect)
    patterns = set()
    for case in cases:
        absent = case.attrs.get("absent_inputs")
        assert absent is None or absent   # never an empty list: left out when all are present
        names = spec.present_inputs(case.attrs)
        assert len(case.inputs) == len(names) == len(case.input_dtypes)
        assert all(case.inputs[k].shape == () for k, n in enumerate(names) if n != "input")
        patterns.add(tuple(absent or ()))
    assert {(), ("min",), ("max",), ("min", "max")} <= patterns


def test_specs_without_optional_inputs_carry_no_absent_inputs():
    for op in ("add", "onnx_add", "select"):
        for case in generate_cases(SPECS[op], "float32", count=16, seed=1, answer=expect):
            assert "absent_inputs" not in case.attrs


def test_xla_broadcast_dimensions_are_increasing_and_sizes_compatible():
    seen_lower = 0
    for op in ("add", "ge", "shift_left"):
        spec = SPECS[op]
        dtype = "int32" if op == "shift_left" else "float32"
        for case in generate_cases(spec, dtype, count=64, seed=5, answer=expect):
            dims = case.attrs.get("broadcast_dimensions")
            lhs, rhs = case.inputs
            if dims is None:
                assert lhs.shape == rhs.shape
                continue
            seen_lower += 1
            low, high = (lhs, rhs) if lhs.ndim < rhs.ndim else (rhs, lhs)
            assert low.ndim < high.ndim and len(dims) == low.ndim
            assert dims == sorted(set(dims)) and all(0 <= d < high.ndim for d in dims)
            for k, d in enumerate(dims):
                assert low.shape[k] == high.shape[d] or 1 in (low.shape[k], high.shape[d])
            assert case.expectation[0].expected.shape == np.broadcast_shapes(
                high.shape, tuple(low.shape[dims.index(d)] if d in dims else 1
                                  for d in range(high.ndim)))
    assert seen_lower > 20


def test_onnx_pad_draws_valid_pads_for_every_mode():
    spec = SPECS["onnx_pad"]
    modes = set()
    for case in generate_cases(spec, "float32", count=64, seed=2, answer=expect):
        if case.plan == "must_reject":   # pads the text forbids: drawn to be refused
            continue
        data = case.inputs[0]
        axes = case.attrs.get("axes", list(range(data.ndim)))
        pads = case.attrs["pads"]
        assert len(pads) == 2 * len(axes)
        out = case.expectation[0].expected
        for k, axis in enumerate(axes):
            assert out.shape[axis] == data.shape[axis] + pads[k] + pads[len(axes) + k] >= 0
        modes.add(case.attrs["mode"])
    assert modes == {"constant", "reflect", "edge", "wrap"}
