"""How conform starts the processes a backend runs in, and which it may fork.

A worker starts from a fork server (:data:`WORKER_METHOD`), never from the process that judges:
that one holds the run's oracle answers, and the adapter's code must not run where it does.
The processes that draw the corpus (no backend there) are forked where that is safe.
"""
from __future__ import annotations

import contextlib
import os
import multiprocessing as mp
import sys
import threading
import types

from conform.harness.run.wire import WireError, unpack
from conform.harness.run.worker import ComputeSettings, binding_main

#: Seconds a worker may take to load its backend (import it, make the adapter, say hello), when
#: the pool is not told: loading a runtime is not running a case, and jax or OpenVINO take
#: seconds to import on a busy machine.
LOAD_TIMEOUT = 120.0

# Modules whose threads or device state must not be copied into a forked child.
_FORK_UNSAFE_MODULES = ("jax", "jaxlib", "onnxruntime", "openvino", "iree", "tensorflow", "torch")


def start_method() -> str:
    """``fork`` if this process can be forked safely, else ``spawn``."""
    if "fork" not in mp.get_all_start_methods() or threading.active_count() > 1:
        return "spawn"
    if any(name in sys.modules for name in _FORK_UNSAFE_MODULES):
        return "spawn"
    return "fork"


def forking_context():
    """A multiprocessing context that forks, if this process can be forked safely; else None."""
    return mp.get_context("fork") if start_method() == "fork" else None


#: How workers start: forked from a fork server that imported conform and loaded the built-in
#: specs (:mod:`conform.harness.run.preload`), never from the parent, which holds the run's
#: oracle answers; spawned where there is no fork server.
WORKER_METHOD = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"


def worker_context(method: str):
    """The multiprocessing context that starts workers by ``method`` (the fork server: with its
    preload)."""
    context = mp.get_context(method)
    if method == "forkserver":   # (read once, when the fork server starts)
        context.set_forkserver_preload(["conform.harness.run.preload"])
    return context


def start_worker_server() -> None:
    """Start the fork server workers come from now, without waiting for it: its preload
    (conform, the op modules, the built-in specs) then runs while this process loads the specs
    and the corpus, instead of before the first worker (about a second and a half of a run's
    start on 2 cores)."""
    if WORKER_METHOD != "forkserver":
        return
    from multiprocessing import forkserver

    worker_context(WORKER_METHOD)   # (names the preload the server starts with)
    with started_without_main():
        forkserver.ensure_running()


#: Set beside PYTHONSAFEPATH where conform set it (see :func:`started_without_main`).
SAFEPATH_MARK = "CONFORM_SET_PYTHONSAFEPATH"


@contextlib.contextmanager
def started_without_main():
    """Start processes in this block without this process's ``__main__``: multiprocessing has a
    spawned (or fork-server) child import it again, which would run a script's top level (and
    whatever it imports) in every worker, and refuse a script without a ``__main__`` guard.
    A worker needs nothing of it: what it runs is in conform."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    # a new interpreter (the fork server, a spawned worker) starts as `python -c ...`, which puts
    # the working directory first on sys.path: run from a checkout, its `conform/` folder (the
    # bottom layer alone) would hide the installed conform. PYTHONSAFEPATH leaves it out; the
    # preload takes it back out of the environment, so a backend's own children never see it.
    safe = {"PYTHONSAFEPATH": "1", SAFEPATH_MARK: "1"} if "PYTHONSAFEPATH" not in os.environ else {}
    os.environ.update(safe)
    try:
        yield
    finally:
        for name in safe:
            os.environ.pop(name, None)
        if main is not None:
            sys.modules["__main__"] = main


def backend_binding(backend: str) -> str | None:
    """The spec binding ``backend``'s model format consumes (None: every op, or unknown), as a
    process of its own reads it from the backend's class: this one never imports the adapter."""
    context = worker_context(WORKER_METHOD)
    parent, child = context.Pipe()
    process = context.Process(target=binding_main, daemon=True,
                              args=(child, backend, ComputeSettings.of_parent()))
    with started_without_main():
        process.start()
    child.close()
    try:
        kind, body, _ = unpack(parent.recv_bytes()) if parent.poll(LOAD_TIMEOUT) else (None, None, ())
    except (EOFError, OSError, WireError):
        kind = None
    process.join(5)
    if process.is_alive():
        process.kill()
    parent.close()
    return body if kind == "binding" and type(body) is str else None


def stop_children(children, grace: float = 5.0) -> None:
    """Stop ``(process, connection)`` pairs: each is sent None (its sign to finish), then given
    ``grace`` seconds to end before it is killed; the connections are closed."""
    for process, conn in children:
        try:
            conn.send(None)
        except OSError:
            pass
    for process, conn in children:
        process.join(grace)
        if process.is_alive():
            process.kill()
            process.join(5)
        conn.close()
