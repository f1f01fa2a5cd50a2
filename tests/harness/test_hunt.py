"""The hunt's helpers: the ratio it climbs, and the inputs it keeps for ``conform repro``."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.generators import Case
from conform.harness.run.hunt import Hunted, ratio, save_cases, stored_inputs
from conform.dtypes import np_dtype


@pytest.mark.parametrize("record, want", [
    ({"verdict": "pass", "max_error": 1.5, "bound": 3.0}, 0.5),
    ({"verdict": "fail", "max_error": "inf", "bound": 3.0}, math.inf),
    ({"verdict": "fail", "max_error": "nan", "bound": 3.0}, math.inf),
    ({"verdict": "fail", "max_error": None, "bound": None}, math.inf),   # a special-value mismatch
    ({"verdict": "pass", "max_error": None, "bound": None}, 0.0),
    ({"verdict": "pass", "max_error": 0.0, "bound": 0.0}, 0.0),          # exact and right
    ({"verdict": "fail", "max_error": 1.0, "bound": 0.0}, math.inf),     # exact and wrong
    ({"verdict": "crash"}, math.inf),
])
def test_the_ratio_the_hunt_climbs(record, want):
    assert ratio(record) == want


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_kept_inputs_come_back_bit_for_bit(tmp_path, dtype):
    x = np.array([1.5, -0.0, 3.0e-39, np.inf], np.float64).astype(np_dtype(dtype))
    y = np.array([2.0, 7.0, -1.0, 0.5], np.float64).astype(np_dtype(dtype))
    case = Case(id=f"atan2.{dtype}.hunt0007", op="atan2", dtype=dtype, input_dtypes=(dtype, dtype),
                out_dtype=dtype, inputs=[x, y], attrs={}, plan="hunt", seed=7)
    found = Hunted("atan2", dtype, cases={case.id: case})
    save_cases(tmp_path, [found])
    back = stored_inputs(tmp_path, {"id": case.id, "input_dtypes": [dtype, dtype]})
    assert [b.dtype for b in back] == [np_dtype(dtype)] * 2
    assert [b.tobytes() for b in back] == [x.tobytes(), y.tobytes()]
    assert stored_inputs(tmp_path, {"id": "atan2.float32.hunt9999", "input_dtypes": [dtype]}) is None
