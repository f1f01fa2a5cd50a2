"""conform's persistent cache directory, and the parsed built-in specs kept there: reading and
validating 80 YAML files (two YAML passes and a JSON Schema walk each) costs every run ~0.4 s."""
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


@functools.lru_cache(maxsize=1)
def _loader_fingerprint() -> bytes:
    """What a parsed spec depends on besides its file: the loader, schema and oracle registry
    sources and the YAML parser's version."""
    root = Path(__file__).parent.parent
    digest = hashlib.sha256(importlib.metadata.version("pyyaml").encode())
    for path in sorted(Path(__file__).parent.glob("*.py")) + sorted((root / "oracles").glob("*.py")):
        digest.update(path.read_bytes())
    return digest.digest()


def cached_specs(paths: list[Path], load) -> list:
    """``[load(path) for path in paths]``, kept on disk under a hash of the files' paths and
    contents. Only a list that loaded without error is kept, so a broken spec is always
    reported by the loader itself."""
    digest = hashlib.sha256(_loader_fingerprint())
    for path in paths:
        digest.update(f"{path}\0".encode() + hashlib.sha256(path.read_bytes()).digest())
    entry = cache_dir() / "specs" / f"{digest.hexdigest()[:32]}.pkl"
    try:
        return pickle.loads(entry.read_bytes())
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, TypeError):
        pass   # absent or damaged: load and store
    specs = [load(path) for path in paths]
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        temporary = entry.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_bytes(pickle.dumps(specs, protocol=pickle.HIGHEST_PROTOCOL))
        temporary.replace(entry)
    except OSError:
        pass   # a read-only cache directory costs the time, nothing else
    return specs
