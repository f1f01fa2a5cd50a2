"""Built-in backends; vendor adapters implement the same :class:`Backend` contract."""
from conform.harness.backends.base import Backend, Unsupported

__all__ = ["Backend", "Unsupported"]
