"""jax backends for the collectives' tests, named by import path on the command line: one with
four host devices, and two with injected bugs (replica groups ignored; one replica's operand
dropped from every sum)."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np

from conform.harness.backends.jax_backend import JaxBackend

REDUCING = ("all_reduce", "cross_replica_sum", "reduce_scatter")


class FourDevicesBackend(JaxBackend):
    """jax on four host devices: a case with more replicas is unsupported."""
    name = "jax-4-devices"
    host_devices = 4


class IgnoredGroupsBackend(JaxBackend):
    """Runs every collective as if its replica groups were empty (one group of all replicas)."""
    name = "ignored-groups"

    def run(self, *, program, inputs, model=None):
        if "replica_groups" in program.case.attrs:
            case = dataclasses.replace(program.case,
                                       attrs={**program.case.attrs, "replica_groups": []})
            program = SimpleNamespace(spec=program.spec, case=case, op=program.op)
        return super().run(program=program, inputs=inputs, model=model)


class DroppedReplicaBackend(JaxBackend):
    """Sums leave out the last replica's operand (it adds zeros instead)."""
    name = "dropped-replica"

    def run(self, *, program, inputs, model=None):
        if program.op in REDUCING and program.case.attrs.get("computation", "add") == "add":
            operand = np.array(inputs[0])
            operand[-1] = 0
            inputs = [operand]
        return super().run(program=program, inputs=inputs, model=model)
