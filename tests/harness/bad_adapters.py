"""Adapters that get the contract wrong on purpose, named by import path in the adapter tests."""
from __future__ import annotations

import numpy as np

from conform.harness.backends.base import Backend, Unsupported


class BadDeclarations(Backend):
    """Every declaration wrong; computes add correctly."""

    api_version = 99
    name = ""
    model_format = "tflite"
    subnormals = "daz"

    def version(self):
        return None

    def run(self, *, spec, case):
        if spec.op != "add":
            raise Unsupported(f"no {spec.op}")
        return [np.add(*case.inputs)]


class SwallowsErrors(Backend):
    """Turns every exception into Unsupported, hiding its own failures."""

    name = "swallows"

    def version(self):
        return "1.0"

    def run(self, *, spec, case):
        try:
            return [np.add(*case.inputs)]
        except Exception as exc:
            raise Unsupported(str(exc)) from exc


class FailsToInit(Backend):
    name = "fails_to_init"

    def __init__(self):
        raise RuntimeError("cannot open device /dev/acme0")
