"""XLA GetDimensionSize (operation semantics, seeds/004_c11ff90b720ca9d5.txt,
"GetDimensionSize": "returns the size of the given dimension of the operand", ``dimension`` in
``[0, n)``), judged exactly: the result is an s32 scalar.

jax has no function for it (a static shape's size is a Python int, folded before XLA sees it):
the lax hook binds a jax primitive lowered to StableHLO's own ``get_dimension_size``, which
XLA:CPU compiles (the operand's shape is static, so the result is its size there).
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op


def draw_get_dimension_size(draw, kit, spec, dtype):
    """An array of rank 1 to 4 (empty dimensions included) and one of its dimensions."""
    shape = tuple(draw(kit.shape(min_rank=1, max_rank=4, min_side=0, max_side=7)))
    attrs = {"dimension": draw(kit.st.integers(0, len(shape) - 1))}
    return kit.Signature((dtype,), (shape,), attrs, "int32")


def lax_get_dimension_size(lax, attrs):
    """A jax primitive lowered to ``stablehlo.get_dimension_size`` at ``dimension``."""
    import jax
    from jax.extend.core import Primitive
    from jax.extend.mlir.dialects import stablehlo
    from jax.interpreters import mlir

    dimension = int(attrs["dimension"])
    prim = Primitive("xla_get_dimension_size")
    prim.def_abstract_eval(lambda x: jax.core.ShapedArray((), np.int32))
    mlir.register_lowering(prim, lambda ctx, x: stablehlo.GetDimensionSizeOp(x, dimension).results)
    # jitted: a primitive without an evaluation rule runs only compiled
    return jax.jit(lambda operand: prim.bind(operand))


def numpy_get_dimension_size(operand, *, dimension):
    """The numpy backend: the array's shape at ``dimension``, as an int32 scalar."""
    return np.int32(np.shape(operand)[dimension])


@op("get_dimension_size", version=1, draw=draw_get_dimension_size, lax=lax_get_dimension_size,
    numpy=numpy_get_dimension_size, feeding=lambda inputs, attrs, index: [])
def oracle_get_dimension_size(operand, *, dimension):
    """GetDimensionSize(operand, dimension): the size of that dimension, an s32 scalar."""
    return (np.array(operand.shape[dimension], np.int32),)
