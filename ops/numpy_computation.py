"""How the numpy backend computes an op: with NumPy itself, in the target dtype, never the oracle.

An op's NumPy computation comes from, in this order:

* its op module's ``numpy`` hook (structural ops, compositions of NumPy functions); a hook with a
  ``bound`` keyword also gets the function its spec's numpy binding names (one hook serving
  several ops, e.g. XLA's binary ops bringing their operands to one shape first); a hook with a
  ``numpy_of`` keyword also gets a function giving another op's NumPy computation by its name
  (a loop body or a branch made of catalog ops, each computed by its own op's NumPy
  computation: :func:`numpy_chain`);
* its spec's ``bindings.numpy``: ``{fn: NAME, params: {...}, attrs: {...}}`` calls
  ``numpy.NAME`` on the inputs with ``params`` and the case's attributes as keywords, each
  attribute under the keyword ``attrs`` maps it to (``{permutation: axes}``; a list becomes a
  tuple);
* ``bindings.numpy: {unsupported: REASON}``: NumPy cannot express the op; each case is
  ``unsupported`` with that reason.

An op with none of them is unsupported too. A result whose dtype is not the output's (NumPy
computed the op in another type: ``np.divide`` on int32 gives float64) is unsupported as well:
the backend never casts a result into the target dtype.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

import numpy as np

from conform.numpy_functions import public_numpy_function
from conform.ops._lowering import unsupported


def numpy_function(name: str) -> Callable:
    """``numpy.<name>``, a public NumPy function or ufunc (a dotted name reaches a public
    submodule: ``linalg.norm``; never a path that leaves NumPy, see
    :mod:`conform.numpy_functions`).

    >>> numpy_function("exp") is np.exp
    True
    """
    return public_numpy_function(name)


@functools.lru_cache(maxsize=None)
def _takes(hook: Callable, keyword: str) -> bool:
    """Whether ``hook`` (an op module's function) has the keyword ``keyword``; cached, since
    the numpy backend resolves an op's computation for every case."""
    try:
        return keyword in inspect.signature(hook).parameters
    except (TypeError, ValueError):
        return False


def numpy_computation(spec, *, catalog=None) -> Callable[..., tuple]:
    """The function computing ``spec``'s op with NumPy: ``fn(*inputs, **attrs) -> tuple`` of
    arrays, on the inputs in their own dtypes. Raises ``Unsupported`` (with the reason) where
    NumPy cannot express the op. ``catalog`` (specs by op name) is where a hook taking
    ``numpy_of`` finds the ops it composes.

    >>> from conform.spec import load_specs
    >>> numpy_computation(load_specs()["exp"])(np.float32([1.0]))[0].dtype
    dtype('float32')
    """
    binding = spec.bindings.get("numpy") or {}
    if "unsupported" in binding:
        raise unsupported(f"{spec.op}: {binding['unsupported']}")
    bound = numpy_function(binding["fn"]) if "fn" in binding else None
    params = dict(binding.get("params") or {})
    hook = spec.definition.numpy
    if hook is not None:
        given = {}
        if _takes(hook, "bound"):
            given.update(bound=bound, **params)
        if _takes(hook, "numpy_of"):
            given["numpy_of"] = functools.partial(_numpy_of, catalog)
        return _as_tuple(functools.partial(hook, **given) if given else hook)
    if bound is None:
        raise unsupported(f"{spec.op}: no NumPy computation (the op module has no numpy hook "
                          "and the spec no numpy binding)")
    return _as_tuple(_renamed(functools.partial(bound, **params), binding.get("attrs") or {}))


def _renamed(fn: Callable, names: dict) -> Callable:
    if not names:
        return fn

    def call(*inputs, **attrs):
        return fn(*inputs, **{names.get(k, k): tuple(v) if isinstance(v, list) else v
                              for k, v in attrs.items()})
    return call


def _checked(spec, catalog=None) -> Callable[..., tuple]:
    """``spec``'s NumPy computation, its result checked to be in its first operand's dtype (a
    node of a program: element-wise, one output of its input dtype)."""
    compute = numpy_computation(spec, catalog=catalog)
    return lambda *operands, **attrs: tuple(in_target_dtypes(
        spec.op, compute(*operands, **attrs), [operands[0].dtype]))


def _numpy_of(catalog, name: str) -> Callable:
    """``fn(*operands) -> array``: op ``name``'s NumPy computation (one output, checked to be in
    its first operand's dtype), the op's spec taken from ``catalog``."""
    if catalog is None or name not in catalog:
        raise ValueError(f"the NumPy computation of {name} was asked for without a catalog "
                         "holding its spec")
    compute = _checked(catalog[name], catalog)
    return lambda *operands: compute(*operands)[0]


def numpy_chain(steps, numpy_of: Callable) -> Callable:
    """``fn(first, other) -> array``: the ops ``steps`` (``(name, arity)`` pairs) applied in
    turn, each by its own NumPy computation (``numpy_of(name)``), the first to ``first``, each
    later one to the previous result; a binary op takes ``other`` as its second operand.

    >>> from conform.spec import load_specs
    >>> chain = numpy_chain([("negate", 1), ("add", 2)], functools.partial(_numpy_of, load_specs()))
    >>> chain(np.float32([1.0, 2.0]), np.float32([0.5, 0.5])).tolist()
    [-0.5, -1.5]
    """
    computed = [(numpy_of(name), arity) for name, arity in steps]

    def apply(first, other):
        value = first
        for compute, arity in computed:
            value = compute(value) if arity == 1 else compute(value, other)
        return value
    return apply


def _as_tuple(fn: Callable) -> Callable[..., tuple]:
    def compute(*inputs, **attrs) -> tuple:
        outputs = fn(*inputs, **attrs)
        return outputs if isinstance(outputs, tuple) else (outputs,)
    return compute


def in_target_dtypes(op: str, outputs: tuple, dtypes) -> list:
    """``outputs`` as arrays, each checked to have its output's dtype (``dtypes``, NumPy dtypes):
    a result NumPy computed in another type is ``unsupported``, never cast."""
    arrays = []
    for k, (out, dtype) in enumerate(zip(outputs, dtypes)):
        # (a 0-d result of a string array comes out of NumPy as a bare str)
        array = np.asarray(out, object if isinstance(out, str) else None)
        if array.dtype != dtype:
            raise unsupported(f"{op}: NumPy computes output {k} in {array.dtype}, "
                              f"not {np.dtype(dtype).name}")
        arrays.append(array)
    if len(arrays) != len(dtypes):
        raise ValueError(f"{op}: the numpy computation gave {len(arrays)} outputs, "
                         f"the op has {len(dtypes)}")
    return arrays
