"""``conform run --executor ray``: a run's cases sharded over Ray tasks (the ``conform[ray]``
extra), with the isolation of a local run.

:class:`RayPool` stands where a run's :class:`~conform.harness.run.isolation.WorkerPool`
stands (:func:`conform.harness.run.runner.make_pool`): it yields the same replies from
:meth:`RayPool.run_batches`, so a run writes, tallies and resumes as a local one does. Each
Ray task (:func:`ray_cases`) runs a shard of :data:`SHARD` cases on the pool its Ray worker
process keeps (:func:`~conform.harness.run.sweep_executors.slot_pool`, one backend worker,
the run's settings): the backend runs in a process of its own, started afresh after a crash or
a hang and after ``--recycle-after`` cases (for backends that leak state), exactly as locally,
and the Ray worker judges and encodes the results. A crash or hang costs that case alone
(a ``crash`` or ``timeout``, as in a local run). A Ray worker or node that dies has Ray run the
task again elsewhere, once; then the shard's cases are recorded as ``crash``.

The backend and conform reach the cluster as for a sweep
(:func:`~conform.harness.run.sweep_ray.start_ray`); a ``--specs`` folder must be at the same
path on the cluster's nodes.
"""
from __future__ import annotations

import dataclasses
import itertools

from conform.harness.judge.outcome import Outcome
from conform.harness.run.stages import Judged
from conform.harness.run.sweep_ray import RAY_RETRIES, ray_hello, remote, resolved_backend, start_ray

#: Cases per Ray task.
SHARD = 256


def ray_cases(backend: str, settings, cases: list) -> dict:
    """A Ray task: the replies of ``cases`` run (and judged) on this Ray worker's pool, and
    how many of its backend workers were restarted and recycled meanwhile."""
    from conform.harness.run.sweep_executors import slot_pool

    pool = slot_pool(backend, settings)
    restarts, recycled, failures = pool.restarts, pool.recycled, len(pool.load_failures)
    replies = []
    for reply in pool.run_batches(cases):
        if isinstance(reply, Judged):
            reply.cases, reply._read = [], {}   # (the driver has the cases: none sent back)
        replies.append(reply)
    return {"replies": replies, "restarts": pool.restarts - restarts,
            "recycled": pool.recycled - recycled, "load_failures": pool.load_failures[failures:]}


class RayPool:
    """A run's cases in shards on the Ray cluster at ``address`` (None: Ray's default), at
    most ``tasks`` shards in flight, each on a pool of one backend worker under ``settings``.

    >>> with RayPool("numpy", PoolSettings(judge=True), address="auto") as pool:  # doctest: +SKIP
    ...     for reply in pool.run_batches(cases): ...
    """

    def __init__(self, backend: str, settings, *, address: str | None = None, tasks: int = 2,
                 shard: int | None = None):
        self.backend, self.address, self.tasks = backend, address, max(1, tasks)
        self.shard = shard or SHARD
        self.settings = dataclasses.replace(settings, workers=1)
        self.info: dict = {}
        self.restarts = self.recycled = 0
        self.load_failures: list = []
        self.stats: dict = {}   # (the backend's counters stay on the cluster)
        self.spent: dict = {}

    def __enter__(self):
        import ray

        # a process already connected to Ray (with conform in its runtime environment, as
        # start_ray connects) keeps its connection, and its Ray workers keep their pools
        self._owned = not ray.is_initialized()
        if self._owned:
            self._path, self._connection = start_ray(self.backend, self.address)
        else:
            self._path, self._connection = resolved_backend(self.backend), None
        try:
            self._run = remote(ray_cases)
            self.info = ray.get(remote(ray_hello).remote(self._path, self.settings))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        if self._owned:
            self._connection.close()

    def run_batches(self, cases):
        """Yield the replies of every case (as :meth:`WorkerPool.run_batches` does), a shard's
        as it finishes; a shard Ray gave up on: each of its cases a ``crash``."""
        import ray

        shards = iter(lambda it=iter(cases): list(itertools.islice(it, self.shard)), [])
        running: dict = {}
        while True:
            while len(running) < self.tasks:
                shard = next(shards, None)
                if shard is None:
                    break
                running[self._run.remote(self._path, self.settings, shard)] = shard
            if not running:
                return
            ready, _ = ray.wait(list(running), num_returns=1)
            shard = running.pop(ready[0])
            try:
                done = ray.get(ready[0])
            except ray.exceptions.RayError as exc:
                message = (f"Ray lost the task ({RAY_RETRIES + 1} attempts): "
                           f"{type(exc).__name__}: {str(exc)[:300]}")
                yield [(case, Outcome("crash", message=message, on_input=False)) for case in shard]
                continue
            self.restarts += done["restarts"]
            self.recycled += done["recycled"]
            self.load_failures += done["load_failures"]
            yield from done["replies"]


__all__ = ["SHARD", "RayPool", "ray_cases"]
