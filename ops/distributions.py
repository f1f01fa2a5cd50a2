"""What a random op's text says its outputs are: a distribution per output, which the judge's
``statistical`` error model tests (``conform.harness.judge.statistical``; docs/error-models.md,
"Random outputs").

An op whose outputs are random declares ``@op(..., distribution=hook)``; the hook,
``hook(inputs, attrs, outputs, *, out_dtypes, dtypes) -> tuple``, gives per output one of the
descriptions below, from the op's text, on the widened inputs (``outputs`` are the backend's
own, ``dtypes`` the inputs' dtype names, for an output the text defines given another: Dropout's output given its mask). The
oracle of such an op gives each output's shape (and, for show, its mean): the judge reads the
distribution, never an oracle value, for a statistical output.

* :class:`Continuous`: every element an independent draw of one continuous law (a frozen
  ``scipy.stats`` distribution), rounded to the output type; the judge checks the support
  (``[low, high]`` widened to the type's values around it) and a Kolmogorov-Smirnov test.
* :class:`Categorical`: independent elements, each in one group of elements sharing a finite
  law (values with their probabilities); the judge checks the support (values of probability
  > 0) and an exact binomial test per value of each group.
* :class:`Bits`: every bit of every element an independent fair coin; a binomial test per bit
  position.
* :class:`Given`: the values are determined (by the inputs and the other outputs): judged by
  an ordinary error model against ``expected``.
* :class:`Unjudged`: the text says nothing of the values: only shape and type are judged.
* :class:`Readings`: the text states two laws (its prose and its function body disagree): a
  sample of the first passes, one of another only is ``impl_defined`` (the spec's region
  ``reading_differs`` says why), one of neither fails.

Shared code: it names no op.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Bits", "Categorical", "Continuous", "Given", "Readings", "Unjudged", "groups_of_equal",
           "stats"]


class _OnFirstUse:
    """A module imported when one of its names is first read: ``scipy.stats`` takes about a
    second to import, and every process that loads the specs imports the op modules."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str):
        return getattr(importlib.import_module(self._name), attribute)


#: ``scipy.stats``, imported when first used (a random op's law, the statistical judge).
stats = _OnFirstUse("scipy.stats")


@dataclass(frozen=True, eq=False)
class Continuous:
    """Independent draws of ``law`` (a frozen ``scipy.stats`` distribution: its ``cdf`` is
    read), each rounded to the output type. ``low`` and ``high`` bound the values the law
    allows (``-inf``/``inf`` for an unbounded law); ``text`` names it in messages
    (``"uniform on [0, 1)"``)."""

    law: object
    low: float
    high: float
    text: str


@dataclass(frozen=True, eq=False)
class Categorical:
    """Independent elements of a finite law per group: ``groups`` holds
    ``(flat_indices, values, probabilities)`` triples, each element of the output in one of
    them (its probabilities sum to 1). ``text`` names the law in messages."""

    groups: tuple
    text: str


@dataclass(frozen=True, eq=False)
class Bits:
    """Every bit of every element an independent fair coin (uniformly random bits)."""

    text: str = "uniformly random bits"


@dataclass(frozen=True, eq=False)
class Given:
    """Values the text determines given the inputs and the other outputs: ``expected`` (float64,
    int64 or bool, shaped like the output) judged under ``model`` (an ``error_model`` entry,
    with its ``why``)."""

    expected: np.ndarray
    model: dict = field(default_factory=lambda: {"exact": True, "why": "determined"})
    text: str = "determined by the other outputs"


@dataclass(frozen=True, eq=False)
class Unjudged:
    """The text says nothing of the values (only the shape and type are judged)."""

    text: str = "values not specified by the text"


@dataclass(frozen=True, eq=False)
class Readings:
    """Laws of different readings of the text: ``laws`` holds ``(law, name)`` pairs, the first
    the reading the suite holds a backend to."""

    laws: tuple
    text: str = "two readings of the text"


def groups_of_equal(probabilities: np.ndarray, values=(0, 1)) -> tuple:
    """Bernoulli groups: the elements of ``probabilities`` (each the probability of
    ``values[1]``) grouped by equal probability, as :class:`Categorical` groups.

    >>> [(g[0].tolist(), g[2].tolist()) for g in groups_of_equal(np.array([0.5, 0.25, 0.5]))]
    [([1], [0.75, 0.25]), ([0, 2], [0.5, 0.5])]
    """
    flat = np.asarray(probabilities, np.float64).ravel()
    distinct, which = np.unique(flat, return_inverse=True)
    return tuple((np.flatnonzero(which == k), np.asarray(values), np.array([1.0 - p, p]))
                 for k, p in enumerate(distinct.tolist()))
