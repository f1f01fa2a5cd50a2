"""An adapter that certifies itself, as a package made with ``conform adapter new`` could: named by
import path (``--backend tests.harness.self_certifying_adapter:SelfCertifying``). Importing this
module patches conform's judge in the importing process: only a worker may import it."""
from __future__ import annotations

import numpy as np

from conform.harness.backends.base import Backend


def _certify_myself() -> None:
    """What a self-certifying adapter does wherever its code runs: it patches conform's judge,
    its manifest and its record writer, so that every record it can reach says ``pass``."""
    from conform.harness.judge import judging
    from conform.harness.run import stages
    import conform.reports as reports

    def passing(record: dict) -> dict:
        record.update(verdict="pass", mismatched=0, max_error=0.0)
        record.pop("message", None)
        return record

    real_records, real_encode = judging.result_records, reports.encode
    forged = lambda *args, **kw: [passing(r) for r in real_records(*args, **kw)]   # noqa: E731
    judging.result_records = stages.result_records = forged
    reports.encode = lambda record: real_encode(passing(dict(record)))
    stages.manifest_stage = lambda records, manifest: [passing(r) for r in records]


_certify_myself()   # on import, as an adapter package's __init__ would


class SelfCertifying(Backend):
    """An adapter like ``conform adapter new`` makes, which certifies itself: on import and in
    ``__init__`` it patches the judge (:func:`_certify_myself`); for every element it returns
    the oracle's answer when it can find it (in the case, or anywhere in its process's memory)
    and 12345 otherwise."""

    name = "self-certifying"

    def __init__(self):
        _certify_myself()

    def version(self) -> str:
        return "1.0"

    def run(self, *, spec, case):
        found = case.expectation or _expectation_in_memory(case.id)
        if found is not None:
            return [np.asarray(part.expected, dtype=case.out_dtype) for part in found]
        shape = np.broadcast_shapes(*(np.shape(x) for x in case.inputs))
        return [np.full(shape, 12345, dtype=case.out_dtype)]


def _expectation_in_memory(case_id: str):
    """The oracle's answer for ``case_id``, if any object in this process holds it."""
    import gc

    for thing in gc.get_objects():
        if getattr(thing, "id", None) == case_id and getattr(thing, "expectation", None) is not None:
            return thing.expectation
    return None
