"""Backend discovery through the ``conform.backends`` entry-point group."""
from __future__ import annotations

import functools
import importlib
from importlib.metadata import entry_points

GROUP = "conform.backends"


class UnknownBackend(LookupError):
    def __init__(self, name: str, available: list[str]):
        self.name, self.available = name, available
        super().__init__(f"unknown backend {name!r}; installed backends: {', '.join(available)}")


def available_backends() -> dict:
    """Installed backends: name -> entry point."""
    return dict(_installed())


@functools.lru_cache(maxsize=1)
def _installed() -> tuple:
    """The group's entry points, found once per process: finding them reads the metadata of
    every installed distribution (~20 ms for 250), and a forked worker inherits what its
    parent found (a backend that crashes often costs a worker start per crash)."""
    return tuple((ep.name, ep) for ep in entry_points(group=GROUP))


def check_backend(name: str) -> None:
    """Raise :class:`UnknownBackend` (listing the installed ones) if ``name`` is not installed.

    ``module.path:ClassName`` names a backend class directly, without an entry point.
    """
    if ":" in name:
        return
    found = available_backends()
    if name not in found:
        raise UnknownBackend(name, sorted(found))


def load_backend_class(name: str):
    """Import and return the backend class registered as ``name``."""
    check_backend(name)
    if ":" in name:
        module, _, attr = name.partition(":")
        return getattr(importlib.import_module(module), attr)
    return available_backends()[name].load()
