"""What a backend did with one case: the record that crosses from the worker to the judge."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Outcome:
    """What a backend did with one case."""

    kind: str                      # ok | unsupported | error | crash | timeout
    outputs: list | None = None
    message: str = ""
    traceback: str = ""
    seconds: float = 0.0
    record: dict | None = None     # the judged result record, when the worker judges (see WorkerPool)
    line: bytes | None = None      # ``record`` as its results.jsonl line (UTF-8, no newline)
    raised: BaseException | None = field(default=None, repr=False, compare=False)  # in the worker
    # an ``error`` the backend raised computing this case's inputs (an implementation-defined
    # input excuses it); False where it failed whatever the input: a wrong return, no backend
    on_input: bool = True
    stderr: str = ""               # what the backend wrote to standard error computing the case
