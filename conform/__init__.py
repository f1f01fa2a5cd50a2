"""conform: conformance test suites for tensor operations, judged against float64 oracles.

The public API is small; the command line (`conform run`, `conform list`) is the main entry point.
"""
from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("conform")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

from conform.spec import OpSpec, SpecError, load_specs

__all__ = ["__version__", "OpSpec", "SpecError", "load_specs"]
