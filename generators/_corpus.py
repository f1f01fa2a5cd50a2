"""The on-disk corpus: generated cases kept per op, dtype, seed and budget, so that a repeated run
does not draw them again. The key covers everything the cases depend on: the conform version, the
spec file, the generator and oracle sources (each case keeps its oracle answer), the pinned
Hypothesis and the NumPy version."""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import math
import os
import pickle
from pathlib import Path

import numpy as np

from conform.generators._case import Case
from conform.spec import OpSpec
from conform.spec._cache import cache_dir, file_digest, prune_folder


@functools.lru_cache(maxsize=1)
def _generator_fingerprint() -> str:
    from conform import __version__

    digest = hashlib.sha256(f"{__version__}/{importlib.metadata.version('hypothesis')}/{np.__version__}".encode())
    root = Path(__file__).parent.parent
    sources = [*sorted(Path(__file__).parent.glob("*.py")), *sorted((root / "oracles").glob("*.py")),
               *sorted((root / "ops").glob("*.py"))]
    sources.append(root / "spec" / "dtypes.py")
    for path in sources:
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def corpus_key(spec: OpSpec, dtype: str, *, count: int, seed: int) -> str:
    """The cache key of one op x dtype slice of a suite."""
    digest = hashlib.sha256(_generator_fingerprint().encode())
    digest.update(file_digest(spec.path) if spec.path else repr(spec).encode())
    digest.update(f"{spec.op}/{dtype}/{count}/{seed}".encode())
    return digest.hexdigest()[:32]


def corpus_path(spec: OpSpec, dtype: str, *, count: int, seed: int) -> Path:
    """Where the cache keeps one op x dtype slice of a suite."""
    key = corpus_key(spec, dtype, count=count, seed=seed)
    return cache_dir() / "corpus" / f"{spec.op}.{dtype.replace('->', '-to-')}.{key}.pkl"


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
                     use_cache: bool = True) -> list[Case]:
    """The cases from the corpus cache, or ``generate()``'s, which are then stored."""
    if not use_cache:
        return generate()
    path = corpus_path(spec, dtype, count=count, seed=seed)
    if path.exists():
        try:
            cases = _read(path)
        except (OSError, ValueError, pickle.UnpicklingError, EOFError, AttributeError):
            pass  # a damaged entry is regenerated below
        else:
            _used.add(path)
            try:
                os.utime(path)   # recently used: pruned last
            except OSError:
                pass
            return cases
    cases = generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    _write(temporary, cases)
    temporary.replace(path)
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
    return prune_folder(cache_dir() / "corpus", "*.pkl", max_mb, spare=_used)


# A corpus file: an 8-byte length, a pickle of the cases with every array replaced by its index,
# and of a table of blocks, then the blocks' bytes. A block holds the arrays of one dtype and
# shape, one per row: its rows are read back as views in one step (a fifth of the time of making
# each array on its own). Loading a whole corpus this way is over a third faster than pickling
# the cases as they are (which rebuilds each array through a Python-level NumPy hook), and every
# array is a view of one buffer.
#
# Every array starts at a 16-byte aligned address, as NumPy's own allocations do: onnxruntime's
# float reductions give results that differ in the last bit with the input's alignment (61 of 300
# reduce_sum float32 cases, inputs shifted by 4, 8 or 12 bytes), and a cached case must run
# exactly as the freshly generated one did.
_ALIGN = 16


def _row_bytes(dtype: np.dtype, shape: tuple) -> int:
    """Bytes from one row of a block to the next: an array's size rounded up to ``_ALIGN``."""
    size = dtype.itemsize * math.prod(shape)
    return size + (-size % _ALIGN)


def _write(path: Path, cases: list[Case]) -> None:
    arrays: list = []
    blocks: dict = {}   # (dtype, shape) -> indices in ``arrays``

    def stored(value):
        """An array's index in ``arrays``; any other value wrapped in a 1-tuple."""
        if type(value) is not np.ndarray:
            return (value,)
        blocks.setdefault((value.dtype, value.shape), []).append(len(arrays))
        arrays.append(value)
        return len(arrays) - 1

    rows = []
    for case in cases:
        answer = case.expectation
        if answer is not None:
            accumulation = answer.accumulation and (stored(answer.accumulation[0]),
                                                    answer.accumulation[1])
            answer = (stored(answer.expected), stored(answer.impl_mask), accumulation)
        rows.append((case.id, case.op, case.dtype, case.input_dtypes, case.out_dtype,
                     [stored(x) for x in case.inputs], case.attrs, case.plan, case.seed, case.extra,
                     answer))
    table, chunks, size = [], [], 0
    for (dtype, shape), members in blocks.items():
        padding = bytes(_row_bytes(dtype, shape) - dtype.itemsize * math.prod(shape))
        chunks.append(b"".join(np.ascontiguousarray(arrays[i]).tobytes() + padding for i in members))
        table.append((dtype, shape, size, members))
        size += len(chunks[-1])
    header = pickle.dumps((rows, table, len(arrays)), protocol=pickle.HIGHEST_PROTOCOL)
    start = 8 + len(header) + (-(8 + len(header)) % _ALIGN)
    with path.open("wb") as f:
        f.write(len(header).to_bytes(8, "little") + header + bytes(start - 8 - len(header)))
        for chunk in chunks:
            f.write(chunk)


def _c_strides(dtype: np.dtype, shape: tuple) -> tuple:
    strides, step = [], dtype.itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _read(path: Path) -> list[Case]:
    from conform.oracles.expectations import Expectation

    with path.open("rb") as f:
        buffer = bytearray(os.fstat(f.fileno()).st_size)
        if f.readinto(buffer) != len(buffer):
            raise EOFError(f"{path} is truncated")
    length = int.from_bytes(buffer[:8], "little")
    rows, table, count = pickle.loads(memoryview(buffer)[8:8 + length])
    start = 8 + length + (-(8 + length) % _ALIGN)
    arrays: list = [None] * count
    for dtype, shape, offset, members in table:
        row = _row_bytes(dtype, shape)
        if shape:
            views = list(np.ndarray((len(members), *shape), dtype, buffer, start + offset,
                                    (row, *_c_strides(dtype, shape))))
        else:   # rows of a 1-d block would be NumPy scalars, not 0-d arrays
            views = [np.ndarray((), dtype, buffer, start + offset + k * row)
                     for k in range(len(members))]
        for index, view in zip(members, views):
            arrays[index] = view

    def value(stored):
        return arrays[stored] if type(stored) is int else stored[0]

    cases = []
    for (id_, op, dtype, input_dtypes, out_dtype, inputs, attrs, plan, seed, extra,
         answer) in rows:
        if answer is not None:
            expected, impl_mask, accumulation = answer
            answer = Expectation(value(expected), value(impl_mask),
                                 accumulation and (value(accumulation[0]), accumulation[1]))
        cases.append(Case(id_, op, dtype, input_dtypes, out_dtype,
                          [arrays[x] if type(x) is int else x[0] for x in inputs],
                          attrs, plan, seed, extra, answer))
    return cases
