"""Select, Clamp and ConvertElementType (XLA; ONNX Where, Clip; NNEF select, cast):
element-aligned ops whose inputs do not all share the output's type or shape."""
from __future__ import annotations

import numpy as np

from conform.ops._lowering import nan_refused, unsupported
from conform.ops._midpoints import conversion_hook
from conform.op_registry import op
from conform.ops._rounded import converted64
from conform.ops.onnx_cast import exact_float, numpy_astype
from conform.dtypes import FLOAT_FORMATS, component_dtype, int_info, is_complex, is_integer, np_dtype
from conform.ops.xla_complex_order import lexicographic_pick


def draw_select(draw, kit, spec, dtype):
    """pred (bool), on_true, on_false: one shape."""
    shape = draw(kit.shape())
    return kit.Signature(("bool", dtype, dtype), (shape,) * 3, {}, dtype)


@op("select", version=1, draw=draw_select)
def oracle_select(pred, on_true, on_false):
    """on_true where pred else on_false."""
    return (np.where(pred, on_true, on_false),)


def draw_clamp(draw, kit, spec, dtype):
    """min, operand, max: min and max are scalars or have the operand's shape.

    Half the signatures have scalar bounds both, the only ones ONNX Clip takes."""
    shape = draw(kit.shape())
    scalar_bounds = draw(kit.st.booleans())
    bound_shapes = [() if scalar_bounds else draw(kit.st.sampled_from([(), shape])) for _ in range(2)]
    return kit.Signature((dtype,) * 3, (bound_shapes[0], shape, bound_shapes[1]), {}, dtype)


def onnx_clip(case, graph):
    if any(case.inputs[i].ndim != 0 for i in (0, 2)):
        raise unsupported("ONNX Clip takes only scalar min and max")
    low, operand, high = graph.inputs
    graph.node(graph.op_type, [operand, low, high])


def numpy_clamp(min, operand, max):  # noqa: A002 - XLA's parameter names
    """The numpy backend: ``np.clip(operand, min, max)``."""
    return np.clip(operand, min, max)


@op("clamp", version=1, draw=draw_clamp, onnx=onnx_clip, onnx_shape_dependent=True,
    onnx_refuses=nan_refused("ONNX Clip", "region nan_operand of onnx_clip"), numpy=numpy_clamp)
def oracle_clamp(min, operand, max):  # noqa: A002 - XLA's parameter names
    """XLA Clamp: clamp(a, x, b) = min(max(a, x), b); bool: StableHLO's maximum is OR and its
    minimum AND (NumPy's on bool); complex: StableHLO's ``minimum(maximum(operand, min),
    max)`` in the lexicographic order (:mod:`conform.ops.xla_complex_order`)."""
    if any(np.iscomplexobj(x) for x in (min, operand, max)):
        return (lexicographic_pick(False, lexicographic_pick(True, operand, min), max),)
    return (np.minimum(np.maximum(min, operand), max),)


