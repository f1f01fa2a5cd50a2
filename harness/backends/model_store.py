"""Serialized models kept across runs, in the cache directory's ``models`` folder.

A warm run builds again, byte for byte, the models the run before it built: building an ONNX
model in Python (``onnx.helper``, the schema checks) and serialising it is ~44% of the cost of
a new onnxruntime session (bench/results/2026-11-29-ort-warm-profile.md). A
:class:`ModelStore` keeps each model's bytes, or the :class:`Unsupported` its building raised,
under a digest of everything the model is made from:

* the model's key and whatever else its bytes depend on (for ONNX, the output ranks: see
  :meth:`ModelStore.serialized`), its format and whether it is shaped;
* the sources of conform's bottom layer, spec loader, oracles, op modules and model builders
  (``harness/backends``), and the digest of every built-in spec file (a control-flow op's model
  holds other ops' lowerings);
* the versions of onnx, numpy and ml_dtypes, and the opset (``context``).

Only models of built-in ops are kept: an op from a user's spec folder or an installed package
is built every time (its lowering's sources are not in the digest). The runtime still compiles
every model it is handed: only conform's own building is skipped. Entries are digest-checked
data (:func:`conform.caches.read_entry`); a damaged one is built again, with a warning. The
folder is pruned to ``$CONFORM_MODELS_MAX_MB`` (default :data:`DEFAULT_MAX_MB`), least recently
written first, by a process that writes, at most once every :data:`PRUNE_SECONDS`.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import time
from pathlib import Path

import conform.ops

from conform.caches import (
    CONTENT_START,
    DamagedEntry,
    cache_dir,
    file_digest,
    prune_folder,
    read_entry,
    sources_fingerprint,
    warn_damaged,
    write_entry,
)
from conform.model_formats import Unsupported

TAG = b"conform-model/1\n"
DEFAULT_MAX_MB = 128
PRUNE_SECONDS = 600.0
_MODEL, _REFUSED = b"M", b"U"
_OPS = Path(conform.ops.__file__).resolve().parent   # the built-in ops' specs and modules


class ModelStore:
    """The models of format ``fmt`` kept on disk; ``serialize`` turns a built model into bytes;
    ``context`` is what else the bytes depend on (the opset)."""

    def __init__(self, fmt: str, serialize, *, context: str = "", folder: Path | None = None):
        self.fmt, self.serialize, self.context = fmt, serialize, context
        self.folder = Path(folder) if folder is not None else cache_dir() / "models"
        self.read = self.written = 0   # entries served and kept by this process
        self._pruned = False

    def serialized(self, model, depends: tuple | None = ()) -> bytes:
        """The bytes of ``model`` (a :class:`~conform.harness.backends.models.Model`), read
        from the store or built (and kept); raises the :class:`Unsupported` its building
        raised. ``depends``: what its bytes depend on besides its key (cases of one key can
        differ there, as an ONNX model's output ranks do; None: not known, the model is built
        and not kept)."""
        path = self._path(model, depends)
        if path is None:
            return self.serialize(model.build())
        kept = self._read(path)
        if kept is not None:
            self.read += 1
            if kept[0] == _REFUSED:
                raise Unsupported(kept[1].decode("utf-8"))
            return kept[1]
        try:
            data = self.serialize(model.build())
        except Unsupported as exc:
            self._keep(path, _REFUSED, str(exc).encode("utf-8"))
            raise
        self._keep(path, _MODEL, data)
        return data

    def _path(self, model, depends: tuple) -> Path | None:
        if depends is None:
            return None   # (a generated graph's model among them: it has no op spec)
        spec_path = getattr(model.spec, "path", "") or ""
        if not spec_path or not _built_in(spec_path):
            return None   # not a built-in op: its sources are not in the digest
        digest = hashlib.sha256(_fingerprint(self.context))
        digest.update(file_digest(spec_path))
        digest.update(repr((model.format, model.shaped, model.key, depends)).encode())
        return self.folder / f"{digest.hexdigest()[:40]}.{self.fmt}"

    @staticmethod
    def _read(path: Path) -> tuple | None:
        try:
            buffer = read_entry(path, TAG)
        except FileNotFoundError:
            return None
        except (OSError, DamagedEntry) as exc:
            warn_damaged(path, exc)
            return None
        kind = bytes(buffer[CONTENT_START:CONTENT_START + 1])
        if kind not in (_MODEL, _REFUSED):
            warn_damaged(path, DamagedEntry(f"its kind {kind!r} is neither model nor refusal"))
            return None
        return kind, bytes(buffer[CONTENT_START + 1:])

    def _keep(self, path: Path, kind: bytes, data: bytes) -> None:
        try:
            write_entry(path, TAG, [kind, data])
            self.written += 1
        except OSError:
            return   # a read-only cache directory costs the time only
        if not self._pruned:
            self._pruned = True
            self._prune()

    def _prune(self) -> None:
        marker = self.folder / ".pruned"
        try:
            if time.time() - marker.stat().st_mtime < PRUNE_SECONDS:
                return
        except OSError:
            pass
        max_mb = float(os.environ.get("CONFORM_MODELS_MAX_MB") or DEFAULT_MAX_MB)
        prune_folder(self.folder, f"*.{self.fmt}", max_mb)
        try:
            marker.touch()
        except OSError:
            pass


@functools.cache
def _built_in(spec_path: str) -> bool:
    return Path(spec_path).resolve().parent == _OPS


@functools.lru_cache(maxsize=4)
def _fingerprint(context: str) -> bytes:
    """What every kept model depends on besides its own key and spec file (see the module)."""
    digest = hashlib.sha256(sources_fingerprint() + context.encode())
    for package in ("onnx", "numpy", "ml_dtypes"):
        try:
            digest.update(f"{package} {importlib.metadata.version(package)}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{package} none\0".encode())
    for path in [*sorted(Path(__file__).parent.glob("*.py")), *sorted(_OPS.glob("*.yaml"))]:
        digest.update(f"{path.name}\0".encode() + file_digest(path))
    return digest.digest()
