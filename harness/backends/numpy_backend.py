"""The ``numpy`` backend: each op computed by NumPy itself, in the target dtype.

What a NumPy user gets: float16 ufuncs on float16 arrays, bfloat16 and float 8 through
ml_dtypes' own ufunc loops, integer ops in the integer dtype. The computation is the op's NumPy
lowering (:func:`conform.ops.numpy_computation.numpy_computation`: its op module's ``numpy`` hook or its
spec's ``bindings.numpy``); it never calls an oracle. An op NumPy cannot express, or a result
NumPy computes in another dtype than the target, is ``unsupported`` with the reason.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from conform.harness.backends.base import Backend, RuntimeClock, Unsupported
from conform.ops import UnknownOp
from conform.ops.numpy_computation import in_target_dtypes, numpy_computation
from conform.dtypes import np_dtype


@functools.cache
def _catalog() -> dict:
    """Every op's spec by name: where an op composing others (a loop body's ops) finds them."""
    from conform.spec import load_specs

    return load_specs()


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
            compute = numpy_computation(spec, catalog=_catalog())
        except UnknownOp:
            raise Unsupported(f"no NumPy implementation of {spec.op}: no op module defines it") from None
        with self.clock.timing("execute"), np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # 'Mean of empty slice' and kin
            try:
                outputs = compute(*inputs, **case.attrs)
            except TypeError as exc:
                if "not supported for the input types" in str(exc) or "did not contain a loop" in str(exc):
                    raise Unsupported(f"{spec.op}: NumPy cannot compute it in "
                                      f"{', '.join(case.input_dtypes)}: {exc}") from None
                raise
        return in_target_dtypes(spec.op, outputs, [np_dtype(d) for d in program.out_dtypes])
