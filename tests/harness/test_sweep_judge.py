"""The sweep's chunk judge, made faster (element-wise figures computed block by block), gives
the summaries the judge gave before, bit for bit (tests/harness/sweep_judge_cases.py), with
blocks of any size."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conform.harness.judge import _elements
from conform.spec import load_specs
from tests.harness.sweep_judge_cases import PINNED, summaries


@pytest.mark.parametrize("block", [None, 1000])
def test_chunk_summaries_are_those_pinned_before(block, monkeypatch):
    if block:   # (blocks that cut the chunks and the ranges' special values at odd places)
        monkeypatch.setattr(_elements, "BLOCK", block)
    assert summaries(load_specs(None)) == json.loads(PINNED.read_text())


def test_blockwise_passes_what_is_not_per_element_whole():
    seen = []

    def function(a, pair):
        seen.append((a.size, pair[1]))
        return a * pair[0], a > 2

    doubled, above = _elements.blockwise(function, (np.arange(5.0), (np.full(5, 2.0), 7)), 5,
                                         block=2)
    assert doubled.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0] and above.dtype == bool
    assert seen == [(2, 7), (2, 7), (1, 7)]


def _patterns(*ranges) -> np.ndarray:
    """float32 values of the bit-pattern ranges ``(first, stop)``, one after the other."""
    return np.concatenate([np.arange(a, b, dtype=np.uint32) for a, b in ranges]).view(np.float32)


def test_region_counts_block_by_block_are_those_of_whole_masks(monkeypatch):
    # exp's regions (overflow, the subnormal results, underflow, a result near one around both
    # zeros), the infinities and NaNs, subnormals and both zeros, in blocks of 64 that start and
    # stop inside and outside them (the first two blocks: the least, then the largest, input on
    # a region's edge); some elements implementation-defined, some failing
    from conform.harness.run.sweep_chunk import region_bounds, region_counts

    monkeypatch.setattr(_elements, "BLOCK", 64)
    spec = load_specs(None)["exp"]
    x = _patterns((0x34800000, 0x34800040), (0xB4800000, 0xB4800040), (0x42B17100, 0x42B17300), (0x7F7FFFC0, 0x7F800100), (0xFF7FFFF0, 0xFF800010),
                  (0, 0x90), (0x807FFFA0, 0x80800060), (0x34800000 - 70, 0x34800000 + 90),
                  (0xC2AEAC00, 0xC2AEAD00), (0xC2CFF1A4, 0xC2CFF1C5), (0x3F800000, 0x3F800100))
    rng = np.random.default_rng(5)
    judged, failing = rng.random(x.size) > 0.01, rng.random(x.size) < 0.02
    errors = np.where(rng.random(x.size) < 0.001, np.inf, rng.random(x.size) * 3)
    magnitude = x.view(np.uint32) & 0x7FFFFFFF
    masks = {"implementation_defined": ~judged, "non_finite": magnitude >= 0x7F800000,
             "zero": magnitude == 0, "subnormal": (magnitude > 0) & (magnitude < 0x800000)}
    with np.errstate(invalid="ignore"):
        for name, low, high in region_bounds(spec, "float32"):
            inside = (x.astype(np.float64) >= low) & (x.astype(np.float64) <= high)
            masks[f"critical:{name}"] = masks.get(f"critical:{name}", False) | inside
    want = {name: [int(m.sum()), int((m & failing).sum()),
                   float(errors[m].max()) if m.any() else 0.0] for name, m in masks.items()}
    assert all(n for n, _, _ in want.values())   # (every region has inputs in the chunk)
    found = region_counts(spec, "float32", [x], judged, failing, errors)
    assert found == want and list(found) == list(want)


def test_ulp_buckets_are_the_first_edge_at_least_the_error():
    from conform.harness.judge.accuracy import ULP_EDGES, ULP_LABELS, ulp_buckets

    edges = np.array(ULP_EDGES[:-1])
    errors = np.concatenate([edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf),
                             [np.inf, np.inf, np.nan, 1e300, -1.0],
                             np.random.default_rng(2).random(300_000) * 20])
    finite = errors[np.isfinite(errors)]
    want = np.bincount(np.searchsorted(ULP_EDGES, finite, "left"), minlength=len(ULP_LABELS))
    want[-1] = np.isinf(errors).sum()
    assert ulp_buckets(errors).tolist() == want.tolist()


@pytest.mark.parametrize("values", [[1, 2, 3, 9], [9, 3, 2, 1], [1, 2, 2, 3], [3, 1, 3],
                                    [5, 4, 6], [7], [0x80000000, 0x80000001, 0x80000001]])
def test_repeats_with_and_without_its_sort(values):
    from conform.harness.judge.consistency import _repeats

    bits = np.array(values, np.uint32)
    assert _repeats(bits) == (np.unique(bits).size < bits.size)


def test_ratio_histogram_counts_the_bins_ratio_bins_gives():
    # blocks of small ratios (the edges above their largest are not compared), and blocks
    # holding edges, their neighbours, infinities, NaNs, negatives and subnormals
    from conform.harness.judge.compare import RATIO_BINS, ratio_bins, ratio_histogram

    edges = np.array(RATIO_BINS[:-1])
    rng = np.random.default_rng(7)
    special = np.concatenate([edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf),
                              [np.inf, -np.inf, np.nan, -0.0, 5e-324, -1.0, 1e300]])
    for ratios in (rng.random(1000) * 0.3, rng.random(1000) * 3, special, special[:0],
                   np.concatenate([rng.random(500) * 0.01, special])):
        want = np.bincount(ratio_bins(ratios), minlength=len(RATIO_BINS) - 1)
        assert ratio_histogram(ratios).tolist() == want.tolist()


def test_ulp_of_is_the_power_of_two_of_the_references_binade():
    # 2**(max(exponent, emin) - p + 1) of the float64 reference, emax for an infinity or NaN
    # (a finite reference beyond the format's range keeps its own binade), bit for bit
    import math

    from conform.dtypes import FLOAT_FORMATS
    from conform.harness.judge.compare import ulp_of

    rng = np.random.default_rng(11)
    bits = np.concatenate([rng.integers(-2 ** 63, 2 ** 63 - 1, 3000, dtype=np.int64),
                           np.array([0, 1, 1 << 52, 0x7FF << 52, (0x7FF << 52) + 1, -1], np.int64)])
    references = bits.view(np.float64)
    for dtype, fmt in FLOAT_FORMATS.items():
        want = [math.ldexp(1.0, (fmt.emax if not math.isfinite(x) else fmt.emin if x == 0
                                 else max(math.frexp(x)[1] - 1, fmt.emin)) - fmt.precision + 1)
                for x in references.tolist()]
        assert ulp_of(references, dtype).tolist() == want, dtype
