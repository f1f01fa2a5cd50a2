"""Imported by the fork server workers start from (:data:`conform.harness.run.isolation.WORKER_METHOD`):
conform, its op modules and the built-in specs, loaded once, so that each worker forked from it
starts with them. Nothing here is of a run: no case, no oracle answer, no adapter."""
from __future__ import annotations

import contextlib
import io
import os

import conform.harness.run.worker  # noqa: F401  (the worker's code)
from conform.harness.run.processes import SAFEPATH_MARK

if os.environ.pop(SAFEPATH_MARK, None):   # conform's, for this interpreter's start alone
    os.environ.pop("PYTHONSAFEPATH", None)

try:
    from conform.spec import load_specs

    # silently: what it would say (a damaged or unusable cache entry, a broken op package) the
    # run's own process says once, and each worker when it loads the specs itself
    with contextlib.redirect_stderr(io.StringIO()):
        load_specs()
except Exception:
    pass
