"""XLA Broadcast, Collapse and OptimizationBarrier (operation semantics, "广播", "收起",
"OptimizationBarrier"): data movement, every output element a copy of one operand element, so
the oracles are exact and the elements feeding an output are traced through them
(``feeding="moved"``); and XLA Map ("地图") of a scalar computation, element by element."""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op
from conform.ops._midpoints import PRODUCT_MIDPOINTS
from conform.ops.elementwise import rounded_add, rounded_multiply, rounded_subtract
from conform.ops.movement import moved


def draw_broadcast(draw, kit, spec, dtype):
    """An operand of rank 0 to 3 and 0 to 3 new leading sizes (0 now and then: an empty
    result), the result within the array-size cap."""
    st = kit.st
    shape = draw(kit.shape(max_rank=3, max_side=4))
    sizes = draw(st.lists(st.integers(0, 3), max_size=3).filter(
        lambda s: math.prod(s) * math.prod(shape) <= kit.MAX_ARRAY_SIZE))
    return kit.Signature((dtype,), (shape,), {"sizes": list(sizes)}, dtype)


def numpy_broadcast(operand, *, sizes):
    """The numpy backend: ``np.broadcast_to`` the shape ``sizes + operand.shape``."""
    return np.broadcast_to(operand, (*sizes, *operand.shape))


@moved("broadcast", draw=draw_broadcast, numpy=numpy_broadcast)
def oracle_broadcast(operand, *, sizes):
    """Broadcast(operand, broadcast_sizes): the new dimensions go on the left, output shape
    {a0..aN, b0..bM}, and output[i0, ..., iN, j0, ..., jM] = operand[j0, ..., jM]."""
    leading = (1,) * len(sizes)
    return (np.tile(operand.reshape(leading + operand.shape), (*sizes, *(1,) * operand.ndim)),)


def draw_collapse(draw, kit, spec, dtype):
    """An operand of rank 1 to 4 and a run of consecutive dimensions, in order: at least two
    where the operand has them after the run's start (a run of one changes nothing)."""
    st = kit.st
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=4))
    start = draw(st.integers(0, max(len(shape) - 2, 0)))
    stop = draw(st.integers(min(start + 2, len(shape)), len(shape)))
    return kit.Signature((dtype,), (shape,), {"dimensions": list(range(start, stop))}, dtype)


def lax_collapse(lax, attrs):
    """``lax.collapse(x, start, stop)`` merges dimensions ``start`` to ``stop - 1``."""
    dims = attrs["dimensions"]
    return lambda x: lax.collapse(x, dims[0], dims[-1] + 1)


def numpy_collapse(operand, *, dimensions):
    """The numpy backend: a row-major ``np.reshape`` with the run's sizes multiplied."""
    shape = operand.shape
    merged = math.prod(shape[dimensions[0]:dimensions[-1] + 1])
    return np.reshape(operand, (*shape[:dimensions[0]], merged, *shape[dimensions[-1] + 1:]))


@moved("collapse", draw=draw_collapse, lax=lax_collapse, numpy=numpy_collapse)
def oracle_collapse(operand, *, dimensions):
    """Collapse(operand, dimensions): the consecutive, ordered ``dimensions`` are replaced by one
    dimension in their place whose size is their product; the lowest-numbered dimension varies
    slowest (the text's v012 and v01 examples), so the new index is the row-major combination
    of the old ones."""
    first, last = dimensions[0], dimensions[-1]
    out = np.empty(operand.shape[:first] + (math.prod(operand.shape[first:last + 1]),)
                   + operand.shape[last + 1:], operand.dtype)
    if operand.size:
        index = np.indices(operand.shape)
        merged = np.ravel_multi_index(tuple(index[first:last + 1]), operand.shape[first:last + 1])
        out[(*index[:first], merged, *index[last + 1:])] = operand
    return (out,)


# --- OptimizationBarrier -----------------------------------------------------------------------

def draw_optimization_barrier(draw, kit, spec, dtype):
    """Three operands of independent shapes (the third int32, as the spec declares it): the
    barrier passes a tuple of arrays of any shapes and types through."""
    shapes = tuple(draw(kit.shape(max_rank=3, max_side=5)) for _ in spec.inputs)
    return kit.Signature((dtype, dtype, "int32"), shapes, {}, dtype)


def lax_optimization_barrier(lax, attrs):
    """``lax.optimization_barrier`` on the tuple of operands (one StableHLO optimization_barrier)."""
    return lambda *operands: tuple(lax.optimization_barrier(operands))


def numpy_optimization_barrier(*operands):
    """The numpy backend: NumPy has no optimisation to bar; the operands are returned as copies."""
    return tuple(np.copy(x) for x in operands)


