"""An isolated process running generated graphs' models (``conform fuzz``).

Each graph's models are new (no two graphs share one), so the worker keeps no model: it is
handed the models (as the format's builder made them in the caller: serialized ONNX, an exported
StableHLO module, an NNEF document) and the inputs, and returns every model's outputs. What runs
them is the format's *runner* (a module-level function, called once in the worker: ``() ->
(version, run(model, feeds, dtypes) -> arrays)``); onnxruntime's (:func:`ort_runner`) makes a
session per model (CPU provider, one thread, ``ORT_ENABLE_ALL``: the optimisations a user gets
by default). An adapter ``module:Class`` whose model format is ONNX (a mutant of
bench/mutants/) has its own runner, :func:`adapter_runner`, which loads it and runs each model
through the adapter API (:func:`conform.harness.backends.graph_program.run_graph_on`) at the
adapter's own settings. Each reply carries the worker's CPU time, a rate's measure. A worker that
dies (a SIGFPE, an abort in a kernel) costs the graph it was running:
the caller records a ``crash``, and the next graph runs on another, forked by the spawned
process that forked the dead one (:func:`_serve`): it starts with the interpreter, NumPy and
conform loaded and loads only the runtime (about a third of a spawned worker's start, which
was a fifth of a 200-graph campaign's CPU at one crash in 100 graphs).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
import traceback

import numpy as np

from conform.harness.run.worker_io import death_message

OPTIMIZATION = "ORT_ENABLE_ALL"


def ort_runner():
    """onnxruntime's runner: its version, and a function running a serialized ONNX model
    (ml_dtypes' values crossing as OrtValues:
    :func:`~conform.harness.backends.ort_values.run_session`; a string input beside such a
    result is ``unsupported``: onnxruntime's Python API cannot run it)."""
    import onnxruntime as ort

    from conform.harness.backends.base import Unsupported
    from conform.harness.backends.ort_values import NoStringOrtValue, run_session

    ort.set_default_logger_severity(4)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, OPTIMIZATION)
    options.log_severity_level = 4

    def run(model: bytes, feeds: dict, dtypes) -> list:
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        try:
            return [_array(v) for v in run_session(ort, session, feeds)]
        except NoStringOrtValue as exc:   # the Python API's limit: the backend's unsupported
            raise Unsupported(str(exc)) from None

    return f"onnxruntime {ort.__version__}", run


def ort_model(graph, outputs) -> bytes:
    """The serialized ONNX model of ``graph`` with ``outputs`` (what :func:`ort_runner` runs)."""
    from conform.harness.backends.onnx_graphs import build_graph_model

    return build_graph_model(graph, outputs).SerializeToString()


def adapter_model(graph, outputs) -> tuple:
    """What :func:`adapter_runner` runs: ``graph``'s serialized ONNX model with ``outputs`` and
    its program's parts (:func:`~conform.harness.backends.graph_program.graph_parts`)."""
    from conform.harness.backends.graph_program import graph_parts

    return ort_model(graph, outputs), graph_parts(graph, outputs)


def adapter_runner(name: str):
    """The runner of an adapter ``module:Class`` whose model format is ONNX (bound to its name
    with :func:`functools.partial`): its version, and a function running a model of
    :func:`adapter_model` through the adapter API, at the adapter's own settings."""
    from conform.harness.backends.graph_program import run_graph_on
    from conform.harness.backends.wrapping import load_backend

    backend = load_backend(name)

    def run(model: tuple, feeds: dict, dtypes) -> list:
        serialized, parts = model
        return [np.asarray(v) for v in run_graph_on(backend, parts, serialized, feeds)]

    return backend.version(), run


def _serve(conn, runner=ort_runner) -> None:
    """The worker process: it forks the server that runs the models (:func:`_serve_models`)
    and, each time that one dies (a SIGFPE, an abort in a kernel, killed after a timeout),
    tells the caller (``("died", exit code)``) and forks another, which loads the runtime again
    but not the interpreter, NumPy and conform (a new server costs a fork and the runtime's
    import instead of a whole process's start). Nothing here imports the runtime, so the fork
    copies no runtime's threads. It ends when its server ends of itself (the caller closed the
    connection) or did not start, or when the caller is gone. Where this process cannot be
    forked safely (a runner's module imported a runtime, or started a thread), it runs the
    models itself, and a death ends it."""
    from conform.harness.run.processes import start_method

    if start_method() != "fork":
        _serve_models(conn, runner)
        return
    while True:
        pid = os.fork()
        if pid == 0:
            code = _NOT_STARTED
            try:
                code = _serve_models(conn, runner)
            finally:
                os._exit(code)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if code in (0, _NOT_STARTED):
            return
        try:
            conn.send(("died", code))
        except OSError:   # the caller closed its end
            return


