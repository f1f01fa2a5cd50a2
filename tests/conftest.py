"""Shared fixtures: the built-in specs, loaded once."""
from __future__ import annotations

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
