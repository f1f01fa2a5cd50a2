"""conform: conformance test suites for tensor operations, judged against float64 oracles.

The public API is small; the command line (`conform run`, `conform list`) is the main entry point.
This module is the facade over the packages (see docs/architecture.md): it names what users
import, and loads it on first use, so that importing the bottom layer (``conform.dtypes``, ...)
loads nothing else.
"""
from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("conform")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__", "OpSpec", "SpecError", "load_specs"]


def __getattr__(name: str):
    if name in ("OpSpec", "SpecError", "load_specs"):
        import conform.spec

        return getattr(conform.spec, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