@moved("optimization_barrier", draw=draw_optimization_barrier, lax=lax_optimization_barrier,
       numpy=numpy_optimization_barrier)
def oracle_optimization_barrier(operand, second, third):
    """OptimizationBarrier: the text says only that no optimisation moves computation across it
    and that every input is evaluated before anything depending on its outputs, so its outputs
    are its inputs, unchanged (bit for bit)."""
    return (operand.copy(), second.copy(), third.copy())


# --- Map ------------------------------------------------------------------------------------

#: Map's scalar computations: each one IEEE operation (correctly rounded) of the two parameters
MAP_COMPUTATIONS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}


#: the computations whose one result the text fixes in a type where not all three are: StableHLO
#: subtract takes no PRED ("tensor of integer, floating-point, or complex type"), and a complex
#: product is not one correctly rounded operation per part
MAP_ONLY = {"bool": ("add", "multiply"), "complex64": ("add", "subtract"),
            "complex128": ("add", "subtract")}


def draw_map(draw, kit, spec, dtype):
    """Two operands of one shape (0-d and empty included) and the spec's ``computation`` (on
    PRED or complex numbers one of :data:`MAP_ONLY`)."""
    shape = draw(kit.shape(max_rank=3, min_side=draw(kit.st.sampled_from((0, 1, 1, 1)))))
    attrs = kit.attributes(draw, spec, {name: len(shape) for name in spec.inputs})
    if dtype in MAP_ONLY:
        attrs["computation"] = draw(kit.st.sampled_from(MAP_ONLY[dtype]))
    return kit.Signature((dtype, dtype), (shape, shape), attrs, dtype)


def lax_map(lax, attrs):
    """A jax primitive lowered to StableHLO's ``map`` over every dimension, its region one
    ``stablehlo.add``, ``subtract`` or ``multiply`` of two scalars: XLA's Map itself (jax.lax's
    ``map`` is a loop over the leading axis, another op)."""
    import jax
    from jax.extend.core import Primitive
    from jax.extend.mlir import ir
    from jax.extend.mlir.dialects import stablehlo
    from jax.interpreters import mlir

    body = {"add": stablehlo.AddOp, "subtract": stablehlo.SubtractOp,
            "multiply": stablehlo.MulOp}[attrs["computation"]]
    prim = Primitive("xla_map_" + attrs["computation"])
    prim.def_abstract_eval(lambda x, *rest: jax.core.ShapedArray(x.shape, x.dtype))

    def lower(ctx, *operands):
        ranked = ir.RankedTensorType(operands[0].type)
        scalar = ir.RankedTensorType.get([], ranked.element_type)
        mapped = stablehlo.MapOp(operands[0].type, list(operands), list(range(ranked.rank)))
        block = mapped.computation.blocks.append(*[scalar] * len(operands))
        with ir.InsertionPoint(block):
            stablehlo.ReturnOp([body(*block.arguments).result])
        return mapped.results

    mlir.register_lowering(prim, lower)
    return jax.jit(prim.bind)   # a primitive without an evaluation rule runs only compiled


def numpy_map(lhs, rhs, *, computation):
    """The numpy backend: the computation's ufunc, which NumPy applies element by element."""
    return MAP_COMPUTATIONS[computation](lhs, rhs)


#: each computation's correctly rounded float64 result, the ``rounded64`` hook of its element-wise op
MAP_ROUNDED = {"add": rounded_add, "subtract": rounded_subtract, "multiply": rounded_multiply}


def rounded_map(lhs, rhs, *, computation):
    """The ``rounded64`` hook: the computation's exact result rounded once into float64 (and
    each part of a complex128 sum or difference), as the element-wise op's own hook gives it."""
    return MAP_ROUNDED[computation](lhs, rhs)


def map_midpoints(rng, spec, dtype):
    """The midpoint case: Map of a multiplication on operands whose exact products are rounding
    midpoints of ``dtype`` (half of them; the rest one ULP beside)."""
    made = None if dtype in MAP_ONLY else PRODUCT_MIDPOINTS(rng, spec, dtype)
    return None if made is None else (made[0], {"computation": "multiply"}, made[2])


@op("map", version=1, draw=draw_map, draw_honours=frozenset({"attrs"}), lax=lax_map,
    numpy=numpy_map, rounded64=rounded_map, midpoints=map_midpoints)
def oracle_map(lhs, rhs, *, computation):
    """Map(operands..., computation): out[i] = computation(lhs[i], rhs[i]) at every index; the
    computation here is one addition, subtraction or multiplication of its two parameters."""
    return (MAP_COMPUTATIONS[computation](lhs, rhs),)
