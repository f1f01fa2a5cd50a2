"""An isolated onnxruntime process for generated graphs (``conform fuzz``).

Each graph's models are new (no two graphs share one), so the worker keeps no session: it is
handed serialized models and the inputs, makes a session per model (CPU provider, one thread,
``ORT_ENABLE_ALL``: the optimisations a user gets by default) and returns every model's outputs.
Given another backend (``module:Class``, an adapter whose model format is ONNX: a mutant of
bench/mutants.py), the worker loads it and runs each model through the adapter API instead
(:func:`conform.harness.backends.graph_program.run_graph_on`), at the adapter's own settings.
A worker that dies (a SIGFPE, an abort in a kernel) costs the graph it was running: the caller
records a ``crash`` and starts another.
"""
from __future__ import annotations

import multiprocessing as mp
import time
import traceback

import numpy as np

OPTIMIZATION = "ORT_ENABLE_ALL"


def _serve(conn, backend: str = "onnxruntime") -> None:
    if backend != "onnxruntime":
        return _serve_adapter(conn, backend)
    import onnxruntime as ort

    from conform.harness.backends.ort_values import array_of, needs_ort_values, ort_value

    ort.set_default_logger_severity(4)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, OPTIMIZATION)
    options.log_severity_level = 4
    conn.send(("ready", ort.__version__, time.process_time()))
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        models, feeds, dtypes, _ = request
        replies = []
        for k, model in enumerate(models):
            try:
                session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
                if needs_ort_values(dtypes):
                    given = {name: ort_value(ort, x) for name, x in feeds.items()}
                    values = session.run_with_ort_values(None, given)
                    replies.append(("ok", [array_of(v) for v in values]))
                else:
                    replies.append(("ok", [_array(v) for v in session.run(None, feeds)]))
            except Exception as exc:   # onnxruntime raises its own exception types
                replies.append(("error", f"{type(exc).__name__}: {str(exc)[:2000]}",
                                traceback.format_exc(limit=3)))
        conn.send((replies, time.process_time()))


def _serve_adapter(conn, name: str) -> None:
    from conform.harness.backends.graph_program import run_graph_on
    from conform.harness.backends.wrapping import load_backend

    backend = load_backend(name)
    conn.send(("ready", backend.version(), time.process_time()))
    while True:
        try:
            models, feeds, _, parts = conn.recv()
        except EOFError:
            return
        replies = []
        for model, part in zip(models, parts):
            try:
                replies.append(("ok", [np.asarray(v) for v in run_graph_on(backend, part, model,
                                                                           feeds)]))
            except Exception as exc:   # the adapter's or its runtime's error: the graph's
                replies.append(("error", f"{type(exc).__name__}: {str(exc)[:2000]}",
                                traceback.format_exc(limit=3)))
        conn.send((replies, time.process_time()))


def _array(value):
    """An output as an array; anything else (a sparse tensor) is the model's error."""
    if not isinstance(value, np.ndarray):
        raise TypeError(f"an output of type {type(value).__name__}, not a tensor")
    return value


class GraphWorker:
    """A worker process running ONNX models on onnxruntime; :meth:`run` returns per model
    ``("ok", outputs)`` or ``("error", message, traceback)``, or raises :class:`WorkerDied`."""

    def __init__(self, timeout: float = 60.0, backend: str = "onnxruntime"):
        self.timeout, self.backend = timeout, backend
        self._process = self._conn = None
        self.version = None
        self.starts = 0   # workers started (each after the first replaces a dead one)
        #: CPU seconds the worker spent on requests (its start excluded): a rate's measure
        self.cpu_seconds = 0.0
        self._cpu_mark = 0.0

    def _start(self) -> None:
        context = mp.get_context("spawn")
        self._conn, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs, self.backend), daemon=True)
        process.start()
        self._process = process
        self.starts += 1
        theirs.close()
        if not self._conn.poll(120):
            self.close()
            raise WorkerDied("onnxruntime worker did not start in 120 s")
        _, self.version, self._cpu_mark = self._conn.recv()

    def run(self, models: list[bytes], feeds: dict, dtypes, parts=None) -> list:
        """Run each serialized model on ``feeds`` (``dtypes``: every input's and output's
        dtype, for the ones that cross as OrtValues; ``parts``: per model, its program's
        parts (:func:`~conform.harness.backends.graph_program.graph_parts`), for an adapter)."""
        if self._process is None:
            self._start()
        try:
            self._conn.send((models, feeds, tuple(dtypes), parts))
            if not self._conn.poll(self.timeout):
                self.close()
                raise WorkerDied(f"no answer in {self.timeout:g} s", kind="timeout")
            replies, cpu = self._conn.recv()
            self.cpu_seconds += cpu - self._cpu_mark
            self._cpu_mark = cpu
            return replies
        except (EOFError, OSError, BrokenPipeError):
            code = self._process.exitcode if self._process else None
            self.close()
            raise WorkerDied(f"worker died (exit code {code})") from None

    def close(self) -> None:
        """Stop the worker (a new one starts at the next :meth:`run`)."""
        if self._process is not None:
            self._process.kill()
            self._process.join(5)
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None


class WorkerDied(RuntimeError):
    """The worker died (``kind`` ``crash``) or hung (``timeout``) while running a graph."""

    def __init__(self, message: str, kind: str = "crash"):
        super().__init__(message)
        self.kind = kind
