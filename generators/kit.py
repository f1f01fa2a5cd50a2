"""What an op module's draw hook works with (``kit`` in ``draw(draw, kit, spec, dtype)``); the
generic drawer (:mod:`._generic`) uses it too.

A hook draws with Hypothesis's ``draw`` and these helpers: :data:`st` (Hypothesis strategies),
:func:`shape` (bounded by ``CONFORM_MAX_ARRAY_SIZE`` elements), :class:`Signature`,
:class:`Boundary` and :class:`MustReject` (a ``boundaries`` and an ``invalid`` hook's cases),
:func:`fixed_attrs`, :func:`attributes`, :func:`out_dtype`, :data:`MAX_ARRAY_SIZE`, :func:`text`
(strings of conform's string alphabet, for string attributes), and for
optional and 0-d inputs :func:`absent_inputs`, :func:`with_absent` and :func:`scalar_inputs`.
Inside :func:`designing` (a covering design's row, :mod:`._covering`), :func:`attributes`,
:func:`absent_inputs`, :func:`choose` and :func:`choose_int` give the row's classes instead of
drawing them: a hook that draws an attribute itself calls :func:`choose` (or
:func:`choose_int`) with its name, so that the design can fix it.
Imported only when a corpus is
drawn: a run from the corpus cache does not load Hypothesis.
"""
from __future__ import annotations

import contextlib
import functools
import math
import os

from hypothesis import strategies as _strategies
from hypothesis.control import current_build_context

from conform.generators._signature import Boundary, MustReject, Signature, fixed_attrs

from conform.dtypes import STRING_ALPHABET, STRING_EDGES, result_dtype
from conform.ops.optional_inputs import ABSENT
from conform.spec import ABSENT as _ABSENT_CLASS, DEFAULT_RANKS, INPUT_PREFIX, same_class

__all__ = ["MAX_ARRAY_SIZE", "Boundary", "MustReject", "Signature", "absent_inputs", "attributes",
           "catalog", "choose", "choose_int", "designed", "designing", "fixed_attrs", "out_dtype", "preferring", "ranks", "scalar_inputs", "shape",
           "st", "text", "unwrapped", "with_absent"]

MAX_ARRAY_SIZE = int(os.environ.get("CONFORM_MAX_ARRAY_SIZE", "256"))


class _Strategies:
    """Hypothesis's ``strategies`` module, each strategy made from hashable arguments made once.

    A draw hook makes its strategies as it draws (``draw(st.integers(0, rank - 1))``); Hypothesis
    builds and validates each new one on its first draw (~50 us), which was a third of drawing
    a corpus. A strategy is an immutable description, so the one made before serves: the
    choices drawn are the same (the corpus digest test pins that). Arguments that cannot be
    hashed (a list) make a new strategy each time, as before."""

    def __init__(self, module):
        self._module = module
        self._made: dict = {}

    def __getattr__(self, name: str):
        factory = getattr(self._module, name)
        if not callable(factory) or isinstance(factory, type):
            return factory
        made = self._made

        @functools.wraps(factory)
        def make(*args, **kwargs):
            key = (name, _typed(args), _typed(tuple(kwargs.items())))   # 1 and 1.0 apart
            try:
                return made[key]
            except KeyError:
                found = made[key] = unwrapped(factory(*args, **kwargs))
                return found
            except TypeError:   # an unhashable argument
                return factory(*args, **kwargs)

        setattr(self, name, make)
        return make


def unwrapped(strategy):
    """``strategy`` without its lazy wrapper (``st.integers(0, 3)`` is a ``LazyStrategy`` whose
    every draw draws the strategy it wraps: one level of Hypothesis's bookkeeping per draw);
    the choices drawn are the same."""
    return getattr(strategy, "wrapped_strategy", strategy)


#: Hypothesis's strategies (see :class:`_Strategies`): what hooks draw with.
def _typed(value):
    """``value`` with the type of each element beside it, through tuples: equal keys for equal
    arguments of equal types only (``(0, 1)`` and ``(0.0, 1.0)`` are equal and hash alike)."""
    if type(value) is tuple:
        return tuple, tuple(map(_typed, value))
    return type(value), value


st = _Strategies(_strategies)


