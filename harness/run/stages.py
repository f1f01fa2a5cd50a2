"""The stages after compute: judge, apply the manifest, encode; in the process that runs the pool.

A worker (:mod:`conform.harness.run.worker`, the compute stage) runs the adapter's code, so none
of these run there: an adapter cannot patch the judge, the manifest or the record writer it is
judged by. Each stage is a function of its inputs alone; :class:`Judging` strings them together
for a :class:`~conform.harness.run.isolation.WorkerPool` and counts the seconds each took.
"""
from __future__ import annotations

import collections
import time

import orjson

from conform.harness.judge.judging import result_records
from conform.harness.judge.outcome import Outcome
from conform.harness.run.boundary import safe_text


def judge_stage(specs: dict, pairs: list, backend: str, subnormals: str) -> list:
    """The result records of ``(case, outcome)`` pairs (the cases with their oracle answers),
    judged together under the subnormal policy; each record's ``judge_seconds`` is its share."""
    start = time.perf_counter()
    records = result_records([(specs[case.op], case, outcome) for case, outcome in pairs],
                             backend, subnormals)
    share = round((time.perf_counter() - start) / max(len(pairs), 1), 6)
    for record in records:
        record["judge_seconds"] = share
    return records


def manifest_stage(records: list, manifest) -> list:
    """``records`` as ``manifest`` (skip, xfail, waivers; None: none) re-judges them."""
    return records if manifest is None else [manifest.apply(record) for record in records]


def encode_stage(records: list) -> tuple:
    """``(lines, tally cells)``: the records' results.jsonl lines and the cells of their
    :class:`~conform.reports.Tally` (which name records by their index in ``lines``)."""
    from conform.reports import Tally, encode

    tally = Tally()
    for i, record in enumerate(records):
        tally.add(record, ref=i)
    lines = []
    for record in records:
        try:
            lines.append(encode(record))
        except (TypeError, ValueError):   # UnicodeEncodeError is a ValueError
            lines.append(encode(_with_safe_strings(record)))
    return lines, tally.cells


def _with_safe_strings(value):
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_text(k): _with_safe_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_with_safe_strings(v) for v in value]
    return value


class Judging:
    """The judge, manifest and encode stages for one pool's backend: ``backend`` is the name
    records give it, ``subnormals`` the policy it is judged under; ``spent`` sums each stage's
    seconds."""

    def __init__(self, specs: dict, backend: str, subnormals: str, manifest=None):
        self.specs, self.backend, self.subnormals, self.manifest = specs, backend, subnormals, manifest
        self.spent = {"judge": 0.0, "tally": 0.0, "encode": 0.0}

    def __call__(self, cases: list, outcomes: list, stats: dict) -> "Judged":
        """The :class:`Judged` reply for ``cases`` and their ``outcomes``."""
        start = time.perf_counter()
        records = judge_stage(self.specs, list(zip(cases, outcomes)), self.backend, self.subnormals)
        judged = time.perf_counter()
        records = manifest_stage(records, self.manifest)
        applied = time.perf_counter()
        lines, cells = encode_stage(records)
        self.spent["judge"] += judged - start
        self.spent["tally"] += applied - judged   # the manifest's part, as the workers counted it
        self.spent["encode"] += time.perf_counter() - applied
        reply = Judged([outcome.kind for outcome in outcomes], lines, cells, stats, dict(self.spent))
        reply.cases = cases
        return reply


