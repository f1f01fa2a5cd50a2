"""What a backend runs, from its declarations alone (no worker, no runtime call): the ops it
claims that have a binding for the model it takes, and of those ops' dtypes the ones it claims.
``conform list --backend B`` shows this; a run reports the rest ``unsupported``."""
from __future__ import annotations

from dataclasses import dataclass

from conform.harness.backends.models import claims_op

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
        """The dtypes of ``spec`` this backend runs ([] if it runs none of the op)."""
        if not claims_op(self.ops, spec):
            return []
        if self.binding is not None and self.binding not in spec.bindings:
            return []
        return [d for d in spec.dtypes if self.dtypes is None or d in self.dtypes]

    def describe(self) -> str:
        """One line: model format, the ops and dtypes claimed."""
        if self.ops is not None:
            ops = f"{len(self.ops)} ops"
        else:
            ops = f"every op whose spec has a binding for {self.binding}" if self.binding else "every op"
        dtypes = "every dtype" if self.dtypes is None else ", ".join(sorted(self.dtypes))
        return f"{self.name}: model format {self.model_format}; claims {ops}; dtypes {dtypes}"
