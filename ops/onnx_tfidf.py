"""ONNX TfIdfVectorizer (opset 9): counts of the pool's n-grams in a [C] or [N, C] input of
strings or integers, weighted by mode, as float32. Judged exactly: a count is an integer, and a
weighted count one product of a float32 weight and a count (the correctly rounded product is
the float64 product rounded once to float32).

The oracle follows the text (``onnx.defs.get_schema("TfIdfVectorizer").doc``):

* the pool (``pool_strings`` or ``pool_int64s``) holds the 1-grams, then the 2-grams, ... ;
  ``ngram_counts[k]`` is the pool position where the (k+1)-grams start ('the first index
  (zero-based) of 1-gram/2-gram/3-gram in pool'), and the i-th n-gram of the pool is counted
  into output coordinate ``ngram_indexes[i]``;
* an n-gram of X with skip count s takes the items at ``j, j + (s+1), ..., j + (n-1)(s+1)``
  ('If the number of skips is 2, we should skip two tokens'); every length from
  ``min_gram_length`` to ``max_gram_length`` and every skip count from 0 to
  ``max_skip_count`` is considered ('we may consider all skips up to S'). The text indexes an
  n-gram by its items' positions ('indexed by [0, 3] and [1, 4]'): an n-gram found is a set of
  positions, so a 1-gram, whose positions are the same at every skip count, is found once;
* a row of a [N, C] input is its own sequence ('the i-th row is the n-gram representation of the
  i-th input row'); the output has ``max(ngram_indexes) + 1`` coordinates, those no n-gram maps
  to stay 0;
* ``mode``: TF gives the counts, IDF 'all the counts larger than 1 ... truncated to 1' times
  the n-gram's weight, TFIDF the counts times the weights (``weights`` default: all ones).
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op


def pool_ngrams(pool, ngram_counts) -> dict:
    """``{n: [n-gram tuples in pool order]}`` from the flat pool and the start of each length's
    collection (``ngram_counts``)."""
    pool = list(pool)
    starts = list(ngram_counts) + [len(pool)]
    found = {}
    for k in range(len(ngram_counts)):
        items = pool[starts[k]:starts[k + 1]]
        n = k + 1
        found[n] = [tuple(items[i:i + n]) for i in range(0, len(items) - n + 1, n)]
    return found


def ngram_positions(length: int, n: int, skips: int) -> np.ndarray:
    """Every distinct position tuple of an n-gram with skip counts 0 to ``skips`` in a row of
    ``length`` items, one per row of the result (a 1-gram's once)."""
    rows = []
    for step in range(1, (skips if n > 1 else 0) + 2):
        starts = np.arange(max(length - (n - 1) * step, 0))
        rows.append(starts[:, None] + step * np.arange(n)[None, :])
    return np.concatenate(rows) if rows else np.zeros((0, n), np.int64)


def ngram_counts_of(row, grams: dict, attrs) -> dict:
    """``{(n, i): count}``: how often the i-th pool n-gram is found in ``row``."""
    counts = {}
    items = row.tolist()
    for n in range(attrs["min_gram_length"], attrs["max_gram_length"] + 1):
        index = {gram: i for i, gram in enumerate(grams.get(n, []))}
        for positions in ngram_positions(len(items), n, attrs["max_skip_count"]).tolist():
            key = index.get(tuple(items[p] for p in positions))
            if key is not None:
                counts[(n, key)] = counts.get((n, key), 0) + 1
    return counts


def _feed(inputs, attrs, index):
    """Every output coordinate of a row counts n-grams of that row."""
    x = inputs[0]
    return [x if x.ndim == 1 else x[index[0]]]


def onnx_tfidf(case, graph):
    """One TfIdfVectorizer node with the case's attributes (weights left out where unset)."""
    attrs = {k: v for k, v in case.attrs.items() if v is not None}
    graph.node(graph.op_type, [graph.inputs[0]], **attrs)


def draw_tfidf(draw, kit, spec, dtype):
    """A [C] or [N, C] input (C from 0 to 8, N from 1 to 3), a vocabulary of 2 to 4 items (strings
    of conform's alphabet, or integers: small ones and the type's extremes), a pool of distinct
    n-grams of lengths 1 to 3 over it (some lengths with none), their output coordinates
    (distinct, with gaps), n-gram lengths and skip counts, the mode and the weights (unset, or
    float32 values: zeros, fractions, negatives, one whose double overflows)."""
    st = kit.st
    items = kit.text(min_size=1, max_size=3) if dtype == "string" else st.sampled_from(
        [-3, -1, 0, 1, 2, 7, -2**31, 2**31 - 1])
    vocabulary = draw(st.lists(items, min_size=2, max_size=4, unique=True))
    longest = draw(st.integers(1, 3))
    pool, starts, count = [], [], 0
    for n in range(1, longest + 1):
        starts.append(len(pool))
        grams = draw(st.lists(st.tuples(*[st.sampled_from(vocabulary)] * n), max_size=3,
                              min_size=int(n == longest), unique=True))
        pool += [item for gram in grams for item in gram]
        count += len(grams)
    low = draw(st.integers(1, longest))
    coordinates = draw(st.permutations(range(count + draw(st.integers(0, 2)))))
    attrs = {"mode": draw(st.sampled_from(["TF", "IDF", "TFIDF"])),
             "min_gram_length": low, "max_gram_length": draw(st.integers(low, longest)),
             "max_skip_count": draw(st.integers(0, 2)),
             "ngram_counts": starts, "ngram_indexes": list(coordinates[:count]),
             "pool_strings" if dtype == "string" else "pool_int64s": pool,
             "weights": draw(st.one_of(st.none(), st.lists(st.sampled_from(
                 [1.0, 0.0, 0.5, 2.5, -1.25, 0.1, 3.0e38]), min_size=count, max_size=count)))}
    rows = draw(st.integers(1, 3))
    length = draw(st.integers(0, 8))
    shape = draw(st.sampled_from([(length,), (rows, length)]))
    return kit.Signature((dtype,), (shape,), attrs, "float32")


def values_tfidf(rng, inputs, attrs):
    """X's items drawn from the pool's items and one item outside it."""
    pool = attrs.get("pool_strings") or attrs.get("pool_int64s")
    x = inputs[0]
    outside = "\u00a0" if x.dtype == object else 5
    choices = list(dict.fromkeys(pool)) + [outside]
    picks = rng.integers(0, len(choices), size=x.shape)
    filled = np.empty(x.shape, object) if x.dtype == object else np.empty(x.shape, x.dtype)
    filled[...] = np.array(choices, object)[picks] if x.dtype == object else \
        np.array(choices, np.int64)[picks].astype(x.dtype)
    return [filled]


@op("onnx_tfidf_vectorizer", version=1, draw=draw_tfidf, values=values_tfidf, onnx=onnx_tfidf,
    feeding=_feed)
def oracle_onnx_tfidf_vectorizer(x, *, mode, min_gram_length, max_gram_length, max_skip_count,
                                 ngram_counts, ngram_indexes, pool_strings=None,
                                 pool_int64s=None, weights=None):
    """TfIdfVectorizer: per row, ``Y[ngram_indexes[i]]`` is how often the pool's i-th n-gram is
    found (TF), that count truncated to 1 times ``weights[i]`` (IDF), or the count times
    ``weights[i]`` (TFIDF); see the module's docstring for how n-grams are found."""
    pool = pool_strings if pool_strings is not None else pool_int64s
    grams = pool_ngrams(pool, ngram_counts)
    order = [(n, i) for n in sorted(grams) for i in range(len(grams[n]))]
    weight = np.ones(len(order)) if weights is None else \
        np.asarray(weights, np.float32).astype(np.float64)   # (a FLOATS attribute: float32)
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    attrs = {"min_gram_length": min_gram_length, "max_gram_length": max_gram_length,
             "max_skip_count": max_skip_count}
    out = np.zeros((rows.shape[0], max(ngram_indexes) + 1))
    for r, row in enumerate(rows):
        found = ngram_counts_of(row, grams, attrs)
        counts = np.array([found.get(key, 0) for key in order], np.float64)
        if mode == "IDF":
            counts = np.minimum(counts, 1) * weight
        elif mode == "TFIDF":
            counts = counts * weight
        out[r, np.asarray(ngram_indexes[:len(order)], np.int64)] = counts
    return (out[0] if x.ndim == 1 else out,)
