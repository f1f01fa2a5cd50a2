"""Which input elements feed one output element, per signature family.

A failure message names the worst output element and the inputs it was computed from. Where an
input is element-aligned with the output that is one value; for reductions, windows, dot
products and convolutions it is a slice, a window or a patch, and for data movement (transpose,
pad, concatenate, ...) one element found elsewhere. :func:`feeding_elements` gives, per input,
the elements (row-major order) that the standard's definition combines into ``out[index]``, or
``None`` where that input takes no part.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from conform.oracles._registry import evaluate

# families whose inputs are element-aligned with the output (or scalars): out[i] comes from x[i]
ALIGNED = frozenset({"elementwise", "select", "clamp", "convert"})
# families whose output elements are copies of input elements: traced through the oracle
MOVEMENT = frozenset({"broadcast_in_dim", "concatenate", "pad", "reshape", "slice", "squeeze",
                      "tile", "transpose", "unsqueeze"})

Feeding = list  # per input: an array of the elements feeding the output element, or None


def _span(start: int, length: int, step: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``start + k * step`` (k < length) that fall inside ``[0, size)``, and their
    ``k``: the rest lie in padding, which no input element fills."""
    taps = np.arange(length)
    positions = start + step * taps
    inside = (positions >= 0) & (positions < size)
    return positions[inside], taps[inside]


def _reduce(inputs, attrs, index) -> Feeding:
    (operand,) = inputs
    reduced = set(attrs["dimensions"])
    kept = iter(index)
    at = tuple(slice(None) if axis in reduced else next(kept) for axis in range(operand.ndim))
    return [operand[at].ravel()]


def _reduce_window(inputs, attrs, index) -> Feeding:
    (operand,) = inputs
    spans = [_span(i * stride - low, window, 1, size)[0] for i, stride, window, (low, _), size
             in zip(index, attrs["window_strides"], attrs["window_dimensions"], attrs["padding"],
                    operand.shape)]
    return [operand[np.ix_(*spans)].ravel()]


def _dot_general(inputs, attrs, index) -> Feeding:
    lhs, rhs = inputs   # batched matmul: out[b..., m, n] = sum_k lhs[b..., m, k] * rhs[b..., k, n]
    *batch, m, n = index
    return [lhs[(*batch, m)].ravel(), rhs[(*batch, slice(None), n)].ravel()]


def _conv(inputs, attrs, index) -> Feeding:
    lhs, rhs = inputs   # NCHW x OIHW -> NCHW; a negative padding crops
    batch, feature, y, x = index
    (low_h, _), (low_w, _) = attrs["padding"]
    (stride_h, stride_w), (dilation_h, dilation_w) = attrs["window_strides"], attrs["rhs_dilation"]
    kernel_h, kernel_w = rhs.shape[2:]
    rows, kernel_rows = _span(y * stride_h - low_h, kernel_h, dilation_h, lhs.shape[2])
    cols, kernel_cols = _span(x * stride_w - low_w, kernel_w, dilation_w, lhs.shape[3])
    channels = np.arange(lhs.shape[1])
    # the kernel taps over padding multiply zeros: only those over the operand take part
    return [lhs[batch][np.ix_(channels, rows, cols)].ravel(),
            rhs[feature][np.ix_(channels, kernel_rows, kernel_cols)].ravel()]


def _moved(oracle: str, inputs, attrs, index) -> Feeding:
    """The one input element copied to ``out[index]``: every input element is numbered (as a
    float64, exact below 2**53) and the numbers are sent through the oracle itself."""
    sizes = [x.size for x in inputs]
    offsets = np.cumsum([0, *sizes])
    labels = [np.arange(offset, offset + x.size, dtype=np.float64).reshape(x.shape)
              for offset, x in zip(offsets, inputs)]
    (moved,) = evaluate(oracle, labels, attrs)
    label = int(moved[tuple(index)])
    source = int(np.searchsorted(offsets, label, side="right")) - 1
    return [x.ravel()[label - offsets[k]:label - offsets[k] + 1] if k == source else None
            for k, x in enumerate(inputs)]


_BY_FAMILY: dict[str, Callable[..., Feeding]] = {
    "reduce": _reduce, "reduce_window": _reduce_window, "dot_general": _dot_general,
    "conv": _conv,
}


def feeding_elements(family: str, oracle: str, inputs: Sequence[np.ndarray], attrs: dict,
                     index: Sequence[int]) -> Feeding:
    """Per input, the elements the standard combines into output element ``index`` (row-major,
    padding left out), or ``None`` for an input that takes no part. Not for the ALIGNED
    families, whose inputs are read at ``index`` itself (the judge does so for every record).

    >>> feeding_elements("reduce", "reduce_sum", [np.arange(6.0).reshape(2, 3)],
    ...                  {"dimensions": [1]}, [1])
    [array([3., 4., 5.])]
    """
    if family in MOVEMENT:
        return _moved(oracle, inputs, attrs, index)
    rule = _BY_FAMILY.get(family)
    if rule is None:
        raise KeyError(f"no feeding rule for signature family {family!r}")
    return rule(inputs, attrs, index)
