"""What every injected bug ("mutant") shares: the base classes, which name the backend wrapped,
the condition under which a bug applies, and helpers for dtypes and subnormals (the package's
docstring says how the mutants are run and scored)."""
from __future__ import annotations

import numpy as np

from conform.harness.backends import Wrapping


def _search(repo: str, words: str) -> str:
    return f"https://github.com/{repo}/issues?q={words.replace(' ', '+')}"


ORT, XLA, TVM, OV = "microsoft/onnxruntime", "openxla/xla", "apache/tvm", "openvinotoolkit/openvino"


class Mutant(Wrapping):
    """A built-in backend with one injected bug. A subclass (of :class:`OrtMutant` or
    :class:`JaxMutant`, which name the backend wrapped) names its ``targets`` (the ops the bug
    lives in), the ``affects`` dtype labels (empty: all), and overrides :meth:`forward` (the
    inputs handed to the wrapped backend) and/or :meth:`mutate` (the outputs returned)."""

    targets: tuple = ()
    affects: tuple = ()     # program.dtype labels the bug lives in; () = every dtype
    bug = ""
    resembles = ""
    #: Set (to the standard's words that allow it) for an *equivalent* mutant: one whose
    #: behaviour, bug-like as it is in practice, the op's standard permits, so that no correct
    #: judge may fail it. The score leaves these out of its denominator and lists them apart.
    equivalent = ""
    #: Set (to what the clean backend gets wrong) for a mutant whose bug the wrapped backend
    #: already has under the same condition: no case can fail only in the mutant's run. It
    #: counts as detected when every case whose outputs it changes fails in both runs (the
    #: suite catches the bug on the real runtime); once the backend is fixed, the usual rule.
    shared = ""

    def applies(self, program) -> bool:
        return program.op in self.targets and (not self.affects or program.dtype in self.affects)

    def forward(self, program, inputs):
        return inputs

    def mutate(self, program, inputs, outputs):
        return outputs

    def prepare(self, *, program, inputs, model=None):
        if not self.applies(program):
            return super().prepare(program=program, inputs=inputs, model=model)
        inputs = [np.asarray(a) for a in inputs]
        forwarded = [np.asarray(a, order="C") for a in self.forward(program, inputs)]
        compute = super().prepare(program=program, inputs=forwarded, model=model)

        def mutated():
            outs = [np.asarray(o) for o in compute()]
            return [np.asarray(o, order="C") for o in self.mutate(program, inputs, outs)]

        return mutated


class OrtMutant(Mutant):
    wraps = "onnxruntime"


class JaxMutant(Mutant):
    wraps = "jax"


class NumpyMutant(Mutant):
    wraps = "numpy"   # for ops only the numpy (and nnef) backends run: NNEF's fragments


def _named(program, inputs) -> dict:
    return dict(zip(program.input_names, inputs))


def _dt(program, i=0):
    from conform.dtypes import np_dtype

    return np_dtype(program.out_dtypes[i])


def _finfo(dtype):
    import ml_dtypes

    return ml_dtypes.finfo(dtype)


def _subnormal(a):
    a = np.asarray(a)
    tiny = _finfo(a.dtype).smallest_normal
    return (a != 0) & (np.abs(a.astype(np.float64)) < float(tiny))


def _flushed(a):
    """``a`` with its subnormals replaced by zeros of their sign (DAZ / FTZ)."""
    return np.where(_subnormal(a), np.copysign(np.zeros_like(a), a), a)
