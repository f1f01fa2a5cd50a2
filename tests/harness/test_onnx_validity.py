"""Every ONNX model conform emits is valid ONNX: it passes the full checker, and ONNX's own strict
shape inference, given the case's concrete input shapes, gives the oracle's output shape (the
rank, and the sizes but those an op's input values set, which it may leave unknown), where
the operator's schema has a shape inference function (onnx 1.23's GroupNormalization has none)."""
from __future__ import annotations

import copy

import numpy as np
import onnx
import pytest

from conform.generators import dtype_labels, generate_cases
from conform.harness.backends.base import Unsupported, onnx_opset
from conform.harness.backends.onnx_models import build_model, schema_allows
from conform.spec import load_specs
from conform.spec.programs import chain_names
from conform.oracles.expectations import expect

ONNX_OPS = sorted(op for op, spec in load_specs().items() if "onnx" in spec.bindings) \
    + chain_names(load_specs(), "onnx")   # and the programs of the ONNX ops


def _concrete(model: onnx.ModelProto, case) -> onnx.ModelProto:
    """``model`` with the case's input shapes in place of the symbolic dimensions."""
    concrete = copy.deepcopy(model)
    for value, array in zip(concrete.graph.input, case.inputs):
        for dim, size in zip(value.type.tensor_type.shape.dim, np.shape(array)):
            dim.Clear()
            dim.dim_value = size
    return concrete


def _tensor_type(value_type):
    """The tensor type of a value: its own, or its elements' for a sequence."""
    if value_type.HasField("sequence_type"):
        return value_type.sequence_type.elem_type.tensor_type
    return value_type.tensor_type


def _inferred_output_shapes(model: onnx.ModelProto) -> list[list]:
    """Per graph output, the shape ONNX's strict shape inference gives it (a sequence's: its
    elements')."""
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                 data_prop=True)
    values = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]}
    return [[d.dim_value if d.HasField("dim_value") else d.dim_param
             for d in _tensor_type(values[output.name].type).shape.dim]
            for output in model.graph.output]


def _expected_shapes(spec, case) -> list[list]:
    """Per graph output, the oracle's shape; for a sequence output (the pair of outputs
    ``values``, ``shapes``: ops/sequence_values.py) its elements' shape, a size where every
    element has it, else None; for an empty sequence None (no element, no shape)."""
    expected = [list(part.expected.shape) for part in case.expectation]
    for k in reversed(getattr(spec, "sequence_outputs", ())):
        rows = case.expectation[k + 1].expected
        expected[k:k + 2] = [[int(col[0]) if len(set(col.tolist())) == 1 else None
                              for col in rows.T] if len(rows) else None]
    return expected


def _makes_sequences(model: onnx.ModelProto) -> bool:
    """Whether the model holds a sequence (SequenceConstruct, SplitToSequence, SequenceEmpty):
    ONNX types a sequence with one shape for all its elements, so shape inference through it
    leaves the sizes that differ between elements unknown (an empty sequence's, every one)."""
    return any(node.op_type in ("SequenceConstruct", "SplitToSequence", "SequenceEmpty")
               for node in model.graph.node)


