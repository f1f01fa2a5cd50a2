"""XLA Tuple and GetTupleElement (operation semantics, seeds/004_c11ff90b720ca9d5.txt, "Tuple":
"a tuple holding a variable number of data handles, each with its own shape", like
``std::tuple``; "GetTupleElement": "indexes into a tuple with a compile-time constant value",
like ``std::get<N>(t)``).

The op ``get_tuple_element`` builds ``tuple(a, b)`` of two arrays of independent shapes and
returns element ``index`` (0 or 1): a copy of that array, judged exactly (NaN payloads aside).
The jax binding binds a primitive lowered to StableHLO's own ``tuple`` and
``get_tuple_element`` (jax flattens tuples and never emits them itself).
"""
from __future__ import annotations

from conform.op_registry import op


def draw_get_tuple_element(draw, kit, spec, dtype):
    """Two arrays of independent shapes (rank 0 to 3, empty sides too) and an index 0 or 1."""
    shapes = [draw(kit.shape(min_rank=0, max_rank=3, min_side=0, max_side=5)) for _ in range(2)]
    attrs = {"index": draw(kit.st.integers(0, 1))}
    return kit.Signature((dtype, dtype), tuple(tuple(s) for s in shapes), attrs, dtype)


def lax_get_tuple_element(lax, attrs):
    """A jax primitive lowered to ``stablehlo.tuple(a, b)`` then
    ``stablehlo.get_tuple_element`` at the case's ``index``."""
    import jax
    from jax.extend.core import Primitive
    from jax.extend.mlir.dialects import stablehlo
    from jax.interpreters import mlir

    index = int(attrs["index"])
    prim = Primitive("xla_get_tuple_element")
    prim.def_abstract_eval(lambda *xs: jax.core.ShapedArray(xs[index].shape, xs[index].dtype))

    def lower(ctx, *xs):
        return stablehlo.GetTupleElementOp(stablehlo.TupleOp(list(xs)).result, index).results

    mlir.register_lowering(prim, lower)
    # jitted: a primitive without an evaluation rule runs only compiled
    return jax.jit(lambda a, b: prim.bind(a, b))


def numpy_get_tuple_element(a, b, *, index):
    """The numpy backend: a Python tuple indexed."""
    return (a, b)[index].copy()


@op("get_tuple_element", version=1, draw=draw_get_tuple_element, feeding="moved",
    lax=lax_get_tuple_element, numpy=numpy_get_tuple_element)
def oracle_get_tuple_element(a, b, *, index):
    """GetTupleElement(Tuple(a, b), index): the array at ``index``."""
    return ((a, b)[index],)
