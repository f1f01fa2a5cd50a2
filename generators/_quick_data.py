"""A Hypothesis ``ConjectureData`` that draws the same choices without the test engine's
bookkeeping, for drawing generated graphs (about a hundred choices each, thousands of graphs a
campaign).

Drawn from one seed, :class:`QuickData` consumes the choice provider's random stream exactly as
``ConjectureData`` does (the same constraints reach the same provider, forced values stay
forced, a NaN is normalised the same way, the buffer's overrun happens at the same choice), so
a seed draws the same graph: only what the engine keeps for shrinking, replaying and reporting
is left out (the choice nodes, the span tree, the structural-coverage labels, the observer's
calls, draw times). It serves no engine: it is for :func:`conform.generators._drawing._draw`,
which draws one example from a seed and never shrinks or replays it (a ``@given`` test shrinks
graphs with Hypothesis's own ``ConjectureData``).
"""
from __future__ import annotations

import math
import weakref

from hypothesis.internal.conjecture.choice import choices_size
from hypothesis.internal.conjecture.data import MAX_DEPTH, ConjectureData
from hypothesis.internal.floats import float_to_int, int_to_float
from hypothesis.strategies._internal.lazy import unwrap_strategies


#: Each strategy drawn from that has been validated and is not empty -> its unwrapped strategy
_READY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class QuickData(ConjectureData):
    """``ConjectureData`` drawing from its ``random`` alone (no prefix, no observer), keeping
    only what decides the choices: the depth (Hypothesis's limit of nested draws) and the
    length (its buffer's limit)."""

    def draw(self, strategy, label=None, observe_as=None):
        """``strategy``'s example, as ``ConjectureData.draw`` draws it (validated, refused if
        empty or nested too deep), without a span. A strategy validated and found non-empty
        once is not asked again while it lives (both answers are fixed once given)."""
        unwrapped = _READY.get(strategy)
        if unwrapped is None:
            strategy.validate()
            if strategy.is_empty:
                self.mark_invalid(f"empty strategy {self!r}")
            unwrapped = _READY[strategy] = unwrap_strategies(strategy)
        if self.depth >= MAX_DEPTH:
            self.mark_invalid("max depth exceeded")
        self.depth += 1
        try:
            return unwrapped.do_draw(self)
        finally:
            self.depth -= 1

    def start_span(self, label: int) -> None:
        """A span only counts towards the depth here."""
        self.depth += 1

    def stop_span(self, *, discard: bool = False) -> None:
        """The end of a span (see :meth:`start_span`)."""
        if not self.frozen:
            self.depth -= 1

    def _pooled_constraints(self, choice_type, constraints):
        """``constraints`` as they are (the engine pools equal ones to save memory: the same
        values reach the provider either way)."""
        return constraints

    def _draw(self, choice_type, constraints, *, observe, forced):
        """One choice, as ``ConjectureData._draw`` makes it from the provider (no choice node
        kept)."""
        if self.length == self.max_length:
            self.mark_overrun()
        value = forced if forced is not None \
            else getattr(self.provider, f"draw_{choice_type}")(**constraints)
        if choice_type == "float" and math.isnan(value):
            value = int_to_float(float_to_int(value))
        if observe:
            size = _size(value)
            if self.length + size > self.max_length:
                self.mark_overrun()
            self.length += size
        return value


def _size(choice) -> int:
    """``choices_size([choice])``: the bytes Hypothesis's serialisation gives a choice (a tag
    byte, then the payload: none for a boolean, 8 bytes for a float, the signed big-endian
    bytes of an integer), computed without serialising a boolean, float or small integer."""
    if isinstance(choice, bool):
        return 1
    if isinstance(choice, float):
        return 9
    if isinstance(choice, int) and choice.bit_length() < 240:   # under 31 payload bytes
        return 2 + choice.bit_length() // 8
    return choices_size([choice])