#: The types every ordered pair of which is drawn (156 conversions); each other type of the
#: spec is converted from and into types of its kind and width class only
#: (:func:`conversion_labels`): every pair would be some 870 labels, each a kernel on XLA.
PAIRWISE = ("float16", "bfloat16", "float32", "float64", "int32", "int64", "bool",
            "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "int4", "uint4")


def _partners(dtype: str, dtypes) -> list[str]:
    """The conversions drawn of a type outside :data:`PAIRWISE`: an integer to and from the
    widest other integer of its signedness (a widening, exact, and a narrowing, in range or
    not) and to and from float32 (rounding, truncation); a float of at most 8 bits to and from
    float32 (exact, and a rounding); a complex type to the other (a widening or a rounding of
    each part) and to and from its component type (the imaginary part dropped, zeroed)."""
    if is_complex(dtype):
        part = component_dtype(dtype)
        other = next(d for d in dtypes if is_complex(d) and d != dtype)
        return [f"{dtype}->{other}", f"{dtype}->{part}", f"{part}->{dtype}"]
    if is_integer(dtype):
        unsigned = dtype.startswith("uint")
        kin = [d for d in dtypes if is_integer(d) and d != dtype and d.startswith("uint") == unsigned]
        wide = max(kin, key=lambda d: int_info(d).bits)
        return [f"{dtype}->{wide}", f"{wide}->{dtype}", f"{dtype}->float32", f"float32->{dtype}"]
    return [f"{dtype}->float32", f"float32->{dtype}"]


def conversion_labels(spec):
    """'SRC->DST' for every ordered pair of distinct :data:`PAIRWISE` dtypes of the spec, and
    each other dtype's conversions (:func:`_partners`)."""
    pairwise = [d for d in spec.dtypes if d in PAIRWISE]
    labels = [f"{a}->{b}" for a in pairwise for b in pairwise if a != b]
    for dtype in spec.dtypes:
        if dtype not in PAIRWISE:
            labels += [label for label in _partners(dtype, spec.dtypes) if label not in labels]
    return labels


def draw_convert(draw, kit, spec, dtype):
    """dtype is 'SRC->DST'; the operand is SRC and the result DST."""
    src, dst = dtype.split("->")
    shape = draw(kit.shape())
    return kit.Signature((src,), (shape,), {"new_dtype": dst}, dst)


def in_range_half(rng, inputs, attrs):
    """Conversions into an integer type of at most 32 bits: half the elements of an integer or
    float operand brought into its range (the value modulo the range's size), so that a
    narrowing is judged in range and not only met in the regions int_overflow and
    float_to_int_out_of_range; a value already in range is left as it is."""
    operand, target = inputs[0], attrs["new_dtype"]
    if not is_integer(target) or int_info(target).bits > 32 \
            or not (is_integer(str(operand.dtype)) or str(operand.dtype) in FLOAT_FORMATS):
        return inputs
    info = int_info(target)
    wide = operand.astype(np.float64 if str(operand.dtype) in FLOAT_FORMATS else np.int64)
    with np.errstate(invalid="ignore", over="ignore"):   # NaN and infinities stay as they are
        fitted = np.where(np.isfinite(wide), (wide - info.min) % (int(info.max) - int(info.min) + 1)
                          + info.min, wide)
        made = np.where(rng.random(wide.shape) < 0.5, fitted, wide).astype(operand.dtype)
    return [made, *inputs[1:]]


def nnef_cast(case, call):
    return call(["in0"], generic=case.out_dtype)


def lax_convert(lax, attrs):
    # np.dtype knows the float8 and int4 names once ml_dtypes is imported, as jax imports it
    # (written out as it stands into repro scripts: nothing of conform's in scope); from a
    # complex type into a real one jax drops the imaginary part, as StableHLO convert does,
    # with a ComplexWarning on stderr, which is no result
    import warnings

    def convert(x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            return lax.convert_element_type(x, np.dtype(attrs["new_dtype"]))
    return convert


def numpy_convert(operand, *, new_dtype):
    """The numpy backend: ``astype``, through int64 or float32 where ml_dtypes casts no 2- or
    4-bit integer or narrow float directly (:func:`numpy_astype`, never saturating); a
    complex operand's real part into a real type."""
    if np.iscomplexobj(operand) and not is_complex(new_dtype):
        operand = operand.real
    return (numpy_astype(operand, new_dtype, saturate=0),)


def rounded_convert(operand, *, new_dtype, dtypes):
    """The operand converted to float64 (each part, into complex128), correctly rounded."""
    if np.iscomplexobj(operand):
        return (operand.astype(np.complex128),)
    value = converted64(operand, dtypes[0])
    return (value.astype(np.complex128) if is_complex(new_dtype) else value,)


@op("convert_element_type", version=1, draw=draw_convert, dtype_labels=conversion_labels,
    nnef=nnef_cast, lax=lax_convert, numpy=numpy_convert, rounded64=rounded_convert,
    midpoints=conversion_hook(), values=in_range_half)
def oracle_convert_element_type(operand, *, new_dtype, dtypes=()):
    """ConvertElementType: the value itself; rounding to the target type happens at comparison.

    float -> int truncates toward zero (C++ static_cast); to bool, nonzero (and NaN) is true.
    Into a float type the judge rounds the value once, to nearest even, by the target format's
    parameters (:func:`conform.dtypes.round_to_format`: float8 too, overflowing to the
    format's infinity, or NaN where it has none).
    """
    if np.iscomplexobj(operand) and not is_complex(new_dtype):
        operand = operand.real   # StableHLO convert: 'the source imaginary value is ignored'
    if is_complex(new_dtype):   # 'the destination imaginary value is zeroed'; parts as floats
        return (operand.astype(np.complex128),)
    if new_dtype == "bool":
        return (operand != 0,)
    if operand.dtype.kind == "f" and new_dtype.startswith(("int", "uint")):
        return (np.trunc(operand),)
    if operand.dtype == np.bool_:
        return (operand.astype(np.int64),)
    if operand.dtype.kind in "iu" and new_dtype in FLOAT_FORMATS:
        # an integer wider than float64's significand, rounded to odd: one rounding at the judge
        return (exact_float(operand, dtypes[0], FLOAT_FORMATS[new_dtype].precision),)
    return (operand,)
