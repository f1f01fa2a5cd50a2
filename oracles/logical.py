"""Element-wise logical, bitwise, shift and comparison oracles: exact, on bool and int64 inputs."""
from __future__ import annotations

import numpy as np  # noqa: F401 - used by the oracles added here