def shape(*, min_rank=0, max_rank=4, min_side=1, max_side=6):
    """Shapes of ``min_rank`` to ``max_rank`` sides in ``[min_side, max_side]``, at most
    MAX_ARRAY_SIZE elements; inside :func:`preferring`, one of the preferred shapes that fits
    these bounds (where one does) or, as Hypothesis chooses, any other."""
    bounds = {"min_rank": min_rank, "max_rank": max_rank, "min_side": min_side,
              "max_side": max_side}
    return _preferred_shapes(**bounds) if _PREFERRED else _shapes(**bounds)


@functools.lru_cache(maxsize=None)
def _preferred_shapes(*, min_rank, max_rank, min_side, max_side):
    """:func:`shape` inside :func:`preferring`, made once per bounds: the preferred set is read
    when it is drawn. Its choices are those of ``one_of(sampled_from(fits), shapes)`` (an index
    of the two branches, then an index of ``fits`` or the shape's own), or of ``shapes`` alone
    where no preferred shape fits; made per preferred set, those two strategies were new at
    nearly every node of a graph, each validated anew (and kept by :data:`st`'s cache)."""
    drawn = _shapes(min_rank=min_rank, max_rank=max_rank, min_side=min_side, max_side=max_side)

    def preferred(draw):
        fits = tuple(s for s in _PREFERRED[-1] if min_rank <= len(s) <= max_rank
                     and all(min_side <= side <= max_side for side in s)
                     and math.prod(s) <= MAX_ARRAY_SIZE)
        if fits and draw(_index(2)) == 0:
            return fits[draw(_index(len(fits)))]
        return draw(drawn)
    return unwrapped(_strategies.composite(preferred)())


@functools.lru_cache(maxsize=None)
def _index(n: int):
    """An index below ``n``, drawn as ``sampled_from`` draws one (a bare integer choice)."""
    return _strategies.sampled_from(range(n))


#: The shapes :func:`shape` prefers (a stack: :func:`preferring`'s innermost holds).
_PREFERRED: list = []


@contextlib.contextmanager
def preferring(shapes):
    """Within it, :func:`shape` draws one of ``shapes`` (a sequence of tuples) where one fits,
    as often as any other: what a graph generator draws a node with, so that the node takes
    values the graph already holds. Outside it (a suite's draws), :func:`shape` is unchanged."""
    _PREFERRED.append(tuple(sorted(set(map(tuple, shapes)))))
    try:
        yield
    finally:
        _PREFERRED.pop()


@functools.lru_cache(maxsize=None)
def _shapes(*, min_rank, max_rank, min_side, max_side):
    return _bounded(st.lists(st.integers(min_side, max_side), min_size=min_rank,
                             max_size=max_rank))


@_strategies.composite
def _bounded(draw, sides):
    """A tuple of ``sides`` with at most MAX_ARRAY_SIZE elements, drawn with the choices of
    ``sides.map(tuple).filter(...)`` (three tries, then the draw is invalid) without a filtered
    strategy: Hypothesis validates one again at each of its draws (its validation makes it
    anew, and tries to rewrite its predicate), a tenth of a graph's drawing."""
    for _ in range(3):
        drawn = tuple(draw(sides))
        if math.prod(drawn) <= MAX_ARRAY_SIZE:
            return drawn
    current_build_context().data.mark_invalid(f"no shape of at most {MAX_ARRAY_SIZE} elements")


@functools.lru_cache(maxsize=None)
def text(*, min_size=0, max_size=6, alphabet=STRING_ALPHABET):
    """Hypothesis text of ``min_size`` to ``max_size`` characters of ``alphabet`` (conform's
    string alphabet: ASCII, whitespace, case pairs such as 'ß'/'SS' and 'İ'/'ı', a combining
    mark, CJK, a non-BMP character), or one of the edge strings of that length
    (:data:`conform.dtypes.STRING_EDGES`): for string attributes (a separator, stopwords, a
    pool of n-grams)."""
    edges = [s for s in STRING_EDGES if min_size <= len(s) <= max_size
             and (alphabet == STRING_ALPHABET or set(s) <= set(alphabet))]
    drawn = st.text(st.sampled_from(alphabet), min_size=min_size, max_size=max_size)
    return st.one_of(st.sampled_from(edges), drawn) if edges else drawn


def ranks(spec, default_min=DEFAULT_RANKS[0], default_max=DEFAULT_RANKS[1]):
    """``(min_rank, max_rank)`` of the spec's signature, or the defaults."""
    sig = spec.signature
    return sig.get("min_rank", default_min), sig.get("max_rank", default_max)


