"""StableHLO models: a case exported from its ``xla`` (jax.lax) binding with
``jax.jit(...).lower(...)``, for runtimes that consume StableHLO and for ``repro`` files."""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def _exporter():
    from conform.harness.backends.jax_backend import JaxBackend

    return JaxBackend()


def build_stablehlo(spec, case) -> str:
    """The StableHLO module (MLIR text) computing ``case``; its ``@main`` takes the inputs.

    Raises :class:`~conform.harness.backends.base.Unsupported` where the spec has no xla binding.
    """
    return _exporter().stablehlo(spec=spec, case=case)


def write_stablehlo(path, spec, case) -> None:
    """Write the case's StableHLO module to ``path`` (conventionally ``model.mlir``)."""
    from pathlib import Path

    Path(path).write_text(build_stablehlo(spec, case), encoding="utf-8")