def _died(code: int | None) -> str:
    """The crash message of a server that exited with ``code``: the code and, for a signal,
    its name (``SIGSEGV``), which the failure catalogs match as they match a one-op crash's."""
    return f"worker died (exit code {code}): {death_message(code)}"


#: The exit code of a server whose runner failed to load (the worker then stops: a new server
#: would fail the same way)
_NOT_STARTED = 70


def _serve_models(conn, runner) -> int:
    """Load the runtime, say so (``("ready", version, CPU time, pid)``), and run each request's
    models until the caller closes the connection; returns the exit code (0)."""
    try:
        version, run = runner()
    except Exception:
        traceback.print_exc()
        return _NOT_STARTED
    conn.send(("ready", version, time.process_time(), os.getpid()))
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return 0
        models, feeds, dtypes = request
        replies = []
        for model in models:
            try:
                replies.append(("ok", run(model, feeds, dtypes)))
            except Exception as exc:   # runtimes and adapters raise their own exception types
                replies.append(("error", f"{type(exc).__name__}: {str(exc)[:2000]}",
                                traceback.format_exc(limit=3)))
        conn.send((replies, time.process_time()))


def _array(value):
    """An output as an array; anything else (a sparse tensor) is the model's error."""
    if not isinstance(value, np.ndarray):
        raise TypeError(f"an output of type {type(value).__name__}, not a tensor")
    return value


class GraphWorker:
    """A worker process running one format's models (by default ONNX models on onnxruntime);
    :meth:`run` returns per model ``("ok", outputs)`` or ``("error", message, traceback)``, or
    raises :class:`WorkerDied`. ``build(graph, outputs)`` makes a graph's model (in the
    caller), ``runner`` runs it (in the worker: see the module's text)."""

    def __init__(self, timeout: float = 60.0, *, runner=ort_runner, build=ort_model):
        self.timeout = timeout
        self.runner, self.build = runner, build
        self._process = self._conn = None
        self._server = None       # the pid of the process running the models
        self._replaced = False    # the server died: its replacement's hello is still to read
        self.version = None
        self.starts = 0   # servers started (each after the first replaces a dead one)
        #: CPU seconds the servers spent on requests (their start excluded): a rate's measure
        self.cpu_seconds = 0.0
        self._cpu_mark = 0.0

    def _start(self) -> None:
        context = mp.get_context("spawn")
        self._conn, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs, self.runner), daemon=True)
        process.start()
        self._process = process
        theirs.close()
        self._hello()

    def _hello(self) -> None:
        """Read a new server's hello (its runtime loaded)."""
        self.starts += 1
        self._replaced = False
        if not self._conn.poll(120):
            self.close()
            raise WorkerDied("graph worker did not start in 120 s")
        _, self.version, self._cpu_mark, self._server = self._conn.recv()

    def run(self, models: list, feeds: dict, dtypes) -> list:
        """Run each model (as ``build`` made it) on ``feeds`` (``dtypes``: every input's and
        output's dtype, for the ones that cross as OrtValues)."""
        if self._process is None:
            self._start()
        elif self._replaced:
            self._hello()
        try:
            self._conn.send((models, feeds, tuple(dtypes)))
            if not self._conn.poll(self.timeout):
                os.kill(self._server, signal.SIGKILL)   # hung: alive, not yet reaped
                self.close()
                raise WorkerDied(f"no answer in {self.timeout:g} s", kind="timeout")
            answer = self._conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            code = self._process.exitcode if self._process else None
            self.close()
            raise WorkerDied(_died(code)) from None
        if answer[0] == "died":   # its replacement is starting
            self._replaced = True
            raise WorkerDied(_died(answer[1]))
        replies, cpu = answer
        self.cpu_seconds += cpu - self._cpu_mark
        self._cpu_mark = cpu
        return replies

    def close(self) -> None:
        """Stop the worker (a new one starts at the next :meth:`run`): its server ends at the
        closed connection, then the worker, which has reaped it (so that both CPU times count
        as this process's children's)."""
        if self._conn is not None:
            self._conn.close()
        if self._process is not None:
            self._process.join(5)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(5)
        self._process = self._conn = self._server = None


class WorkerDied(RuntimeError):
    """The worker died (``kind`` ``crash``) or hung (``timeout``) while running a graph."""

    def __init__(self, message: str, kind: str = "crash"):
        super().__init__(message)
        self.kind = kind
