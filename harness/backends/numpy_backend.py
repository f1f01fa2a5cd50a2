"""The ``numpy`` backend: each op computed by NumPy in the target dtype.

A baseline of what a plain, careful implementation achieves. Ops whose oracle is dtype-generic
NumPy (element-wise ufuncs, data movement, max reductions) run that same code on the target dtype,
so float32 exp is NumPy's float32 kernel, not a float64 one; accumulating ops and conversions have
their own target-dtype implementations here.
"""
from __future__ import annotations

import numpy as np

from conform.harness.backends.base import Backend, RuntimeClock, Unsupported
from conform.oracles import ORACLES
from conform.spec.dtypes import np_dtype


def _reduce_sum(operand, *, dimensions):
    return np.sum(operand, axis=tuple(dimensions), dtype=operand.dtype)


def _dot_general(lhs, rhs):
    return np.matmul(lhs, rhs)


def _conv(lhs, rhs, *, window_strides, padding, rhs_dilation):
    from numpy.lib.stride_tricks import sliding_window_view

    padded = np.pad(lhs, [(0, 0), (0, 0)] + [tuple(p) for p in padding])
    (kh, kw), (dh, dw) = rhs.shape[2:], rhs_dilation
    windows = sliding_window_view(padded, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    windows = windows[:, :, ::window_strides[0], ::window_strides[1], ::dh, ::dw]
    return np.einsum("ncyxij,ocij->noyx", windows, rhs, dtype=lhs.dtype)


IMPLEMENTATIONS = {
    "reduce_sum": _reduce_sum,
    "dot_general": _dot_general, "conv": _conv,
    "convert_element_type": lambda x, *, new_dtype: x.astype(np_dtype(new_dtype)),
}


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

    def run(self, *, spec, case):
        fn = IMPLEMENTATIONS.get(spec.op) or ORACLES.get(spec.oracle)
        if fn is None:
            raise Unsupported(f"no NumPy implementation of {spec.op} (oracle {spec.oracle!r})")
        with self.clock.timing("execute"):
            with np.errstate(all="ignore"):
                outputs = fn(*case.inputs, **case.attrs)
            if not isinstance(outputs, tuple):
                outputs = (outputs,)
            return [np.asarray(o).astype(np_dtype(case.out_dtype), copy=False) for o in outputs]
