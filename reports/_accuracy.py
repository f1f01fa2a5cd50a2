"""The accuracy map's section of report.html: the plot of each op x dtype's largest ULP error
against its input (an inline SVG the template draws from :func:`error_plot`'s numbers)."""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import np_dtype

#: The plot's size in SVG units, and the ULP error its top stands for (log scale, 2**16).
WIDTH, HEIGHT, TOP_BITS = 480, 120, 16


def bit_value(bits: int, dtype: str) -> float:
    """The ``dtype`` value of bit pattern ``bits``.

    >>> bit_value(0x3c00, "float16")
    1.0
    """
    width = np.uint32 if np.dtype(np_dtype(dtype)).itemsize == 4 else np.uint16
    return float(np.array([bits], width).view(np_dtype(dtype))[0])


def _height(ulp: float) -> float:
    """Where an error of ``ulp`` sits above the axis (log2(1 + ulp), capped at the top)."""
    lifted = TOP_BITS if math.isinf(ulp) else min(math.log2(1 + ulp), TOP_BITS)
    return round(HEIGHT - lifted / TOP_BITS * HEIGHT, 1)


def error_plot(entry: dict) -> dict:
    """The numbers of one entry's plot: ``points`` (an SVG polyline's: a step per group of
    inputs in bit order, at its largest error), ``bound`` (the height of the spec's bound, or None),
    ``ticks`` on the input axis ``(x, value there)`` and on the error axis ``(y, ULPs)``.

    >>> error_plot({"profile": [[0, 1.0], [8, 0.0]], "dtype": "float16", "range": [0, 16],
    ...             "worst": None})["points"]
    '0.0,112.5 240.0,112.5 240.0,120.0 480.0,120.0'
    """
    first, stop = entry["range"]
    span = max(stop - first, 1)
    profile = entry["profile"]
    edges = [bits for bits, _ in profile[1:]] + [stop]
    points = " ".join(f"{(start - first) / span * WIDTH:.1f},{_height(ulp)} "
                      f"{(end - first) / span * WIDTH:.1f},{_height(ulp)}"
                      for (start, ulp), end in zip(profile, edges))   # a step per group
    worst = entry.get("worst") or {}
    bound = worst.get("bound") if entry.get("unit") == "ulp" else None
    ticks = [(round(k * WIDTH / 4, 1), bit_value(min(first + k * span // 4, stop - 1), entry["dtype"]))
             for k in range(5)]
    levels = [(_height(u), u) for u in (0.5, 2, 16, 256, 65536)]
    return {"points": points, "bound": None if bound is None else _height(bound), "ticks": ticks,
            "levels": levels, "width": WIDTH, "height": HEIGHT}


__all__ = ["bit_value", "error_plot"]
