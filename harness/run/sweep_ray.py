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

import importlib
import shutil
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
        self._staging = None

    def __enter__(self):
        import ray

        self._staging = tempfile.TemporaryDirectory(prefix="conform-ray-")
        path = resolved_backend(self.backend)
        ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                 runtime_env={"py_modules": staged_modules(path, Path(self._staging.name))})
        self._run = ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(ray_chunk)
        self._path = path
        self.info = ray.get(ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(ray_hello)
                            .remote(path, self.settings))
        return self

    def __exit__(self, *exc):
        import ray

        ray.shutdown()
        self._staging.cleanup()

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


__all__ = ["RAY_RETRIES", "RayExecutor", "ray_chunk", "ray_hello", "resolved_backend",
           "staged_modules"]
