"""The on-disk corpus: generated cases kept per op, dtype, seed and budget, so that a repeated run
does not draw them again. The key covers everything the cases depend on: the conform version, the
spec file, the generator and oracle sources (each case keeps its oracle answer), the pinned
Hypothesis and the NumPy version."""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import pickle
from pathlib import Path

import numpy as np

from conform.generators._case import Case
from conform.spec import OpSpec
from conform.spec._cache import cache_dir


@functools.lru_cache(maxsize=1)
def _generator_fingerprint() -> str:
    from conform import __version__

    digest = hashlib.sha256(f"{__version__}/{importlib.metadata.version('hypothesis')}/{np.__version__}".encode())
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
            return _read(path)
        except (OSError, ValueError, pickle.UnpicklingError, EOFError, AttributeError):
            pass  # a damaged entry is regenerated below
    cases = generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    _write(temporary, cases)
    temporary.replace(path)
    return cases


# A corpus file: an 8-byte length, a pickle of the cases with every array replaced by its index
# in a table of (dtype, shape, offset), then the arrays' bytes, each at a 16-byte aligned offset.
# Loading a whole corpus this way is a third faster than pickling the cases as they are (which
# rebuilds each array through a Python-level NumPy hook), and the arrays are views of one buffer.
_ALIGN = 16


def _write(path: Path, cases: list[Case]) -> None:
    table, chunks, size = [], [], 0

    def stored(value):
        """An array's index in ``table``; any other value wrapped in a 1-tuple."""
        nonlocal size
        if type(value) is not np.ndarray:
            return (value,)
        data = np.ascontiguousarray(value).tobytes()
        table.append((value.dtype, value.shape, size))
        padding = -len(data) % _ALIGN
        chunks.append(data + bytes(padding))
        size += len(data) + padding
        return len(table) - 1

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
    header = pickle.dumps((rows, table), protocol=pickle.HIGHEST_PROTOCOL)
    start = 8 + len(header) + (-(8 + len(header)) % _ALIGN)
    with path.open("wb") as f:
        f.write(len(header).to_bytes(8, "little") + header + bytes(start - 8 - len(header)))
        for chunk in chunks:
            f.write(chunk)


def _read(path: Path) -> list[Case]:
    from conform.oracles.expectations import Expectation

    with path.open("rb") as f:
        buffer = bytearray(os.fstat(f.fileno()).st_size)
        if f.readinto(buffer) != len(buffer):
            raise EOFError(f"{path} is truncated")
    length = int.from_bytes(buffer[:8], "little")
    rows, table = pickle.loads(memoryview(buffer)[8:8 + length])
    start = 8 + length + (-(8 + length) % _ALIGN)
    arrays = [np.ndarray(shape, dtype, buffer, start + offset) for dtype, shape, offset in table]

    def value(stored):
        return arrays[stored] if type(stored) is int else stored[0]

    cases = []
    for (id_, op, dtype, input_dtypes, out_dtype, inputs, attrs, plan, seed, extra,
         answer) in rows:
        if answer is not None:
            expected, impl_mask, accumulation = answer
            answer = Expectation(value(expected), value(impl_mask),
                                 accumulation and (value(accumulation[0]), accumulation[1]))
        cases.append(Case(id_, op, dtype, input_dtypes, out_dtype, [value(x) for x in inputs],
                          attrs, plan, seed, extra, answer))
    return cases
