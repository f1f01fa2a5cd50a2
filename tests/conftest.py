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
