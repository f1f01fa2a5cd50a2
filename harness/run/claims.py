"""What a backend runs, from its declarations alone (no worker, no runtime call): the ops it
claims that have a binding for the model it takes, and of those ops' dtypes the ones it claims.
``conform list --backend B`` shows this; a run reports the rest ``unsupported``."""
from __future__ import annotations

from dataclasses import dataclass

from conform.generators import dtype_labels
from conform.harness.backends.models import claims_op
from conform.model_formats import onnx_opset

# The spec binding each model format is built from (stablehlo is lowered by jax from the
# XLA binding). A native backend names the binding it reads in ``spec_binding`` (jax: xla);
# one that names none computes ops its own way, and may still find some unsupported.
FORMAT_BINDINGS = {"onnx": "onnx", "nnef": "nnef", "stablehlo": "xla"}


@dataclass(frozen=True)
class Claims:
    """A backend class's declarations."""

    name: str
    model_format: str
    binding: str | None          # the spec binding its cases need (None: none needed)
    ops: frozenset | None        # None: every op with that binding
    dtypes: frozenset | None     # None: every dtype

    @classmethod
    def of(cls, backend_class, name: str) -> "Claims":
        fmt = getattr(backend_class, "model_format", "native")
        binding = getattr(backend_class, "spec_binding", None) or FORMAT_BINDINGS.get(fmt)
        ops, dtypes = getattr(backend_class, "ops", None), getattr(backend_class, "dtypes", None)
        return cls(getattr(backend_class, "name", "") or name, fmt, binding,
                   None if ops is None else frozenset(ops),
                   None if dtypes is None else frozenset(dtypes))

    def dtypes_of(self, spec) -> list[str]:
        """The dtypes of ``spec`` this backend runs ([] if it runs none of the op): those it
        claims that its model format's standard types (:func:`standard_allows`: a run draws no
        other)."""
        if not claims_op(self.ops, spec):
            return []
        if self.binding is not None and self.binding not in spec.bindings:
            return []
        dtypes = [d for d in spec.dtypes if self.dtypes is None or d in self.dtypes]
        allows = standard_allows(self.binding)
        if allows is None:
            return dtypes
        drawn = {d for label in dtype_labels(spec) if allows(spec, label) for d in label.split("->")}
        return [d for d in dtypes if d in drawn]   # what a run draws: its format's types

    def describe(self) -> str:
        """One line: model format, the ops and dtypes claimed."""
        if self.ops is not None:
            ops = f"{len(self.ops)} ops"
        else:
            ops = f"every op whose spec has a binding for {self.binding}" if self.binding else "every op"
        dtypes = "every dtype" if self.dtypes is None else ", ".join(sorted(self.dtypes))
        return f"{self.name}: model format {self.model_format}; claims {ops}; dtypes {dtypes}"


def standard_allows(binding: str):
    """``fn(spec, label)``: whether the format's standard takes the label's types (never drawn
    where it does not, so that ``unsupported`` means a runtime lacks what the standard allows):
    for ONNX the operator's schema at the run's opset, for NNEF the fragment's declared tensor
    types, for XLA the operand's StableHLO type class (conform.ops.xla_types); None for a
    format that types every label its spec lists."""
    if binding == "onnx":
        from conform.harness.backends.onnx_models import schema_allows

        return lambda spec, label: schema_allows(spec, label, onnx_opset())
    if binding == "nnef":
        from conform.harness.backends.nnef_models import types_allow

        return types_allow
    if binding == "xla":
        from conform.ops.xla_types import xla_allows

        return xla_allows
    return None


def standard_refuses(binding: str | None):
    """``fn(spec, case) -> reason | None``: why the format's standard cannot express a case of
    a type it allows (its attributes or values: NNEF pad has no interior padding, no NaN
    literal), for a format whose ops' lowerings say so (NNEF:
    :func:`~conform.harness.backends.nnef_models.inexpressible`); None for the others."""
    if binding == "nnef":
        from conform.harness.backends.nnef_models import inexpressible

        return inexpressible
    return None
