"""Fixtures of the example adapters' tests."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import Case


@pytest.fixture(scope="session")
def one_op_case():
    """``make(op, dtype, *inputs, out_dtype=None, attrs=None)``: a hand-made case of ``op``
    on ``inputs`` (each input's dtype its array's; the output's the first input's unless
    given), for an adapter's ``run_case``."""
    def make(op, dtype, *inputs, out_dtype=None, attrs=None):
        dtypes = tuple(str(np.asarray(x).dtype) for x in inputs)
        return Case(id=f"{op}.{dtype}.t", op=op, dtype=dtype, input_dtypes=dtypes,
                    out_dtype=out_dtype or dtypes[0], inputs=[np.asarray(x) for x in inputs],
                    attrs=attrs or {}, plan="test", seed=0)

    return make
