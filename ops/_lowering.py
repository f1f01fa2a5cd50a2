"""What an op module's lowerings share."""
from __future__ import annotations


def unsupported(reason: str) -> Exception:
    """The exception a lowering raises where its format cannot express a case (the backend
    contract's ``Unsupported``, imported only when a lowering refuses a case)."""
    from conform.model_formats import Unsupported

    return Unsupported(reason)
