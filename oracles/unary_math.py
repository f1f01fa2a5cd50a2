"""Element-wise unary math oracles beyond the basics in elementwise.py (trigonometric, hyperbolic,
logistic, rounding variants, ...): float64 in, float64 out."""
from __future__ import annotations

import numpy as np  # noqa: F401 - used by the oracles added here
