"""jax with injected bugs, named by import path in the op tests: ReducePrecision keeping one
mantissa bit too many, BitcastConvertType splitting elements in big-endian order, and Rev
leaving its last dimension unreversed."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np

from conform.harness.backends.jax_backend import JaxBackend


class _WrongAttrs(JaxBackend):
    """Runs a case of ``target`` with ``wrong(attrs)`` instead of its own attributes."""
    target = ""

    def wrong(self, attrs: dict) -> dict:
        return attrs

    def run(self, *, program, inputs, model=None):
        if program.op == self.target:
            case = dataclasses.replace(program.case, attrs=self.wrong(dict(program.case.attrs)))
            program = SimpleNamespace(spec=program.spec, case=case, op=program.op)
        return super().run(program=program, inputs=inputs, model=model)


class ExtraMantissaBitBackend(_WrongAttrs):
    name = "extra-mantissa-bit"
    target = "reduce_precision"

    def wrong(self, attrs):
        return {**attrs, "mantissa_bits": attrs["mantissa_bits"] + 1}


class PartialRevBackend(_WrongAttrs):
    name = "partial-rev"
    target = "rev"

    def wrong(self, attrs):
        return {**attrs, "dimensions": attrs["dimensions"][:-1]}


class BigEndianBitcastBackend(JaxBackend):
    name = "big-endian-bitcast"

    def run(self, *, program, inputs, model=None):
        outputs = super().run(program=program, inputs=inputs, model=model)
        if program.op == "bitcast_convert_type" and outputs[0].ndim > inputs[0].ndim:
            return [np.flip(outputs[0], axis=-1)]   # the pieces of each element reversed
        return outputs
