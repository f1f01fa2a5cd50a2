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
from conform.harness.backends.program import evaluate
from conform.ops.numpy_computation import in_target_dtypes, numpy_computation
from conform.spec.program_nodes import program_nodes
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
        """The program's outputs, each node computed by its op's NumPy computation in turn."""
        specs = {node.spec.op: node.spec for node in program_nodes(program.spec, program.case)}
        computations = {op: _computation(spec) for op, spec in specs.items()}
        with self.clock.timing("execute"), np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # 'Mean of empty slice' and kin
            return evaluate(program, inputs, lambda node, operands: _computed(
                computations[node.op], node, operands))


def _computation(spec):
    try:
        return numpy_computation(spec, catalog=_catalog())
    except UnknownOp:
        raise Unsupported(f"no NumPy implementation of {spec.op}: no op module defines it") from None


def _computed(compute, node, operands) -> list:
    """One node's outputs, checked to be in its out dtypes (NumPy computing them in another is
    ``unsupported``)."""
    try:
        outputs = compute(*operands, **node.attrs)
    except TypeError as exc:
        if "not supported for the input types" in str(exc) or "did not contain a loop" in str(exc):
            raise Unsupported(f"{node.op}: NumPy cannot compute it in "
                              f"{', '.join(str(np.asarray(x).dtype) for x in operands)}: "
                              f"{exc}") from None
        raise
    return in_target_dtypes(node.op, outputs, [np_dtype(d) for d in node.out_dtypes])