class Judged:
    """A judged reply: the cases (in order), their outcomes' kinds, their results.jsonl lines,
    the reply's tally cells and the counters so far (the backend's, and the seconds the stages
    took). A run writes the lines and merges the tally as they are, without reading each record
    back: only those the tally keeps are decoded."""

    def __init__(self, kinds: list, lines: list, cells: dict, stats: dict, spent: dict):
        self.kinds, self.lines, self.cells, self.cases = kinds, lines, cells, []
        self.stats, self.spent = stats, spent
        self._read: dict = {}

    def __len__(self) -> int:
        return len(self.kinds)

    def record(self, index: int) -> dict:
        """The record on line ``index``, read back from it (so that it is exactly the one on disk)."""
        found = self._read.get(index)
        if found is None:
            found = self._read[index] = orjson.loads(self.lines[index])
        return found

    def pairs(self) -> list:
        """``(case, outcome)`` per case, each outcome with its record and line."""
        return [(case, Outcome(kind, None, "", "", 0.0, self.record(i), line))
                for i, (case, kind, line) in enumerate(zip(self.cases, self.kinds, self.lines))]


#: A pool judges in processes of its own (:class:`JudgeProcesses`) from this many cases on; a
#: smaller run (a hunt's batch, an adapter check) is judged in the pool's process.
JUDGE_PROCESSES_FROM = 1024


class JudgeProcesses:
    """The judge, manifest and encode stages in ``count`` processes forked from this one (which
    never runs an adapter's code, so neither do they), so that judging runs on as many cores as
    computing does. They inherit ``cases`` (with their oracle answers) and ``judging``; a reply
    travels to one of them as the worker's frame, unread, with the indices of its cases, and
    comes back as a :class:`Judged` reply."""

    def __init__(self, judging: Judging, cases: list, count: int):
        import multiprocessing as mp

        context = mp.get_context("fork")
        self._index = {id(case): i for i, case in enumerate(cases)}
        self._judges, self._tickets, self._spent = [], {}, {}
        for _ in range(count):
            parent, child = context.Pipe()
            process = context.Process(target=_judge_main, args=(child, judging, cases), daemon=True)
            process.start()
            child.close()
            self._judges.append((process, parent))
            self._tickets[parent] = collections.deque()

    def submit(self, cases: list, frame: bytes, stats: dict) -> bool:
        """Hand ``cases``' reply ``frame`` to the least busy judge; False (nothing sent) if a
        case is not one of those the judges inherited."""
        indices = [self._index.get(id(case)) for case in cases]
        if None in indices:
            return False
        conn = min(self._tickets, key=lambda c: len(self._tickets[c]))
        conn.send((indices, frame, stats))
        self._tickets[conn].append(cases)
        return True

    def waiting(self) -> list:
        """The connections of judges that owe a reply."""
        return [conn for conn, owed in self._tickets.items() if owed]

    def collect(self, ready) -> list:
        """The :class:`Judged` replies of the judges among ``ready`` (connections)."""
        replies = []
        for conn in self.waiting():
            while conn in ready and self._tickets[conn] and conn.poll():
                kinds, lines, cells, stats, spent = conn.recv()
                reply = Judged(kinds, lines, cells, stats, spent)
                reply.cases = self._tickets[conn].popleft()
                self._spent[conn] = spent
                replies.append(reply)
        return replies

    def spent(self) -> dict:
        """The seconds each stage took, summed over the judges."""
        total: dict = {}
        for counts in self._spent.values():
            for key, value in counts.items():
                total[key] = total.get(key, 0.0) + value
        return total

    def close(self) -> None:
        from conform.harness.run.processes import stop_children

        stop_children(self._judges)


def _judge_main(conn, judging: Judging, cases: list) -> None:
    """A judge process: judge the frames that arrive until the pool sends None."""
    import os
    import signal

    from conform.harness.run.wire import read_reply
    from conform.harness.run.worker import _die_with_parent, _inbox

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle
    _die_with_parent(os.getppid())
    inbox = _inbox(conn)   # read by a thread: neither side blocks the other with a full pipe
    while True:
        message = inbox.get()
        if message is None:
            return
        indices, frame, stats = message
        outcomes, _ = read_reply(frame, len(indices))
        reply = judging([cases[i] for i in indices], outcomes, stats)
        conn.send((reply.kinds, reply.lines, reply.cells, reply.stats, reply.spent))
