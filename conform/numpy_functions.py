"""The NumPy functions a spec may name (``bindings.numpy.fn``): public functions and ufuncs of
the ``numpy`` namespace and its public submodules (``exp``, ``linalg.norm``), nothing a dotted
path reaches beyond them (``f2py.os.write`` is ``os.write``)."""
from __future__ import annotations

import types
from typing import Callable

import numpy as np


def numpy_function_problem(name: str) -> str | None:
    """Why ``numpy.<name>`` is not a public NumPy function or ufunc; None if it is."""
    found = np
    for part in name.split("."):
        if part.startswith("_"):
            return f"fn={name!r}: {part!r} is private to NumPy"
        found = getattr(found, part, None)
        if found is None:
            return f"fn={name!r}: NumPy has no such function"
        if isinstance(found, types.ModuleType) and not _in_numpy(found.__name__):
            return f"fn={name!r} leaves the numpy namespace (numpy.{part} is {found.__name__})"
    if isinstance(found, np.ufunc):
        return None
    if not callable(found) or isinstance(found, (type, types.ModuleType)) \
            or not _in_numpy(getattr(found, "__module__", None) or ""):
        return f"fn={name!r} is not a NumPy function or ufunc"
    return None


def public_numpy_function(name: str) -> Callable:
    """``numpy.<name>``, a public NumPy function or ufunc; ValueError saying why not otherwise.

    >>> public_numpy_function("exp") is np.exp
    True
    """
    problem = numpy_function_problem(name)
    if problem is not None:
        raise ValueError(f"numpy binding {problem}")
    found = np
    for part in name.split("."):
        found = getattr(found, part)
    return found


def _in_numpy(module: str) -> bool:
    return module == "numpy" or module.startswith("numpy.")
