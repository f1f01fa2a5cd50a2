"""The on-disk corpus: generated cases kept per op, dtype, seed and budget, so that a repeated run
does not draw them again. The key covers everything the cases depend on: the conform version, the
spec file, the generator and oracle sources (each case keeps its oracle answer), the pinned
Hypothesis and the NumPy version."""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
from pathlib import Path

import hypothesis
import numpy as np

from conform.generators._case import Case
from conform.spec import OpSpec


def cache_dir() -> Path:
    """Where conform keeps persistent caches: ``$CONFORM_CACHE_DIR`` or ``~/.cache/conform``."""
    configured = os.environ.get("CONFORM_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "conform"


@functools.lru_cache(maxsize=1)
def _generator_fingerprint() -> str:
    from conform import __version__

    digest = hashlib.sha256(f"{__version__}/{hypothesis.__version__}/{np.__version__}".encode())
    root = Path(__file__).parent.parent
    sources = sorted(Path(__file__).parent.glob("*.py")) + sorted((root / "oracles").glob("*.py"))
    sources.append(root / "spec" / "dtypes.py")
    for path in sources:
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def corpus_key(spec: OpSpec, dtype: str, *, count: int, seed: int) -> str:
    """The cache key of one op x dtype slice of a suite."""
    digest = hashlib.sha256(_generator_fingerprint().encode())
    digest.update(Path(spec.path).read_bytes() if spec.path else repr(spec).encode())
    digest.update(f"{spec.op}/{dtype}/{count}/{seed}".encode())
    return digest.hexdigest()[:32]


def load_or_generate(spec: OpSpec, dtype: str, *, count: int, seed: int, generate,
                     use_cache: bool = True) -> list[Case]:
    """The cases from the corpus cache, or ``generate()``'s, which are then stored."""
    if not use_cache:
        return generate()
    path = cache_dir() / "corpus" / f"{spec.op}.{dtype.replace('->', '-to-')}.{corpus_key(spec, dtype, count=count, seed=seed)}.pkl"
    if path.exists():
        try:
            with path.open("rb") as f:
                return pickle.load(f)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
            pass  # a damaged entry is regenerated below
    cases = generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    with temporary.open("wb") as f:
        pickle.dump(cases, f, protocol=pickle.HIGHEST_PROTOCOL)
    temporary.replace(path)
    return cases
