"""ONNX DynamicQuantizeLinear (opset 11), written from the operator's text
(``onnx.defs.get_schema("DynamicQuantizeLinear", 11).doc``): float32 x into uint8 with a scale
and zero point computed from x's range adjusted to include 0.

    y_scale = (maximum(0, max(x)) - minimum(0, min(x))) / (qmax - qmin)     qmin 0, qmax 255
    y_zero_point = cast(round(saturate(qmin - min(x) / y_scale)))           to [0, 255], half to even
    y = saturate(round(x / y_scale) + y_zero_point)                         to [0, 255], half to even

The text gives the formulas, not the precision of their steps: y_scale's subtraction and
division (or a product with a rounded 1/255) each round in float32, and the quotients
``min(x) / y_scale`` and ``x / y_scale`` are computed in some precision from the y_scale the
implementation got. The oracle evaluates each formula exactly, y_scale rounded once to float32
(the output's type), and marks open (``open_elements``) the y and y_zero_point elements that
another y_scale within the model's bound, or a quotient within two float32 roundings, changes.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import FLOAT_FORMATS, round_to_format
from conform.op_registry import op

QMIN, QMAX = 0, 255
FLOAT32 = FLOAT_FORMATS["float32"]
#: Roundings of y_scale in float32: the subtraction, and the division by 255 (or 1/255 rounded
#: and the product): |error| <= gamma_3 |y_scale| < 3 (1 + 3u) ULP (see the spec).
SCALE_ROUNDINGS = 3


def _range(x):
    """``(maximum(0, max(x)), minimum(0, min(x)), min(x))``; min(x) of an empty x taken as 0."""
    return (max(0.0, float(np.max(x, initial=0.0))), min(0.0, float(np.min(x, initial=0.0))),
            float(np.min(x, initial=0.0)))


def _quantized(x, low, scale, drift_zero=1.0, drift_y=1.0):
    """y_zero_point and y for one y_scale, the quotients multiplied by the drifts."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        zero = np.rint(np.clip((QMIN - low / scale) * drift_zero, QMIN, QMAX))
        y = np.clip(np.rint(x / scale * drift_y) + zero, QMIN, QMAX)
    return zero, y


def _scale_candidates(exact: float) -> np.ndarray:
    """Every float32 within gamma_3 of the exact y_scale (what a float32 evaluation gives)."""
    rounded = np.float32(round_to_format(np.float64(exact), FLOAT32))
    u = FLOAT32.unit_roundoff
    g = SCALE_ROUNDINGS * u / (1 - SCALE_ROUNDINGS * u)
    steps = [rounded]
    for direction in (np.inf, -np.inf):
        value = rounded
        for _ in range(2 * SCALE_ROUNDINGS + 2):
            value = np.nextafter(value, np.float32(direction))
            steps.append(value)
    steps = np.array(steps, np.float64)
    return steps[np.abs(steps - exact) <= g * abs(exact)]


def _open(x, smallest, span, exact, zero, y):
    """Masks of y_scale, y and y_zero_point: all open where the text divides by zero (x all
    zeros or empty, or y_scale below float32's smallest subnormal: it rounds to 0) or where ``maximum - minimum`` overflows float32 (the sum is finite
    exactly); else the elements another candidate scale or a drifted quotient changes."""
    if round_to_format(np.float64(exact), FLOAT32) == 0 or span > FLOAT32.max_finite:
        return np.ones((), bool), np.ones(y.shape, bool), np.ones((), bool)
    drift = 2 * FLOAT32.unit_roundoff
    open_y, open_zero = np.zeros(y.shape, bool), np.zeros((), bool)
    for scale in _scale_candidates(exact):
        for drift_zero in (1 - drift, 1.0, 1 + drift):
            for drift_y in (1 - drift, 1.0, 1 + drift):
                other_zero, other_y = _quantized(x, smallest, scale, drift_zero, drift_y)
                open_zero |= other_zero != zero
                open_y |= other_y != y
    return np.zeros((), bool), open_y, open_zero


def numpy_dynamic_quantize(x):
    """The numpy backend: the text's formulas in float32 (``np.max``, ``np.min``, ``np.rint``,
    ``np.clip``)."""
    high = np.maximum(np.float32(0), np.max(x, initial=np.float32(0)))
    low = np.minimum(np.float32(0), np.min(x, initial=np.float32(0)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scale = (high - low) / np.float32(QMAX - QMIN)
        zero = np.rint(np.clip(np.float32(QMIN) - np.min(x, initial=np.float32(0)) / scale,
                               QMIN, QMAX))
        y = np.clip(np.rint(x / scale) + zero, QMIN, QMAX)
    return (np.nan_to_num(y).astype(np.uint8), np.float32(scale),
            np.uint8(np.nan_to_num(zero)))


def feed_dynamic_quantize(inputs, attrs, index):
    """Every element of x: y_scale (and through it y_zero_point and each y) is computed from
    max(x) and min(x), which the text takes over all of x."""
    return [np.ravel(inputs[0])]


@op("onnx_dynamic_quantize_linear", version=1, numpy=numpy_dynamic_quantize,
    feeding=feed_dynamic_quantize)
def oracle_onnx_dynamic_quantize_linear(x, open_elements=False):
    """DynamicQuantizeLinear: the text's y_scale (exact), y_zero_point and y (computed from
    y_scale rounded to float32, ties to even); with ``open_elements``, per output the mask of
    the elements the text's open precision leaves open."""
    high, low, smallest = _range(x)
    exact = (high - low) / (QMAX - QMIN)
    scale = float(round_to_format(np.float64(exact), FLOAT32))
    zero, y = _quantized(x, smallest, scale) if scale else (np.zeros(()), np.zeros(x.shape))
    if open_elements:
        open_scale, open_y, open_zero = _open(x, smallest, high - low, exact, zero, y)
        return open_y, open_scale, open_zero
    return np.nan_to_num(y), np.float64(exact), np.nan_to_num(zero)
