"""Where a sweep's chunks run: the local executor (this module: a pool of slot processes, no new
dependency) or Ray (:mod:`conform.harness.run.sweep_ray`, the ``conform[ray]`` extra).

An executor runs each :class:`~conform.harness.run.sweep_chunk.ChunkTask` with
:func:`~conform.harness.run.sweep_chunk.run_chunk` and yields the summaries as they finish.
A slot is a process that holds a :class:`~conform.harness.run.isolation.WorkerPool` of one
worker: the backend runs in that worker, isolated as in ``conform run`` (a crash or hang costs
the worker, and the chunk is run once more on a new one), and the oracle and the judge run in
the slot, where no adapter code runs. Slots run chunks side by side, each stage of one chunk
overlapping the others' stages.
"""
from __future__ import annotations

import collections
import dataclasses
import traceback
from multiprocessing.connection import wait

from conform.harness.run.isolation import PoolSettings, WorkerPool
from conform.harness.run.processes import (WORKER_METHOD, forking_context, start_method, stop_children,
                                           started_without_main, worker_context)

#: Seconds a slot may take to start its worker and load the backend before it is given up.
SLOT_LOAD_TIMEOUT = 300.0

_POOLS: dict = {}   # the pool a slot (or a Ray worker process) keeps across chunks
_SPECS: dict = {}   # the specs it judges by, per spec folder


def slot_pool(backend: str, settings: PoolSettings) -> WorkerPool:
    """The started :class:`WorkerPool` this process keeps for ``backend`` under ``settings``
    (started on first use; kept until the process ends or :func:`close_pools`)."""
    key = (backend, settings)
    pool = _POOLS.get(key)
    if pool is None:
        from conform.spec import load_specs

        specs = _SPECS[settings.spec_dir] = _SPECS.get(settings.spec_dir) or load_specs(settings.spec_dir)
        # a slot forks its worker where it can: it holds conform and the specs, no adapter, and
        # no oracle answer of a chunk being computed (the backend runs before the oracle)
        method = settings.method or ("fork" if start_method() == "fork" else None)
        pool = WorkerPool(backend, dataclasses.replace(settings, method=method), specs=specs)
        pool.__enter__()
        _POOLS[key] = pool
    return pool


def close_pools() -> None:
    """Stop the pools this process keeps."""
    while _POOLS:
        _, pool = _POOLS.popitem()
        pool.__exit__(None, None, None)


def chunk_in_slot(backend: str, settings: PoolSettings, task) -> dict:
    """``task``'s summary, its backend run on this process's pool for ``backend``."""
    from conform.harness.run.sweep_chunk import run_chunk

    pool = slot_pool(backend, settings)
    return run_chunk(pool, _SPECS[settings.spec_dir][task.op], task)


def _slot_main(conn, backend: str, settings: PoolSettings) -> None:
    """A slot: say what the backend is, then run the chunks that arrive until None."""
    try:
        info = slot_pool(backend, settings).info
    except Exception:
        conn.send(("fatal", traceback.format_exc()))
        return
    conn.send(("hello", info))
    try:
        while True:
            task = conn.recv()
            if task is None:
                return
            try:
                summary = chunk_in_slot(backend, settings, task)
            except Exception:   # conform's own stages failed on this chunk: say so, go on
                summary = {"key": task.key, "first": task.first, "stop": task.stop,
                           "status": "error", "attempts": 1, "seconds": {},
                           "message": traceback.format_exc()[-2000:]}
            conn.send(("done", summary))
    except (EOFError, OSError):
        return
    finally:
        close_pools()


class SlotFailed(Exception):
    """A slot could not load the backend."""


class LocalExecutor:
    """``slots`` slot processes on this machine (see the module's docstring).

    >>> with LocalExecutor("onnxruntime", PoolSettings(), slots=2) as executor:  # doctest: +SKIP
    ...     for summary in executor.map(tasks): ...
    """

    def __init__(self, backend: str, settings: PoolSettings, *, slots: int = 2):
        self.backend, self.settings, self.slots = backend, settings, max(1, slots)
        # forked from this process where it can be (it holds the specs and the chunks'
        # summaries, nothing of a backend), else from the fork server
        self._context = forking_context() or worker_context(WORKER_METHOD)
        self._running: list = []
        self.info: dict = {}

    def __enter__(self):
        self._running = [self._start() for _ in range(self.slots)]
        for process, conn in self._running:
            self.info = self._hello(process, conn)
        return self

    def __exit__(self, *exc):
        stop_children(self._running, grace=30)
        self._running = []

    def _start(self):
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_slot_main, args=(child, self.backend, self.settings))
        with started_without_main():
            process.start()
        child.close()
        return process, parent

    def _hello(self, process, conn) -> dict:
        if not conn.poll(SLOT_LOAD_TIMEOUT):
            raise SlotFailed(f"backend {self.backend!r} did not load in {SLOT_LOAD_TIMEOUT:g} s")
        try:
            kind, body = conn.recv()
        except (EOFError, OSError):
            raise SlotFailed(f"backend {self.backend!r}: its slot died while loading") from None
        if kind != "hello":
            raise SlotFailed(f"backend {self.backend!r} failed to load:\n{body}")
        return body

    def map(self, tasks):
        """Yield each task's summary as it finishes. A slot that dies (not the backend's
        worker: conform's own code) is replaced and its chunk sent once more; a second loss
        records the chunk as ``crash``."""
        queue = collections.deque(tasks)
        tries: dict = collections.Counter()
        busy: dict = {}   # slot index -> its task
        while queue or busy:
            for k, (process, conn) in enumerate(self._running):
                if k not in busy and queue:
                    busy[k] = queue.popleft()
                    tries[busy[k].key] += 1
                    conn.send(busy[k])
            ready = wait([conn for k, (_, conn) in enumerate(self._running) if k in busy]
                         + [process.sentinel for k, (process, _) in enumerate(self._running)
                            if k in busy])
            for k, (process, conn) in list(enumerate(self._running)):
                if k not in busy or (conn not in ready and process.sentinel not in ready):
                    continue
                task = busy.pop(k)
                summary = self._receive(conn)
                if summary is not None:
                    yield summary
                    continue
                yield from self._lost(k, task, tries, queue)

    @staticmethod
    def _receive(conn):
        try:
            if conn.poll():
                return conn.recv()[1]
        except (EOFError, OSError):
            pass
        return None

    def _lost(self, k: int, task, tries, queue):
        """Replace dead slot ``k``; ``task`` goes back in ``queue`` or, lost twice, is a crash."""
        process, conn = self._running[k]
        process.join(5)
        conn.close()
        self._running[k] = self._start()
        self._hello(*self._running[k])
        if tries[task.key] < 2:
            queue.appendleft(task)
            return
        yield {"key": task.key, "first": task.first, "stop": task.stop, "status": "crash",
               "attempts": tries[task.key], "seconds": {},
               "message": f"the slot running the chunk died (exit status {process.exitcode})"}


__all__ = ["LocalExecutor", "SlotFailed", "chunk_in_slot", "close_pools", "slot_pool"]
