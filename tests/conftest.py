"""Shared fixtures: the built-in specs, loaded once."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conform.spec import load_specs


@pytest.fixture(scope="session")
def specs():
    return load_specs()


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes minutes or downloads packages; still runs by "
                                       "default (deselect with -m 'not slow')")
    _give_jax_its_host_devices()


def _give_jax_its_host_devices():
    """jax fixes its CPU device count when its backend first starts, in whichever test starts it:
    a test calling jax directly must not leave the jax backend's collectives one device for the
    rest of the session, so every start gets the backend's count (XLA's host-platform flag)."""
    from conform.harness.backends.jax_backend import JaxBackend

    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (
            f"{flags} --xla_force_host_platform_device_count={JaxBackend.host_devices}".strip())


@pytest.fixture(scope="session")
def conform_cli():
    """``run(*args, check_status=None)``: the real ``conform`` command in a subprocess."""
    def run(*args, check_status=None):
        proc = subprocess.run([sys.executable, "-m", "conform.harness.cli", *map(str, args)],
                              capture_output=True, text=True, timeout=900)
        if check_status is not None:
            assert proc.returncode == check_status, proc.stdout + proc.stderr
        return proc

    return run


@pytest.fixture(scope="session")
def onnx_node_cases():
    """Every backend node test case the onnx package's exporters make, collected once: its
    ``collect_testcases(op_type)`` imports each exporter module once per process and keeps only
    the op type asked for on that first call, so it is asked once, for every op type."""
    from onnx.backend.test.case.node import collect_testcases

    return tuple(collect_testcases(None))
