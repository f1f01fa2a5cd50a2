"""conform's persistent cache directory, and the parsed specs and manifests kept there: reading
and validating 80 YAML files (two YAML passes and a JSON Schema walk each) costs every run
~0.4 s, and validating a manifest costs importing jsonschema (~0.08 s)."""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import pickle
from pathlib import Path


def cache_dir() -> Path:
    """Where conform keeps persistent caches: ``$CONFORM_CACHE_DIR`` or ``~/.cache/conform``."""
    configured = os.environ.get("CONFORM_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "conform"


def prune_folder(folder: Path, pattern: str, max_mb: float, spare=()) -> list[Path]:
    """Delete the least recently modified files of ``folder`` matching ``pattern`` until those
    take at most ``max_mb`` MiB, sparing the paths in ``spare``. Returns the deleted paths.
    Files that vanish meanwhile (another conform pruning too) are skipped."""
    entries = []
    for path in Path(folder).glob(pattern):
        try:
            stat = path.stat()
        except OSError:
            continue
        entries.append((stat.st_mtime_ns, stat.st_size, path))
    total, deleted = sum(size for _, size, _ in entries), []
    for _, size, path in sorted(entries, key=lambda entry: entry[:2]):
        if total <= max_mb * (1 << 20):
            break
        if path in spare:
            continue
        try:
            path.unlink()
        except OSError:
            continue
        total -= size
        deleted.append(path)
    return deleted


def file_digest(path) -> bytes:
    """A file's SHA-256, read once per process while the file keeps its modification time and
    size (the spec cache and the corpus keys both hash each spec file)."""
    stat = os.stat(path)
    return _digest(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=1024)
def _digest(path: str, mtime_ns: int, size: int) -> bytes:
    return hashlib.sha256(Path(path).read_bytes()).digest()


@functools.lru_cache(maxsize=1)
def _loader_fingerprint() -> bytes:
    """What a parsed spec depends on besides its file: the loader, schema, oracle and op module
    sources and the YAML parser's version."""
    root = Path(__file__).parent.parent
    digest = hashlib.sha256(importlib.metadata.version("pyyaml").encode())
    for path in [*sorted(Path(__file__).parent.glob("*.py")), *sorted((root / "oracles").glob("*.py")),
                 *sorted((root / "ops").glob("*.py"))]:
        digest.update(path.read_bytes())
    return digest.digest()


def cached_loads(paths: list[Path], load, *, kind: str = "specs", sources: tuple = (),
                 context: str = "") -> list:
    """``[load(path) for path in paths]``, kept on disk (in the cache directory's ``kind``
    folder) under a hash of the files' paths and contents, of the spec loader's and of
    ``sources`` (the other modules ``load`` depends on) and of ``context`` (anything else the
    result depends on). Only a list that loaded without error is kept, so a broken file is
    always reported by the loader itself."""
    digest = hashlib.sha256(_loader_fingerprint() + context.encode())
    for path in (*sources, *paths):
        digest.update(f"{path}\0".encode() + file_digest(path))
    entry = cache_dir() / kind / f"{digest.hexdigest()[:32]}.pkl"
    try:
        return pickle.loads(entry.read_bytes())
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, TypeError):
        pass   # absent or damaged: load and store
    loaded = [load(path) for path in paths]
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        temporary = entry.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_bytes(pickle.dumps(loaded, protocol=pickle.HIGHEST_PROTOCOL))
        temporary.replace(entry)
    except OSError:
        pass   # a read-only cache directory costs the time, nothing else
    return loaded
