"""The ``numpy`` backend: each op computed by NumPy in the target dtype.

A baseline of what a plain, careful implementation achieves. Ops whose oracle is dtype-generic
NumPy (element-wise ufuncs, data movement, max reductions) run that same code on the target dtype,
so float32 exp is NumPy's float32 kernel, not a float64 one; accumulating ops and conversions have
their own target-dtype implementations (``numpy`` in their op modules).
"""
from __future__ import annotations

import numpy as np

from conform.harness.backends.base import Backend, RuntimeClock, Unsupported
from conform.ops import UnknownOp
from conform.spec.dtypes import np_dtype


class NumpyBackend(Backend):
    name = "numpy"
    model_format = "native"
    subnormals = "ieee"

    def __init__(self):
        self.clock = RuntimeClock()

    def version(self) -> str:
        return np.__version__

    def stats(self) -> dict:
        return self.clock.as_stats()

    def run(self, *, program, inputs, model=None):
        spec, case = program.spec, program.case
        try:
            definition = spec.definition
        except UnknownOp:
            raise Unsupported(f"no NumPy implementation of {spec.op}: no op module defines it") from None
        fn, attrs = definition.numpy, case.attrs
        if fn is None:
            fn = definition.oracle
            if definition.takes_dtypes:
                attrs = {**attrs, "dtypes": case.input_dtypes}
        with self.clock.timing("execute"), np.errstate(all="ignore"):
            outputs = fn(*inputs, **attrs)
            if not isinstance(outputs, tuple):
                outputs = (outputs,)
            return [np.asarray(o).astype(np_dtype(dtype), copy=False)
                    for o, dtype in zip(outputs, program.out_dtypes)]
