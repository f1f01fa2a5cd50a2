"""Backend discovery through the ``conform.backends`` entry-point group."""
from __future__ import annotations

import functools
import importlib
from importlib.metadata import entry_points
from pathlib import Path

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


def adapter_identity(name: str) -> dict:
    """What a certificate records of backend ``name``'s code, found without importing it: the
    distribution that installs it (``distribution``, ``version``; None for a module path that
    no distribution installs), the module its class lives in, and a SHA-256 over its files
    (``files``: how many): those the distribution's RECORD lists, and those of the package
    the module is in, read as they are installed now (an edited file changes it)."""
    import hashlib
    from importlib.metadata import packages_distributions, distribution

    if ":" in name:
        module = name.partition(":")[0]
        owners = packages_distributions().get(module.split(".")[0], [])
        dist = distribution(owners[0]) if owners else None
    else:
        check_backend(name)
        entry = available_backends()[name]
        module, dist = entry.value.partition(":")[0].strip(), entry.dist
    files = {path.resolve() for path in _distribution_files(dist)} | set(_package_files(module))
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: _shown(p, dist)):
        digest.update(f"{_shown(path, dist)}\0".encode() + hashlib.sha256(path.read_bytes()).digest())
    return {"distribution": dist.metadata["Name"] if dist else None,
            "version": dist.version if dist else None, "module": module,
            "files": len(files), "sha256": digest.hexdigest()}


def _distribution_files(dist) -> list:
    """The installed files ``dist``'s RECORD lists (bytecode left out: Python rewrites it)."""
    if dist is None:
        return []
    found = []
    for entry in dist.files or ():
        if entry.suffix != ".pyc" and "__pycache__" not in entry.parts:
            path = Path(dist.locate_file(entry))
            if path.is_file():
                found.append(path)
    return found


def _package_files(module: str) -> list:
    """The source files of the package ``module`` is in (or of ``module`` alone, at the top),
    found by the import system's finders (or in plain folders) without running any of it."""
    path, origin = None, None
    parts = module.split(".")
    for depth in range(1, len(parts) + 1):
        found = _find(".".join(parts[:depth]), path)
        if found is None:
            return []
        origin, path = found
    if origin is None or not Path(origin).is_file():
        return []
    if len(parts) == 1 and path is None:
        return [Path(origin).resolve()]
    folder = Path(origin).resolve().parent
    return sorted(p.resolve() for p in folder.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def _find(name: str, path) -> tuple | None:
    """``(origin, submodule folders or None)`` of module ``name`` under the folders ``path``
    (None: the top level), or None if it is not found; nothing is imported."""
    import sys

    for finder in sys.meta_path:
        try:
            spec = finder.find_spec(name, path)
            if spec is not None:
                locations = spec.submodule_search_locations
                return spec.origin, None if locations is None else list(locations)
        except Exception:   # a namespace package whose parent is not imported: see below
            continue
    leaf = name.rpartition(".")[2]
    for folder in map(Path, path or sys.path):
        if (folder / leaf / "__init__.py").is_file():
            return str(folder / leaf / "__init__.py"), [str(folder / leaf)]
        if (folder / f"{leaf}.py").is_file():
            return str(folder / f"{leaf}.py"), None
        if (folder / leaf).is_dir():
            return None, [str(folder / leaf)]
    return None


def _shown(path: Path, dist) -> str:
    """``path`` as the digest names it: relative to the distribution's root, else its name."""
    if dist is not None:
        root = Path(dist.locate_file("")).resolve()
        if path.is_relative_to(root):
            return path.relative_to(root).as_posix()
    return path.name
