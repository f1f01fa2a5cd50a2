"""XLA Conv with SAME / VALID (ops/xla_conv_shorthand.py): the text's SAME keeps a stride-1
output at the input's shape, the drawn cases are those where jax's own padding (the strided
TensorFlow convention) and the text's reading coincide, and the real jax backend passes."""
from __future__ import annotations

import numpy as np

from conform.generators._suite import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from conform.ops.xla_conv_shorthand import explicit_padding


def test_same_keeps_a_stride_one_output_at_the_input_shape_and_valid_pads_nothing():
    lhs, rhs = np.ones((1, 2, 5, 4)), np.ones((3, 2, 3, 2))
    attrs = {"window_strides": [1, 1], "padding": "SAME", "rhs_dilation": [1, 2]}
    (out,) = evaluate("conv_shorthand", [lhs, rhs], attrs)
    assert out.shape == (1, 3, 5, 4)
    assert out[0, 0, 0, 0] == 2 * 2 * 1   # corner: 2 of 3 rows, 1 of 2 (dilated) columns, 2 channels
    (valid,) = evaluate("conv_shorthand", [lhs, rhs], {**attrs, "padding": "VALID"})
    assert valid.shape == (1, 3, 3, 2) and (valid == 12).all()


def test_drawn_cases_pad_as_jax_computes_the_shorthand(specs):
    from jax import lax
    for case in generate_cases(specs["conv_shorthand"], "float32", count=20, seed=0):
        lhs, rhs = case.inputs
        extent = [(k - 1) * d + 1 for k, d in zip(rhs.shape[2:], case.attrs["rhs_dilation"])]
        pads = lax.padtype_to_pads(lhs.shape[2:], extent, case.attrs["window_strides"],
                                   case.attrs["padding"])
        assert [list(p) for p in pads] == explicit_padding(rhs.shape, case.attrs), case.id
    # where the readings differ (stride 2, even size) jax pads for ceil(n / s) outputs: not drawn
    assert [tuple(p) for p in lax.padtype_to_pads([4], [3], [2], "SAME")] == [(0, 1)]


def test_jax_passes(specs):
    from conform.harness.backends.jax_backend import JaxBackend
    from conform.harness.backends.models import run_case
    spec, backend = specs["conv_shorthand"], JaxBackend()
    verdicts = [judge_outputs(spec, case, run_case(backend, spec, case), "ftz").verdict
                for case in generate_cases(spec, "float32", count=8, seed=0)]
    assert "fail" not in verdicts and "pass" in verdicts
