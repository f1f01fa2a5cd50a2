"""conform's persistent cache directory, the digest-checked files kept there, and the parsed
specs and manifests among them: reading and validating 80 YAML files (two YAML passes and a JSON
Schema walk each) costs every run ~0.4 s, and validating a manifest costs importing jsonschema
(~0.08 s).

Nothing in the cache is code or a pickle: a cache directory may come from elsewhere (a CI cache
restored from another branch), so every entry is data (JSON, raw array bytes) read without
executing anything, and carries a SHA-256 of its content that is checked when it is read. A
damaged entry is made again, with a one-line warning."""
from __future__ import annotations

import dataclasses
import datetime
import functools
import hashlib
import importlib.metadata
import json
import os
import sys
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


# ------------------------------------------------------------------ digest-checked entries

#: An entry starts with a 16-byte tag naming its format, then the SHA-256 of everything after
#: it; the content starts at byte 48, a multiple of 16 (arrays in it can be 16-byte aligned).
TAG_BYTES, CONTENT_START = 16, 48


class DamagedEntry(ValueError):
    """A cache entry whose tag, digest or content is not what conform writes."""


def write_entry(path: Path, tag: bytes, chunks) -> None:
    """Write ``chunks`` (bytes-like) to ``path`` as one entry tagged ``tag`` (16 bytes), with
    their SHA-256, atomically (another process sees the old entry or the new one, whole)."""
    if len(tag) != TAG_BYTES:
        raise ValueError(f"tag={tag!r} is not {TAG_BYTES} bytes")
    chunks = list(chunks)
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("wb") as f:
            f.write(tag + digest.digest())
            for chunk in chunks:
                f.write(chunk)
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)


def read_entry(path: Path, tag: bytes) -> bytearray:
    """The bytes of the entry at ``path`` (its content starts at :data:`CONTENT_START`), once
    its tag and digest are checked. Raises :class:`DamagedEntry` (or OSError)."""
    with open(path, "rb") as f:
        buffer = bytearray(os.fstat(f.fileno()).st_size)
        if f.readinto(buffer) != len(buffer):
            raise DamagedEntry("it is shorter than its size")
    if len(buffer) < CONTENT_START or buffer[:TAG_BYTES] != tag:
        raise DamagedEntry(f"it is not a {tag.decode('ascii', 'replace').strip()} entry")
    if hashlib.sha256(memoryview(buffer)[CONTENT_START:]).digest() != buffer[TAG_BYTES:CONTENT_START]:
        raise DamagedEntry("its content does not match its sha256")
    return buffer


def warn_damaged(path: Path, reason: Exception) -> None:
    """The one-line warning for a damaged (or unreadable: ``reason`` an OSError) cache entry,
    which is then made again."""
    if isinstance(reason, OSError):
        kind, reason = "unreadable", reason.strerror or reason
    else:
        kind = "damaged"
    print(f"conform: warning: ignoring {kind} cache entry {path} ({reason}); making it again",
          file=sys.stderr)


# ------------------------------------------------------------------------ parsed specs

@functools.lru_cache(maxsize=1)
def _loader_fingerprint() -> bytes:
    """What a parsed spec depends on besides its file: the bottom layer's, loader's, schema's,
    oracle and op module sources and the YAML parser's version."""
    root = Path(__file__).parent.parent
    digest = hashlib.sha256(importlib.metadata.version("pyyaml").encode())
    for path in [*sorted(Path(__file__).parent.glob("*.py")), *sorted((root / "spec").glob("*.py")),
                 *sorted((root / "oracles").glob("*.py")), *sorted((root / "ops").glob("*.py"))]:
        digest.update(path.read_bytes())
    return digest.digest()


def sources_fingerprint() -> bytes:
    """A SHA-256 of the sources of the bottom layer, the spec loader, the oracles and the op
    modules (and the YAML parser's version): what a cache of anything made from specs by op
    modules keys on."""
    return _loader_fingerprint()


def cached_loads(paths: list[Path], load, *, kind: str = "specs", sources: tuple = (),
                 context: str = "", types: tuple = ()) -> list:
    """``[load(path) for path in paths]``, kept on disk (in the cache directory's ``kind``
    folder) under a hash of the files' paths and contents, of the spec loader's and of
    ``sources`` (the other modules ``load`` depends on) and of ``context`` (anything else the
    result depends on). Only a list that loaded without error is kept, so a broken file is
    always reported by the loader itself. The list is kept as JSON (see :func:`to_data`):
    ``types`` are the dataclasses it may hold, the only classes a cached entry can make."""
    digest = hashlib.sha256(_loader_fingerprint() + context.encode())
    for path in (*sources, *paths):
        digest.update(f"{path}\0".encode() + file_digest(path))
    entry = cache_dir() / kind / f"{digest.hexdigest()[:32]}.json"
    by_name = {cls.__qualname__: cls for cls in types}
    try:
        buffer = read_entry(entry, _SPECS_TAG)
        return from_data(json.loads(memoryview(buffer)[CONTENT_START:].tobytes()), by_name)
    except FileNotFoundError:
        pass
    except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
        warn_damaged(entry, exc)
    loaded = [load(path) for path in paths]
    try:
        data = to_data(loaded, by_name)
        if repr(from_data(data, by_name)) != repr(loaded):
            raise TypeError("it does not survive JSON")
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        write_entry(entry, _SPECS_TAG, [text])
    except (OSError, TypeError, ValueError):
        pass   # a read-only cache directory, or a value JSON cannot keep: costs the time only
    return loaded


_SPECS_TAG = b"conform-data/1\n\n"


def to_data(value, types: dict):
    """``value`` as JSON data that :func:`from_data` turns back into an equal value: every
    mapping and tuple, date and dataclass of ``types`` (name -> class) becomes a one-key
    object naming what it was. Raises TypeError for anything else."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if type(value) is list:
        return [to_data(v, types) for v in value]
    if type(value) is tuple:
        return {"tuple": [to_data(v, types) for v in value]}
    if type(value) is dict:
        if not all(type(k) is str for k in value):
            raise TypeError("a mapping with keys other than strings")
        return {"dict": {k: to_data(v, types) for k, v in value.items()}}
    if type(value) is datetime.date:
        return {"date": value.isoformat()}
    name = type(value).__qualname__
    if dataclasses.is_dataclass(value) and types.get(name) is type(value):
        return {"dataclass": name, "fields": {f.name: to_data(getattr(value, f.name), types)
                                              for f in dataclasses.fields(value)}}
    raise TypeError(f"cannot keep a {name} as data")


def from_data(data, types: dict):
    """The value :func:`to_data` turned into ``data``; only the dataclasses of ``types`` are
    made (by their constructors, from their fields). Raises KeyError or TypeError on data
    :func:`to_data` does not write."""
    if type(data) is list:
        return [from_data(v, types) for v in data]
    if type(data) is not dict:
        return data
    (kind, payload), *rest = data.items()
    if kind == "tuple" and not rest:
        return tuple(from_data(v, types) for v in payload)
    if kind == "dict" and not rest:
        return {k: from_data(v, types) for k, v in payload.items()}
    if kind == "date" and not rest:
        return datetime.date.fromisoformat(payload)
    if kind == "dataclass" and [k for k, _ in rest] == ["fields"]:
        return types[payload](**{k: from_data(v, types) for k, v in rest[0][1].items()})
    raise TypeError(f"unknown data {kind!r}")