def _plain_ceil_shape(case) -> list[int]:
    """A pooling case's output shape by ceil((size + pads - dilated kernel) / stride) + 1 alone,
    VALID read as zero pads: what ONNX's shape inference (1.23) gives with ceil_mode. The
    pooling texts differ: MaxPool's and AveragePool's ignore 'sliding windows that would start
    in the right padded region', and their VALID size with ceil_mode is ceil((size - dilated
    kernel + 1) / stride), one fewer where the stride does not divide size - dilated kernel
    (triaged: the oracles follow the texts, as onnxruntime does)."""
    x, attrs = case.inputs[0], case.attrs
    n = x.ndim - 2
    pads = attrs.get("pads") or [0] * 2 * n
    dilations = attrs.get("dilations") or [1] * n
    return list(x.shape[:2]) + [
        -(-(size + pads[i] + pads[n + i] - (k - 1) * d - 1) // s) + 1
        for i, (size, k, s, d) in enumerate(zip(x.shape[2:], attrs["kernel_shape"],
                                                attrs["strides"], dilations))]


def _truncates_a_negative_window_count(spec, case, inferred, expected) -> bool:
    """ONNX's pooling inference (1.23) divides size + pads - dilated kernel by the stride
    rounding toward zero: where that is negative, above -stride, the texts' floor gives no
    window and it gives one (the boundary plan draws it; onnxruntime does the same, and
    onnx.reference follows the text)."""
    pooling = spec.bindings.get("onnx", {}).get("op_type") in ("MaxPool", "AveragePool", "LpPool")
    return pooling and case.plan == "boundary" and all(
        len(got) == len(want) and all(g == w or (w, g) == (0, 1) for g, w in zip(got, want))
        for got, want in zip(inferred, expected))


def _ignores_the_roi_of_an_unscaled_axis(case, inferred, expected) -> bool:
    """ONNX's Resize inference (1.23) ignores the roi under tf_crop_and_resize: it gives each
    axis floor(input_dimension * scale), where the text's 'output_dimension = floor(input_dimension
    * (roi_end - roi_start) * scale)' shortens or lengthens it by the crop (onnx.reference and
    onnxruntime likewise keep an unscaled axis; the covering design now crops every axis)."""
    attrs = case.attrs
    if attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize" or \
            not attrs.get("scales"):
        return False
    shape = case.inputs[0].shape
    axes = [axis % len(shape) for axis in attrs.get("axes") or range(len(shape))]
    scale_of = dict(zip(axes, attrs["scales"]))
    return inferred == [[int(n * scale_of.get(axis, 1.0)) for axis, n in enumerate(shape)]]


def _shape_inference_is_known_wrong(case, inferred) -> bool:
    attrs = case.attrs
    if case.op == "onnx_conv_transpose" and attrs.get("auto_pad", "").startswith("SAME"):
        # onnx's inference (1.23) sizes SAME with output_padding otherwise than the text's
        # 'output_shape[i] = input_shape[i] * strides[i]', which onnxruntime and onnx.reference
        # give (tests/ops/test_onnx_conv_transpose.py)
        return any(attrs.get("output_padding") or [])
    if case.op == "onnx_conv_transpose" and attrs.get("output_shape"):
        # onnx's inference (1.23) drops a dimension when output_shape is given as the spatial
        # sizes alone (the text's form): [1, 1] for an (N, C, L) = (1, 1, 1) output
        return all(len(shape) == case.inputs[0].ndim - 1 for shape in inferred)
    return (attrs.get("ceil_mode") == 1 and attrs.get("auto_pad") in ("NOTSET", "VALID")
            and all(shape == _plain_ceil_shape(case) for shape in inferred))


def _infers_shapes(model: onnx.ModelProto) -> bool:
    """Whether every node's schema (at the model's opset) has a shape inference function."""
    version = model.opset_import[0].version
    return all(onnx.defs.get_schema(node.op_type, version).has_type_and_shape_inference_function
               for node in model.graph.node)


@pytest.mark.parametrize("op", ONNX_OPS)
def test_every_emitted_model_is_valid_and_infers_the_oracles_shape(specs, op, monkeypatch):
    spec, checked = specs[op], 0
    low, high = spec.bindings.get("onnx", {}).get("opsets", (1, 99))
    if not low <= onnx_opset() <= high:   # an op bound at older opsets only: build at its first
        monkeypatch.setenv("CONFORM_ONNX_OPSET", str(low))
    for label in dtype_labels(spec):
        if not schema_allows(spec, label, onnx_opset()):   # not drawn for ONNX at this opset
            continue
        for case in generate_cases(spec, label, count=8, seed=1, answer=expect):
            if case.plan == "must_reject":   # forbidden by the text: no shape to infer
                continue
            try:
                model = build_model(spec, case)
            except Unsupported:
                continue
            onnx.checker.check_model(model, full_check=True)
            concrete = _concrete(model, case)
            for output in concrete.graph.output:
                _tensor_type(output.type).ClearField("shape")
            if not _infers_shapes(concrete):   # valid (checked above); no shapes to compare
                checked += 1
                continue
            inferred = _inferred_output_shapes(concrete)
            expected = _expected_shapes(spec, case)
            inferred = [None if want is None else got for got, want in zip(inferred, expected)]
            if spec.definition.value_dependent_shape or _makes_sequences(concrete):
                # sizes set by input values, or by elements of a sequence: may be unknown
                inferred = [None if shape is None else
                            [size if isinstance(size, int) else None for size in shape]
                            for shape in inferred]
                expected = [None if shape is None else [size if known is not None else None
                                                        for size, known in zip(shape, got)]
                            for shape, got in zip(expected, inferred)]
            if inferred != expected and (_shape_inference_is_known_wrong(case, inferred)
                                         or _truncates_a_negative_window_count(spec, case,
                                                                               inferred, expected)
                                         or _ignores_the_roi_of_an_unscaled_axis(case, inferred,
                                                                                 expected)):
                continue
            assert inferred == expected, case.id
            checked += 1
    assert checked > 0


def test_the_check_fails_on_a_model_without_shapes(specs):
    """What the test above rests on: the full checker refuses graph inputs without a shape."""
    spec = specs["onnx_add"]
    case = generate_cases(spec, "float32", count=1, seed=0, answer=expect)[0]
    model = build_model(spec, case)
    model.graph.input[0].type.tensor_type.ClearField("shape")
    with pytest.raises(onnx.checker.ValidationError, match="shape"):
        onnx.checker.check_model(model, full_check=True)
