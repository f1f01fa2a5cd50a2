"""Fixtures the op tests share."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def nnef_backend():
    """The nnef package's reference executor, as conform's ``nnef`` backend drives it."""
    from conform.harness.backends.nnef_backend import NnefBackend

    return NnefBackend()


@pytest.fixture(scope="module")
def jax_backend():
    """conform's jax backend (XLA:CPU)."""
    from conform.harness.backends.jax_backend import JaxBackend

    return JaxBackend()
