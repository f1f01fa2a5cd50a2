"""Files replaced whole: a reader sees the old file or the new one, never a part of either."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: Path):
    """Yield a temporary path beside ``path``; when the block ends without an exception the
    temporary file replaces ``path`` (``os.replace``), else it is removed.

    >>> with atomic_path(Path("summary.json")) as tmp:   # doctest: +SKIP
    ...     tmp.write_text("{}")
    """
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        os.chmod(temporary, 0o644)   # mkstemp's 0600 would differ from an ordinary write's
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_path`."""
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