def out_dtype(spec, dtype):
    """The result type of ``spec``'s op drawn in ``dtype`` (its ``output_dtype`` rule:
    :func:`conform.dtypes.result_dtype`)."""
    return result_dtype(spec.output_dtype, dtype)


#: The covering design's rows the signatures drawn inside :func:`designing` honour (a stack).
_DESIGN: list = []


@contextlib.contextmanager
def designing(row: dict):
    """Within it, :func:`attributes`, :func:`absent_inputs`, :func:`choose` and
    :func:`choose_int` give ``row``'s class for each factor it names (an attribute's value, or
    ``absent``/``present`` for ``input:<name>``) instead of drawing it."""
    _DESIGN.append(dict(row))
    try:
        yield
    finally:
        _DESIGN.pop()


def designed(name: str, default=None):
    """The class the covering design's row fixes for factor ``name`` (an attribute, or
    ``input:<name>``), else ``default``: for a hook that draws an attribute only where another
    attribute's value reads it, and also sets it where the design asks."""
    return _DESIGN[-1].get(name, default) if _DESIGN else default


def choose(draw, name: str, values):
    """One of ``values`` for attribute ``name``: the design row's class where the row fixes one
    of them, else drawn (as ``draw(st.sampled_from(values))``)."""
    if _DESIGN and name in _DESIGN[-1]:
        fixed = [v for v in values if same_class(v, _DESIGN[-1][name])]
        if fixed:
            return fixed[0]
    return draw(st.sampled_from(values))


def choose_int(draw, name: str, low: int, high: int) -> int:
    """An integer in ``[low, high]`` for attribute ``name``: the design row's class where the
    row fixes one in range, else drawn (as ``draw(st.integers(low, high))``)."""
    if _DESIGN and name in _DESIGN[-1]:
        fixed = _DESIGN[-1][name]
        if not isinstance(fixed, bool) and isinstance(fixed, int) and low <= fixed <= high:
            return fixed
    return draw(st.integers(low, high))


def attributes(draw, spec, ranks: dict) -> dict:
    """The spec's attributes (``signature.attrs``) drawn from their domains (see
    :mod:`conform.generators._generic`; a covering design's row fixes some, see
    :func:`designing`); ``ranks`` gives each input's rank, for domains tied to an input's
    shape."""
    return {name: _attribute(draw, name, domain, ranks)
            for name, domain in spec.signature.get("attrs", {}).items()}


def _attribute(draw, name: str, domain, ranks: dict):
    if not isinstance(domain, dict):
        return domain
    if "choice" in domain:
        return choose(draw, name, domain["choice"])
    if "range" in domain:
        return choose_int(draw, name, *domain["range"])
    if "permutation_of" in domain:
        return list(draw(st.permutations(range(ranks[domain["permutation_of"]]))))
    negative = domain.get("negative", False)
    if "axis_of" in domain:
        rank = ranks[domain["axis_of"]]
        return draw(st.integers(-rank if negative else 0, rank - 1))
    rank = ranks[domain["axes_of"]]
    if rank == 0:   # a 0-d input has no axis: only min_size 0 allows it (the loader checks)
        return []
    axes = draw(st.lists(st.integers(0, rank - 1), min_size=min(domain.get("min_size", 1), rank),
                         max_size=rank, unique=True))
    return [axis - rank if negative and draw(st.booleans()) else axis for axis in axes]


def absent_inputs(draw, spec) -> list[str]:
    """The optional inputs a signature leaves out, each absent with probability 1/2 or as the
    covering design's row says (draws nothing for a spec without optional inputs)."""
    row = _DESIGN[-1] if _DESIGN else {}
    return [name for name in spec.optional_inputs
            if (row[INPUT_PREFIX + name] == _ABSENT_CLASS if INPUT_PREFIX + name in row
                else not draw(st.booleans()))]


def with_absent(attrs: dict, absent) -> dict:
    """``attrs`` with ``absent_inputs`` naming the ``absent`` inputs (unchanged if none is)."""
    return {**attrs, ABSENT: list(absent)} if absent else attrs


def scalar_inputs(spec) -> set[str]:
    """The inputs the spec declares 0-d (``scalar: true``)."""
    return {e["name"] for e in spec.signature["inputs"] if isinstance(e, dict) and e.get("scalar")}


@functools.lru_cache(maxsize=1)
def catalog() -> dict:
    """Every op's spec (the built-in suite and installed op packages), by op name: for a hook
    whose cases are made of other ops (a loop body, a branch), which it names in an attribute."""
    from conform.spec import load_specs

    return dict(load_specs())
