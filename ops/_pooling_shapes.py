"""The boundaries of the ONNX pooling texts' output-size formulas, and the input they forbid.

MaxPool, AveragePool and LpPool give, with explicit pads,
``output_spatial_shape[i] = floor((input_spatial_shape[i] + pad_shape[i] - dilation[i] *
(kernel_shape[i] - 1) - 1) / strides_spatial_shape[i] + 1)`` (``ceil`` with ceil_mode), with
VALID ``floor((input - ((kernel - 1) * dilation + 1)) / stride) + 1`` and with SAME
``ceil(input / stride)``. Each row below puts one axis at a boundary of them: exactly one
window fitting the padded input, one element too few (an output length of 0, or with ceil_mode
one window reaching past the padded input: no full window fits), and a last ceil_mode window
starting in the right padding (the MaxPool and AveragePool texts: 'Sliding windows that would
start in the right padded region are ignored').
"""
from __future__ import annotations

#: (input size, kernel, dilation, stride, pads, auto_pad, ceil_mode, output size per the text)
BOUNDARIES = (
    (3, 3, 2, 2, [1, 1], "NOTSET", 0, 1),    # the padded input holds exactly one window
    (3, 3, 2, 2, [1, 0], "NOTSET", 0, 0),    # one element too few: floor(-1/2 + 1) = 0
    (3, 3, 2, 2, [1, 0], "NOTSET", 1, 1),    # ... with ceil_mode: one window, none full
    (4, 3, 2, 1, [0, 0], "NOTSET", 0, 0),    # no padding, one element too few
    (5, 3, 2, 3, [0, 0], "VALID", 0, 1),     # VALID: exactly one window
    (4, 3, 2, 3, [0, 0], "VALID", 1, 0),     # VALID, one element too few: ceil(0 / 3) = 0
    (1, 3, 2, 2, [0, 0], "SAME_UPPER", 0, 1),  # SAME on one element: total pad 4, 2 + 2
    (2, 2, 1, 2, [0, 1], "NOTSET", 1, 1),    # ceil_mode's 2nd window starts in the right pad
)
#: The rows whose last window a ceil_mode formula counts though it starts in the right padding
#: (LpPool's text lacks the sentence that ignores it: open there, so not drawn for it).
STARTS_IN_RIGHT_PAD = frozenset({7})

#: The formula's output size is negative here: floor((1 + 0 - 2 * 2 - 1) / 1 + 1) = -3.
NEGATIVE = (1, 3, 2, 1, [0, 0], "NOTSET", 0, -3)
NEGATIVE_FORBIDS = (
    "MaxPool/AveragePool/LpPool: 'output_spatial_shape[i] = floor((input_spatial_shape[i] + "
    "pad_shape[i] - dilation[i] * (kernel_shape[i] - 1) - 1) / strides_spatial_shape[i] + 1)' "
    "is -3 here: the kernel is larger than the padded input, and no tensor has a negative "
    "dimension (the text's formula defines no output)")


def _attrs(spec, row, k: int) -> dict:
    """The case's attributes: the row's geometry, the spec's other attributes at a value of
    their domains (count_include_pad alternating over the rows, LpPool's p 2)."""
    size, kernel, dilation, stride, pads, auto_pad, ceil_mode, _ = row
    attrs = {"kernel_shape": [kernel], "strides": [stride], "dilations": [dilation],
             "auto_pad": auto_pad, "ceil_mode": ceil_mode, "pads": list(pads)}
    domains = spec.signature.get("attrs", {})
    if "storage_order" in domains:
        attrs["storage_order"] = k % 2
    if "count_include_pad" in domains:
        attrs["count_include_pad"] = k % 2
    if "p" in domains:
        attrs["p"] = 2
    return attrs


def pooling_boundaries(kit, spec, dtype, *, lp: bool = False) -> list:
    """One ``1 x 2 x size`` signature per row of :data:`BOUNDARIES` (for LpPool, ``lp``,
    without the rows of :data:`STARTS_IN_RIGHT_PAD`)."""
    return [kit.Signature((dtype,), ((1, 2, row[0]),), _attrs(spec, row, k), dtype)
            for k, row in enumerate(BOUNDARIES) if not (lp and k in STARTS_IN_RIGHT_PAD)]


def lp_pooling_boundaries(kit, spec, dtype) -> list:
    """:func:`pooling_boundaries` for LpPool."""
    return pooling_boundaries(kit, spec, dtype, lp=True)


def pooling_invalid(kit, spec, dtype) -> list:
    """The kernel larger than the padded input (:data:`NEGATIVE`): the formula gives a negative
    output size. The model declares a ``1 x 2 x 1`` output per output."""
    signature = kit.Signature((dtype,), ((1, 2, NEGATIVE[0]),), _attrs(spec, NEGATIVE, 0), dtype)
    return [kit.MustReject(signature, NEGATIVE_FORBIDS, ((1, 2, 1),) * len(spec.outputs))]

