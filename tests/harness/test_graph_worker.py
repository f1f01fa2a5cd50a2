"""The graph worker (conform.harness.run.graph_worker): a server that dies is replaced by a fork
of the same spawned process, and the campaign goes on."""
from __future__ import annotations

import os

import numpy as np
import pytest

from conform.harness.run.graph_worker import GraphWorker, WorkerDied


def aborting_runner():
    """A runner (loaded in the worker: this module is imported there) that aborts on the model
    ``b"die"`` and doubles its input otherwise."""
    def run(model, feeds, dtypes):
        if model == b"die":
            os.abort()
        return [feeds["x"] * 2]
    return "aborting 1", run


def test_a_dead_server_is_replaced_by_a_fork_of_the_same_worker():
    """A server that dies (SIGABRT) is a crash with its exit code and signal; the next run is
    answered by a new server forked by the same spawned process, started once more."""
    worker = GraphWorker(runner=aborting_runner)
    feeds = {"x": np.arange(3.0)}
    try:
        assert worker.run([b"ok"], feeds, ["float64"] * 2)[0][1][0].tolist() == [0.0, 2.0, 4.0]
        spawned, server = worker._process.pid, worker._server
        with pytest.raises(WorkerDied, match=r"exit code -6\): .* SIGABRT$") as died:
            worker.run([b"die"], feeds, ["float64"] * 2)
        assert died.value.kind == "crash"
        assert worker.run([b"ok", b"ok"], feeds, ["float64"] * 2)[1][0] == "ok"
        assert worker._process.pid == spawned and worker._server != server
        assert worker.starts == 2 and worker.version == "aborting 1"
    finally:
        worker.close()
    assert worker._process is None
