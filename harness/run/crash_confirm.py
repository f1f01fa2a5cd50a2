"""A crash is blamed on the case it struck only once that case has crashed a fresh worker.

A worker that ran other cases first may carry their damage: a case that corrupts the heap
without dying (the nnef executor's copy_n on logical tensors writes 4 bytes per 1-byte element)
leaves the process to die later, in whatever case runs next. So the struck case runs again,
alone, as the first case of a new worker; only a second crash there is its own."""
from __future__ import annotations

import collections


class CrashConfirmation:
    """The crashes waiting for their confirming run, and the cases given one already."""

    def __init__(self):
        self._waiting: collections.deque = collections.deque()   # (case, crash outcome)
        self._retried: set = set()

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def defer(self, case, crash, ran_others: bool) -> bool:
        """Whether the ``crash`` outcome of ``case`` waits for a confirming run: only where
        its worker had run other cases first (``ran_others``), and once per case."""
        if not ran_others or case.id in self._retried:
            return False
        self._retried.add(case.id)
        self._waiting.append((case, crash))
        return True

    def take(self):
        """The next case to run alone in a fresh worker."""
        return self._waiting.popleft()[0]

    def give_up(self) -> list:
        """The waiting crashes as they were first seen: no fresh worker can run them."""
        pairs = list(self._waiting)
        self._waiting.clear()
        return pairs
