"""The jax backend's persistent compilation cache stays under its size cap."""
from __future__ import annotations

import os

from conform.harness.backends.jax_backend import JaxBackend, prune_compile_cache


def _entry(folder, name: str, kib: int, age: int):
    path = folder / f"{name}-cache"
    path.write_bytes(bytes(kib << 10))
    os.utime(path, ns=(1_000_000_000 * age,) * 2)
    return path


def test_the_cache_drops_its_oldest_entries_beyond_the_cap_and_rescans_only_after_a_write(tmp_path):
    entries = [_entry(tmp_path, f"e{i}", 512, age=10 + i) for i in range(4)]   # 2 MiB, oldest first
    (tmp_path / "unrelated.txt").write_bytes(bytes(4 << 20))   # not an entry: neither counted nor deleted
    assert prune_compile_cache(tmp_path, max_mb=1.0) == entries[:2]
    assert sorted(tmp_path.glob("*-cache")) == entries[2:]
    assert (tmp_path / "unrelated.txt").exists()
    # nothing written since: the folder is not scanned, even under a lower cap
    assert prune_compile_cache(tmp_path, max_mb=0.0) == []
    newest = _entry(tmp_path, "e9", 512, age=99)
    assert prune_compile_cache(tmp_path, max_mb=0.6) == entries[2:]
    assert sorted(tmp_path.glob("*-cache")) == [newest]


def test_a_jax_backend_starts_by_pruning_its_compilation_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CONFORM_JAX_CACHE_MAX_MB", "1")
    folder = tmp_path / "jax"
    folder.mkdir()
    entries = [_entry(folder, f"e{i}", 512, age=10 + i) for i in range(3)]
    JaxBackend()
    assert sorted(folder.glob("*-cache")) == entries[1:]


def test_a_type_jax_lax_refuses_is_unsupported_with_jax_reason():
    """XLA's text allows abs on int4 (StableHLO: "tensor of signed integer ... type"); jax.lax
    refuses narrow integers: what :meth:`JaxBackend.run` computes under it is ``unsupported``
    with jax's reason, not an error; another TypeError stays one."""
    import jax
    import ml_dtypes
    import numpy as np
    import pytest

    from conform.harness.backends.base import Unsupported
    from conform.harness.backends.jax_backend import _type_refusals

    with pytest.raises(Unsupported, match="jax refuses the element type: abs does not accept"):
        with _type_refusals():
            jax.lax.abs(np.zeros(2, ml_dtypes.int4))
    with pytest.raises(TypeError), _type_refusals():
        jax.lax.abs("text")
