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
