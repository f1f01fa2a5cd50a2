"""The cases a worker pool still has to send, read lazily from their source."""
from __future__ import annotations

import collections
from typing import Iterable

from conform.harness.run.worker import CaseByCase, joins_previous


#: A batch stops growing once its inputs reach this size (e.g. two chunks of a float32 sweep).
BATCH_BYTES = 32 << 20


class LazyQueue:
    """Cases still to send: those handed back by a replaced worker first, then the source,
    which is read only as far as needed (a float32 sweep never sits in memory whole)."""

    def __init__(self, source: Iterable):
        self._returned: collections.deque = collections.deque()
        self._source = iter(source)
        self._next = next(self._source, _END)

    def __bool__(self) -> bool:
        return bool(self._returned) or self._next is not _END

    def take(self, count: int, max_bytes: int = BATCH_BYTES) -> list:
        """Up to ``count`` cases, stopping early once the inputs of those that will travel
        pickled reach ``max_bytes``. A batch holding
        cases a replaced worker handed back is a :class:`CaseByCase`."""
        batch, size = [], 0
        while (len(batch) < count and size < max_bytes or self._joins()) \
                and (self._returned or self._next is not _END):
            if self._returned:
                case = self._returned.popleft()
                if type(batch) is list:
                    batch = CaseByCase(batch)
            else:
                case, self._next = self._next, next(self._source, _END)
            batch.append(case)
            if type(case) is not int:
                size += sum(getattr(x, "nbytes", 0) for x in getattr(case, "inputs", ()))
        return batch

    def _joins(self) -> bool:
        """Whether the next case from the source must join the batch (its partner ends it)."""
        return not self._returned and self._next is not _END and joins_previous([self._next])

    def extendleft(self, cases) -> None:
        self._returned.extendleft(cases)


_END = object()
