"""XLA Call (operation semantics, seeds/004_c11ff90b720ca9d5.txt, "Call": "calls a computation
with the given arguments"; ``Call(computation, args...)``, the computation of type
``T_0, ..., T_{N-1} -> S`` taking N arguments whose arity and types match).

The computation is a *body* of ops/control_flow.py: 1 to 4 exactly defined catalog ops applied
in turn to ``a``, binary ones taking ``b`` (case attribute ``body``), so the result is the one
the body computes on the arguments, each op rounded once to the element type, and the oracle
is the body's (``run_body``), with the elements an op's region leaves open marked. The jax
binding calls the body as a function jitted of its own inside the backend's jit, which jax
lowers to a ``func.call`` (XLA's kCall).

CompositeCall ("CompositeCall": a composite "may be replaced by its decomposition without
changing program semantics"; implemented as a kCall with ``is_composite=true``) is the same
computation as the decomposition of ``jax.lax.composite``, which lowers to
``stablehlo.composite`` named ``conform.body``, version 1.
"""
from __future__ import annotations

from conform.op_registry import op
from conform.ops.control_flow import (_shape, _start, body_pool, draw_body, lax_control,
                                      numpy_body, run_body)


def draw_call(draw, kit, spec, dtype):
    """Two arguments of one shape and dtype and a body of the catalog's ops."""
    shape = _shape(draw, kit)
    attrs = {"body": draw_body(draw, kit, body_pool(kit.catalog(), dtype))}
    return kit.Signature((dtype, dtype), (shape, shape), attrs, dtype)


def numpy_call(a, b, *, body, numpy_of):
    """The numpy backend: the body's ops in turn, each by its own op's NumPy computation."""
    return numpy_body(body, numpy_of)(a, b)


@op("call", version=1, draw=draw_call, lax=lax_control, uses_catalog=True, numpy=numpy_call)
def oracle_call(a, b, *, body, dtypes, ftz=False, open_elements=False):
    """Call(computation, a, b): the computation (the body) on the arguments; with
    ``open_elements`` the elements an op's region or zero sign leaves open (under either
    subnormal reading)."""
    dtype = dtypes[0]
    v, opened = run_body(body, *_start([a, b], dtype, ftz), dtype, ftz)
    if not open_elements:
        return (v,)
    if not ftz:   # what either reading leaves open is open (the judge accepts either)
        opened = opened | oracle_call(a, b, body=body, dtypes=dtypes, ftz=True,
                                      open_elements=True)[0]
    return (opened,)


@op("composite_call", version=1, draw=draw_call, lax=lax_control, uses_catalog=True,
    numpy=numpy_call)
def oracle_composite_call(a, b, *, body, dtypes, ftz=False, open_elements=False):
    """CompositeCall(a, b, name, decomposition, version): "the composite may be replaced by its
    decomposition without changing program semantics", so its result is the decomposition's
    (the body's) on the arguments: Call's oracle."""
    return oracle_call(a, b, body=body, dtypes=dtypes, ftz=ftz, open_elements=open_elements)
