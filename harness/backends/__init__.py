"""Built-in backends; vendor adapters implement the same :class:`Backend` contract."""
from conform.harness.backends.base import API_VERSION, Backend, Unsupported

__all__ = ["API_VERSION", "Backend", "Unsupported"]
