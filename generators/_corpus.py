"""The on-disk corpus: generated cases kept per op, dtype, seed and budget, so that a repeated run
does not draw them again. The key covers everything the cases depend on: the conform version, the
spec file, the generator and oracle sources (a run's cases keep the oracle answers its
expectation stage gave them: see ``generate_cases``'s ``answer``), the ONNX opset of the run (an
ONNX operator's oracle follows the text in force there: ops/onnx_cast.py), the pinned
Hypothesis and the NumPy version."""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import sys
from pathlib import Path

import numpy as np

from conform.generators import _corpus_format
from conform.generators._case import Case
from conform.spec import OpSpec
from conform.model_formats import onnx_opset
from conform.caches import DamagedEntry, cache_dir, file_digest, prune_folder, warn_damaged


@functools.lru_cache(maxsize=1)
def _generator_fingerprint() -> str:
    from conform import __version__

    digest = hashlib.sha256(f"{__version__}/{importlib.metadata.version('hypothesis')}/{np.__version__}".encode())
    root = Path(__file__).parent.parent
    sources = [*sorted(Path(__file__).parent.glob("*.py")), *sorted((root / "oracles").glob("*.py")),
               *sorted((root / "ops").glob("*.py"))]
    sources += [root / "spec" / "dtypes.py", root / "spec" / "critical.py"]
    for path in sources:
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def corpus_key(spec: OpSpec, dtype: str, *, count: int, seed: int) -> str:
    """The cache key of one op x dtype slice of a suite."""
    digest = hashlib.sha256(_generator_fingerprint().encode())
    digest.update(file_digest(spec.path) if spec.path else repr(spec).encode())
    if spec.definition.uses_catalog:   # its cases are made of other ops
        digest.update(_catalog_digest().encode())
    digest.update(f"{spec.op}/{dtype}/{count}/{seed}/{onnx_opset()}".encode())
    return digest.hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def _catalog_digest() -> str:
    """A digest of every spec file of the suite (what ``kit.catalog()`` reads)."""
    from conform.spec import load_specs

    digest = hashlib.sha256()
    for spec in load_specs().values():
        digest.update(file_digest(spec.path) if spec.path else repr(spec).encode())
    return digest.hexdigest()


def corpus_path(spec: OpSpec, dtype: str, *, count: int, seed: int,
                answered: bool = True) -> Path:
    """Where the cache keeps one op x dtype slice of a suite (with or without its cases'
    oracle answers)."""
    key = corpus_key(spec, dtype, count=count, seed=seed) + ("" if answered else "-drawn")
    return cache_dir() / "corpus" / f"{spec.op}.{dtype.replace('->', '-to-')}.{key}{SUFFIX}"


#: Corpus files end so (files of the pickled format before it, ``*.pkl``, are never read).
SUFFIX = ".corpus"


def note_written(paths) -> None:
    """Count corpus files another process wrote for this one as this process's own (pruning
    spares them, and runs after a write)."""
    for path in paths:
        _used.add(path)
        _wrote.append(path)


#: The corpus files this process read or wrote (pruning spares them), and whether it wrote any.
_used: set = set()
_wrote: list = []

#: The corpus folder's size cap, in MiB ($CONFORM_CORPUS_MAX_MB): a full suite at
#: --max-examples 300 takes ~50 MiB, and every change to conform or to a spec file starts new files.
DEFAULT_MAX_MB = 1024


def load_or_generate(spec: OpSpec, dtype: str, *, count: int, seed: int, generate,
                     use_cache: bool = True, answered: bool = True) -> list[Case]:
    """The cases from the corpus cache, or ``generate()``'s, which are then stored. A damaged
    corpus file (its digest or format is wrong) is generated again, with a one-line warning."""
    if not use_cache:
        return generate()
    path = corpus_path(spec, dtype, count=count, seed=seed, answered=answered)
    try:
        cases = _corpus_format.read(path)
    except FileNotFoundError:
        pass
    except (OSError, DamagedEntry) as exc:
        warn_damaged(path, exc)
    else:
        _used.add(path)
        try:
            os.utime(path)   # recently used: pruned last
        except OSError:
            pass
        return cases
    cases = generate()
    try:
        _corpus_format.write(path, cases)
    except TypeError as exc:   # a value the format cannot keep exactly: drawn every run
        print(f"conform: warning: the cases of {spec.op} {dtype} are not kept in the corpus "
              f"cache ({exc}); they are drawn on every run", file=sys.stderr)
        return cases
    _used.add(path)
    _wrote.append(path)
    return cases


def prune_corpus(max_mb: float | None = None) -> list[Path]:
    """If this process wrote corpus files: delete the least recently used files of the corpus
    folder until it takes at most ``max_mb`` MiB (default ``$CONFORM_CORPUS_MAX_MB`` or
    :data:`DEFAULT_MAX_MB`), sparing the files this process used. Returns the deleted paths."""
    if not _wrote:
        return []
    if max_mb is None:
        max_mb = float(os.environ.get("CONFORM_CORPUS_MAX_MB") or DEFAULT_MAX_MB)
    folder = cache_dir() / "corpus"
    for stale in folder.glob("*.pkl"):   # the former, pickled format: never read again
        stale.unlink(missing_ok=True)
    return prune_folder(folder, f"*{SUFFIX}", max_mb, spare=_used)
