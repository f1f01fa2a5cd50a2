"""The corpus cache on disk: data only, checked against its sha256 when read; a damaged or
crafted corpus file is generated again (one warning line) and never run."""
from __future__ import annotations

import numpy as np
import orjson
import pytest

from conform.generators import Case, case_digest, generate_cases
from conform.generators._corpus import corpus_path
from conform.generators._corpus_format import TAG, encode, read, write
from conform.caches import CONTENT_START, DamagedEntry, write_entry
from conform.oracles.expectations import Expectation, expect
from tests.spec.test_cache import crafted_pickle


def _same(a, b) -> bool:
    """Cases and oracle answers equal, array by array (dtype, shape and bytes)."""
    def arrays_equal(x, y):
        return (type(x) is type(y) and x.dtype == y.dtype and np.shape(x) == np.shape(y)
                and np.asarray(x).tobytes() == np.asarray(y).tobytes())

    if [case_digest(c) for c in a] != [case_digest(c) for c in b]:
        return False
    for x, y in zip(a, b, strict=True):
        if len(x.expectation) != len(y.expectation):
            return False
        (ex,), (ey,) = x.expectation, y.expectation
        if not (arrays_equal(ex.expected, ey.expected) and (ex.impl_mask is None) == (ey.impl_mask is None)
                and (ex.accumulation is None) == (ey.accumulation is None)):
            return False
    return True


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORM_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_cached_slice_reads_back_as_generated_with_its_oracle_answers(specs, cache):
    spec = specs["dot_general"]   # accumulation figures and impl masks among the answers
    fresh = generate_cases(spec, "float32", count=12, seed=1, answer=expect)
    stored = generate_cases(spec, "float32", count=12, seed=1, use_cache=True, answer=expect)
    cached = generate_cases(spec, "float32", count=12, seed=1, use_cache=True, answer=expect)
    assert _same(fresh, stored) and _same(fresh, cached)
    assert any(c.expectation[0].accumulation for c in cached)
    for x, y in zip(fresh, cached):
        if x.expectation[0].accumulation:
            assert y.expectation[0].accumulation[1] == x.expectation[0].accumulation[1]
            assert type(y.expectation[0].accumulation[1]) is int


@pytest.mark.parametrize("damage", ["pickle", "flipped byte", "truncated", "empty"])
def test_a_damaged_or_crafted_corpus_file_is_generated_again_and_never_run(specs, cache, capsys,
                                                                         tmp_path, damage):
    spec = specs["add"]
    fresh = generate_cases(spec, "float32", count=6, seed=2, use_cache=True, answer=expect)
    path = corpus_path(spec, "float32", count=6, seed=2)
    data = path.read_bytes()
    sentinel = tmp_path / "ran"
    path.write_bytes({"pickle": crafted_pickle(sentinel),
                      "flipped byte": data[:-20] + bytes([data[-20] ^ 4]) + data[-19:],
                      "truncated": data[:len(data) // 2], "empty": b""}[damage])
    again = generate_cases(spec, "float32", count=6, seed=2, use_cache=True, answer=expect)
    assert _same(fresh, again) and not sentinel.exists()
    [warning] = capsys.readouterr().err.splitlines()
    assert warning.startswith(f"conform: warning: ignoring damaged cache entry {path} (")
    assert path.read_bytes() == data   # made again, as it was
    assert _same(fresh, generate_cases(spec, "float32", count=6, seed=2, use_cache=True, answer=expect))
    assert capsys.readouterr().err == ""


def _rewrite_header(path, change) -> None:
    """Rewrite a corpus file's header with ``change`` applied, with a valid digest (as a
    forger with write access to the cache would)."""
    content = path.read_bytes()[CONTENT_START:]
    length = int.from_bytes(content[:8], "little")
    header = orjson.loads(content[8:8 + length])
    change(header)
    text = orjson.dumps(header)
    blocks = content[8 + length + (-(8 + length) % 16):]
    write_entry(path, TAG, [len(text).to_bytes(8, "little"), text, bytes(-(8 + len(text)) % 16),
                            blocks])


@pytest.mark.parametrize("change", [
    lambda h: h["blocks"][0].__setitem__(0, "O"),            # an object dtype
    lambda h: h["blocks"][0].__setitem__(3, 10 ** 6),        # rows beyond the file
    lambda h: h["cases"]["inputs"].append([0]),              # columns of different lengths
    lambda h: h["cases"].pop("plan"),
], ids=["object dtype", "beyond the file", "ragged", "missing column"])
def test_a_corpus_file_with_a_valid_digest_but_a_malformed_header_is_refused(specs, cache, change):
    spec = specs["add"]
    generate_cases(spec, "float32", count=4, seed=2, use_cache=True, answer=expect)
    path = corpus_path(spec, "float32", count=4, seed=2)
    _rewrite_header(path, lambda h: h["blocks"].sort(key=lambda b: b[0] == "float32"))
    read(path)   # still a valid file: the header may be laid out differently
    _rewrite_header(path, change)
    with pytest.raises(DamagedEntry):
        read(path)


def test_attrs_keep_their_types_and_what_cannot_be_kept_is_drawn_every_run(specs, cache, capsys):
    from conform.generators._corpus import load_or_generate

    case = generate_cases(specs["add"], "float32", count=1, seed=0, answer=expect)[0]
    case.attrs = {"window": (1, (2, 3)), "pads": [[0, 1], (2,)], "alpha": 0.1, "name": "x"}
    case.input_dtypes = ("float32", "float32")
    write(cache / "kept", [case])
    [back] = read(cache / "kept")
    assert repr((back.attrs, back.input_dtypes)) == repr((case.attrs, case.input_dtypes))
    for attrs, message in (({"alpha": float("nan")}, "JSON does not keep exactly"),
                           ({"alpha": np.float32(1)}, "cannot keep a float32 as data")):
        case.attrs = attrs
        with pytest.raises(TypeError, match=message):
            encode([case])
        kept = load_or_generate(specs["add"], "float32", count=1, seed=5, generate=lambda: [case])
        assert kept == [case] and not corpus_path(specs["add"], "float32", count=1, seed=5).exists()
        [warning] = capsys.readouterr().err.splitlines()
        assert warning.startswith("conform: warning: the cases of add float32 are not kept in "
                                  "the corpus cache (")


def test_a_fixed_width_text_array_reads_back(cache):
    """An oracle answer of fixed-width text (``<U32``: NumPy names it ``str1024``, a name it
    cannot read back) is kept by its ``str``: onnx_one_hot's string slice was made again on
    every warm run."""
    text = np.array(["a", "bc"], dtype="<U32")
    case = Case(id="t.string.0", op="t", dtype="string", input_dtypes=("int64",),
                out_dtype="string", inputs=[np.array([0, 1])], attrs={}, plan="test", seed=0,
                expectation=[Expectation(text, None, None)])
    write(cache / "text", [case])
    [back] = read(cache / "text")
    assert back.expectation[0].expected.dtype == text.dtype
    assert back.expectation[0].expected.tolist() == ["a", "bc"]
