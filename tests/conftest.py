"""Shared fixtures: the built-in specs, loaded once."""
from __future__ import annotations

import pytest

from conform.spec import load_specs


@pytest.fixture(scope="session")
def specs():
    return load_specs()
