"""Cheaper cold generation gives the same cases and answers: each shortcut against the way it
replaced, on the same seeds (the whole corpus was compared digest for digest when they landed)."""
from __future__ import annotations

import math
import random

import numpy as np
from hypothesis import strategies as st
from hypothesis.strategies._internal.strategies import FilteredStrategy

from conform.generators import _drawing
from conform.generators._values import strings
from conform.generators.kit import unwrapped
from conform.dtypes import STRING_ALPHABET, dtype_name
from conform.oracles.expectations import expect


def _filtered():
    """A filtered shape strategy made as kit.shape makes its own (a list strategy unwrapped)."""
    return unwrapped(st.lists(st.integers(1, 6), max_size=4)).map(tuple).filter(
        lambda s: math.prod(s) <= 40)


def _draws(validate_once: bool) -> list:
    strategy, rng = _filtered(), random.Random(5)
    with _drawing._without_local_constants():
        if not validate_once:
            del FilteredStrategy.validate   # Hypothesis's own: validated at every draw
        try:
            return [_drawing._draw(strategy, rng) for _ in range(40)]
        finally:
            FilteredStrategy.validate = _drawing._validate_once


def test_a_filtered_strategy_validated_once_draws_what_it_drew_validated_every_time():
    assert _draws(validate_once=True) == _draws(validate_once=False)
    assert "validate" not in vars(FilteredStrategy)   # the patch holds only while drawing


def test_a_filtered_strategy_is_validated_once_while_drawing(monkeypatch):
    calls = []
    original = FilteredStrategy.do_validate
    monkeypatch.setattr(FilteredStrategy, "do_validate",
                        lambda self: (calls.append(1), original(self))[1])
    strategy, rng = _filtered(), random.Random(0)
    with _drawing._without_local_constants():
        [_drawing._draw(strategy, rng) for _ in range(10)]
    assert len(calls) == 1


def _strings_one_by_one(rng, shape, alphabet=STRING_ALPHABET, max_length=7):
    """The way :func:`strings` made each string before: a join per string."""
    size = int(np.prod(shape, dtype=np.int64))
    lengths = rng.integers(0, max_length, size=size, endpoint=True)
    picks = rng.integers(0, len(alphabet), size=int(lengths.sum())).tolist()
    ends = np.cumsum(lengths).tolist()
    return ["".join(alphabet[i] for i in picks[a:b]) for a, b in zip([0] + ends, ends)]


def test_strings_are_the_strings_joined_one_by_one():
    for seed, shape in [(0, (3, 5)), (1, ()), (2, (0,)), (3, (256,))]:
        made = strings(np.random.default_rng(seed), shape)
        assert made.shape == shape
        assert made.ravel().tolist() == _strings_one_by_one(np.random.default_rng(seed), shape)


def test_dtype_name_is_numpys_name():
    import ml_dtypes

    for dtype in (np.float32, np.int8, np.bool_, object, ml_dtypes.bfloat16, "<U3", ">f8"):
        assert dtype_name(np.dtype(dtype)) == str(np.dtype(dtype))


def test_an_lstm_answer_asked_once_per_case_is_the_answer_asked_per_output(specs, monkeypatch):
    """The bound hook and the oracle's open elements, asked once per case for all three
    outputs, give each output what a call of its own gives."""
    from conform.generators import generate_cases
    from conform.oracles import expectations

    spec = specs["onnx_lstm"]
    cases = [c for c in generate_cases(spec, "float32", count=1, seed=3)
             if not c.extra.get("must_reject")][:2]
    shared = [expect(spec, c) for c in cases]

    class AskedEveryTime(expectations._AskedOnce):   # the answers computed anew for each ask
        def bound(self, *args):
            self.bounds.clear()
            return super().bound(*args)

        def outputs_with(self, xs, more):
            self.asked.clear()
            return super().outputs_with(xs, more)

    monkeypatch.setattr(expectations, "_AskedOnce", AskedEveryTime)
    for case, answer in zip(cases, shared):
        for once, anew in zip(answer, expect(spec, case)):
            for a, b in zip(once, anew):
                a, b = (a[0], b[0]) if isinstance(a, tuple) else (a, b)
                assert (a is None) == (b is None)
                if a is not None:
                    assert np.array_equal(a, b, equal_nan=True) and a.dtype == b.dtype
