"""The Ray executor of ``conform sweep`` (the optional extra ``conform[ray]``).

Each chunk is a Ray task (:func:`ray_chunk`) that runs as a slot does on the local executor
(:func:`~conform.harness.run.sweep_executors.chunk_in_slot`): the Ray worker process keeps a
:class:`~conform.harness.run.isolation.WorkerPool` whose worker, a fresh process of its own,
runs the backend, while the oracle and the judge run in the Ray worker. A crash or hang of the
backend costs its worker, the chunk runs once more on a new one and is then recorded as
``crash`` or ``timeout``; a Ray worker or node that dies (a node lost mid-sweep) has Ray run
its task again elsewhere, once (``max_retries``), before the chunk is recorded as ``crash``.

Conform's code and an adapter named by module path reach the cluster's workers in the job's
runtime environment (``py_modules``: copies of the packages as this process imports them);
the libraries they need (NumPy, the backend's runtime) must be installed on the cluster.
"""
from __future__ import annotations

import contextlib
import importlib
import shutil
import signal
import tempfile
from pathlib import Path

#: How often Ray runs a task again after its worker process or node died.
RAY_RETRIES = 1


def ray_chunk(backend: str, settings, task) -> dict:
    """A Ray task: ``task``'s chunk summary (see the module's docstring)."""
    from conform.harness.run.sweep_executors import chunk_in_slot

    return chunk_in_slot(backend, settings, task)


def ray_hello(backend: str, settings) -> dict:
    """A Ray task: what the backend says of itself (its pool starts in the worker that runs it)."""
    from conform.harness.run.sweep_executors import slot_pool

    return slot_pool(backend, settings).info


def resolved_backend(backend: str) -> str:
    """``backend`` as ``module.path:ClassName`` (an entry-point name resolved here: the
    cluster need not have conform's distribution installed)."""
    if ":" in backend:
        return backend
    from conform.harness.backends.registry import available_backends, check_backend

    check_backend(backend)
    return available_backends()[backend].value.replace(" ", "")


def staged_modules(backend: str, into: Path) -> list[str]:
    """Copies, under ``into``, of the ``conform`` package as this process imports it (its
    sub-packages live in folders of their own in a checkout) and of the top-level package of
    ``backend``'s module where that is not conform; their paths, for ``py_modules``."""
    import conform

    root = into / "conform"
    shutil.copytree(Path(conform.__file__).parent, root, ignore=_ignored)
    for name in ("ops", "spec", "oracles", "generators", "harness", "harness.backends",
                 "harness.judge", "harness.run", "harness.assurance", "harness.cli", "reports",
                 "manifests"):
        module = importlib.import_module(f"conform.{name}")
        target = root.joinpath(*name.split("."))
        shutil.copytree(Path(module.__path__[0]), target, ignore=_ignored, dirs_exist_ok=True)
    paths = [str(root)]
    top = backend.partition(":")[0].split(".")[0]
    if top != "conform":
        module = importlib.import_module(top)
        source = Path(list(module.__path__)[0] if hasattr(module, "__path__") else module.__file__)
        target = into / source.name
        (shutil.copytree(source, target, ignore=_ignored) if source.is_dir()
         else shutil.copy(source, target))
        paths.append(str(target))
    return paths


def start_ray(backend: str, address: str | None):
    """Connect to (or start) the Ray cluster at ``address`` with this process's conform and
    ``backend``'s adapter in the job's runtime environment (:func:`staged_modules`); returns
    ``(the backend as module:Class, a RayConnection: close() it to disconnect)``."""
    import ray

    staging = tempfile.TemporaryDirectory(prefix="conform-ray-")
    path = resolved_backend(backend)
    handlers = {signum: signal.getsignal(signum) for signum in _HANDLED}
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 runtime_env={"py_modules": staged_modules(path, Path(staging.name))})
    except BaseException:
        RayConnection(staging, handlers).close()
        raise
    return path, RayConnection(staging, handlers)


#: The signals whose handlers ``ray.init`` replaces in the driver (SIGTERM: a handler that
#: raises SystemExit) and :class:`RayConnection` puts back.
_HANDLED = (signal.SIGINT, signal.SIGTERM)


class RayConnection:
    """This process's connection to Ray made by :func:`start_ray`: :meth:`close` disconnects,
    gives the signal handlers ``ray.init`` replaced back the handlers they had before, and
    removes the staged modules."""

    def __init__(self, staging, handlers: dict):
        self._staging, self._handlers = staging, handlers

    def close(self) -> None:
        """Disconnect from Ray, restore the signal handlers, remove the staging folder."""
        import ray

        try:
            ray.shutdown()
        finally:
            for signum, handler in self._handlers.items():
                if handler is not None and signal.getsignal(signum) is not handler:
                    with contextlib.suppress(ValueError):   # (not the main thread: not ours)
                        signal.signal(signum, handler)
            self._staging.cleanup()


def remote(function):
    """``function`` as a Ray task of one CPU, run once more after its worker or node died."""
    import ray

    return ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(function)


def _ignored(folder, names):
    return [n for n in names if n in ("__pycache__", ".venv", ".git") or n.endswith(".egg-info")]


class RayExecutor:
    """Chunks as Ray tasks on the cluster at ``address`` (None: Ray's default), at most
    ``slots`` in flight.

    >>> with RayExecutor("onnxruntime", PoolSettings(), address="auto") as executor:  # doctest: +SKIP
    ...     for summary in executor.map(tasks): ...
    """

    def __init__(self, backend: str, settings, *, address: str | None = None, slots: int = 2):
        self.backend, self.settings, self.address, self.slots = backend, settings, address, max(1, slots)
        self.info: dict = {}
        self._connection = None

    def __enter__(self):
        import ray

        self._path, self._connection = start_ray(self.backend, self.address)
        self._run = remote(ray_chunk)
        self.info = ray.get(remote(ray_hello).remote(self._path, self.settings))
        return self

    def __exit__(self, *exc):
        self._connection.close()

    def map(self, tasks):
        """Yield each task's summary as it finishes (a task Ray gave up on: ``crash``)."""
        import ray

        queue, running = list(reversed(tasks)), {}
        while queue or running:
            while queue and len(running) < self.slots:
                task = queue.pop()
                running[self._run.remote(self._path, self.settings, task)] = task
            ready, _ = ray.wait(list(running), num_returns=1)
            task = running.pop(ready[0])
            try:
                yield ray.get(ready[0])
            except ray.exceptions.RayError as exc:
                yield {"key": task.key, "first": task.first, "stop": task.stop, "status": "crash",
                       "attempts": RAY_RETRIES + 1, "seconds": {},
                       "message": f"Ray lost the task: {type(exc).__name__}: {str(exc)[:300]}"}


__all__ = ["RAY_RETRIES", "RayConnection", "RayExecutor", "ray_chunk", "ray_hello", "remote", "resolved_backend",
           "staged_modules", "start_ray"]
